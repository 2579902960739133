"""A board's phases: adding one (with the cross-phase check of :mod:`dsr.board.overlap` and the
default quotas), its season (dates, final, freeze) and finding one. :class:`Phases` is a service
of :class:`dsr.board.service.Board` (``board.phases``)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import bindparam, func, select

from dsr.board import overlap, participants, release, scoring
from dsr.board.context import BoardContext
from dsr.board.models import Phase, Submission, utcnow
from dsr.board.published import check_name, check_text
from dsr.board.settings import SeasonSettings
from dsr.core.errors import InputError
from dsr.db.engine import get_row, read_session, write_session

#: a collection's phases, and one of them by name (read at every submission; built once:
#: see ``dsr.board.members.IDENTIFY``)
OF_COLLECTION = select(Phase).where(Phase.collection == bindparam("collection")).order_by(Phase.id)
BY_NAME = OF_COLLECTION.where(Phase.name == bindparam("name"))
ALL_PHASES = select(Phase).order_by(Phase.collection, Phase.id)


@dataclass(frozen=True, kw_only=True)
class Season(SeasonSettings):
    """What ``add-phase`` and ``set-phase`` set of a phase's season (None: leave / default;
    ``opens`` and ``closes`` are naive UTC datetimes)."""

    def apply(self, phase: Phase, measures: list[str], keep: bool = False) -> None:
        """Set these on ``phase`` (``keep``: fields left None keep the phase's values)."""
        if self.primary is not None and self.primary not in measures:
            raise InputError(
                f"primary measure {self.primary!r} is not a measure of this phase; it has {', '.join(measures)}", field="primary"
            )
        for name, value in (
            ("primary_measure", self.primary),
            ("opens_at", self.opens),
            ("closes_at", self.closes),
            ("final", self.final),
        ):
            if value is not None or not keep:
                setattr(phase, name, value if value is not None or name != "final" else False)
        if phase.opens_at and phase.closes_at and phase.closes_at <= phase.opens_at:
            raise InputError("the phase would close before it opens", field="closes")


#: characters a board's collection or phase name may not hold: they are parts of its URLs
#: (/board/COLLECTION/PHASE), and these would end or change the path
URL_UNSAFE = re.compile(r"[/\\?#%]")
#: the longest collection and phase name (their columns: String(100)) and collection reference
MAX_NAME, MAX_REF = 100, 1000


def check_url_part(value: str, field: str) -> str:
    """A board's collection or phase name: 1 to 100 printable characters (``check_name``),
    none of ``/``, a backslash, ``?``, ``#`` and ``%``, not ``.`` or ``..``: what every
    database stores and every URL of the board can carry."""
    check_name(value, field)
    if not value.strip() or len(value) > MAX_NAME:
        raise InputError(f"is 1 to {MAX_NAME} characters (got {len(value)})", field=field)
    if value.strip() in (".", ".."):
        raise InputError(
            f"is {value.strip()!r}: a URL path reads it as this folder or the one above (/board/COLLECTION/PHASE)",
            field=field,
        )
    bad = URL_UNSAFE.search(value)
    if bad:
        raise InputError(f"holds {bad.group()!r}: it is a part of the board's URLs (/board/COLLECTION/PHASE)", field=field)
    return value


def _check_phase_options(
    hidden: bool,
    labels: dict[str, dict[str, int]] | None,
    daily_quota: int | None,
    total_quota: int | None,
    min_dialogues: int | None,
    texts: list[tuple[str, str]],
) -> None:
    if not hidden and labels is not None:
        raise InputError("labels are only loaded for hidden phases (public ones use the collection's own)", field="labels")
    if min_dialogues is not None and (not hidden or min_dialogues < 1):
        raise InputError(
            "min_dialogues is a whole number >= 1, for hidden phases (public ones publish per-dialogue values)",
            field="min_dialogues",
        )
    for value, name in ((daily_quota, "daily_quota"), (total_quota, "total_quota")):
        if value is not None and value < 0:
            raise InputError("a quota is a whole number >= 0", field=name)
    for text, name in texts:
        check_text(text, name, multiline=name == "description")


def _key(phase: Phase) -> tuple[str, str]:
    return phase.collection, phase.name


def _phase_fields(
    ref: str,
    content_hash: str,
    hidden: bool,
    labels: dict[str, dict[str, int]] | None,
    topics: list[str],
    measures: list[str],
    groups: dict[str, str],
) -> dict[str, Any]:
    """A phase row's fields of what it scores: its collection, labels, topics, measures, groups."""
    return {
        "collection_ref": ref,
        "collection_hash": content_hash,
        "hidden": hidden,
        "labels_json": scoring.labels_to_json(labels) if labels is not None else None,
        "topics_json": json.dumps(topics),
        "measures_json": json.dumps(measures),
        "groups_json": json.dumps(groups, sort_keys=True) if groups else None,
    }


class Phases:
    """The board's phases, on the database of a :class:`~dsr.board.context.BoardContext`
    (:class:`dsr.board.service.Board` holds one as ``board.phases``); ``phase_data`` gives a
    phase's scoring data (the board's, cached)."""

    def __init__(self, context: BoardContext, phase_data: Callable[[Phase], scoring.PhaseData]) -> None:
        self.context = context
        self.engine = context.engine
        self.phase_data = phase_data

    def add_phase(
        self,
        collection_ref: str,
        phase_name: str,
        *,
        hidden: bool = False,
        labels: dict[str, dict[str, int]] | None = None,
        measures: list[str] | None = None,
        daily_quota: int | None = None,
        total_quota: int | None = None,
        description: str = "",
        display: str | None = None,
        strict: bool = False,
        min_dialogues: int | None = None,
        season: Season | None = None,
        allow_overlap: bool = False,
        subset_names: dict[str, str] | None = None,
    ) -> Phase:
        """Add a board (or replace a phase's labels and quotas while it has no submission).

        A hidden phase gets ``release``'s default quotas unless given. A phase of any kind is
        refused when it shares labels with another phase and one of the two is hidden
        (:mod:`dsr.board.overlap`: the same judged pairs, found by id or by folded text, with
        grades that agree); ``allow_overlap`` takes it when both are hidden (:meth:`overlaps`
        then says what it gives away), never beside a public phase.

        ``strict``: runs whose scores tie as float32 are refused. ``min_dialogues`` (hidden
        phases; default ``scoring.MIN_DIALOGUES``): the fewest dialogues a published mean
        covers (``board.phase_data(phase).subset_notes`` says which subsets are merged or
        withheld). ``season``: primary measure, dates, final.
        ``subset_names`` (hidden phases): {subset: the name shown}; a subset it does not name
        is shown under a neutral one when the subsets give a withheld field away
        (:func:`dsr.board.participants.group_names`)."""
        _check_phase_options(
            hidden, labels, daily_quota, total_quota, min_dialogues, [(description, "description"), (display or "", "display")]
        )
        check_url_part(phase_name, "phase_name")
        if len(collection_ref) > MAX_REF:
            raise InputError(f"is longer than {MAX_REF} characters: move the file to a shorter path", field="collection_ref")
        collection = scoring.load_collection_ref(collection_ref)
        if hidden and labels is None:
            labels = scoring.qrels_from_collection(collection)
        topics = scoring.phase_topics(collection, labels)
        measures = list(measures or scoring.default_measures())
        if hidden and min_dialogues is None:
            min_dialogues = scoring.MIN_DIALOGUES
        if subset_names and not hidden:
            raise InputError("subset names are for hidden phases (a public phase publishes its file)", field="subset_names")
        groups = participants.group_names([collection[t] for t in topics], subset_names)[0] if hidden else {}
        # checks the measures and the subset rule
        data = scoring.build_phase_data(collection, topics, labels, measures, min_dialogues=min_dialogues, groups=groups)
        display = check_url_part(display or collection.name, "display")
        daily_quota, total_quota = release.default_quotas(hidden, daily_quota, total_quota)
        how = "public" if not hidden else "final" if season and season.final else "ladder"
        mine = overlap.phase_labels(f"{display}/{phase_name}", how, data.collection, data.qrels, data.subsets, min_dialogues or 0)
        overlap.refuse(self._overlaps(mine, (display, phase_name)), allow_overlap)
        fields = _phase_fields(collection_ref, collection.content_hash, hidden, labels, topics, data.measures, groups)
        fields.update(daily_quota=daily_quota, total_quota=total_quota, description=description, strict=strict)
        fields["min_dialogues"] = min_dialogues
        return self._write_phase(display, phase_name, fields, season or Season(), data.measures)

    def _write_phase(self, display: str, phase_name: str, fields: dict, season: Season, measures: list[str]) -> Phase:
        """The phase row (a new one, or its own while it has no submission) with ``fields``."""
        with write_session(self.engine) as s:
            phase = s.scalar(select(Phase).where(Phase.collection == display, Phase.name == phase_name))
            if phase is not None and s.scalar(
                select(func.count()).select_from(Submission).where(Submission.phase_id == phase.id)
            ):
                raise InputError(f"phase {display}/{phase_name} has submissions; add a new phase instead", field="phase_name")
            if phase is None:
                phase = Phase(collection=display, name=phase_name)
                s.add(phase)
            for name, value in fields.items():
                setattr(phase, name, value)
            season.apply(phase, measures)
        return phase

    def labels_of(self, phase: Phase, how: str | None = None) -> overlap.PhaseLabels:
        """A phase's labels as the cross-phase check sees them (``how``: its kind, default
        its own)."""
        data = self.phase_data(phase)
        return overlap.phase_labels(
            f"{phase.collection}/{phase.name}",
            how or overlap.kind(phase),
            data.collection,
            data.qrels,
            data.subsets if phase.hidden else None,
            (phase.min_dialogues or scoring.MIN_DIALOGUES) if phase.hidden else 0,
        )

    def _overlaps(self, new: overlap.PhaseLabels, skip: tuple[str, str]) -> list[overlap.Problem]:
        """``overlap.problems`` of a phase against every other phase of the board (``skip``:
        its own collection and name, when its labels are replaced)."""
        others = [self.labels_of(p) for p in self.all() if (p.collection, p.name) != skip]
        return overlap.problems(new, others)

    def overlaps(self, phase: Phase, how: str | None = None) -> list[str]:
        """Why a phase lets hidden labels be read through another one (empty: it does not);
        ``how``: as if it were of that kind."""
        return [p.text for p in self._overlaps(self.labels_of(phase, how), _key(phase))]

    def set_season(self, phase: Phase, season: Season, allow_overlap: bool = False) -> Phase:
        """Change a phase's primary measure, dates or final switch (allowed at any time
        before it is frozen: a season's dates move). A hidden phase made final (or not final)
        publishes otherwise, so it passes the cross-phase check again (``allow_overlap``:
        anyway)."""
        if phase.hidden and season.final is not None and bool(season.final) != bool(phase.final):
            overlap.refuse(
                self._overlaps(self.labels_of(phase, "final" if season.final else "ladder"), _key(phase)), allow_overlap
            )
        with write_session(self.engine) as s:
            row = get_row(s, Phase, phase.id)
            if row.frozen_at is not None:
                raise InputError(f"phase {row.collection}/{row.name} is frozen: its season is over", field="phase")
            season.apply(row, json.loads(row.measures_json), keep=True)
        return self.get_phase(phase.collection, phase.name)

    def freeze(self, phase: Phase) -> Phase:
        """Freeze a board: no more submissions; a final phase's scores are published."""
        with write_session(self.engine) as s:
            row = get_row(s, Phase, phase.id)
            if row.frozen_at is None:
                row.frozen_at = utcnow()
        return self.get_phase(phase.collection, phase.name)

    def all(self) -> list[Phase]:
        with read_session(self.engine) as s:
            return list(s.scalars(ALL_PHASES))

    def phase(self, collection: str, name: str) -> Phase | None:
        with read_session(self.engine) as s:
            return s.scalar(select(Phase).where(Phase.collection == collection, Phase.name == name))

    def phases_of(self, collection: str, phase_name: str | None = None) -> list[Phase]:
        """The collection's phases named ``phase_name`` (all of them when None): one query,
        read at every submission (a phase's dates and freeze are read fresh)."""
        with read_session(self.engine) as s:
            if phase_name:
                return list(s.scalars(BY_NAME, {"collection": collection, "name": phase_name}))
            return list(s.scalars(OF_COLLECTION, {"collection": collection}))

    def get_phase(self, collection: str, phase_name: str | None) -> Phase:
        """A phase by collection and name (the only phase of the collection when ``phase_name`` is
        None)."""
        found = self.phases_of(collection, phase_name)
        if len(found) == 1:
            return found[0]
        if not found:
            raise InputError(f"no phase {phase_name or ''!r} of {collection!r} on this board", field="phase_name")
        raise InputError(f"{collection} has phases {', '.join(p.name for p in found)}: name one", field="phase_name")
