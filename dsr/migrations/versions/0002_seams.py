"""Published metadata only, duplicates and retries, ties, small hidden subsets, CSRF per session

* ``submissions.sidecar_json`` keeps only the published allow-list
  (``dsr.board.published``): existing rows are rewritten;
* ``submissions``: ``tied_topics``, ``idempotency_key`` and ``answer_json``; the same
  run text once per phase (``uq_submission_phase_sha256``) and a key once per team;
* ``phases``: ``strict`` (tied runs refused) and ``min_dialogues`` (hidden subsets);
* ``web_sessions.csrf``: a session's CSRF token (sessions from before log in again).

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-23
"""

import json

import sqlalchemy as sa
from alembic import op
from dsr.board.published import published_metadata

revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def _published_only() -> None:

    bind = op.get_bind()
    table = sa.table("submissions", sa.column("id", sa.Integer), sa.column("sidecar_json", sa.Text))
    rows = bind.execute(sa.select(table.c.id, table.c.sidecar_json)
                        .where(table.c.sidecar_json.is_not(None))).all()
    for row_id, text in rows:
        try:
            kept = published_metadata(json.loads(text))
        except (ValueError, RecursionError):
            kept = {}
        bind.execute(table.update().where(table.c.id == row_id)
                     .values(sidecar_json=json.dumps(kept, sort_keys=True) if kept else None))


def _no_duplicates() -> None:
    bind = op.get_bind()
    found = bind.execute(sa.text("select phase_id, sha256, count(*) from submissions "
                                 "group by phase_id, sha256 having count(*) > 1")).all()
    if found:
        listed = ", ".join(f"phase {p} sha256 {h[:12]}… ({n} rows)" for p, h, n in found[:10])
        raise RuntimeError(f"the board holds the same run more than once on a board ({listed}); "
                           "remove the later copies before upgrading (a board holds a run once)")


def upgrade() -> None:
    # Plain ADD COLUMN and unique indexes: SQLite does both in place, so no table is
    # copied and dropped (which its foreign keys would refuse for phases).
    _no_duplicates()
    op.add_column('phases', sa.Column('strict', sa.Boolean(), server_default=sa.false(), nullable=False))
    op.add_column('phases', sa.Column('min_dialogues', sa.Integer(), nullable=True))
    op.add_column('submissions', sa.Column('tied_topics', sa.Integer(), server_default='0', nullable=False))
    op.add_column('submissions', sa.Column('idempotency_key', sa.String(length=200), nullable=True))
    op.add_column('submissions', sa.Column('answer_json', sa.Text(), nullable=True))
    op.create_index('uq_submission_phase_sha256', 'submissions', ['phase_id', 'sha256'], unique=True)
    op.create_index('uq_submission_team_key', 'submissions', ['team_id', 'idempotency_key'], unique=True)
    op.add_column('web_sessions', sa.Column('csrf', sa.String(length=64), nullable=True))
    _published_only()


def downgrade() -> None:
    with op.batch_alter_table('web_sessions', schema=None) as batch_op:
        batch_op.drop_column('csrf')
    op.drop_index('uq_submission_team_key', table_name='submissions')
    op.drop_index('uq_submission_phase_sha256', table_name='submissions')
    with op.batch_alter_table('submissions', schema=None) as batch_op:
        batch_op.drop_column('answer_json')
        batch_op.drop_column('idempotency_key')
        batch_op.drop_column('tied_topics')
    with op.batch_alter_table('phases', schema=None) as batch_op:
        batch_op.drop_column('min_dialogues')
        batch_op.drop_column('strict')
