"""A hidden phase's group names: ``phases.groups_json``, {subset in the collection file: the name
the board and the participant file show}. Null: the file's own names. A subset derived from a
field the participant file withholds (CMU_DoG's ``section3`` is the withheld ``meta.docIdx``
3) is given a neutral name by default; the organiser can name any (``add-phase
--subset-name OLD=NEW``).

Revision ID: 0008
Revises: 0007 (scale out)
Create Date: 2026-12-06
"""

import sqlalchemy as sa
from alembic import op

revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column('phases', sa.Column('groups_json', sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('phases') as batch:
        batch.drop_column('groups_json')
