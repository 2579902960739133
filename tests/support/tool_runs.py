"""Run files of the ``sample`` collection written by the tools participants use, with the tools
themselves: PyTerrier's ``pyterrier.io.write_results`` after ``pyterrier.model.add_ranks``
(ranks from 0), ranx's ``Run.save`` (no newline after the last line), and Anserini/pyserini's
line format with integer scores (impact indexes: many ties). All rank dsr's BM25 scores.

``tool_runs`` (session fixture): {"pyterrier": PATH, "ranx": PATH, "anserini": PATH}.
"""

from __future__ import annotations

from pathlib import Path

import pytest


def bm25_scores() -> dict[str, dict[str, float]]:
    from dsr.collections import load_collection
    from dsr.rankers import make_ranker

    run = make_ranker("bm25").rank(load_collection("sample"))
    return {q: dict(ranked) for q, ranked in run.rankings.items()}


def write_pyterrier(scores, path: Path) -> None:
    import pandas as pd
    import pyterrier as pt

    frame = pd.DataFrame([(q, d, s) for q, docs in scores.items() for d, s in docs.items()], columns=["qid", "docno", "score"])
    pt.io.write_results(pt.model.add_ranks(frame), str(path))
    assert not pt.java.started()  # no Java needed to write a run


def write_ranx(scores, path: Path) -> None:
    from ranx import Run

    Run(scores, name="ranx_run").save(str(path), kind="trec")


def write_anserini_integer_scores(scores, path: Path) -> None:
    """Anserini's and pyserini's ``qid Q0 docid rank %.6f tag`` lines, ranked by integer scores
    (as impact-index searches score) with ties kept in the order the searcher returned them."""
    with open(path, "w") as handle:
        for qid, docs in scores.items():
            ranked = sorted(docs.items(), key=lambda ds: -round(ds[1]))
            for rank, (doc, score) in enumerate(ranked, start=1):
                handle.write(f"{qid} Q0 {doc} {rank} {float(round(score)):.6f} Anserini\n")


@pytest.fixture(scope="session")
def tool_runs(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("tool_runs")
    patch = pytest.MonkeyPatch()
    patch.setenv("DSR_HOME", str(folder / "home"))
    try:
        scores = bm25_scores()
    finally:
        patch.undo()
    paths = {"pyterrier": folder / "pyterrier.res", "ranx": folder / "ranx.trec", "anserini": folder / "anserini.run"}
    write_pyterrier(scores, paths["pyterrier"])
    write_ranx(scores, paths["ranx"])
    write_anserini_integer_scores(scores, paths["anserini"])
    return paths
