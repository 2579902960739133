"""Alembic environment: runs on the connection ``dsr.board.db.migrate`` passes in."""

from alembic import context

from dsr.board.models import Base
import dsr.judging.models  # noqa: F401  (the judging tables share the metadata)

config = context.config
connection = config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run the board's migrations through dsr.board.db.migrate")
context.configure(connection=connection, target_metadata=Base.metadata,
                  render_as_batch=connection.dialect.name == "sqlite")
with context.begin_transaction():
    context.run_migrations()
