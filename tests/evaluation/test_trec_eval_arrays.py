"""``dsr trec_eval``'s two engines held equal: the arrays (:mod:`dsr.evaluation.trec_eval_fast`)
against the reference (pytrec_eval, trec_eval's C, and the ports; a Python object per line),
on random and adversarial files: scores that tie as float32 and not as doubles, near-ties one
float32 step apart, negative grades, unjudged and unpooled documents, topics the run lacks
(10.0 stops there, or scores them under -c), empty rankings (-M 0, -J with nothing judged),
documents listed or judged twice, topics judged only negatively, levels from -2 to 3, named
gains; and files the arrays must read themselves (topics out of order, scores not sorted, ties
whose doc ids are not in order, ids of more than 8 bytes, tabs, header lines), over several
blocks of topics. The binaries themselves are the fixtures' and tools/trec_eval_differential.py's."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsr.core.errors import InputError
from dsr.evaluation import trec_eval_arrays, trec_eval_fast
from dsr.evaluation.trec_eval_measures import select
from dsr.evaluation.trec_eval_tool import Options, Stopped, trec_eval

MEASURES = [
    ["all_trec"],
    ["official", "relstring.5"],
    ["P.1,3", "ndcg_cut.2,3", "map_cut.2", "recall.1", "success.1,2"],
    ["ndcg.1=0.5,3=7", "Rndcg.2=1.4,0=0.3", "G.1=2.5,2=0.2", "ndcg_rel.1=2"],
    ["iprec_at_recall.0,0.35,1", "11pt_avg.0.25,0.5", "Rprec_mult.0.5,2", "set_F.0.5", "utility.1,-2,0.5,1"],
]


def outcome(qrels: Path, run: Path, options: Options, engine: str) -> tuple[str, str]:
    """(what is printed, how it ends: "ok", the stop's message, or the refusal's)."""
    try:
        return trec_eval(qrels, run, options, engine=engine).text, "ok"
    except Stopped as stopped:
        return stopped.printed, f"stopped: {stopped}"
    except InputError as err:
        return "", f"refused: {err}"


def random_files(rng: random.Random, folder: Path) -> tuple[Path, Path]:
    topics = [f"q{i}" for i in range(rng.randint(1, 7))]
    qrels, run = [], []
    for t in topics:
        docs = [f"d{j}" for j in range(rng.randint(1, 14))]
        only_negative = (t == "q0" and rng.random() < 0.15) or rng.random() < 0.04
        for doc in rng.sample(docs, rng.randint(1, len(docs))):
            grades = [-1] if only_negative else [-1, -2, 0, 0, 1, 1, 2, 3, 11]
            qrels.append(f"{t} 0 {doc} {rng.choice(grades)}")
            if rng.random() < 0.005:
                qrels.append(f"{t} 0 {doc} {rng.choice(grades)}")
        if rng.random() < 0.92:
            for k, doc in enumerate(rng.sample(docs + ["u1", "u2"], rng.randint(1, len(docs) + 2))):
                run.append(f"{t} Q0 {doc} {k} {_score(rng)} tag")
                if rng.random() < 0.005:
                    run.append(f"{t} Q0 {doc} {k} {_score(rng)} tag")
    if not run:
        run.append(f"{topics[0]} Q0 d0 1 1 tag")
    if rng.random() < 0.3:  # topics and scores out of order
        rng.shuffle(run)
    (folder / "qrels").write_text("\n".join(qrels) + "\n")
    (folder / "run").write_text("\n".join(run) + "\n")
    return folder / "qrels", folder / "run"


def _score(rng: random.Random) -> str:
    choice = rng.random()
    if choice < 0.3:
        return rng.choice(["0.3", "0.30000001", "0.5", "2", "-0", "0", "1e39", "3e38", "inf", "-inf"])
    if choice < 0.5:  # one float32 step apart: ties under 9.0.8 for some, not for 10.0
        base = np.float32(rng.random())
        return repr(float(np.nextafter(base, np.float32(2), dtype=np.float32)) - rng.choice([0, 1e-9]))
    return repr(round(rng.random(), rng.choice([1, 2, 7])))


def random_options(rng: random.Random, release: str) -> Options:
    return Options(
        release=release,
        measures=rng.choice(MEASURES),
        per_topic=rng.random() < 0.7,
        complete=rng.random() < 0.3,
        judged_only=rng.random() < 0.3,
        summary=rng.random() < 0.9,
        max_docs=rng.choice([None, None, 0, 1, 3]),
        level=rng.choice([1, 1, 2, 3, 0, -1, -2]),
        num_docs=rng.choice([0, 50]),
    )


def test_the_arrays_print_what_the_reference_prints_on_random_files(tmp_path):
    rng = random.Random(66)
    covered = stopped = 0
    for _ in range(150):
        qrels, run = random_files(rng, tmp_path)
        for release in ("9.0.8", "10.0"):
            options = random_options(rng, release)
            fast = trec_eval_fast.evaluate(qrels, run, options, select(options.measures, release), set())
            assert fast is not None, "plain files without a NaN score: the arrays read them"
            covered += 1
            arrays, reference = outcome(qrels, run, options, "auto"), outcome(qrels, run, options, "reference")
            assert arrays == reference, (release, options, qrels.read_text(), run.read_text())
            stopped += arrays[1].startswith("stopped")
    assert covered == 300 and 10 < stopped < 120  # the stops were reached, and the rest evaluated


def test_files_out_of_order_with_long_ids_tabs_and_headers_over_several_blocks(tmp_path, monkeypatch):
    """Topics interleaved, scores not sorted, ties whose doc ids are out of order, ids of 3
    words, a tab-separated run with header lines: the arrays sort them as trec_eval does, over
    blocks of a few topics each."""
    monkeypatch.setattr(trec_eval_arrays, "BLOCK_CELLS", 64)
    rng = random.Random(7)
    qrels, run = [], ["# ir_metadata: a header", "# second line"]
    for t in range(40):
        docs = [f"clueweb09-en{rng.randint(0, 99):04d}-{j:02d}" for j in range(rng.randint(1, 30))]
        docs = sorted(set(docs))
        for doc in rng.sample(docs, max(1, len(docs) // 2)):
            qrels.append(f"topic{t} 0 {doc} {rng.choice([0, 1, 2, -1])}")
        for doc in docs:
            run.append(f"topic{t}\tQ0\t{doc}\t0\t{rng.choice(['1', '0.5', repr(rng.random())])}\tlong")
    qrels_path, run_path = tmp_path / "qrels", tmp_path / "run"
    qrels_path.write_text("\n".join(qrels) + "\n")
    rng.shuffle(body := run[2:])
    run_path.write_text("\n".join(run[:2] + body) + "\n")
    for release in ("9.0.8", "10.0"):
        for measures in (["all_trec"], ["P.5", "ndcg_cut.10", "relstring.30"]):
            options = Options(release=release, measures=measures, per_topic=True, complete=True)
            assert trec_eval_fast.evaluate(qrels_path, run_path, options, select(measures, release), set()) is not None
            assert outcome(qrels_path, run_path, options, "auto") == outcome(qrels_path, run_path, options, "reference")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    steps=st.lists(st.integers(min_value=0, max_value=3), min_size=1, max_size=12),
    grades=st.lists(st.integers(min_value=-2, max_value=3), min_size=12, max_size=12),
    start=st.floats(min_value=-2.0, max_value=2.0, allow_nan=False, width=32),
    level=st.integers(min_value=-2, max_value=3),
)
def test_near_ties_one_float32_step_apart(tmp_path, steps, grades, start, level):
    """Scores a few float32 steps apart (and equal), in both releases' readings."""
    scores = [np.float32(start)]
    for step in steps[1:]:
        value = scores[-1]
        for _ in range(step):
            value = np.nextafter(value, np.float32(-10), dtype=np.float32)
        scores.append(value)
    docs = [f"d{i}" for i in range(len(scores))]
    (tmp_path / "qrels").write_text("".join(f"t 0 {d} {g}\n" for d, g in zip(docs, grades)))
    (tmp_path / "run").write_text("".join(f"t Q0 {d} 0 {float(s)!r} x\n" for d, s in zip(docs[::-1], scores[::-1])))
    for release in ("9.0.8", "10.0"):
        options = Options(release=release, measures=["all_trec"], per_topic=True, level=level)
        assert outcome(tmp_path / "qrels", tmp_path / "run", options, "auto") == outcome(
            tmp_path / "qrels", tmp_path / "run", options, "reference"
        )


@pytest.mark.parametrize(
    "text",
    [
        "t Q0 d 1 nan x\n",  # a NaN: glibc's merge sort decides its place
        "t  Q0 d 1 1 x\n",  # two spaces
        "t Q0 d 1 1 x extra\n",  # a seventh column
        "t Q0 d 1 1 x\n# a comment below\n",
        "t Q0 dé 1 1 x\n",  # not ASCII
        "t Q0 d 1 1.5abc x\n",  # a score C reads only in part: the reference's error
    ],
)
def test_what_the_arrays_leave_to_the_reference(tmp_path, text):
    (tmp_path / "qrels").write_text("t 0 d 1\n")
    (tmp_path / "run").write_bytes(text.encode())
    options = Options(measures=["official"])
    assert trec_eval_fast.evaluate(tmp_path / "qrels", tmp_path / "run", options, select(["official"], "9.0.8"), set()) is None
    assert outcome(tmp_path / "qrels", tmp_path / "run", options, "auto") == outcome(
        tmp_path / "qrels", tmp_path / "run", options, "reference"
    )
