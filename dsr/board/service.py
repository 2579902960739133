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
3. the run is validated and scored (``scoring.check_and_score``, with the
   phase's tie policy); an invalid run is refused with the validator's
   messages and nothing is stored;
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
import secrets
import threading
import time
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.exc import IntegrityError

from dsr.board import release, scoring
from dsr.board.archive import RunStore, Staged
from dsr.board.client import quota_text  # noqa: F401 (re-exported)
from dsr.board.db import make_engine, migrate, read_session, sqlite_url, write_session
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
from dsr.board.models import Member, Phase, Setting, Submission, Team, WebSession, iso, utcnow
from dsr.board.published import check_text
from dsr.core.errors import InputError
from dsr.core.home import dsr_home, require_writable

MAX_UPLOAD = 20 * 1024 * 1024
#: the largest id a row can have (PostgreSQL ``integer``); larger ones name no row
MAX_ID = 2**31 - 1
TIES = ("{n} topic(s) hold scores that tie as 32-bit floats; they are scored as trec_eval "
        "orders them, by doc id, descending (dsr validate --fix-ties rewrites a run with "
        "distinct scores)")


def tie_note(tied: int) -> str | None:
    """What a board says about a run whose scores tie in ``tied`` topics (None for none)."""
    return TIES.format(n=tied) if tied else None


def board_home() -> Path:
    """``$DSR_HOME/board``: the embedded database and the run store."""
    return dsr_home() / "board"


def default_db_url() -> str:
    return sqlite_url(board_home() / "board.sqlite")


def hash_token(token: str) -> str:
    """Tokens are 256 random bits, so one sha256 is enough (no salt or slow hash needed)."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


#: the first member ``add-team`` makes (``--member`` names another)
FIRST_MEMBER = "lead"


def new_token() -> str:
    return "dsr_" + secrets.token_urlsafe(32)


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

    def check_folders(self) -> None:
        """The store's folder and an SQLite database's folder can be written, else an
        InputError naming the folder (a read-only DSR_HOME, a --store on a read-only disk)."""
        from sqlalchemy.engine import make_url

        try:
            url = make_url(self.db_url())
        except Exception:     # make_engine names a bad URL
            url = None
        if url is not None and url.get_backend_name() == "sqlite" and url.database \
                and url.database != ":memory:":
            require_writable(Path(url.database).parent, "set DSR_HOME to a writable folder or give --db"
                             if self.db is None else "give --db a file in a writable folder")
        require_writable(self.store_dir(), "set DSR_HOME to a writable folder or give --store"
                         if self.store is None else "give --store a writable folder")


@dataclass
class Board:
    """A database and a run store, with the phases' scoring data cached."""

    config: BoardConfig = field(default_factory=BoardConfig)

    def __post_init__(self):
        self.config.check_folders()
        self.engine = make_engine(self.config.db_url())
        migrate(self.engine)
        self.store = RunStore(self.config.store_dir())
        self.limiter = RateLimiter(self.config.rate_per_minute)
        self._phase_data: dict[tuple[int, str], scoring.PhaseData] = {}
        self._matrices: dict[int, Any] = {}
        self._lock = threading.Lock()
        self.recover()

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
            if self._named(digest) and hashlib.sha256(path.read_bytes()).hexdigest() == digest:
                self.store.finish(staged)
                done["kept"] += 1
            else:
                self.store.abandon(staged, named=self._named(digest))
                done["removed"] += 1
        return done

    def _named(self, digest: str) -> bool:
        """Whether a row names this run file."""
        with read_session(self.engine) as s:
            return s.scalar(select(Submission.id).where(Submission.sha256 == digest).limit(1)) is not None

    def close(self) -> None:
        self.engine.dispose()

    # -- teams, members and tokens ----------------------------------------
    def add_team(self, name: str, organiser: bool = False, member: str = FIRST_MEMBER) -> str | None:
        """Create a team and its first member (``member``); returns that member's token (shown
        once: only its hash is kept). The organisers' team gets no member (None)."""
        name = name.strip()
        if not name or len(name) > 100:
            raise InputError("a team name is 1 to 100 characters", field="NAME")
        check_text(name, "NAME")
        with write_session(self.engine) as s:
            if s.scalar(select(Team).where(Team.name == name)):
                raise InputError(f"team {name!r} exists already", field="NAME")
            # retired column: the hash of a secret nobody keeps (members hold the tokens)
            s.add(Team(name=name, token_hash=hash_token(new_token()), organiser=organiser))
        return None if organiser else self.add_member(name, member)

    def identify(self, token: str | None) -> tuple[Team, Member] | None:
        """The team and member of a token, None for a wrong, rotated or revoked one."""
        if not token:
            return None
        with read_session(self.engine) as s:
            member = s.scalar(select(Member).where(Member.token_hash == hash_token(token),
                                                   Member.removed_at.is_(None)))
            if member is None:
                return None
            return s.get(Team, member.team_id), member

    def team_for_token(self, token: str | None) -> Team | None:
        found = self.identify(token)
        return None if found is None else found[0]

    def member_active(self, member_id: int | None) -> bool:
        """Whether a member (of a browser session) still holds a token."""
        if member_id is None:
            return False
        with read_session(self.engine) as s:
            member = s.get(Member, member_id)
        return member is not None and member.removed_at is None and member.token_hash is not None

    def login_secret(self) -> bytes:
        """The board's secret that binds a login form to its browser (migration 0005 makes it)."""
        secret = getattr(self, "_login_secret", None)
        if secret is None:
            with read_session(self.engine) as s:
                row = s.get(Setting, "login_secret")
            secret = self._login_secret = bytes.fromhex(row.value)
        return secret

    def team(self, name: str) -> Team:
        """A team by name, else an InputError naming it."""
        with read_session(self.engine) as s:
            team = s.scalar(select(Team).where(Team.name == name))
        if team is None:
            raise InputError(f"no team {name!r} on this board (dsr board list shows them)", field="TEAM")
        return team

    def add_member(self, team_name: str, name: str, email: str = "") -> str:
        """Add a person to a team; returns their token (shown once: only its hash is kept). A
        removed member's name can be added again (a new token; its old runs stay its own)."""
        team = self.team(team_name)
        if team.organiser:     # its runs skip quotas: they come in by add-baseline only
            raise InputError(f"{team_name!r} is the organisers' team: baselines are added with "
                             "dsr board add-baseline, not by a member's token", field="TEAM")
        name = _member_name(name)
        check_text(email, "--email")
        token = new_token()
        with write_session(self.engine) as s:
            row = s.scalar(select(Member).where(Member.team_id == team.id, Member.name == name))
            if row is not None and row.removed_at is None:
                raise InputError(f"{name!r} is a member of {team_name!r} already "
                                 "(dsr board rotate-token gives them a new token)", field="NAME")
            if row is None:
                row = Member(team_id=team.id, name=name)
                s.add(row)
            row.email, row.token_hash, row.removed_at, row.added_at = email.strip(), hash_token(token), None, utcnow()
        return token

    def remove_member(self, team_name: str, name: str) -> list[Member]:
        """Take a person off a team: their token and browser sessions stop working at once
        (401 on the next request); their submissions stay recorded as theirs."""
        row = self._active_member(team_name, name)
        with write_session(self.engine) as s:
            member = s.get(Member, row.id)
            member.token_hash, member.removed_at = None, utcnow()
            s.execute(delete(WebSession).where(WebSession.member_id == row.id))
        return self.members(self.team(team_name))

    def rotate_token(self, team_name: str, name: str) -> str:
        """A new token for a member (shown once); the old one and the member's browser
        sessions stop working at once."""
        row = self._active_member(team_name, name)
        token = new_token()
        with write_session(self.engine) as s:
            s.get(Member, row.id).token_hash = hash_token(token)
            s.execute(delete(WebSession).where(WebSession.member_id == row.id))
        return token

    def _active_member(self, team_name: str, name: str) -> Member:
        team = self.team(team_name)
        name = _member_name(name)
        with read_session(self.engine) as s:
            row = s.scalar(select(Member).where(Member.team_id == team.id, Member.name == name,
                                                Member.removed_at.is_(None)))
        if row is None:
            raise InputError(f"{name!r} is not a member of {team_name!r} (dsr board list shows them)",
                             field="NAME")
        return row

    def members(self, team: Team, removed: bool = False) -> list[Member]:
        """A team's members (``removed``: those taken off too), by name."""
        with read_session(self.engine) as s:
            query = select(Member).where(Member.team_id == team.id).order_by(Member.name)
            if not removed:
                query = query.where(Member.removed_at.is_(None))
            return list(s.scalars(query))

    def runs_by_member(self) -> dict[tuple[int, int | None], int]:
        """How many runs each (team, member) submitted (member None: baselines, and runs of
        before migration 0005, whose member is not known)."""
        with read_session(self.engine) as s:
            rows = s.execute(select(Submission.team_id, Submission.member_id, func.count())
                             .group_by(Submission.team_id, Submission.member_id))
            return {(team, member): int(n) for team, member, n in rows}

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
                             [(name, "--phase"), (description, "--description"), (display or "", "--name")])
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
            release.refuse_overlaps(self._overlaps(f"{display}/{name}", topics, labels, data.subsets,
                                                   min_dialogues, (display, name)))
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
                                 field="--phase")
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
        minimum = (phase.min_dialogues or scoring.MIN_DIALOGUES) if phase.hidden else None
        key = (phase.id, hashlib.sha256("\n".join([phase.collection_hash, phase.measures_json,
                                                    phase.topics_json, phase.labels_json or "",
                                                    str(minimum)])
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
                                            json.loads(phase.measures_json), min_dialogues=minimum)
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
               sidecar: bytes | None = None, baseline: bool = False,
               key: str | None = None, member_id: int | None = None) -> Accepted:
        """Check, score, store and record one run; returns the row and the client's answer.

        Raises :class:`Refused` when the run is not accepted (nothing is stored then).
        ``key`` (the client's ``Idempotency-Key``): a retry of the same request gets the
        first answer back; the same key with any other field is refused (422). ``member_id``:
        who submitted it (recorded on the row).
        """
        meta.check()
        closed = phase.closed_reason(utcnow())
        if closed is not None and not (baseline and phase.frozen_at is None):   # baselines: any time
            # before the freeze (organisers load them before a phase opens)
            raise Refused(403, closed, opens_at=iso(phase.opens_at), closes_at=iso(phase.closes_at))
        text = unpack_run(data, self.config.max_upload)
        digest = hashlib.sha256(text).hexdigest()
        published = published_from_sidecar(sidecar)
        display = display_name(filename)
        request = request_digest(phase.id, digest, display, meta, published)
        first = self._replay(team, key, request)
        if first is not None:
            return first
        ranking = ranking_digest(text)
        self._refuse_duplicate(team, phase, ranking)
        before = self.quota(team, phase)
        if before["exhausted"]:
            raise Refused(429, "quota exhausted", quota=before)
        pdata = self.phase_data(phase)
        scored = self._score(pdata, phase, text, display)
        row = Submission(phase_id=phase.id, team_id=team.id, system=meta.system,
                         description=meta.description or "", link=meta.link, run_type=meta.run_type,
                         trained_on_collection=meta.trained_on_collection, baseline=baseline,
                         filename=display, sha256=digest, size=len(text), lines=scored.validation.lines,
                         sidecar_json=json.dumps(published, sort_keys=True) if published else None,
                         means_json=json.dumps(scored.means(pdata.subsets)),
                         per_topic=scoring.matrix_bytes(scored.values.values),
                         tied_topics=len(scored.validation.tied_topics), idempotency_key=key,
                         member_id=member_id, request_sha256=request,
                         ranking_sha256=ranking)
        staged = self.store.stage(text)        # in place, fsynced, before the row names it
        try:
            accepted = self._record(row, before, published)
        except BaseException as err:
            self.store.abandon(staged, named=self._named(digest))
            if isinstance(err, IntegrityError):    # a concurrent retry or duplicate won the race
                return self._after_conflict(team, key, request, phase, ranking)
            raise
        self.store.finish(staged)
        return accepted

    def _score(self, pdata: scoring.PhaseData, phase: Phase, text: bytes, display: str) -> scoring.Scored:
        """Validate (with the phase's tie policy) and score; an invalid run is Refused."""
        with self.store.scratch(text) as scratch:
            try:
                scored = scoring.check_and_score(pdata, scratch, strict=phase.strict)
            except InputError as err:   # the reader after the validator: should not happen, but say so
                raise Refused(422, f"{display}: {err.message}") from None
        validation = scored.validation
        if validation.valid:
            return scored
        problems = [{"line": p.line, "message": p.message, "text": p.format(display)}
                    for p in validation.problems]
        message = f"{display}: {len(problems)} problem(s); the run is not valid"
        if phase.strict and validation.tied_topics:
            message += (f"; this board refuses runs whose scores tie as 32-bit floats "
                        f"({len(validation.tied_topics)} topic(s)): dsr validate --fix-ties rewrites "
                        "the run with distinct scores")
        raise Refused(422, message, problems=problems, tied_topics=len(validation.tied_topics))

    def _record(self, row: Submission, before: dict, published: dict) -> Accepted:
        """The write transaction: the quota again, under a lock, then the row and its answer."""
        with write_session(self.engine) as s:
            # The lock that makes the re-count exact (a no-op on SQLite, whose
            # BEGIN IMMEDIATE already holds the database's write lock).
            locked = s.scalar(select(Team).where(Team.id == row.team_id).with_for_update())
            fresh = s.get(Phase, row.phase_id)
            if not locked.organiser and self.quota(locked, fresh, s)["exhausted"]:
                raise Refused(429, "quota exhausted", quota=self.quota(locked, fresh, s))
            row.created_at = utcnow()
            s.add(row)
            s.flush()
            if row.baseline and fresh.baseline_id is None:
                fresh.baseline_id = row.id
            answer = {"id": row.id, "url": f"/runs/{row.id}", "sha256": row.sha256, "lines": row.lines,
                      # a final phase publishes no score before it is frozen; a hidden one its ladder
                      **answer_means(self, fresh, row),
                      "tied_topics": row.tied_topics,
                      "ties": tie_note(row.tied_topics), "published": published,
                      "quota_before": before,
                      "quota": self.quota(locked, fresh, s)}   # this run counted, in the same transaction
            row.answer_json = json.dumps(answer)
        return Accepted(row, answer)

    def _replay(self, team: Team, key: str | None, request: str) -> Accepted | None:
        """The first answer to this request if its ``Idempotency-Key`` was sent before with the
        same request; Refused (422) when the key came with another request."""
        if key is None:
            return None
        with read_session(self.engine) as s:
            row = s.scalar(select(Submission).where(Submission.team_id == team.id,
                                                    Submission.idempotency_key == key))
        if row is None:
            return None
        if row.request_sha256 != request:
            raise Refused(422, "this Idempotency-Key was sent before with another request (another "
                               "run, board or field); send a new key with a new submission")
        return Accepted(row, json.loads(row.answer_json), replayed=True)

    def _refuse_duplicate(self, team: Team, phase: Phase, ranking: str) -> None:
        """409 when this team has this ranking on this board already (other teams' runs are
        never looked at: whether another team submitted a run is not told)."""
        with read_session(self.engine) as s:
            first = s.scalar(select(Submission.id).where(Submission.phase_id == phase.id,
                                                         Submission.team_id == team.id,
                                                         Submission.ranking_sha256 == ranking))
        if first is not None:
            raise Refused(409, f"your team submitted this ranking on {phase.collection}/{phase.name} "
                               f"already: /runs/{first}; it was not stored again", first=f"/runs/{first}")

    def _after_conflict(self, team: Team, key: str | None, request: str, phase: Phase,
                        ranking: str) -> Accepted:
        first = self._replay(team, key, request)
        if first is not None:
            return first
        self._refuse_duplicate(team, phase, ranking)
        raise Refused(409, "a concurrent submission conflicts with this one: try again")

    # -- reading -----------------------------------------------------------
    def submission(self, submission_id: int) -> Submission | None:
        if not 1 <= submission_id <= MAX_ID:     # no row has it (and PostgreSQL would refuse it)
            return None
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


@dataclass
class Season:
    """What ``add-phase`` and ``set-phase`` set of a phase's season (None: leave / default)."""

    primary: str | None = None
    opens_at: Any = None          # naive UTC datetimes
    closes_at: Any = None
    final: bool | None = None

    def apply(self, phase: Phase, measures: list[str], keep: bool = False) -> None:
        """Set these on ``phase`` (``keep``: fields left None keep the phase's values)."""
        if self.primary is not None and self.primary not in measures:
            raise InputError(f"--primary {self.primary!r} is not a measure of this phase; it has "
                             f"{', '.join(measures)}", field="--primary")
        for name, value in (("primary_measure", self.primary), ("opens_at", self.opens_at),
                            ("closes_at", self.closes_at), ("final", self.final)):
            if value is not None or not keep:
                setattr(phase, name, value if value is not None or name != "final" else False)
        if phase.opens_at and phase.closes_at and phase.closes_at <= phase.opens_at:
            raise InputError("the phase would close before it opens", field="--closes")


@dataclass
class Accepted:
    """A stored submission and the answer its client got (``replayed``: a retry's)."""

    row: Submission
    answer: dict[str, Any]
    replayed: bool = False


def _member_name(name: str) -> str:
    name = name.strip()
    if not name or len(name) > 200:
        raise InputError("a member's name is 1 to 200 characters", field="NAME")
    check_text(name, "NAME")
    return name


def _check_phase_options(hidden: bool, labels, daily_quota: int | None, total_quota: int | None,
                         min_dialogues: int | None, texts: list[tuple[str, str]]) -> None:
    if not hidden and labels is not None:
        raise InputError("labels are only loaded for hidden phases (public ones use the "
                         "collection's own)", field="--qrels")
    if min_dialogues is not None and (not hidden or min_dialogues < 1):
        raise InputError("--min-dialogues is a whole number >= 1, for hidden phases (public ones "
                         "publish per-dialogue values)", field="--min-dialogues")
    for value, flag in ((daily_quota, "--daily-quota"), (total_quota, "--total-quota")):
        if value is not None and value < 0:
            raise InputError("a quota is a whole number >= 0", field=flag)
    for text, flag in texts:
        check_text(text, flag, multiline=flag == "--description")
