"""Every run dsr writes is scored in the order it is written.

trec_eval (pytrec_eval, ir_measures) keeps scores as 32-bit floats and breaks
ties by doc id, descending. These tests check that runs written by dsr have no
float32 ties, and that ``dsr``'s Evaluator gives exactly the values of a plain
evaluator that reads the written file and walks it in score order.
"""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from dsr.core.run import Run, read_trec_run
from dsr.evaluation.measures import Evaluator
from tools.plain_eval import plain_measure

ROOT = Path(__file__).resolve().parents[2]
MEASURES = ["RR", "P@1", "P@5", "nDCG@1", "nDCG@5", "nDCG@10", "nDCG@100", "AP", "R@10", "R@1000"]


# --- a plain evaluator, independent of dsr and trec_eval ---------------------------------


def plain_walk(path: Path) -> dict[str, list[str]]:
    """topic -> doc ids in the order the FILE's scores say (highest first), read with
    Python's float; asserts the file has no tie, not even as float32, and that the rank
    column agrees with the scores."""
    topics: dict[str, list[tuple[float, int, str]]] = {}
    for line in path.read_text().splitlines():
        qid, q0, doc, rank, score, _tag = line.split()
        assert q0 == "Q0"
        topics.setdefault(qid, []).append((float(score), int(rank), doc))
    order = {}
    for qid, rows in topics.items():
        rows.sort(key=lambda r: -r[0])
        scores32 = [np.float32(r[0]) for r in rows]
        assert all(b < a for a, b in zip(scores32, scores32[1:])), f"a float32 tie in {qid}"
        assert [r[1] for r in rows] == list(range(1, len(rows) + 1))
        order[qid] = [r[2] for r in rows]
    return order


# --- the minimal case of the issue ---------------------------------------------------------


def test_minimal_case_two_scores_equal_in_float32(tmp_path):
    # distinct as 64-bit floats, equal as 32-bit floats; the relevant document is second
    # by score but has the larger doc id, so a doc-id tie-break would put it first
    run = Run.from_scores({"q": {"a": 10.839401064536501, "z": 10.8394010645365}})
    assert run.top("q") == ["a", "z"]
    qrels = {"q": {"a": 0, "z": 1}}
    evaluator = Evaluator(qrels, ["RR"], ["q"])
    assert evaluator(run).values[0, 0] == 0.5
    run.write(tmp_path / "min.run")
    assert plain_walk(tmp_path / "min.run") == {"q": ["a", "z"]}
    assert evaluator(Run.read(tmp_path / "min.run")).values[0, 0] == 0.5
    # what pytrec_eval makes of the written file's scores, read as text
    text_scores = {line.split()[2]: float(line.split()[4]) for line in (tmp_path / "min.run").read_text().splitlines()}
    assert evaluator({"q": text_scores}).values[0, 0] == 0.5


def test_written_scores_parse_back_through_c_atof_and_a_float32_cast(tmp_path):
    # trec_eval reads a score with atof() and keeps it as a C float: do exactly that
    import ctypes
    import ctypes.util

    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    libc.atof.restype = ctypes.c_double
    libc.atof.argtypes = [ctypes.c_char_p]
    rng = np.random.default_rng(5)
    values = np.concatenate(
        [
            rng.normal(size=300) * 10.0 ** rng.integers(-40, 39, size=300),
            [0.0, -0.0, 1e-45, -1e-45, 1e-39, 3e38, -3e38, 1e300, -1e300],
        ]
    )
    run = Run.from_scores({"q": {f"d{i}": float(v) for i, v in enumerate(values)}})
    run.write(tmp_path / "c.run")
    held = dict(run.rankings["q"])
    for line in (tmp_path / "c.run").read_text().splitlines():
        doc, text = line.split()[2], line.split()[4]
        as_c_float = ctypes.c_float(libc.atof(text.encode())).value
        assert as_c_float == held[doc] == float(text)
        assert as_c_float == 0.0 or abs(as_c_float) >= np.finfo(np.float32).tiny  # no subnormals


# --- the property -----------------------------------------------------------------------


@st.composite
def topics(draw):
    """A few topics; each a seed, a size (up to 10,000) and how often scores collide."""
    n_topics = draw(st.integers(1, 3))
    return [
        (
            draw(st.integers(0, 2**32 - 1)),
            draw(st.sampled_from([1, 2, 3, 7, 50, 300, 2000])),
            draw(st.floats(0, 1)),
            draw(st.sampled_from(["normal", "small ints", "tiny", "huge"])),
        )
        for _ in range(n_topics)
    ]


def make_scores(seed: int, n: int, collide: float, kind: str) -> tuple[dict[str, float], dict[str, int], list[str]]:
    """Scores with exact ties, near-ties (a few ulps apart in 64 bits, or equal in 32 bits),
    zeros of both signs, subnormals and negatives; graded labels; a random initial order."""
    rng = np.random.default_rng(seed)
    base = {
        "normal": rng.normal(size=n) * 10,
        "small ints": rng.integers(-3, 4, size=n).astype(float),
        "tiny": rng.normal(size=n) * 1e-38,
        "huge": rng.normal(size=n) * 1e37,
    }[kind]
    values = base.tolist()
    for i in range(1, n):
        if rng.random() < collide:
            j = int(rng.integers(0, i))
            how = rng.integers(0, 6)
            if how == 0:
                values[i] = values[j]  # exact tie
            elif how == 1:
                values[i] = float(np.nextafter(values[j], math.inf * rng.choice([-1, 1])))  # 1 ulp
            elif how == 2:
                values[i] = values[j] * (1 + 1e-12)  # equal in float32
            elif how == 3:
                values[i] = float(rng.choice([0.0, -0.0, 5e-324, -1e-320, 1e-40]))
            elif how == 4:
                values[i] = -abs(values[j])
            else:
                values[i] = float(np.float32(values[j]))  # exactly a float32
    docs = [f"s{i:05d}" for i in rng.permutation(n)]
    labels = {d: int(g) for d, g in zip(docs, rng.choice([0, 0, 0, 1, 2], size=n))}
    initial = [docs[i] for i in rng.permutation(n)]
    return dict(zip(docs, values)), labels, initial


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(topics())
@example([(1, 10_000, 0.5, "small ints"), (2, 10_000, 0.3, "normal")])
@example([(3, 2000, 0.9, "tiny"), (4, 50, 0.9, "huge")])
def test_evaluator_equals_a_plain_walk_of_the_written_file(tmp_path, spec):
    scores, qrels, initial = {}, {}, {}
    for k, (seed, n, collide, kind) in enumerate(spec):
        qid = f"q{k}"
        scores[qid], qrels[qid], initial[qid] = make_scores(seed, n, collide, kind)
    run = Run.from_scores(scores, initial_order=initial)
    path = tmp_path / "p.run"
    run.write(path)
    walked = plain_walk(path)
    # the file holds the tie rule's order: score (64-bit), then initial rank, then id
    for qid, doc_scores in scores.items():
        rank = {d: i for i, d in enumerate(initial[qid])}
        assert walked[qid] == sorted(doc_scores, key=lambda d: (-doc_scores[d], rank[d], d))
    expected = np.array([[plain_measure(m, walked[q], qrels[q]) for m in MEASURES] for q in scores])
    evaluator = Evaluator(qrels, MEASURES, list(scores))
    np.testing.assert_allclose(evaluator(read_trec_run(path)).values, expected, rtol=0, atol=1e-9)
    np.testing.assert_allclose(evaluator(run).values, expected, rtol=0, atol=1e-9)


def test_dsr_evaluate_cli_agrees_with_the_plain_walk(tmp_path):
    """End to end: `dsr run` on the bundled sample, `dsr evaluate --per-topic`, plain walk."""
    import json

    from dsr.collections import load_collection

    collection = load_collection("sample")
    out = tmp_path / "bm25.run"
    cli = [sys.executable, "-m", "dsr.cli"]
    subprocess.run(cli + ["run", "sample", "--ranker", "bm25", "--out", str(out)], cwd=ROOT, check=True, capture_output=True)
    done = subprocess.run(
        cli + ["evaluate", "sample", str(out), "--measures", *MEASURES, "--quiet", "--per-topic", str(tmp_path / "pt.jsonl")],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    walked = plain_walk(out)
    qrels = {d.id: {c.id: c.label for c in d.candidates} for d in collection}
    for row in map(json.loads, (tmp_path / "pt.jsonl").read_text().splitlines()):
        for m in MEASURES:
            assert abs(row["values"][m] - plain_measure(m, walked.get(row["topic"], []), qrels[row["topic"]])) <= 1e-9
