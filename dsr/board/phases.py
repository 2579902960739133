"""A board's phases: adding one (with the cross-phase overlap check of hidden labels and the
default quotas), its season (dates, final, freeze) and finding one. :class:`Phases` is a part
of :class:`dsr.board.service.Board`."""

from __future__ import annotations

import json

from sqlalchemy import bindparam, func, select

from dsr.board import release, scoring
from dsr.board.db import read_session, write_session
from dsr.board.models import Phase, Submission, utcnow
from dsr.board.published import check_text
from dsr.board.settings import SEASON_PARAMS
from dsr.core.errors import InputError
from dsr.core.params import settings_type

#: a collection's phases, and one of them by name (read at every submission; built once:
#: see ``dsr.board.members.IDENTIFY``)
OF_COLLECTION = select(Phase).where(Phase.collection == bindparam("collection")).order_by(Phase.id)
BY_NAME = OF_COLLECTION.where(Phase.name == bindparam("name"))
ALL_PHASES = select(Phase).order_by(Phase.collection, Phase.id)


class Season(settings_type("SeasonSettings", SEASON_PARAMS, "a phase's season")):
    """What ``add-phase`` and ``set-phase`` set of a phase's season (None: leave / default;
    ``opens`` and ``closes`` are naive UTC datetimes), declared by ``SEASON_PARAMS``."""

    def apply(self, phase: Phase, measures: list[str], keep: bool = False) -> None:
        """Set these on ``phase`` (``keep``: fields left None keep the phase's values)."""
        if self.primary is not None and self.primary not in measures:
            raise InputError(f"primary measure {self.primary!r} is not a measure of this phase; it has "
                             f"{', '.join(measures)}", field="primary")
        for name, value in (("primary_measure", self.primary), ("opens_at", self.opens),
                            ("closes_at", self.closes), ("final", self.final)):
            if value is not None or not keep:
                setattr(phase, name, value if value is not None or name != "final" else False)
        if phase.opens_at and phase.closes_at and phase.closes_at <= phase.opens_at:
            raise InputError("the phase would close before it opens", field="closes")


def _check_phase_options(hidden: bool, labels, daily_quota: int | None, total_quota: int | None,
                         min_dialogues: int | None, texts: list[tuple[str, str]]) -> None:
    if not hidden and labels is not None:
        raise InputError("labels are only loaded for hidden phases (public ones use the "
                         "collection's own)", field="labels")
    if min_dialogues is not None and (not hidden or min_dialogues < 1):
        raise InputError("min_dialogues is a whole number >= 1, for hidden phases (public ones "
                         "publish per-dialogue values)", field="min_dialogues")
    for value, name in ((daily_quota, "daily_quota"), (total_quota, "total_quota")):
        if value is not None and value < 0:
            raise InputError("a quota is a whole number >= 0", field=name)
    for text, name in texts:
        check_text(text, name, multiline=name == "description")


class Phases:
    """The board's phases (a part of :class:`~dsr.board.service.Board`)."""

    def add_phase(self, collection_ref: str, phase_name: str, *, hidden: bool = False,
                  labels: dict[str, dict[str, int]] | None = None, measures: list[str] | None = None,
                  daily_quota: int | None = None, total_quota: int | None = None,
                  description: str = "", display: str | None = None, strict: bool = False,
                  min_dialogues: int | None = None, season: Season | None = None,
                  allow_overlap: bool = False) -> Phase:
        """Add a board (or replace a phase's labels and quotas while it has no submission).

        A hidden phase gets ``release``'s default quotas unless given, and is refused when a
        published group differs from one of another hidden phase in fewer than
        ``min_dialogues`` dialogues (``release.overlaps``; ``allow_overlap`` takes it anyway:
        :meth:`overlaps` then lists why).

        ``strict``: runs whose scores tie as float32 are refused. ``min_dialogues``
        (hidden phases; default ``scoring.MIN_DIALOGUES``): the fewest dialogues a
        published mean covers (``board.phase_data(phase).subset_notes`` says which
        subsets are merged or withheld). ``season``: primary measure, dates, final."""
        season = season or Season()
        _check_phase_options(hidden, labels, daily_quota, total_quota, min_dialogues,
                             [(phase_name, "phase_name"), (description, "description"), (display or "", "display")])
        collection = scoring.load_collection_ref(collection_ref)
        if hidden and labels is None:
            labels = scoring.qrels_from_collection(collection)
        topics = scoring.phase_topics(collection, labels)
        measures = list(measures or scoring.default_measures())
        if hidden and min_dialogues is None:
            min_dialogues = scoring.MIN_DIALOGUES
        data = scoring.build_phase_data(collection, topics, labels, measures,   # checks measures
                                        min_dialogues=min_dialogues)            # and the subset rule
        display = display or collection.name
        daily_quota, total_quota = release.default_quotas(hidden, daily_quota, total_quota)
        if hidden and not allow_overlap:
            release.refuse_overlaps(self._overlaps(f"{display}/{phase_name}", topics, labels, data.subsets,
                                                   min_dialogues, (display, phase_name)))
        with write_session(self.engine) as s:
            phase = s.scalar(select(Phase).where(Phase.collection == display, Phase.name == phase_name))
            if phase is not None and s.scalar(select(func.count()).select_from(Submission)
                                              .where(Submission.phase_id == phase.id)):
                raise InputError(f"phase {display}/{phase_name} has submissions; add a new phase instead",
                                 field="phase_name")
            if phase is None:
                phase = Phase(collection=display, name=phase_name)
                s.add(phase)
            phase.collection_ref = collection_ref
            phase.collection_hash = collection.content_hash
            phase.hidden = hidden
            phase.labels_json = scoring.labels_to_json(labels) if labels is not None else None
            phase.topics_json = json.dumps(topics)
            phase.measures_json = json.dumps(data.measures)
            phase.daily_quota = daily_quota
            phase.total_quota = total_quota
            phase.description = description
            phase.strict = strict
            phase.min_dialogues = min_dialogues
            season.apply(phase, data.measures)
        return phase

    def _overlaps(self, label: str, topics: list[str], labels: dict, groups: dict, minimum: int,
                  skip: tuple[str, str]) -> list[str]:
        """``release.overlaps`` of a hidden phase's published groups against every other hidden
        phase (``skip``: its own collection and name, when its labels are replaced)."""
        others = []
        for other in self.phases():
            if not other.hidden or (other.collection, other.name) == skip:
                continue
            data = self.phase_data(other)
            others.append((f"{other.collection}/{other.name}",
                           release.keyed_groups(data.topics, json.loads(other.labels_json or "{}"),
                                                data.subsets),
                           other.min_dialogues or scoring.MIN_DIALOGUES))
        return release.overlaps(label, release.keyed_groups(topics, labels, groups), minimum, others)

    def overlaps(self, phase: Phase) -> list[str]:
        """Why a hidden phase could be differenced against another one (empty: it cannot)."""
        if not phase.hidden:
            return []
        data = self.phase_data(phase)
        return self._overlaps(f"{phase.collection}/{phase.name}", data.topics,
                              json.loads(phase.labels_json or "{}"), data.subsets,
                              phase.min_dialogues or scoring.MIN_DIALOGUES, (phase.collection, phase.name))

    def set_season(self, phase: Phase, season: Season) -> Phase:
        """Change a phase's primary measure, dates or final switch (allowed at any time
        before it is frozen: a season's dates move)."""
        with write_session(self.engine) as s:
            row = s.get(Phase, phase.id)
            if row.frozen_at is not None:
                raise InputError(f"phase {row.collection}/{row.name} is frozen: its season is over",
                                 field="phase")
            season.apply(row, json.loads(row.measures_json), keep=True)
        return self.get_phase(phase.collection, phase.name)

    def freeze(self, phase: Phase) -> Phase:
        """Freeze a board: no more submissions; a final phase's scores are published."""
        with write_session(self.engine) as s:
            row = s.get(Phase, phase.id)
            if row.frozen_at is None:
                row.frozen_at = utcnow()
        return self.get_phase(phase.collection, phase.name)

    def phases(self) -> list[Phase]:
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
            raise InputError(f"no phase {phase_name or ''!r} of {collection!r} on this board",
                             field="phase_name")
        raise InputError(f"{collection} has phases {', '.join(p.name for p in found)}: name one",
                         field="phase_name")
