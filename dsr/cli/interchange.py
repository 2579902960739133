"""``dsr export`` and ``dsr qrels``: a collection in other tools' formats.

The format writers (the registry's kind ``format``: ``dsr.interchange.FORMATS``, ir_datasets'
among them) are imported only when their format is asked for.
"""

from __future__ import annotations

import sys
from argparse import Namespace, _SubParsersAction
from pathlib import Path

from dsr.cli.common import add_collection_argument, add_command, add_param_flags, check_out, collection_from_args
from dsr.core import docs_url, registry
from dsr.core.errors import InputError
from dsr.evaluation.qrels import qrels_from_collection, write_qrels
from dsr.interchange import FORMATS
from dsr.interchange.corpus import QUERY, TestCollection
from dsr.interchange.folder import check_export_out, export_folder, write_manifest

EXPORT_EPILOG = """\
formats (each export also writes dsr_export.json: collection hash, query strategy, corpus-id rule, file sha256s):
  trec         topics.tsv, topics.trec (<top> format), qrels.txt (graded)
  beir         corpus.jsonl, queries.jsonl, qrels/test.tsv, candidates.jsonl
  hf           README.md (dataset configs), corpus/queries/qrels/candidates/dialogues .jsonl
  ir_datasets  docs.tsv, queries.tsv, qrels.trec, scoreddocs.run
See {docs} for loading each with its library.
""".format(docs=docs_url("interchange"))


def register(subparsers: _SubParsersAction) -> None:
    e = add_command(
        subparsers,
        "export",
        description="Write a collection's queries, corpus, graded qrels and candidate lists in "
        "the layout another IR tool loads. The folder is written whole or not at all.",
        epilog=EXPORT_EPILOG,
    )
    add_collection_argument(e)
    e.add_argument("--format", required=True, choices=sorted(FORMATS), help="layout to write")
    e.add_argument(
        "--out", required=True, metavar="DIR", help="folder to write (new, empty, or an earlier dsr export, which is replaced)"
    )
    add_param_flags(e, (QUERY,))
    e.set_defaults(func=cmd_export)

    q = add_command(
        subparsers,
        "qrels",
        description="Write the collection's labels as TREC qrels (qid 0 docid grade): every "
        "candidate of every dialogue, graded labels kept, judged non-relevant "
        "candidates with 0. FILE ending in .gz is gzip-compressed.",
    )
    add_collection_argument(q)
    q.add_argument("--out", required=True, metavar="FILE", help="qrels file to write (.gz: gzip)")
    q.set_defaults(func=cmd_qrels)


def cmd_export(args: Namespace) -> int:
    check_export_out(args.out)  # before the work: a folder of other files is refused
    collection = collection_from_args(args)
    if not any(d.candidates for d in collection):
        raise InputError(f"collection {collection.name!r} has no candidates to export (pool candidates for it first)")
    view = TestCollection.build(collection, args.query)
    writer = registry.get("format", args.format)
    with export_folder(args.out) as folder:
        files = writer.write(view, folder)
        write_manifest(folder, args.format, view.describe(), files)
    print(
        f"dsr: wrote {args.out} ({args.format}: {len(collection)} queries, {len(view.documents)} documents, {len(files)} files)",
        file=sys.stderr,
    )
    return 0


def cmd_qrels(args: Namespace) -> int:
    out = Path(args.out)
    check_out(out, "a qrels file name")
    qrels = qrels_from_collection(collection_from_args(args))
    write_qrels(qrels, out)
    print(f"dsr: wrote {out} ({len(qrels)} topics, {sum(len(d) for d in qrels.values())} judgements)", file=sys.stderr)
    return 0
