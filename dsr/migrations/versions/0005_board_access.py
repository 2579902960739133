"""Per-member tokens, who submitted what, requests bound to their key,
duplicates judged within a team, login forms bound to their browser

* ``team_members.token_hash`` (sha256 of a 256-bit secret, shown once) and ``removed_at``:
  every member has a token; removing a member (or rotating its token) revokes it at once;
* each team's old token becomes the token of a member named ``team token`` (so it keeps
  working and can be rotated or revoked like any member's); ``teams.token_hash`` is
  retired: it is set to the hash of a discarded random secret, which no token matches;
* ``submissions.member_id``: the member whose token submitted the run (null: before 0005
  or a baseline);
* ``submissions.request_sha256``: the digest of the whole request (board, run, metadata,
  sidecar): a retry with the same ``Idempotency-Key`` and any other field is refused;
* ``submissions.ranking_sha256``: the digest of the parsed ranking; the same ranking is
  refused once per team and board (it was once per board, whatever the team, on the
  file's bytes). Rows before 0005 get their file digest (``dsr board rebuild`` computes
  the ranking's);
* ``web_sessions.member_id``: the member logged in; browser sessions of before 0005 are
  ended (log in again with the member's token);
* ``board_settings``: the secret that binds a login form to its browser.

Revision ID: 0005
Revises: 0004 (season)
Create Date: 2026-11-25
"""

import hashlib
import secrets

import sqlalchemy as sa
from alembic import op

revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None

MIGRATED_MEMBER = "team token"


def upgrade() -> None:
    op.add_column('team_members', sa.Column('token_hash', sa.String(length=64), nullable=True))
    op.add_column('team_members', sa.Column('removed_at', sa.DateTime(), nullable=True))
    op.create_index('uq_member_token_hash', 'team_members', ['token_hash'], unique=True)
    op.add_column('submissions', sa.Column('member_id', sa.Integer(), nullable=True))
    op.add_column('submissions', sa.Column('request_sha256', sa.String(length=64), nullable=True))
    op.add_column('submissions', sa.Column('ranking_sha256', sa.String(length=64), nullable=True))
    op.add_column('web_sessions', sa.Column('member_id', sa.Integer(), nullable=True))
    op.create_table('board_settings',
                    sa.Column('name', sa.String(length=100), nullable=False),
                    sa.Column('value', sa.Text(), nullable=False),
                    sa.PrimaryKeyConstraint('name'))
    bind = op.get_bind()
    bind.execute(sa.text("INSERT INTO board_settings (name, value) VALUES ('login_secret', :v)"),
                 {"v": secrets.token_hex(32)})
    bind.execute(sa.text("DELETE FROM web_sessions"))
    bind.execute(sa.text("UPDATE submissions SET ranking_sha256 = sha256"))
    teams = bind.execute(sa.text("SELECT id, token_hash, created_at FROM teams WHERE NOT organiser")).all()
    for team_id, token_hash, created in teams:
        taken = {r[0] for r in bind.execute(sa.text("SELECT name FROM team_members WHERE team_id = :t"),
                                            {"t": team_id})}
        name = next(n for n in (MIGRATED_MEMBER, *(f"{MIGRATED_MEMBER} {i}" for i in range(2, 999)))
                    if n not in taken)
        bind.execute(sa.text("INSERT INTO team_members (team_id, name, email, added_at, token_hash) "
                             "VALUES (:t, :n, '', :a, :h)"),
                     {"t": team_id, "n": name, "a": created, "h": token_hash})
    for (team_id,) in bind.execute(sa.text("SELECT id FROM teams")).all():
        retired = hashlib.sha256(secrets.token_bytes(32)).hexdigest()
        bind.execute(sa.text("UPDATE teams SET token_hash = :h WHERE id = :t"), {"h": retired, "t": team_id})
    op.drop_index('uq_submission_phase_sha256', table_name='submissions')
    op.create_index('uq_submission_team_ranking', 'submissions', ['phase_id', 'team_id', 'ranking_sha256'],
                    unique=True)


def downgrade() -> None:
    # the team tokens are not restored (only their hashes were kept): teams need new ones
    op.drop_index('uq_submission_team_ranking', table_name='submissions')
    op.create_index('uq_submission_phase_sha256', 'submissions', ['phase_id', 'sha256'], unique=True)
    op.drop_table('board_settings')
    op.drop_index('uq_member_token_hash', table_name='team_members')
    for table, columns in (('web_sessions', ('member_id',)),
                           ('submissions', ('ranking_sha256', 'request_sha256', 'member_id')),
                           ('team_members', ('removed_at', 'token_hash'))):
        with op.batch_alter_table(table, schema=None) as batch_op:
            for column in columns:
                batch_op.drop_column(column)
