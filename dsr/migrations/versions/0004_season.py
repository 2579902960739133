"""A season: a primary measure per phase, opening and closing dates, final phases, freezing

* ``phases.primary_measure``: the measure the board ranks, groups and gives intervals
  for (null: nDCG@5 when the phase has it, else its first measure);
* ``phases.opens_at`` / ``closes_at``: submissions outside them are refused (null: no bound);
* ``phases.final``: a final phase shows no score (board, run pages, API, answers)
  until it is frozen;
* ``phases.frozen_at``: a frozen board takes no submission and publishes a final
  phase's results;
* ``team_members``: the people on a team (``dsr board add-member``; never served).

Revision ID: 0004
Revises: 0003 (judging)
Create Date: 2026-11-24
"""

import sqlalchemy as sa
from alembic import op

revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column('phases', sa.Column('primary_measure', sa.String(length=100), nullable=True))
    op.add_column('phases', sa.Column('opens_at', sa.DateTime(), nullable=True))
    op.add_column('phases', sa.Column('closes_at', sa.DateTime(), nullable=True))
    op.add_column('phases', sa.Column('final', sa.Boolean(), server_default=sa.false(), nullable=False))
    op.add_column('phases', sa.Column('frozen_at', sa.DateTime(), nullable=True))
    op.create_table('team_members',
                    sa.Column('id', sa.Integer(), nullable=False),
                    sa.Column('team_id', sa.Integer(), nullable=False),
                    sa.Column('name', sa.String(length=200), nullable=False),
                    sa.Column('email', sa.String(length=300), nullable=False),
                    sa.Column('added_at', sa.DateTime(), nullable=False),
                    sa.ForeignKeyConstraint(['team_id'], ['teams.id']),
                    sa.PrimaryKeyConstraint('id'),
                    sa.UniqueConstraint('team_id', 'name', name='uq_member_team_name'))


def downgrade() -> None:
    op.drop_table('team_members')
    with op.batch_alter_table('phases', schema=None) as batch_op:
        for column in ('frozen_at', 'final', 'closes_at', 'opens_at', 'primary_measure'):
            batch_op.drop_column(column)
