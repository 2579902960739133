"""The board's operations: tokens, phases, quotas and the submission transaction.

:class:`Board` binds a database and a run store; the web app, the admin
commands and the tests all go through it, so a run submitted from the browser,
the API or ``dsr board add-baseline`` takes the same path:

1. size and format checks (gzip is unpacked with a size cap, by the command line's reader);
2. the quota is checked (a fast refusal, nothing stored);
3. the run is validated and scored (``scoring.check_and_score``); an invalid
   run is refused with the validator's messages and nothing is stored;
4. the file goes into the content-addressed store (fsynced);
5. one write transaction re-checks the quota under a lock (SQLite
   ``BEGIN IMMEDIATE``; PostgreSQL ``SELECT ... FOR UPDATE`` on the team row)
   and inserts the row. Refused and invalid submissions never count.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import threading
import time
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import func, select

from eval.board import scoring
from eval.board.db import make_engine, migrate, read_session, sqlite_url, write_session
from eval.board.models import Phase, Submission, Team, utcnow
from eval.board.store import RunStore
from retrieval.errors import InputError
from retrieval.home import dsr_home
from retrieval.textfiles import TooLarge, unpack

RUN_TYPES = ("automatic", "manual")
MAX_UPLOAD = 20 * 1024 * 1024
MAX_SIDECAR = 256 * 1024


def board_home() -> Path:
    """``$DSR_HOME/board``: the embedded database and the run store."""
    return dsr_home() / "board"


def default_db_url() -> str:
    return sqlite_url(board_home() / "board.sqlite")


def hash_token(token: str) -> str:
    """Tokens are 256 random bits, so one sha256 is enough (no salt or slow hash needed)."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def new_token() -> str:
    return "dsr_" + secrets.token_urlsafe(32)


class Refused(Exception):
    """A submission that is not accepted: ``status`` is the HTTP status to answer with."""

    def __init__(self, status: int, message: str, problems: list[dict] | None = None,
                 quota: dict | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.problems = problems or []
        self.quota = quota


@dataclass
class Metadata:
    """What a participant says about a run (required on the form and the API)."""

    system: str
    description: str = ""
    link: str = ""
    run_type: str = "automatic"
    trained_on_collection: bool = False

    def check(self) -> "Metadata":
        self.system = (self.system or "").strip()
        if not self.system:
            raise Refused(422, "system name is required")
        if len(self.system) > 200:
            raise Refused(422, "system name is longer than 200 characters")
        if len(self.description or "") > 5000:
            raise Refused(422, "description is longer than 5000 characters")
        self.link = (self.link or "").strip()
        if len(self.link) > 500:
            raise Refused(422, "link is longer than 500 characters")
        if self.link and not self.link.startswith(("https://", "http://")):
            raise Refused(422, "link must start with https:// or http://")
        if self.run_type not in RUN_TYPES:
            raise Refused(422, f"run type must be one of {', '.join(RUN_TYPES)}")
        return self


class RateLimiter:
    """A token bucket per key (a team): ``per_minute`` requests, refilled continuously.

    Held in the server process (one limiter per ``dsr serve``)."""

    def __init__(self, per_minute: float):
        self.rate = per_minute / 60.0
        self.capacity = max(1.0, per_minute)
        self.buckets: dict[Any, tuple[float, float]] = {}
        self.lock = threading.Lock()

    def allow(self, key) -> float:
        """0 when allowed (and counted), else the seconds to wait."""
        if self.rate <= 0:
            return 0.0
        now = time.monotonic()
        with self.lock:
            tokens, last = self.buckets.get(key, (self.capacity, now))
            tokens = min(self.capacity, tokens + (now - last) * self.rate)
            if tokens >= 1:
                self.buckets[key] = (tokens - 1, now)
                return 0.0
            self.buckets[key] = (tokens, now)
            return (1 - tokens) / self.rate


@dataclass
class BoardConfig:
    db: str | None = None
    store: str | Path | None = None
    max_upload: int = MAX_UPLOAD
    rate_per_minute: float = 30.0

    def db_url(self) -> str:
        return self.db or default_db_url()

    def store_dir(self) -> Path:
        return Path(self.store) if self.store else board_home() / "runs"


@dataclass
class Board:
    """A database and a run store, with the phases' scoring data cached."""

    config: BoardConfig = field(default_factory=BoardConfig)

    def __post_init__(self):
        self.engine = make_engine(self.config.db_url())
        migrate(self.engine)
        self.store = RunStore(self.config.store_dir())
        self.limiter = RateLimiter(self.config.rate_per_minute)
        self._phase_data: dict[tuple[int, str], scoring.PhaseData] = {}
        self._matrices: dict[int, Any] = {}
        self._lock = threading.Lock()

    def close(self) -> None:
        self.engine.dispose()

    # -- teams and phases -------------------------------------------------
    def add_team(self, name: str, organiser: bool = False) -> str:
        """Create a team; returns its token (shown once: only its hash is kept)."""
        name = name.strip()
        if not name or len(name) > 100:
            raise InputError("a team name is 1 to 100 characters", field="NAME")
        token = new_token()
        with write_session(self.engine) as s:
            if s.scalar(select(Team).where(Team.name == name)):
                raise InputError(f"team {name!r} exists already", field="NAME")
            s.add(Team(name=name, token_hash=hash_token(token), organiser=organiser))
        return token

    def team_for_token(self, token: str | None) -> Team | None:
        if not token:
            return None
        with read_session(self.engine) as s:
            return s.scalar(select(Team).where(Team.token_hash == hash_token(token)))

    def organisers(self) -> Team:
        """The team baselines are filed under (created on first use, its token never shown)."""
        with read_session(self.engine) as s:
            team = s.scalar(select(Team).where(Team.name == "baselines"))
        if team is None:
            self.add_team("baselines", organiser=True)
            with read_session(self.engine) as s:
                team = s.scalar(select(Team).where(Team.name == "baselines"))
        return team

    def add_phase(self, collection_ref: str, name: str, *, hidden: bool = False,
                  labels: dict[str, dict[str, int]] | None = None, measures: list[str] | None = None,
                  daily_quota: int | None = None, total_quota: int | None = None,
                  description: str = "", display: str | None = None) -> Phase:
        """Add a board (or replace a phase's labels and quotas while it has no submission)."""
        collection = scoring.load_collection_ref(collection_ref)
        if hidden and labels is None:
            labels = scoring.qrels_from_collection(collection)
        if not hidden and labels is not None:
            raise InputError("labels are only loaded for hidden phases (public ones use the "
                             "collection's own)", field="--qrels")
        topics = scoring.phase_topics(collection, labels)
        measures = list(measures or scoring.default_measures())
        data = scoring.build_phase_data(collection, topics, labels, measures)  # checks measures
        for value, flag in ((daily_quota, "--daily-quota"), (total_quota, "--total-quota")):
            if value is not None and value < 0:
                raise InputError("a quota is a whole number >= 0", field=flag)
        display = display or collection.name
        with write_session(self.engine) as s:
            phase = s.scalar(select(Phase).where(Phase.collection == display, Phase.name == name))
            if phase is not None and s.scalar(select(func.count()).select_from(Submission)
                                              .where(Submission.phase_id == phase.id)):
                raise InputError(f"phase {display}/{name} has submissions; add a new phase instead",
                                 field="--phase")
            if phase is None:
                phase = Phase(collection=display, name=name)
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
        return phase

    def phases(self) -> list[Phase]:
        with read_session(self.engine) as s:
            return list(s.scalars(select(Phase).order_by(Phase.collection, Phase.id)))

    def phase(self, collection: str, name: str) -> Phase | None:
        with read_session(self.engine) as s:
            return s.scalar(select(Phase).where(Phase.collection == collection, Phase.name == name))

    def get_phase(self, collection: str, name: str | None) -> Phase:
        """A phase by collection and name (the only phase of the collection when name is None)."""
        with read_session(self.engine) as s:
            query = select(Phase).where(Phase.collection == collection)
            if name:
                query = query.where(Phase.name == name)
            found = list(s.scalars(query))
        if len(found) == 1:
            return found[0]
        if not found:
            raise InputError(f"no phase {name or ''!r} of {collection!r} on this board", field="--phase")
        raise InputError(f"{collection} has phases {', '.join(p.name for p in found)}: give --phase",
                         field="--phase")

    def phase_data(self, phase: Phase) -> scoring.PhaseData:
        key = (phase.id, hashlib.sha256("\n".join([phase.collection_hash, phase.measures_json,
                                                    phase.topics_json, phase.labels_json or ""])
                                         .encode()).hexdigest())
        with self._lock:
            data = self._phase_data.get(key)
        if data is None:
            collection = scoring.load_collection_ref(phase.collection_ref)
            if collection.content_hash != phase.collection_hash:
                raise InputError(f"the collection {phase.collection_ref!r} changed since phase "
                                 f"{phase.collection}/{phase.name} was added (hash "
                                 f"{collection.content_hash[:12]}… instead of {phase.collection_hash[:12]}…)")
            labels = json.loads(phase.labels_json) if phase.labels_json else None
            data = scoring.build_phase_data(collection, json.loads(phase.topics_json), labels,
                                            json.loads(phase.measures_json))
            with self._lock:
                self._phase_data[key] = data
        return data

    # -- quotas ------------------------------------------------------------
    def quota(self, team: Team, phase: Phase, session=None) -> dict[str, Any]:
        """Used and left today (UTC day) and in total, with the reset time; None = no limit."""
        now = utcnow()
        day = now.replace(hour=0, minute=0, second=0, microsecond=0)
        reset = day + timedelta(days=1)

        def count(s, since=None):
            query = (select(func.count()).select_from(Submission)
                     .where(Submission.phase_id == phase.id, Submission.team_id == team.id))
            if since is not None:
                query = query.where(Submission.created_at >= since)
            return int(s.scalar(query))

        if session is None:
            with read_session(self.engine) as s:
                today, total = count(s, day), count(s)
        else:
            today, total = count(session, day), count(session)
        daily_left = None if phase.daily_quota is None else max(0, phase.daily_quota - today)
        total_left = None if phase.total_quota is None else max(0, phase.total_quota - total)
        limited = not team.organiser and (daily_left == 0 or total_left == 0)
        return {"daily_limit": phase.daily_quota, "daily_used": today, "daily_left": daily_left,
                "total_limit": phase.total_quota, "total_used": total, "total_left": total_left,
                "resets_at": reset.isoformat() + "Z", "exhausted": limited}

    # -- submitting --------------------------------------------------------
    def submit(self, team: Team, phase: Phase, data: bytes, filename: str, meta: Metadata,
               sidecar: bytes | None = None, baseline: bool = False) -> tuple[Submission, dict, dict]:
        """Check, score, store and record one run: (the row, the quota before, the quota after).

        Raises :class:`Refused` when the run is not accepted (nothing is stored then).
        """
        meta.check()
        text = self._unpack(data)
        sidecar_json = self._sidecar(sidecar)
        before = self.quota(team, phase)
        if before["exhausted"]:
            raise Refused(429, "quota exhausted", quota=before)
        pdata = self.phase_data(phase)
        scratch = self.store.scratch(text)
        try:
            scored = scoring.check_and_score(pdata, scratch)
        except InputError as err:     # the reader after the validator: should not happen, but say so
            raise Refused(422, f"{_display_name(filename)}: {err.message}") from None
        finally:
            scratch.unlink(missing_ok=True)
        display = _display_name(filename)
        if not scored.validation.valid:
            problems = [{"line": p.line, "message": p.message, "text": p.format(display)}
                        for p in scored.validation.problems]
            raise Refused(422, f"{display}: {len(problems)} problem(s); the run is not valid",
                          problems=problems)
        digest = self.store.put(text)            # durable before the row that names it
        with write_session(self.engine) as s:
            # The lock that makes the re-count exact (a no-op on SQLite, whose
            # BEGIN IMMEDIATE already holds the database's write lock).
            locked = s.scalar(select(Team).where(Team.id == team.id).with_for_update())
            fresh = s.get(Phase, phase.id)
            if not locked.organiser and self.quota(locked, fresh, s)["exhausted"]:
                raise Refused(429, "quota exhausted", quota=self.quota(locked, fresh, s))
            row = Submission(phase_id=phase.id, team_id=team.id, system=meta.system,
                             description=meta.description or "", link=meta.link,
                             run_type=meta.run_type, trained_on_collection=meta.trained_on_collection,
                             baseline=baseline, filename=display, sha256=digest, size=len(text),
                             lines=scored.validation.lines, sidecar_json=sidecar_json,
                             means_json=json.dumps(scored.means(pdata.subsets)),
                             per_topic=scoring.matrix_bytes(scored.values.values),
                             created_at=utcnow())
            s.add(row)
            s.flush()
            if baseline and fresh.baseline_id is None:
                fresh.baseline_id = row.id
            after = self.quota(locked, fresh, s)      # this run counted, in the same transaction
        return row, before, after

    def _unpack(self, data: bytes) -> bytes:
        """The run's text: the upload, or every member of a gzip upload (the command line's
        reader, ``retrieval.textfiles.unpack``), capped at ``max_upload`` unpacked bytes."""
        limit = self.config.max_upload
        if len(data) > limit:
            raise Refused(413, f"the run file is larger than {limit} bytes")
        try:
            return unpack(data, limit)
        except TooLarge:
            raise Refused(413, f"the unpacked run file is larger than {limit} bytes") from None
        except InputError as err:
            raise Refused(422, f"the run file is not valid gzip: {err.message}") from None

    def _sidecar(self, sidecar: bytes | None) -> str | None:
        if not sidecar:
            return None
        if len(sidecar) > MAX_SIDECAR:
            raise Refused(413, f"the sidecar is larger than {MAX_SIDECAR} bytes")
        try:
            value = json.loads(sidecar.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as err:
            raise Refused(422, f"the sidecar is not JSON ({err})") from None
        if not isinstance(value, dict):
            raise Refused(422, "the sidecar must be a JSON object")
        return json.dumps(value, sort_keys=True)

    # -- reading -----------------------------------------------------------
    def submission(self, submission_id: int) -> Submission | None:
        with read_session(self.engine) as s:
            return s.get(Submission, submission_id)

    def submissions(self, phase: Phase) -> list[Submission]:
        with read_session(self.engine) as s:
            return list(s.scalars(select(Submission).where(Submission.phase_id == phase.id)
                                  .order_by(Submission.id)))

    def matrix(self, sub: Submission, n_measures: int):
        """The row's per-topic values (topics x measures), cached by id: a row never changes
        once written (``dsr board rebuild`` runs in its own process)."""
        cached = self._matrices.get(sub.id)
        if cached is None:
            with read_session(self.engine) as s:
                blob = s.scalar(select(Submission.per_topic).where(Submission.id == sub.id))
            cached = scoring.matrix_from_bytes(blob, n_measures)
            self._matrices[sub.id] = cached
        return cached


def _display_name(filename: str | None) -> str:
    """The uploaded file's base name, for display only (never used in a path)."""
    name = (filename or "run").replace("\\", "/").rsplit("/", 1)[-1]
    name = "".join(ch for ch in name if ch.isprintable())[:200]
    return name or "run"
