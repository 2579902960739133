"""One Alembic revision per change of the board's database schema, in order.

Part of ``dsr.board``, layer 7 of 13 (dsr/layers.toml): it may import the ``dsr.core`` files,
``dsr.indexes``, ``dsr.collections``, ``dsr.rankers``, ``dsr.rerankers``,
``dsr.open_retrieval``, ``dsr.evaluation``, ``dsr.interchange`` and ``dsr.web``.
"""
