"""Interchange: dsr collections and runs in the formats other IR tools read.

Layer 5 of 15 (dsr/layers.toml): it may import the ``dsr.core`` files, ``dsr.indexes``,
``dsr.collections``, ``dsr.rankers``, ``dsr.rerankers``, ``dsr.open_retrieval`` and
``dsr.evaluation``, and ``dsr.pyterrier`` of its own layer where no loop forms.

A dsr collection is a test collection (topics = dialogues, a corpus = the
candidate sentences, graded qrels = the labels, plus each topic's candidate
list); these modules write it in the layouts that trec_eval, BEIR/MTEB, Hugging
Face ``datasets``, ir_datasets and PyTerrier load, and carry a run's
provenance in and out of run files (ir_metadata headers).

Why a unit above ``dsr.evaluation``: what is exported is what evaluation tools consume
(topics, qrels, a judged corpus, run metadata), built from the evaluator's own qrels
(:mod:`dsr.evaluation.qrels`); and nothing below imports it, so collections and runs know
nothing of other tools' formats.

=================  ==========================================================
``corpus``         the test-collection view of a collection: unique corpus
                   ids, documents, queries per strategy, qrels, candidates
``trec``           TREC topics (TSV and ``<top>`` format) and qrels
``beir``           BEIR's folder (corpus.jsonl, queries.jsonl, qrels/test.tsv)
``hf``             a Hugging Face ``datasets`` folder (configs in README.md)
``irds``           ir_datasets: registration of ``dsr/...`` ids and its
                   docs.tsv/queries.tsv/qrels layout
``folder``         an export folder written whole, and its manifest
=================  ==========================================================

``dsr export`` and ``dsr qrels`` are :mod:`dsr.cli.interchange`.

Run headers (ir_metadata) live beside the run format, in
:mod:`dsr.core.ir_metadata`: runs are the domain's, and the run reader uses them.
"""

from __future__ import annotations

from dsr.core import registry

# ``dsr export --format`` name -> module with ``NAME`` and ``write(view, folder) -> list[str]``
# (the registry's kind ``format``; another package's writer: the entry points ``dsr.formats``)
for _name, _module in {
    "trec": "dsr.interchange.trec",
    "beir": "dsr.interchange.beir",
    "ir_datasets": "dsr.interchange.irds",
    "hf": "dsr.interchange.hf",
}.items():
    registry.register("format", _name, _module)

#: the export formats' names (read when used)
FORMATS = registry.Names("format")
