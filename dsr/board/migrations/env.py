"""Alembic environment: runs on the connection ``dsr.board.db.migrate`` passes in."""

from alembic import context

from dsr.board.models import Base

# The migrations are explicit operations; the metadata is only autogenerate's reference.
# The judging tables (dsr.judging.models) share the database but not this package: judging
# sits on the board, never the other way round (docs/architecture.md).

config = context.config
connection = config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run the board's migrations through dsr.board.db.migrate")
context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=connection.dialect.name == "sqlite")
with context.begin_transaction():
    context.run_migrations()
