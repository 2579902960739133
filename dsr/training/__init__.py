"""Training a dialogue reranker from a collection's (weak) labels.

Layer 12 of 15 (dsr/layers.toml): it may import the ``dsr.core`` files, ``dsr.indexes``,
``dsr.collections``, ``dsr.rankers``, ``dsr.rerankers``, ``dsr.open_retrieval``,
``dsr.evaluation``, ``dsr.interchange``, ``dsr.pyterrier``, ``dsr.web``, ``dsr.db``,
``dsr.board``, ``dsr.judging``, ``dsr.migrations`` and ``dsr.server``.

``pairs`` turns dialogues into (query, sentence, target) training pairs,
``finetune`` fine-tunes a sentence-transformers cross-encoder on them,
``heldout`` measures the result on dialogues kept out of training, and
``card`` writes the model card. ``dsr.training.recipe`` is the ``dsr train``
command that strings them together.

Nothing here imports torch at module level except ``finetune``, which the
command imports only when it runs.
"""
