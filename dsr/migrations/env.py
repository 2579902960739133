"""Alembic environment: runs on the connection :func:`dsr.db.engine.migrate` passes in."""

from alembic import context

import dsr.board.models  # (declares the board's tables on Base)
import dsr.judging.models  # noqa: F401  (declares judging's tables on Base)
from dsr.db.base import Base

# The migrations are explicit operations; the metadata is autogenerate's reference, and sees
# every table: the board's and judging's models are both declared on the one Base
# (tests/test_migrations.py compares it with the chain's head).

config = context.config
connection = config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run the migrations through dsr.db.engine.migrate")
context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=connection.dialect.name == "sqlite")
with context.begin_transaction():
    context.run_migrations()
