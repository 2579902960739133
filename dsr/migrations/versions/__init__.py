"""One Alembic revision per change of the database's schema, in order (ids unchanged since they
were the board's).

Part of ``dsr.migrations``, layer 10 of 15 (dsr/layers.toml): it may import the ``dsr.core``
files, ``dsr.indexes``, ``dsr.collections``, ``dsr.rankers``, ``dsr.rerankers``,
``dsr.open_retrieval``, ``dsr.evaluation``, ``dsr.interchange``, ``dsr.pyterrier``,
``dsr.web``, ``dsr.db``, ``dsr.board`` and ``dsr.judging``.
"""
