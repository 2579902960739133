"""The one Alembic chain of the database the board and judging share (every table of both).

Layer 10 of 15 (dsr/layers.toml): it may import the ``dsr.core`` files, ``dsr.indexes``,
``dsr.collections``, ``dsr.rankers``, ``dsr.rerankers``, ``dsr.open_retrieval``,
``dsr.evaluation``, ``dsr.interchange``, ``dsr.pyterrier``, ``dsr.web``, ``dsr.db``,
``dsr.board`` and ``dsr.judging``.
"""
