"""Teams, their members and tokens: each member's own token, stored hashed and shown once;
removing a member or rotating a token revokes at once. :class:`Members` is a service of
:class:`dsr.board.service.Board` (``board.members``)."""

from __future__ import annotations

from sqlalchemy import bindparam, delete, func, select

from dsr.board.context import BoardContext
from dsr.board.models import Member, Submission, Team, WebSession, utcnow
from dsr.board.published import check_name, check_text
from dsr.board.settings import MEMBER
from dsr.core.errors import InputError
from dsr.db.engine import get_row, read_session, write_session
from dsr.db.tokens import hash_token, new_token

#: a token's team and member, read at every request with a token. Hot statements are built
#: once: SQLAlchemy keys its cache of compiled SQL by a digest it computes once per statement
#: object (a statement built per call costs that digest every time: 40 % of a short query)
IDENTIFY = (
    select(Team, Member)
    .join(Member, Member.team_id == Team.id)
    .where(Member.token_hash == bindparam("token_hash"), Member.removed_at.is_(None))
)

#: the longest e-mail address a member's row holds (String(300))
MAX_EMAIL = 300
#: the first member ``add-team`` makes (``--member`` names another)
FIRST_MEMBER = MEMBER.default


def _member_name(name: str) -> str:
    name = name.strip()
    if not name or len(name) > 200:
        raise InputError("a member's name is 1 to 200 characters", field="NAME")
    check_name(name, "NAME")
    return name


class Members:
    """The board's teams and members, on the database of a :class:`~dsr.board.context.BoardContext`
    (:class:`dsr.board.service.Board` holds one as ``board.members``)."""

    def __init__(self, context: BoardContext) -> None:
        self.context = context
        self.engine = context.engine

    # -- teams, members and tokens ----------------------------------------
    def add_team(self, name: str, organiser: bool = False, member: str = FIRST_MEMBER) -> str | None:
        """Create a team and its first member (``member``); returns that member's token (shown
        once: only its hash is kept). The organisers' team gets no member (None)."""
        name = name.strip()
        if not name or len(name) > 100:
            raise InputError("a team name is 1 to 100 characters", field="NAME")
        check_name(name, "NAME")
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
        with read_session(self.engine) as s:  # one query (every API request asks it)
            found = s.execute(IDENTIFY, {"token_hash": hash_token(token)}).first()
        return None if found is None else (found[0], found[1])

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
        if team.organiser:  # its runs skip quotas: they come in by add-baseline only
            raise InputError(
                f"{team_name!r} is the organisers' team: baselines are added with "
                "dsr board add-baseline, not by a member's token",
                field="TEAM",
            )
        name = _member_name(name)
        check_text(email, "email")
        if len(email.strip()) > MAX_EMAIL:
            raise InputError(f"an e-mail address is at most {MAX_EMAIL} characters (got {len(email.strip())})", field="email")
        token = new_token()
        with write_session(self.engine) as s:
            row = s.scalar(select(Member).where(Member.team_id == team.id, Member.name == name))
            if row is not None and row.removed_at is None:
                raise InputError(
                    f"{name!r} is a member of {team_name!r} already (dsr board rotate-token gives them a new token)", field="NAME"
                )
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
            member = get_row(s, Member, row.id)
            member.token_hash, member.removed_at = None, utcnow()
            s.execute(delete(WebSession).where(WebSession.member_id == row.id))
        return self.of_team(self.team(team_name))

    def rotate_token(self, team_name: str, name: str) -> str:
        """A new token for a member (shown once); the old one and the member's browser
        sessions stop working at once."""
        row = self._active_member(team_name, name)
        token = new_token()
        with write_session(self.engine) as s:
            get_row(s, Member, row.id).token_hash = hash_token(token)
            s.execute(delete(WebSession).where(WebSession.member_id == row.id))
        return token

    def _active_member(self, team_name: str, name: str) -> Member:
        team = self.team(team_name)
        name = _member_name(name)
        with read_session(self.engine) as s:
            row = s.scalar(select(Member).where(Member.team_id == team.id, Member.name == name, Member.removed_at.is_(None)))
        if row is None:
            raise InputError(f"{name!r} is not a member of {team_name!r} (dsr board list shows them)", field="NAME")
        return row

    def of_team(self, team: Team, removed: bool = False) -> list[Member]:
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
            rows = s.execute(
                select(Submission.team_id, Submission.member_id, func.count()).group_by(Submission.team_id, Submission.member_id)
            )
            return {(team, member): int(n) for team, member, n in rows}

    def organisers(self) -> Team:
        """The team baselines are filed under (created on first use, its token never shown)."""
        with read_session(self.engine) as s:
            team = s.scalar(select(Team).where(Team.name == "baselines"))
        if team is None:
            self.add_team("baselines", organiser=True)
            with read_session(self.engine) as s:
                team = s.scalar(select(Team).where(Team.name == "baselines"))
        assert team is not None, "made above"
        return team
