"""The judging review queue's decisions (``judge_reviews``): an adjudicator's
grade for an item, or the item sent back for more judgements, with who decided and when.

Revision ID: 0006
Revises: 0005 (board access)
Create Date: 2026-11-25
"""

import sqlalchemy as sa
from alembic import op

revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('judge_reviews',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('item_id', sa.Integer(), nullable=False),
    sa.Column('action', sa.String(length=20), nullable=False),
    sa.Column('grade', sa.Integer(), nullable=True),
    sa.Column('decided_by', sa.String(length=200), nullable=False),
    sa.Column('note', sa.Text(), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.ForeignKeyConstraint(['item_id'], ['judge_items.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_index(op.f('ix_judge_reviews_item_id'), 'judge_reviews', ['item_id'], unique=False)


def downgrade() -> None:
    op.drop_index(op.f('ix_judge_reviews_item_id'), table_name='judge_reviews')
    op.drop_table('judge_reviews')
