"""Run files on disk: exact round trips, the tie rule, sidecars, and no partial
outputs when a command fails."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np
import pytest

from dsr.cli import main
from dsr.core.data import read_benchmark
from dsr.core.fusion import TIE_RULE, fuse
from dsr.core.run import Run
from dsr.core.ties import strictly_decreasing
from dsr.rankers import make_ranker

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "runs_tiny.jsonl"

# Scores that a decimal printout would not survive: thirds, neighbours one ulp apart,
# the smallest subnormal, huge and tiny magnitudes, negatives.
AWKWARD = [1 / 3, math.nextafter(1 / 3, -math.inf), 0.1 + 0.2, 1e-300, 5e-324, 0.0, -0.1, -1 / 7, -1e300]


@pytest.fixture(scope="module")
def collection():
    return read_benchmark(FIXTURE)


def test_written_and_read_back_is_identical_to_the_last_bit(tmp_path):
    held = Run(
        {"q2": [(f"s{i}", s) for i, s in enumerate(AWKWARD)], "q1": [("only", 2.5)]}, tag="awkward", config={"note": "round trip"}
    )
    held.write(tmp_path / "held.run")
    # the file holds the float32 scores of the tie rule, in the order the Run held
    written = {q: strictly_decreasing(r) for q, r in held.rankings.items()}
    assert Run.read(tmp_path / "held.run").rankings == written
    assert [d for d, _ in written["q2"]] == [f"s{i}" for i in range(len(AWKWARD))]
    run = Run(written, tag="awkward", config={"note": "round trip"})
    path = tmp_path / "a.run"
    run.write(path)
    back = Run.read(path)
    assert back.rankings == run.rankings
    assert list(back.rankings) == ["q2", "q1"]  # topic order kept
    assert [s for _, s in back.rankings["q2"]] == [s for _, s in written["q2"]]  # bit for bit
    # every written score is exactly a float32, and they are distinct as float32
    scores = [s for _, s in back.rankings["q2"]]
    assert all(float(np.float32(s)) == s for s in scores)
    assert all(np.float32(b) < np.float32(a) for a, b in zip(scores, scores[1:]))
    assert back.tag == "awkward" and back.config == {"note": "round trip"}
    # and writing what was read gives the same bytes
    back.write(tmp_path / "b.run")
    assert (tmp_path / "b.run").read_bytes() == path.read_bytes()
    assert (tmp_path / "b.run.json").read_bytes() == (tmp_path / "a.run.json").read_bytes()


def test_cli_outputs_read_back_equal_the_rankings_in_memory(tmp_path, collection):
    out = tmp_path / "random.run"
    assert main(["run", str(FIXTURE), "--ranker", "random", "--param", "seed=7", "--out", str(out)]) == 0
    in_memory = make_ranker("random", seed=7).rank(collection)
    assert Run.read(out).rankings == in_memory.rankings

    assert main(["run", str(FIXTURE), "--ranker", "initial", "--out", str(tmp_path / "i.run")]) == 0
    assert (
        main(
            [
                "fuse",
                str(out),
                str(tmp_path / "i.run"),
                "--method",
                "combsum",
                "--param",
                "norm=zscore",
                "--collection",
                str(FIXTURE),
                "--out",
                str(tmp_path / "f.run"),
            ]
        )
        == 0
    )
    order = {d.id: collection.candidate_ids(d.id) for d in collection}
    expected = fuse([in_memory, make_ranker("initial").rank(collection)], "combsum", norm="zscore", initial_order=order)
    assert Run.read(tmp_path / "f.run").rankings == expected.rankings


def test_ties_are_broken_by_initial_rank_then_id(tmp_path, collection):
    # the chess dialogue's first three candidates share the initial score 1.0 and the
    # last two 0.0; their ids sort in another order (Bobby < Chess < Kings; Gambit < Opening)
    out = tmp_path / "initial.run"
    assert main(["run", str(FIXTURE), "--ranker", "initial", "--out", str(out)]) == 0
    lines = [line.split() for line in out.read_text().splitlines() if line.startswith("t3_c3_q3 ")]
    assert [parts[2] for parts in lines] == [
        "Kings_Gambit_17233_2_0_0",
        "Bobby_Fischer_4201_6_2_1",
        "Chess_engine_5609_1_1_0",
        "Gambit_12001_0_0_2",
        "Opening_chess_22987_3_0_1",
    ]
    assert [parts[3] for parts in lines] == ["1", "2", "3", "4", "5"]
    scores = [float(parts[4]) for parts in lines]
    # strictly decreasing as float32, each tied score lowered by the smallest float32 step
    # (below 0: the smallest normal float32, so readers that flush subnormals see no tie)
    one_below = float(np.nextafter(np.float32(1.0), np.float32(0)))
    assert scores == [
        1.0,
        one_below,
        float(np.nextafter(np.float32(one_below), np.float32(0))),
        0.0,
        -float(np.finfo(np.float32).tiny),
    ]
    # a sentence the initial order does not know comes after those it does, then by id
    run = Run.from_scores(
        {"q": {"zeta": 1.0, "alpha": 1.0, "known2": 1.0, "known1": 1.0}}, initial_order={"q": ["known1", "known2"]}
    )
    assert run.top("q") == ["known1", "known2", "alpha", "zeta"]


def test_fused_ties_are_broken_alike_with_or_without_the_collection(tmp_path):
    # two rankings that swap neighbours: RRF ties Kings/Fischer and Gambit/Opening
    a = Run(
        {
            "t3_c3_q3": [
                ("Kings_Gambit_17233_2_0_0", 5.0),
                ("Bobby_Fischer_4201_6_2_1", 4.0),
                ("Chess_engine_5609_1_1_0", 3.0),
                ("Gambit_12001_0_0_2", 2.0),
                ("Opening_chess_22987_3_0_1", 1.0),
            ]
        },
        "a",
    )
    b = Run(
        {
            "t3_c3_q3": [
                ("Bobby_Fischer_4201_6_2_1", 5.0),
                ("Kings_Gambit_17233_2_0_0", 4.0),
                ("Chess_engine_5609_1_1_0", 3.0),
                ("Opening_chess_22987_3_0_1", 2.0),
                ("Gambit_12001_0_0_2", 1.0),
            ]
        },
        "b",
    )
    a.write(tmp_path / "a.run")
    b.write(tmp_path / "b.run")
    args = ["fuse", str(tmp_path / "a.run"), str(tmp_path / "b.run"), "--method", "rrf"]
    assert main(args + ["--collection", str(FIXTURE), "--out", str(tmp_path / "c.run")]) == 0
    assert main(args + ["--out", str(tmp_path / "i.run")]) == 0
    # the ties go by id, descending (trec_eval's order), whether the collection is given or not
    for name in ("c.run", "i.run"):
        assert Run.read(tmp_path / name).top("t3_c3_q3") == [
            "Kings_Gambit_17233_2_0_0",
            "Bobby_Fischer_4201_6_2_1",
            "Chess_engine_5609_1_1_0",
            "Opening_chess_22987_3_0_1",
            "Gambit_12001_0_0_2",
        ]
        assert json.loads((tmp_path / f"{name}.json").read_text())["ties"] == TIE_RULE


def test_run_sidecar_holds_the_full_configuration(tmp_path, collection):
    out = tmp_path / "fusion.run"
    argv = f"run {FIXTURE} --ranker fusion --param rankers=initial,random method=interp weight=0.3 random.seed=5 --out {out}"
    assert main(argv.split()) == 0
    side = json.loads((tmp_path / "fusion.run.json").read_text())
    assert side["ranker"] == "fusion" and side["command"] == "run"
    assert side["params"] == {
        "rankers": "initial,random",
        "method": "interp",
        "k": 60,
        "weight": 0.3,
        "norm": "minmax",
        "weights": None,
        "gamma": None,
        "phi": None,
        "sigma": 0.01,
        "metric": "ndcg",
        "backend": "dsr",
        "query": None,
        "random.seed": 5,
    }
    assert side["rankers"] == [{"ranker": "initial", "params": {}}, {"ranker": "random", "params": {"seed": 5}}]
    assert side["collection"]["hash"] == collection.content_hash
    assert side["collection"]["name"] == "runs_tiny"
    assert side["tag"] == Run.read(out).tag == "fusion-interp-initial+random-norm=minmax-weight=0.3-random.seed=5"
    shown = lambda p: os.path.relpath(p) if Path(p).resolve().is_relative_to(Path.cwd()) else Path(p).name  # noqa: E731
    assert side["command_line"] == (
        f"dsr run {shown(FIXTURE)} --ranker fusion --param rankers=initial,random "
        f"method=interp weight=0.3 random.seed=5 --out {shown(out)}"
    )
    assert side["versions"]["python"] and "numpy" in side["versions"]
    assert side["created"].endswith("+00:00")
    assert side["models"] == []
    # what the sidecar says is enough to make the run again
    again = make_ranker("fusion", **side["params"]).rank(collection)
    assert again.rankings == Run.read(out).rankings


def test_fuse_sidecar_records_inputs(tmp_path, collection):
    for name, seed in (("a", 1), ("b", 2)):
        assert (
            main(["run", str(FIXTURE), "--ranker", "random", "--param", f"seed={seed}", "--out", str(tmp_path / f"{name}.run")])
            == 0
        )
    assert (
        main(["fuse", str(tmp_path / "a.run"), str(tmp_path / "b.run"), "--method", "rrf", "--out", str(tmp_path / "f.run")]) == 0
    )
    side = json.loads((tmp_path / "f.run.json").read_text())
    assert side["fusion"] == "rrf" and side["params"] == {"k": 60}
    assert side["collection"]["hash"] == collection.content_hash  # taken from the inputs
    assert [i["tag"] for i in side["inputs"]] == ["random-seed=1", "random-seed=2"]
    assert [i["config"]["params"] for i in side["inputs"]] == [{"seed": 1}, {"seed": 2}]
    from dsr.core.provenance import sha256_file

    assert side["inputs"][0]["sha256"] == sha256_file(tmp_path / "a.run")
    assert "versions" not in side["inputs"][0]["config"]


# --- nothing half-written -------------------------------------------------------------


def _listing(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


@pytest.mark.parametrize(
    "argv",
    [
        ["run", str(FIXTURE), "--ranker", "bm99", "--out", "{out}"],
        ["run", str(FIXTURE), "--ranker", "random", "--param", "sead=1", "--out", "{out}"],
        ["run", "{tmp}/no-such.jsonl", "--ranker", "random", "--out", "{out}"],
        ["fuse", "{tmp}/old.run", "--method", "rrf", "--out", "{out}"],
        ["fuse", "{tmp}/old.run", "{tmp}/missing.run", "--method", "rrf", "--out", "{out}"],
    ],
)
def test_failure_leaves_previous_output_untouched(tmp_path, argv):
    out = tmp_path / "old.run"
    Run({"t3_a1_q1": [("Moon_19331_1_0_4", 1.0)]}, "old", {"x": 1}).write(out)
    before = _listing(tmp_path)
    argv = [a.format(out=out, tmp=tmp_path) for a in argv]
    assert main(argv) == 2
    assert _listing(tmp_path) == before


def test_a_failing_sidecar_write_leaves_neither_file_changed(tmp_path, monkeypatch, capsys):
    import dsr.core.run as run_module

    out = tmp_path / "old.run"
    Run({"t3_a1_q1": [("Moon_19331_1_0_4", 1.0)]}, "old", {"x": 1}).write(out)
    before = _listing(tmp_path)

    def disk_full(path, obj, indent=2):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(run_module, "write_json", disk_full)
    assert main(["run", str(FIXTURE), "--ranker", "initial", "--out", str(out)]) == 2
    assert "No space left on device" in capsys.readouterr().err
    assert _listing(tmp_path) == before  # no new run, no temporary files
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".")]


def test_a_failing_ranker_writes_nothing(tmp_path, capsys):
    # a collection without initial scores: the initial ranker fails part-way
    lines = FIXTURE.read_text().splitlines()
    record = json.loads(lines[1])
    record["candidates"][3]["score"] = None
    bad = tmp_path / "noscores.jsonl"
    bad.write_text("\n".join([lines[0], json.dumps(record), lines[2]]) + "\n")
    out = tmp_path / "sub" / "x.run"
    assert main(["run", str(bad), "--ranker", "initial", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "record t3_b2_q2" in err and "candidates[3].score" in err
    assert not out.exists() and not Path(str(out) + ".json").exists()


def test_a_normalised_run_is_written_as_the_tie_rule_would_write_it(tmp_path):
    """write_trec_run skips re-applying the tie rule to a Run that holds its scores already
    (from_scores); the file is byte for byte what the rule applied again writes."""
    from dsr.core.run import Run, write_trec_run

    scores = {"q1": {"a": 1.0, "b": 1.0, "c": 1.0000000001, "d": -3.5}, "q2": {"x": 0.1, "y": 0.30000000000000004, "z": 0.3}}
    made = Run.from_scores(scores, tag="t", initial_order={"q1": ["d", "c", "b", "a"]})
    again = Run({q: list(r) for q, r in made.rankings.items()}, tag="t")  # not marked normalised
    write_trec_run(made, tmp_path / "made.run")
    write_trec_run(again, tmp_path / "again.run")
    text = (tmp_path / "made.run").read_text()
    assert text == (tmp_path / "again.run").read_text()
    assert len(text.splitlines()) == 7 and text.startswith("q1 Q0 c 1 1.0 t\n")
    raw = Run({"q1": [("a", 2.0), ("b", 2.0)]}, tag="t")  # ties held by hand
    write_trec_run(raw, tmp_path / "raw.run")
    lines = (tmp_path / "raw.run").read_text().splitlines()
    assert float(lines[0].split()[4]) > float(lines[1].split()[4])
