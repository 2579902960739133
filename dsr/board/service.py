"""The board's operations: tokens, phases, quotas and the submission transaction.

:class:`Board` binds a database and a run store; the web app, the admin
commands and the tests all go through it, so a run submitted from the browser,
the API or ``dsr board add-baseline`` takes the same path:

1. the metadata, the run (gzip unpacked by the command line's reader, with a
   size cap) and the sidecar (kept only as its published allow-list) are
   checked (``intake``); a retry with the same ``Idempotency-Key`` gets the
   first answer back (only when the whole request is the same: the key is bound
   to it), and the same parsed ranking from the same team on the same board is a
   duplicate (409, naming the team's own first submission; another team's runs
   are never compared, named or revealed);
2. the quota is checked (a fast refusal, nothing stored);
3. the run is parsed once, validated and scored (``scoring.score_text``, with
   the phase's tie policy), by a scoring worker (``dsr serve --workers``,
   :mod:`dsr.board.workers`) or in this thread; the same parse gives the
   ranking's digest for the duplicate check; an invalid run is refused with
   the validator's messages and nothing is stored;
4. the file is staged in the store (fsynced);
5. one write transaction re-checks the quota under a lock (SQLite
   ``BEGIN IMMEDIATE``; PostgreSQL ``SELECT ... FOR UPDATE`` on the team row)
   and inserts the row (unique per board and run text, and per team and key);
6. the staged file is renamed into place. Refused and invalid submissions
   never count and leave nothing behind; a crash between 5 and 6 is finished
   by the next start (:meth:`Board.recover`).
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine, Table, bindparam, case, func, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session
from sqlalchemy.orm.attributes import set_committed_value

from dsr.board import release, scoring
from dsr.board.archive import RunStore, Staged
from dsr.board.cache import ScoreCache
from dsr.board.client import quota_text  # noqa: F401 (re-exported)
from dsr.board.context import BoardContext
from dsr.board.intake import (  # noqa: F401 (re-exported)
    RUN_TYPES,
    Metadata,
    Refused,
    display_name,
    published_from_sidecar,
    ranking_digest,
    request_digest,
    unpack_run,
)
from dsr.board.leaderboard import answer_means
from dsr.board.members import Members
from dsr.board.models import Phase, Submission, Team, TeamRate, iso, utcnow
from dsr.board.phases import ALL_PHASES, BY_NAME, OF_COLLECTION, Phases
from dsr.board.release import Noise, noise_key
from dsr.board.settings import BoardSettings
from dsr.board.workers import ScoringPool, default_workers  # noqa: F401 (dsr serve's default)
from dsr.core.errors import InputError
from dsr.core.home import require_writable
from dsr.db.engine import get_row, open_database, read_session, write_session
from dsr.db.place import board_home, check_sqlite_folder, default_url

if TYPE_CHECKING:
    import numpy as np

#: the smallest upload limit a phase gets (``--max-upload-mb`` fixes one for every phase)
MAX_UPLOAD = 20 * 1024 * 1024
#: bytes a run line may take beyond its topic and doc ids (" Q0 ", rank, score, tag, spacing),
#: generously: a phase's limit is its full-depth run at this many bytes a line, twice over
LINE_ALLOWANCE = 96
#: runs this large or larger are scored by a worker (``dsr serve --workers``), smaller ones in
#: the request's thread. 0: every run. A 20-dialogue run's parse and scoring (a few ms) cost
#: less than the hand-over alone, but in the request's thread they hold the server's GIL, which
#: 20 concurrent requests and the event loop share: measured with 20 clients (bench/bench_board.py), the
#: server spent less CPU a submission with every run sent to the workers
POOL_MIN_BYTES = 0
#: the largest id a row can have (PostgreSQL ``integer``); larger ones name no row
MAX_ID = 2**31 - 1
TIES = (
    "{n} topic(s) hold scores that tie as 32-bit floats; they are scored as trec_eval "
    "orders them, by doc id, descending (dsr validate --fix-ties rewrites a run with "
    "distinct scores)"
)


# The submission's statements, built once (see ``dsr.board.members.IDENTIFY``).
#: a team's runs on a board, in all and since ``day``
QUOTA_COUNT = (
    select(func.count(), func.count().filter(Submission.created_at >= bindparam("day")))
    .select_from(Submission)
    .where(Submission.phase_id == bindparam("phase"), Submission.team_id == bindparam("team"))
)
#: a team's row with this Idempotency-Key
BY_KEY = select(Submission).where(Submission.team_id == bindparam("team"), Submission.idempotency_key == bindparam("key"))
#: the id of a team's row with this Idempotency-Key
KEY_ID = select(Submission.id).where(Submission.team_id == bindparam("team"), Submission.idempotency_key == bindparam("key"))
#: a submission's first read, one statement: :data:`QUOTA_COUNT` and the row of its key if
#: there is one (a retry, answered before scoring)
QUOTA_AND_KEY = QUOTA_COUNT.add_columns(KEY_ID.scalar_subquery())
#: a team's row with this ranking on a board
SAME_RANKING = select(Submission.id).where(
    Submission.phase_id == bindparam("phase"),
    Submission.team_id == bindparam("team"),
    Submission.ranking_sha256 == bindparam("ranking"),
)
#: a team's rows on a board, in submission order (its quota, duplicates and ladder, read once
#: in the write transaction), and its row of an Idempotency-Key on any board (a retry)
TEAM_ROWS = (
    select(
        Submission.id,
        Submission.created_at,
        Submission.ranking_sha256,
        Submission.baseline,
        Submission.phase_id,
        Submission.idempotency_key,
    )
    .where(
        Submission.team_id == bindparam("team"),
        (Submission.phase_id == bindparam("phase")) | (Submission.idempotency_key == bindparam("key")),
    )
    .order_by(Submission.id)
)
#: the lock that serialises a team's writes (PostgreSQL)
LOCK_TEAM = select(Team.id).where(Team.id == bindparam("team")).with_for_update()
#: a row's per-topic values
PER_TOPIC = select(Submission.per_topic).where(Submission.id == bindparam("id"))
_RATES: Table = TeamRate.__table__  # type: ignore[assignment]  # a mapped class's table is a Table
#: the rate limit: a team's request on schedule (``next_at`` at most the burst ahead of now)
#: moves ``next_at`` on by one interval; no row changed: refused (or the team's first request)
RATE_STEP = (
    update(_RATES)
    .where(_RATES.c.team_id == bindparam("team"), _RATES.c.next_at <= bindparam("latest"))
    .values(next_at=case((_RATES.c.next_at > bindparam("now"), _RATES.c.next_at), else_=bindparam("now")) + bindparam("interval"))
)
RATE_NEXT = select(_RATES.c.next_at).where(_RATES.c.team_id == bindparam("team"))


def tie_note(tied: int) -> str | None:
    """What a board says about a run whose scores tie in ``tied`` topics (None for none)."""
    return TIES.format(n=tied) if tied else None


class RateLimiter:
    """``per_minute`` requests per key (a team), refilled continuously, with a burst of
    ``per_minute``: a token bucket, kept in the database (table ``team_rates``) so that every
    server process grants a team the same rate one process would.

    The bucket is the generic cell rate algorithm (GCRA): one number per team, ``next_at``,
    the time its next request would be on schedule; a request is allowed when ``next_at`` is
    at most ``tolerance`` (the burst, less one interval) ahead of now, and then moves it on by
    one interval. The test and the move are one ``UPDATE`` (a row lock on PostgreSQL, the
    write lock on SQLite), so two processes can never both take the last token. Times are
    this host's clock (``time.time``): the processes of one board run on one host."""

    def __init__(self, engine: Engine, per_minute: float) -> None:
        self.engine = engine
        self.interval = 60.0 / per_minute if per_minute > 0 else 0.0
        self.tolerance = (max(1.0, per_minute) - 1) * self.interval

    def allow(self, key: int, now: float | None = None) -> float:
        """0 when allowed (and counted), else the seconds to wait."""
        if not self.interval:
            return 0.0
        now = time.time() if now is None else now
        params = {"team": key, "now": now, "latest": now + self.tolerance, "interval": self.interval}
        for _ in range(2):
            try:
                with write_session(self.engine) as s:
                    if s.execute(RATE_STEP, params).rowcount:  # type: ignore[attr-defined]  # an UPDATE's CursorResult
                        return 0.0
                    next_at = s.scalar(RATE_NEXT, params)
                    if next_at is not None:
                        return max(next_at - self.tolerance - now, 1e-3)
                    s.execute(insert(_RATES).values(team_id=key, next_at=now + self.interval))
                    return 0.0
            except IntegrityError:  # another process made the team's row first: test it again
                continue
        raise RuntimeError("the rate limit's row could not be read or made")


@dataclass(frozen=True, kw_only=True)
class BoardConfig(BoardSettings):
    """A board's database and run store, and what its server accepts (made by keyword,
    checked when made), with where they are when not given."""

    @property
    def max_upload(self) -> int | None:
        """A fixed upload limit for every phase, unpacked, in bytes; None: each phase's
        follows its collection (:meth:`Board.upload_limit`)."""
        return None if self.max_upload_mb is None else int(self.max_upload_mb * 2**20)

    def db_url(self) -> str:
        return self.db or default_url()

    def store_dir(self) -> Path:
        return Path(self.store) if self.store else board_home() / "runs"

    def check_folders(self) -> None:
        """The store's folder and an SQLite database's folder can be written, else an
        InputError naming the folder (a read-only DSR_HOME, a --store on a read-only disk)."""
        check_sqlite_folder(self.db_url(), given=self.db is not None)
        require_writable(
            self.store_dir(),
            "set DSR_HOME to a writable folder or give --store" if self.store is None else "give --store a writable folder",
        )


@dataclass
class Board:
    """A database and a run store, with the phases' scoring data cached: its services
    (``members``, ``phases``) share one :class:`~dsr.board.context.BoardContext`."""

    config: BoardConfig = field(default_factory=BoardConfig)

    def __post_init__(self) -> None:
        self.config.check_folders()
        self.engine = open_database(self.config.db_url())
        self.context = BoardContext(self.engine, self.config)
        self.members = Members(self.context)
        self.phases = Phases(self.context, self.phase_data)
        self.store = RunStore(self.config.store_dir())
        self.limiter = RateLimiter(self.engine, self.config.rate_limit)
        self.cache = ScoreCache()
        self.recover()
        self.pool = None
        if self.config.workers > 0:
            open_now = [p for p in self.phases.all() if p.frozen_at is None]
            self.pool = ScoringPool(
                self.config.workers,
                self.store.root,
                [(self.phase_spec(p), f"{p.collection}/{p.name}") for p in open_now],
                timeout=self.config.score_timeout,
            )

    def release_noise(self, phase: Phase, team_id: int, runs: list[int]) -> Noise:
        """The noise of a team's published values on a hidden phase (``release.Noise``), keyed
        by the board's secret, the phase and the team."""
        return Noise(noise_key(self.context.login_secret(), phase.id, team_id), tuple(runs))

    def warm_up(self) -> None:
        """What a server does before its first request (``dsr serve``): the open phases'
        scoring data built in this process (every submission reads it: its subsets and
        measures, and all of it without scoring workers) and, when one publishes ladder
        values, scipy.stats imported. Done lazily instead,
        the first submissions paid it, the ladder's import under the write lock."""
        open_now = [p for p in self.phases.all() if p.frozen_at is None]
        for phase in open_now:
            try:
                self.phase_data(phase)
            except InputError:  # its collection changed: a submission to it will say so
                pass
        if any(release.uses_ladder(p) for p in open_now):
            release.warm()

    def recover(self) -> dict[str, int]:
        """Finish or undo what processes that are gone left in the store's ``tmp/``: a run
        file staged for a row that was committed stays (put in place if needed); one
        whose row never came is removed from the store, and so are the validator's
        scratch copies. Run at every start; counts the run files kept and removed."""
        done = {"kept": 0, "removed": 0}
        for kind, path, digest in self.store.leftovers():
            if kind != "stage" or not digest:
                path.unlink(missing_ok=True)
                continue
            staged = Staged(digest, path)
            try:
                if self._named(digest) and hashlib.sha256(path.read_bytes()).hexdigest() == digest:
                    self.store.finish(staged)
                    done["kept"] += 1
                else:
                    self.store.abandon(staged, named=self._named(digest))
                    done["removed"] += 1
            except FileNotFoundError:  # another process starting now handled it first
                continue
        return done

    def _named(self, digest: str) -> bool:
        """Whether a row names this run file."""
        with read_session(self.engine) as s:
            return s.scalar(select(Submission.id).where(Submission.sha256 == digest).limit(1)) is not None

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()
            self.pool = None
        self.engine.dispose()

    def _open_limit(self, phase: Phase) -> int:
        try:
            return self.upload_limit(phase)
        except InputError:  # its collection changed: a submission to it will say so
            return MAX_UPLOAD

    @staticmethod
    def phase_spec(phase: Phase) -> scoring.PhaseSpec:
        minimum = (phase.min_dialogues or scoring.MIN_DIALOGUES) if phase.hidden else None
        return scoring.PhaseSpec(
            phase.collection_ref,
            phase.collection_hash,
            phase.topics_json,
            phase.measures_json,
            phase.labels_json,
            minimum,
            phase.groups_json if phase.hidden else None,
        )

    def phase_data(self, phase: Phase, spec: scoring.PhaseSpec | None = None) -> scoring.PhaseData:
        """The phase's scoring data, built once a process (``spec``: the phase's, made already)."""
        made = spec or self.phase_spec(phase)
        return self.cache.phase_data((phase.id, made.key), lambda: made.build(f"{phase.collection}/{phase.name}"))

    def upload_limit(self, phase: Phase | None = None) -> int:
        """The largest run (unpacked bytes) a phase takes: ``max_upload`` when the organiser
        fixed one, else its collection's full-depth run (every candidate of every dialogue)
        at :data:`LINE_ALLOWANCE` bytes a line beyond the ids, twice over, and at least
        :data:`MAX_UPLOAD` (a 10x SIGIR-sized collection's is about 120 MB). Without a
        phase: the largest of any open phase's (the request body's cap)."""
        if self.config.max_upload is not None:
            return self.config.max_upload
        if phase is None:
            return max([self._open_limit(p) for p in self.phases.all() if p.frozen_at is None], default=MAX_UPLOAD)
        return self._limit_of(self.phase_data(phase))

    def _limit_of(self, data: scoring.PhaseData) -> int:
        if self.config.max_upload is not None:
            return self.config.max_upload
        pairs = data.pairs()
        return max(MAX_UPLOAD, 2 * (pairs.id_chars + LINE_ALLOWANCE * len(pairs.docs)))

    # -- quotas ------------------------------------------------------------
    def quota(self, team: Team, phase: Phase, session: Session | None = None, now: datetime | None = None) -> dict[str, Any]:
        """Used and left today (UTC day, of ``now``) and in total, with the reset time; None =
        no limit."""
        day, params = _quota_params(team, phase, now)
        if session is None:
            with read_session(self.engine) as s:
                total, today = s.execute(QUOTA_COUNT, params).one()
        else:
            total, today = session.execute(QUOTA_COUNT, params).one()
        return quota_left(team, phase, day, int(today), int(total))

    # -- submitting --------------------------------------------------------
    def submit(
        self,
        team: Team,
        phase: Phase,
        data: bytes,
        filename: str,
        meta: Metadata,
        sidecar: bytes | None = None,
        baseline: bool = False,
        key: str | None = None,
        member_id: int | None = None,
    ) -> Accepted:
        """Check, score, store and record one run; returns the row and the client's answer.

        Raises :class:`Refused` when the run is not accepted (nothing is stored then).
        ``key`` (the client's ``Idempotency-Key``): a retry of the same request gets the
        first answer back; the same key with any other field is refused (422). ``member_id``:
        who submitted it (recorded on the row).
        """
        with read_session(self.engine) as s:
            ready = self._intake(s, Intake(team, phase, data, filename, meta, sidecar, baseline, key, member_id))
        return ready if isinstance(ready, Accepted) else self._complete(ready)

    def submit_named(
        self,
        team: Team,
        collection: str,
        phase_name: str | None,
        data: bytes,
        filename: str,
        meta: Metadata,
        sidecar: bytes | None = None,
        key: str | None = None,
        member_id: int | None = None,
    ) -> Accepted:
        """:meth:`submit` to the phase a form names (``phase_name`` None or "": the collection's
        only phase), found in the same read as the retry and the quota: a 404 when there is
        none, a 422 when the name is wanting."""
        with read_session(self.engine) as s:
            if phase_name:
                phases = list(s.scalars(BY_NAME, {"collection": collection, "name": phase_name}))
            else:
                phases = list(s.scalars(OF_COLLECTION, {"collection": collection}))
            if len(phases) != 1:
                names = ", ".join(f"{p.collection}/{p.name}" for p in s.scalars(ALL_PHASES)) or "none"
                raise Refused(404 if not phases else 422, f"no single phase {collection}/{phase_name or '?'}; boards: {names}")
            ready = self._intake(s, Intake(team, phases[0], data, filename, meta, sidecar, False, key, member_id))
        return ready if isinstance(ready, Accepted) else self._complete(ready)

    def _intake(self, s: Session, job: Intake) -> Intake | Accepted:
        """What is checked before scoring, in one read session ``s``: the metadata, the season,
        the run unpacked within the phase's limit and its digests, then a retry's first answer
        (returned) and the quota before."""
        job.meta.check()
        phase = job.phase
        closed = phase.closed_reason(utcnow())
        if closed is not None and not (job.baseline and phase.frozen_at is None):  # baselines: any
            # time before the freeze (organisers load them before a phase opens)
            raise Refused(403, closed, opens_at=iso(phase.opens_at), closes_at=iso(phase.closes_at))
        job.spec = self.phase_spec(phase)
        job.pdata = self.phase_data(phase, job.spec)
        job.text = unpack_run(job.data, self._limit_of(job.pdata))
        job.digest = hashlib.sha256(job.text).hexdigest()
        job.published = published_from_sidecar(job.sidecar)
        job.display = display_name(job.filename)
        job.request = request_digest(phase.id, job.digest, job.display, job.meta, job.published)
        day, params = _quota_params(job.team, phase)
        total, today, key_row = s.execute(QUOTA_AND_KEY, {**params, "key": job.key}).one()
        if key_row is not None:  # a retry: its first answer (or 422 for another request)
            return self._replayed(get_row(s, Submission, key_row), job.request)
        job.before = quota_left(job.team, phase, day, int(today), int(total))
        return job

    def _complete(self, job: Intake) -> Accepted:
        """Score, stage, record: the rest of :meth:`submit` after :meth:`_intake`."""
        team, phase, text, meta = job.team, job.phase, job.text, job.meta
        if job.before["exhausted"]:  # a duplicate is told first, as when the quota is left
            self._refuse_duplicate(team, phase, self._ranking(text))
            raise Refused(429, "quota exhausted", quota=job.before)
        assert job.pdata is not None, "set by _intake"
        ranking, scored = self._score(team, phase, job.pdata, text, job.display, job.spec)
        assert scored.values is not None, "a scored run has values"
        row = Submission(
            phase_id=phase.id,
            team_id=team.id,
            system=meta.system,
            description=meta.description or "",
            link=meta.link,
            run_type=meta.run_type,
            trained_on_collection=meta.trained_on_collection,
            baseline=job.baseline,
            filename=job.display,
            sha256=job.digest,
            size=len(text),
            lines=scored.validation.lines,
            sidecar_json=json.dumps(job.published, sort_keys=True) if job.published else None,
            means_json=json.dumps(scored.means(job.pdata.subsets)),
            per_topic=scoring.matrix_bytes(scored.values.values),
            tied_topics=len(scored.validation.tied_topics),
            idempotency_key=job.key,
            member_id=job.member_id,
            request_sha256=job.request,
            ranking_sha256=ranking,
        )
        if release.uses_ladder(phase):
            release.warm()  # not under the write lock (the answer's ladder needs scipy)
        staged = self.store.stage(text)  # in place, fsynced, before the row names it
        try:
            accepted = self._record(row, team, phase, job.before, job.published)
        except BaseException as err:
            self.store.abandon(staged, named=self._named(job.digest))
            if isinstance(err, IntegrityError):  # a concurrent retry or duplicate won the race
                return self._after_conflict(team, job.key, job.request, phase, ranking)
            raise
        if accepted.replayed:  # the same request, sent to another thread or process, was first
            self.store.abandon(staged, named=True)
        else:
            self.store.finish(staged)
        return accepted

    def _ranking(self, text: bytes) -> str:
        """The run's ranking digest, parsed by a worker like :meth:`_score`'s runs."""
        if self.pool is not None and len(text) >= POOL_MIN_BYTES:
            return self.pool.digest(text)
        return ranking_digest(text)

    def _score(
        self, team: Team, phase: Phase, pdata: scoring.PhaseData, text: bytes, display: str, spec: scoring.PhaseSpec | None = None
    ) -> tuple[str, scoring.Scored]:
        """Parse once, validate (with the phase's tie policy) and score, in a worker or here:
        (the ranking's digest, the scores). An invalid run is refused (422); a duplicate of the
        team's own run (409) is found in the write transaction (:meth:`_record`: a valid run
        only can be a duplicate, since a stored run was valid)."""
        if self.pool is not None and len(text) >= POOL_MIN_BYTES:
            checked = self.pool.score(spec or self.phase_spec(phase), f"{phase.collection}/{phase.name}", text, phase.strict)
        else:
            checked = scoring.score_text(pdata, text, phase.strict, self.store.scratch)
        if checked.error is not None:  # the reader after the validator: should not happen, but say so
            raise Refused(422, f"{display}: {checked.error}")
        scored = checked.scored
        assert scored is not None, "checked without an error"
        validation = scored.validation
        if validation.valid:
            return checked.ranking, scored
        problems = [{"line": p.line, "message": p.message, "text": p.format(display)} for p in validation.problems]
        found = max(checked.problems, len(problems))
        message = f"{display}: {found} problem(s); the run is not valid" + (
            f" (the first {len(problems)} listed)" if found > len(problems) else ""
        )
        if phase.strict and validation.tied_topics:
            message += (
                f"; this board refuses runs whose scores tie as 32-bit floats "
                f"({len(validation.tied_topics)} topic(s)): dsr validate --fix-ties rewrites "
                "the run with distinct scores"
            )
        raise Refused(422, message, problems=problems, tied_topics=len(validation.tied_topics))

    def _record(self, row: Submission, team: Team, phase: Phase, before: dict, published: dict) -> Accepted:
        """The write transaction: under a lock, a retry of this request recorded meanwhile (its
        answer, replayed), then the team's rows on the board (one query: the duplicate, the quota
        counted again, the ladder's earlier runs), then the row with its answer (one INSERT; on
        a ladder phase the row first, whose id draws the noise of its values, then its answer).
        The answer stored for a retry leaves out the id and URL, which the row gives
        (:meth:`_replay`)."""
        with write_session(self.engine) as s:
            # The lock that makes the re-count exact across threads and processes: the team's
            # row (PostgreSQL); SQLite's BEGIN IMMEDIATE holds the database's write lock already.
            if s.get_bind().dialect.name != "sqlite":
                s.execute(LOCK_TEAM, {"team": team.id})
            # the team's rows on the board, once: its duplicate, its quota, its ladder's runs; and
            # the row of this request's key, on any board
            key = row.idempotency_key
            rows = s.execute(TEAM_ROWS, {"phase": phase.id, "team": team.id, "key": key}).all()
            keyed = next((r.id for r in rows if key is not None and r.idempotency_key == key), None)
            if keyed is not None:  # a retry of this request was recorded meanwhile: its answer
                return self._replayed(get_row(s, Submission, keyed), row.request_sha256)
            mine = [r for r in rows if r.phase_id == phase.id]
            same = next((r.id for r in mine if r.ranking_sha256 == row.ranking_sha256), None)
            if same is not None:
                raise duplicate(phase, same)
            row.created_at = utcnow()
            now_day = row.created_at.replace(hour=0, minute=0, second=0, microsecond=0)
            counted = quota_left(team, phase, now_day, sum(r.created_at >= now_day for r in mine), len(mine))
            if not team.organiser and counted["exhausted"]:
                raise Refused(429, "quota exhausted", quota=counted)
            earlier = [r.id for r in mine if not r.baseline]
            s.add(row)
            if release.uses_ladder(phase):  # the ladder's noise is drawn by the run's id: the row
                s.flush()  # first (its answer then follows in an UPDATE)
            answer = {
                "sha256": row.sha256,
                "lines": row.lines,
                # a final phase publishes no score before it is frozen; a hidden one its ladder
                **answer_means(self, phase, row, s, earlier),
                "tied_topics": row.tied_topics,
                "ties": tie_note(row.tied_topics),
                "published": published,
                "quota_before": before,
                # this run counted: the count under the lock, plus this row
                "quota": quota_left(team, phase, now_day, counted["daily_used"] + 1, counted["total_used"] + 1),
            }
            row.answer_json = json.dumps(answer)
            s.flush()
            if row.baseline and phase.baseline_id is None:
                fresh = get_row(s, Phase, row.phase_id)
                if fresh.baseline_id is None:
                    fresh.baseline_id = row.id
        # the row as a read gives it (its team and phase joined), without reading it again
        set_committed_value(row, "team", team)
        set_committed_value(row, "phase", phase)
        return Accepted(row, answered(row, answer))

    def _replay(self, team: Team, key: str | None, request: str) -> Accepted | None:
        """The first answer to this request if its ``Idempotency-Key`` was sent before with the
        same request; Refused (422) when the key came with another request."""
        if key is None:
            return None
        with read_session(self.engine) as s:
            row = s.scalar(BY_KEY, {"team": team.id, "key": key})
        if row is None:
            return None
        return self._replayed(row, request)

    @staticmethod
    def _replayed(row: Submission, request: str | None) -> Accepted:
        """The first answer of a key's row to a retry with request digest ``request``: Refused
        (422) when the key came with another request."""
        if row.request_sha256 != request:
            raise Refused(
                422,
                "this Idempotency-Key was sent before with another request (another "
                "run, board or field); send a new key with a new submission",
            )
        return Accepted(row, answered(row, json.loads(row.answer_json or "{}")), replayed=True)

    def _refuse_duplicate(self, team: Team, phase: Phase, ranking: str) -> None:
        """409 when this team has this ranking on this board already (other teams' runs are
        never looked at: whether another team submitted a run is not told)."""
        with read_session(self.engine) as s:
            first = s.scalar(SAME_RANKING, {"phase": phase.id, "team": team.id, "ranking": ranking})
        if first is not None:
            raise duplicate(phase, first)

    def _after_conflict(self, team: Team, key: str | None, request: str, phase: Phase, ranking: str) -> Accepted:
        first = self._replay(team, key, request)
        if first is not None:
            return first
        self._refuse_duplicate(team, phase, ranking)
        raise Refused(409, "a concurrent submission conflicts with this one: try again")

    # -- reading -----------------------------------------------------------
    def submission(self, submission_id: int) -> Submission | None:
        if not 1 <= submission_id <= MAX_ID:  # no row has it (and PostgreSQL would refuse it)
            return None
        with read_session(self.engine) as s:
            return s.get(Submission, submission_id)

    def submissions(self, phase: Phase) -> list[Submission]:
        with read_session(self.engine) as s:
            return list(s.scalars(select(Submission).where(Submission.phase_id == phase.id).order_by(Submission.id)))

    def matrix(self, sub: Submission, n_measures: int) -> np.ndarray:
        """The row's per-topic values (topics x measures), cached by id and its phase's
        ``scores_version`` (a row changes only by ``dsr board rebuild``, in any process, which
        raises the version: every process then reads the rows again)."""
        return self.matrix_of(sub.id, n_measures, sub.phase)

    def matrix_of(self, submission_id: int, n_measures: int, phase: Phase) -> np.ndarray:
        def read() -> Any:
            with read_session(self.engine) as s:
                blob = s.scalar(PER_TOPIC, {"id": submission_id})
            if blob is None:
                raise LookupError(f"submission {submission_id} has no per-topic values")
            return scoring.matrix_from_bytes(blob, n_measures)

        return self.cache.matrix(phase.id, phase.scores_version, submission_id, read)


def duplicate(phase: Phase, first: int) -> Refused:
    """The 409 of a team's second submission of a ranking on a board (``first``: its row)."""
    return Refused(
        409,
        f"your team submitted this ranking on {phase.collection}/{phase.name} already: /runs/{first}; it was not stored again",
        first=f"/runs/{first}",
    )


def answered(row: Submission, answer: dict[str, Any]) -> dict[str, Any]:
    """A stored answer (``answer_json``) as the client gets it: the row's id and URL first."""
    return {"id": row.id, "url": f"/runs/{row.id}", **answer}


def _quota_params(team: Team, phase: Phase, now: datetime | None = None) -> tuple[datetime, dict[str, Any]]:
    """The UTC day of ``now`` (default: now) and :data:`QUOTA_COUNT`'s parameters for it."""
    day = (now or utcnow()).replace(hour=0, minute=0, second=0, microsecond=0)
    return day, {"day": day, "phase": phase.id, "team": team.id}


def quota_left(team: Team, phase: Phase, day: datetime, today: int, total: int) -> dict[str, Any]:
    """A quota answer from the counts of the team's runs on the board (today: since ``day``,
    midnight UTC) and in all; None = no limit."""
    daily_left = None if phase.daily_quota is None else max(0, phase.daily_quota - today)
    total_left = None if phase.total_quota is None else max(0, phase.total_quota - total)
    limited = not team.organiser and (daily_left == 0 or total_left == 0)
    return {
        "daily_limit": phase.daily_quota,
        "daily_used": today,
        "daily_left": daily_left,
        "total_limit": phase.total_quota,
        "total_used": total,
        "total_left": total_left,
        "resets_at": (day + timedelta(days=1)).isoformat() + "Z",
        "exhausted": limited,
    }


@dataclass
class Intake:
    """A submission on its way (:meth:`Board.submit`): what was sent, then what
    :meth:`Board._intake` made of it."""

    team: Team
    phase: Phase
    data: bytes
    filename: str
    meta: Metadata
    sidecar: bytes | None
    baseline: bool
    key: str | None
    member_id: int | None
    spec: scoring.PhaseSpec | None = None
    pdata: scoring.PhaseData | None = None
    text: bytes = b""
    digest: str = ""
    published: dict[str, Any] = field(default_factory=dict)
    display: str = ""
    request: str = ""
    before: dict[str, Any] = field(default_factory=dict)


@dataclass
class Accepted:
    """A stored submission and the answer its client got (``replayed``: a retry's)."""

    row: Submission
    answer: dict[str, Any]
    replayed: bool = False
