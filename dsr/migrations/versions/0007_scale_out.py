"""issue 44 (item 4): a board served by several processes keeps what they must agree on in
the database

* ``team_rates``: the per-team rate limit (``dsr serve --rate-limit``), one row per team
  that has submitted: ``next_at``, the generic cell rate algorithm's theoretical arrival
  time (seconds since the epoch); every process updates it in one statement, so N
  processes grant a team exactly the rate one would (it was held in the server's memory);
* ``phases.scores_version``: raised whenever a phase's stored scores change (``dsr board
  rebuild``); each process keys its caches of per-topic values and ladders by it, and reads
  it with the phase row every request reads anyway, so a change made by any process is seen
  by all at their next request.

Revision ID: 0007
Revises: 0006 (judge review)
Create Date: 2026-11-27
"""

import sqlalchemy as sa
from alembic import op

revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('team_rates',
                    sa.Column('team_id', sa.Integer(), nullable=False),
                    sa.Column('next_at', sa.Float(), nullable=False),
                    sa.ForeignKeyConstraint(['team_id'], ['teams.id'], ),
                    sa.PrimaryKeyConstraint('team_id'))
    op.add_column('phases', sa.Column('scores_version', sa.Integer(), nullable=False, server_default='0'))


def downgrade() -> None:
    with op.batch_alter_table('phases') as batch:
        batch.drop_column('scores_version')
    op.drop_table('team_rates')
