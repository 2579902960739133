"""Quality control settings, declared once as :class:`~dsr.core.params.Param`s, and the
check every grade time passes.

* :data:`SECONDS`: a grade's time (``seconds``) must be a finite number from 0 to
  ``max_seconds``; :func:`checked_seconds` is the one check, made by the campaign store
  on every path (the page's API, Label Studio and crowd imports, bulk grading), so a
  NaN, an infinity or ``-1e300`` is refused by name and never stored.
* :data:`FLAG_PARAMS`: when ``dsr judge report`` flags an assessor (too fast per
  sentence, one grade for everything, low agreement with the others);
* :data:`REVIEW_PARAMS`: which items ``dsr judge review`` lists (an uncertain aggregate,
  assessors who disagree);
* :data:`CAMPAIGN_PARAMS`: how a campaign is judged (``dsr judge create``; the record
  :class:`Settings`, made by keyword and checked when made).

The command line's flags, defaults and ``--help`` lines come from these declarations
(``dsr.cli.common.add_param_flags``). This module imports nothing heavy: the server
imports the store, and the store this.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from dsr.core.errors import InputError
from dsr.core.params import Param, setting
from dsr.core.params import Settings as BaseSettings
from dsr.db.place import default_url

#: the longest a grade may say it took: longer means the page was left open, not read
SECONDS = Param(
    "max_seconds",
    3600.0,
    "float",
    low=1.0,
    help="the longest a grade may say it took (seconds); longer, negative or non-finite times are refused",
)

FLAG_PARAMS = (
    Param(
        "min_seconds",
        2.0,
        "float",
        low=0.0,
        metavar="S",
        help="flag an assessor whose median seconds per sentence is below this (too fast to read)",
    ),
    Param(
        "one_grade_share",
        0.98,
        "float",
        above=0.0,
        high=1.0,
        metavar="F",
        help="flag an assessor who gives one grade to at least this share of their sentences",
    ),
    Param(
        "min_kappa",
        0.2,
        "float",
        low=-1.0,
        high=1.0,
        metavar="K",
        help="flag an assessor whose Cohen's kappa with the majority grade of the other counted assessors is below this",
    ),
    Param("min_flag_grades", 20, "int", low=1, metavar="N", help="grades an assessor needs before the flags above are judged"),
)

REVIEW_PARAMS = (
    Param(
        "min_posterior",
        0.8,
        "float",
        low=0.0,
        high=1.0,
        metavar="P",
        help="list an item whose aggregated grade has a posterior probability (Dawid-Skene "
        "unless --method says otherwise) below this",
    ),
    Param(
        "min_agreement",
        0.67,
        "float",
        low=0.0,
        high=1.0,
        metavar="F",
        help="list an item where the share of counted grades equal to the aggregate is below this",
    ),
)

#: how a campaign's grades become labels (``dsr judge report``/``export --method``; the name is
#: checked where the grades are aggregated, ``dsr.judging.aggregate.probabilities``)
METHOD = Param("method", "mv", "str", "mv, ds, onecoin-ds, mace or glad (crowd-kit)")
#: the review queue's aggregation (``dsr judge review --method``): Dawid-Skene's posteriors
REVIEW_METHOD = Param("method", "ds", "str", "mv, ds, onecoin-ds, mace or glad (crowd-kit)")
#: ``Judging.assign``'s share of dialogues graded by one assessor more than k
OVERLAP = Param(
    "overlap",
    0.0,
    "float",
    "share of dialogues (seeded, the same on every call) graded by one assessor "
    "more than k, for agreement (0.2: a fifth graded twice with --k 1)",
    low=0.0,
    high=1.0,
    metavar="SHARE",
)
#: ``Judging.send_back``'s assessors added per item
EXTRA = Param("extra", 1, "int", "assessors added per item sent back", low=1, metavar="N")


@dataclass(frozen=True, kw_only=True)
class Settings(BaseSettings):
    """How a campaign is judged (``dsr judge create --help``): ``Settings(k=3,
    honeypot_threshold=0.6)``; a value out of range is an InputError naming the field."""

    WHAT = "a judging campaign"

    k: int = setting(3, "assessors per sentence", low=1, high=20, metavar="N")
    chunk: int = setting(10, "sentences per task (a dialogue's are cut in tasks)", low=1, metavar="N")
    honeypot_rate: float = setting(
        0.1, "honeypot checks per sentence in a task (at least one per task when known)", low=0.0, below=1.0, metavar="R"
    )
    honeypot_threshold: float = setting(
        0.7, "honeypot accuracy an assessor needs for their grades to count", low=0.0, high=1.0, metavar="A"
    )
    min_honeypots: int = setting(3, "honeypots an assessor must answer before their grades can count", low=0, metavar="N")
    seed: int = setting(0, "seed of shuffles, tasks and assignment", metavar="N")
    description: str = setting("", "shown to assessors", metavar="TEXT")


CAMPAIGN_PARAMS = Settings.params()


@dataclass(frozen=True, kw_only=True)
class JudgingPlace(BaseSettings):
    """Where judging's campaigns live: the database both applications share (``dsr judge
    --db``; the default is :func:`dsr.db.place.default_url`'s, as for ``dsr serve``)."""

    WHAT = "judging"

    db: str | None = setting(
        None,
        "database URL: sqlite:///FILE or postgresql://USER@HOST:PORT/DB (default: SQLite under $DSR_HOME/board/)",
        metavar="URL",
    )

    def url(self) -> str:
        return self.db or default_url()


def checked_seconds(value: Any, where: dict[str, Any] | None = None, limit: float = SECONDS.default) -> float | None:
    """``value`` as a float when it is a plausible grade time (None stays None), else an
    :class:`InputError` naming ``where``'s field (``seconds`` unless it says otherwise)."""
    if value is None:
        return None
    where = {"field": "seconds", **(where or {})}
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"seconds must be a number, got {_short(value)}", **where)
    if not (0 <= value <= limit) or not math.isfinite(value):  # NaN fails both: refused
        raise InputError(f"seconds must be a finite number from 0 to {limit:g}, got {_short(value)}", **where)
    return float(value)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
