"""What an import from another tool (Label Studio, a crowd batch) would change, told before it
is stored: per grade row, new (no grade of that assessor on that sentence yet), already present
(the same grade or unsure stored) or changed (another grade stored, which the import replaces).
``dsr judge import`` prints the counts, so importing the same export twice says
"0 new, N already present"."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the store pulls SQLAlchemy; the command line imports this module
    from dsr.judging.campaigns import Judging


@dataclass(frozen=True)
class Tally:
    new: int
    present: int
    changed: int

    def text(self) -> str:
        return f"{self.new} new, {self.present} already present, {self.changed} changed"


def tally(judging: Judging, name: str, rows: list[dict[str, Any]], origin: str | None) -> Tally:
    """Count ``rows`` (``Judging.import_grades``'s) against the grades stored now."""
    campaign = judging.campaign(name)
    keys = judging.items_frame(campaign).set_index("item")["key"]
    frame = judging.grades_frame(campaign)
    stored = {
        (keys[i], a): (None if u or g != g else int(g))
        for i, a, g, u in zip(frame["item"], frame["assessor"], frame["grade"], frame["unsure"])
    }
    new = present = changed = 0
    for row in rows:
        who = row["assessor"] if origin is None else f"{origin}:{row['assessor']}"
        pair = (row["item"], who)
        if pair not in stored:
            new += 1
        elif stored[pair] == row["grade"]:
            present += 1
        else:
            changed += 1
    return Tally(new, present, changed)
