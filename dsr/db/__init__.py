"""The database layer the board (:mod:`dsr.board`) and judging (:mod:`dsr.judging`) both stand
on: engines, sessions, the declarative base, tokens, the refusal type.

Layer 7 of 15 (dsr/layers.toml): it imports only the core files, though its layer would allow
more.

* :mod:`~dsr.db.engine` — engines (SQLite with WAL, PostgreSQL), sessions for reading and
  writing, and :func:`~dsr.db.engine.migrate`, which runs the one Alembic chain
  (``dsr/migrations``) on the database both applications share;
* :mod:`~dsr.db.base` — the declarative ``Base`` every table of the board and of judging
  is declared on (one metadata), ``utcnow``, and the columns of a browser session's table;
* :mod:`~dsr.db.tokens` — random tokens, stored hashed (teams' members and assessors);
* :mod:`~dsr.db.refused` — :class:`~dsr.db.refused.Refused`, what is not allowed, with the
  HTTP status to answer with.
"""
