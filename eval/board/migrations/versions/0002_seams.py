"""PLACEHOLDER for the leaderboard's 0002 (branch ``board``, same file name): take theirs

The judging tables' migration (0003) follows the leaderboard's 0002 ("seams"), written
on the ``board`` branch. Until that branch is merged, this empty revision keeps the
chain 0001 -> 0002 -> 0003 whole. It has the same file name as the real one on purpose:
merging the two branches then stops on this file, and the board's version replaces
this one as a whole.

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
