"""placeholder for the leaderboard's own 0002 (a no-op; DELETE this file when that lands)

The judging tables' migration (0003) follows the leaderboard's 0002, written on
another branch. Until that branch is merged, this empty revision keeps the chain
0001 -> 0002 -> 0003 whole; merging it must replace this file (two revisions
named 0002 make Alembic refuse to run).

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-23
"""

revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
