"""dsr: a benchmark toolkit for sentence retrieval in dialogue.

The domain lives here (records, collections, queries, rankers, rerankers);
what is built and kept on disk lives in ``indexes``; what is measured and
reported lives in ``eval``.
"""

__version__ = "0.1.0"
