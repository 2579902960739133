"""judging campaigns: campaigns, dialogues, tasks, items, assessors, assignments, grades

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23
"""

from alembic import op
import sqlalchemy as sa


revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:
    _campaigns_assessors_dialogues()
    _tasks_assignments_items_grades()


def _campaigns_assessors_dialogues() -> None:
    """judge_campaigns, judge_assessors, judge_dialogues, judge_web_sessions."""
    op.create_table('judge_campaigns',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=100), nullable=False),
    sa.Column('description', sa.Text(), nullable=False),
    sa.Column('guidelines_json', sa.Text(), nullable=False),
    sa.Column('k', sa.Integer(), nullable=False),
    sa.Column('chunk', sa.Integer(), nullable=False),
    sa.Column('honeypot_rate', sa.Float(), nullable=False),
    sa.Column('threshold', sa.Float(), nullable=False),
    sa.Column('min_checks', sa.Integer(), nullable=False),
    sa.Column('seed', sa.Integer(), nullable=False),
    sa.Column('pool_json', sa.Text(), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('name')
    )
    op.create_table('judge_assessors',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('token_hash', sa.String(length=64), nullable=True),
    sa.Column('origin', sa.String(length=20), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('name'),
    sa.UniqueConstraint('token_hash')
    )
    op.create_table('judge_dialogues',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('campaign_id', sa.Integer(), nullable=False),
    sa.Column('position', sa.Integer(), nullable=False),
    sa.Column('dialogue_id', sa.String(length=500), nullable=False),
    sa.Column('data_json', sa.Text(), nullable=False),
    sa.ForeignKeyConstraint(['campaign_id'], ['judge_campaigns.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('campaign_id', 'dialogue_id', name='uq_judge_dialogue')
    )
    with op.batch_alter_table('judge_dialogues', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_judge_dialogues_campaign_id'), ['campaign_id'], unique=False)

    op.create_table('judge_web_sessions',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('key_hash', sa.String(length=64), nullable=False),
    sa.Column('assessor_id', sa.Integer(), nullable=False),
    sa.Column('expires_at', sa.DateTime(), nullable=False),
    sa.ForeignKeyConstraint(['assessor_id'], ['judge_assessors.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('key_hash')
    )


def _tasks_assignments_items_grades() -> None:
    """judge_tasks, judge_assignments, judge_items, judge_grades."""
    op.create_table('judge_tasks',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('campaign_id', sa.Integer(), nullable=False),
    sa.Column('seq', sa.Integer(), nullable=False),
    sa.Column('dialogue_pk', sa.Integer(), nullable=False),
    sa.Column('size', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['campaign_id'], ['judge_campaigns.id'], ),
    sa.ForeignKeyConstraint(['dialogue_pk'], ['judge_dialogues.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('campaign_id', 'seq', name='uq_judge_task_seq')
    )
    with op.batch_alter_table('judge_tasks', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_judge_tasks_campaign_id'), ['campaign_id'], unique=False)

    op.create_table('judge_assignments',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('task_id', sa.Integer(), nullable=False),
    sa.Column('assessor_id', sa.Integer(), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.ForeignKeyConstraint(['assessor_id'], ['judge_assessors.id'], ),
    sa.ForeignKeyConstraint(['task_id'], ['judge_tasks.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('task_id', 'assessor_id', name='uq_judge_assignment')
    )
    with op.batch_alter_table('judge_assignments', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_judge_assignments_assessor_id'), ['assessor_id'], unique=False)

    op.create_table('judge_items',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('campaign_id', sa.Integer(), nullable=False),
    sa.Column('task_id', sa.Integer(), nullable=False),
    sa.Column('position', sa.Integer(), nullable=False),
    sa.Column('key', sa.String(length=32), nullable=False),
    sa.Column('candidate_id', sa.String(length=500), nullable=True),
    sa.Column('title', sa.Text(), nullable=False),
    sa.Column('body', sa.Text(), nullable=False),
    sa.Column('gold', sa.Integer(), nullable=True),
    sa.Column('source', sa.String(length=20), nullable=False),
    sa.ForeignKeyConstraint(['campaign_id'], ['judge_campaigns.id'], ),
    sa.ForeignKeyConstraint(['task_id'], ['judge_tasks.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('key')
    )
    with op.batch_alter_table('judge_items', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_judge_items_campaign_id'), ['campaign_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_judge_items_task_id'), ['task_id'], unique=False)

    op.create_table('judge_grades',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('item_id', sa.Integer(), nullable=False),
    sa.Column('assessor_id', sa.Integer(), nullable=False),
    sa.Column('grade', sa.Integer(), nullable=True),
    sa.Column('unsure', sa.Boolean(), nullable=False),
    sa.Column('seconds', sa.Float(), nullable=True),
    sa.Column('source', sa.String(length=20), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('updated_at', sa.DateTime(), nullable=False),
    sa.ForeignKeyConstraint(['assessor_id'], ['judge_assessors.id'], ),
    sa.ForeignKeyConstraint(['item_id'], ['judge_items.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('item_id', 'assessor_id', name='uq_judge_grade')
    )
    with op.batch_alter_table('judge_grades', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_judge_grades_assessor_id'), ['assessor_id'], unique=False)


def downgrade() -> None:
    for table in ('judge_grades', 'judge_items', 'judge_assignments', 'judge_tasks',
                  'judge_web_sessions', 'judge_dialogues', 'judge_assessors', 'judge_campaigns'):
        op.drop_table(table)
