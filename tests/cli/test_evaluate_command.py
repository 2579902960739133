"""dsr evaluate: tables, JSON, per-topic files, reports, tuning, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from dsr.cli import main
from dsr.collections.synthetic import make_collection, make_run
from dsr.core.data import write_benchmark
from dsr.evaluation.measures import DEFAULT_MEASURES
from dsr.evaluation.report import public


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("eval_cli")
    collection = make_collection(n=120, seed=12)
    write_benchmark(collection, root / "coll.jsonl")
    paths = {}
    for name, seed, quality in (("base", 1, 0.2), ("good", 2, 1.5), ("bm25_a", 3, 0.1), ("bm25_b", 4, 0.8), ("bm25_c", 5, 0.4)):
        run = make_run(collection, seed=seed, quality=quality)
        if name.startswith("bm25"):
            run.config = {"ranker": "bm25", "params": {"k1": seed}}
        run.write(root / f"{name}.run")
        paths[name] = str(root / f"{name}.run")
    ids = collection.ids
    rng = np.random.default_rng(0)
    with open(root / "splits.json", "w") as handle:
        for _ in range(10):
            order = rng.permutation(len(ids))
            handle.write(json.dumps({"val": [ids[i] for i in order[:60]], "test": [ids[i] for i in order[60:]]}) + "\n")
    return root, collection, paths


def run_cli(argv, capsys):
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_table_has_a_block_per_subset_and_json_the_same_numbers(files, capsys):
    root, collection, paths = files
    argv = ["evaluate", str(root / "coll.jsonl"), paths["base"], paths["good"], "--quiet", "--verbose"]
    code, out, _ = run_cli(argv, capsys)
    assert code == 0
    blocks = out.strip().split("\n\n")
    assert [b.splitlines()[0] for b in blocks] == [
        "all: all 120 dialogues",
        "plain: all 60 dialogues",
        "grounded: all 60 dialogues",
    ]
    header = blocks[0].splitlines()[1].split()
    assert header == ["run", *DEFAULT_MEASURES]
    assert out.strip().endswith("Primary measure: nDCG@5. No baseline: no significance marks.")
    code, out, _ = run_cli(argv + ["--json"], capsys)
    data = json.loads(out)
    for block, subset in zip(blocks, ("all", "plain", "grounded")):
        rows = [line.split() for line in block.splitlines()[2:] if not line.startswith("Primary")]
        assert [r[0] for r in rows] == ["base", "good"]
        for name, *cells in rows:
            expected = data["runs"][name]["all_dialogues"][subset]
            assert [float(c) for c in cells] == [round(expected[m], 4) for m in DEFAULT_MEASURES]
    assert data["runs"]["good"]["all_dialogues"]["all"]["nDCG@5"] > data["runs"]["base"]["all_dialogues"]["all"]["nDCG@5"]
    assert data["protocol"]["name"] == "all"


@pytest.mark.slow
def test_official_protocol_with_tuning_report_and_per_topic(files, capsys, tmp_path):
    root, collection, paths = files
    argv = [
        "evaluate",
        str(root / "coll.jsonl"),
        paths["base"],
        paths["bm25_a"],
        paths["bm25_b"],
        paths["bm25_c"],
        "--splits",
        str(root / "splits.json"),
        "--tune",
        "auto",
        "--baseline",
        "base",
        "--measures",
        "RR,nDCG@5",
        "--subset",
        "all",
        "--subset",
        "grounded",
        "--permutations",
        "500",
        "--report",
        str(tmp_path / "rep"),
        "--per-topic",
        str(tmp_path / "pt.jsonl"),
        "--json",
        "--quiet",
    ]
    code, out, err = run_cli(argv, capsys)
    assert code == 0, err
    data = json.loads(out)
    assert data["protocol"]["splits"] == {
        "source": "file",
        "n": 10,
        "path": str(root / "splits.json"),
        "val_size": [60],
        "test_size": [60],
    }
    assert list(data["systems"]) == ["base", "bm25"]
    bm25 = data["systems"]["bm25"]
    assert bm25["kind"] == "tuned" and sum(bm25["choice_counts"].values()) == 10
    assert set(bm25["choice_counts"]) <= {"bm25_a", "bm25_b", "bm25_c"}
    assert "splits" not in bm25["test"]["grounded"]["RR"]  # per split: per_split.parquet
    per_split = pd.read_parquet(tmp_path / "rep" / "per_split.parquet")
    tuned = per_split[(per_split.system == "bm25") & (per_split.subset == "grounded")]
    assert list(tuned.split) == list(range(10)) and set(tuned.config) <= {"bm25_a", "bm25_b", "bm25_c"}
    counts = tuned.config.value_counts().to_dict()
    assert counts == {k: v for k, v in bm25["choice_counts"].items() if v}
    assert tuned["RR"].mean() == pytest.approx(bm25["test"]["grounded"]["RR"]["mean"], abs=1e-12)
    sig = data["significance"]["results"]["all"]["bm25"]["nDCG@5"]
    assert set(sig) == {
        "diff",
        "n",
        "t",
        "t_holm",
        "perm",
        "perm_holm",
        "t_adj",
        "perm_adj",
        "ci_low",
        "ci_high",
        "d",
        "wins",
        "ties",
        "losses",
    }
    # the report
    rep = tmp_path / "rep"
    names = sorted(p.name for p in rep.iterdir())
    figures = ["main", "measures", "diff_vs_baseline", "recall_at_k", "subsets_nDCG_5"]
    assert names == sorted(
        [f"{f}.{ext}" for f in figures for ext in ("pdf", "png", "caption.tex")]
        + ["comparison.csv", "per_split.parquet", "per_topic.parquet", "results.csv", "results.json", "results.md", "results.tex"]
    )
    per_topic = pd.read_parquet(rep / "per_topic.parquet")
    assert len(per_topic) == 5 * len(collection)
    for png in rep.glob("*.png"):
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    report = json.loads((rep / "results.json").read_text())
    assert report["collection"]["hash"] == collection.content_hash
    assert report["runs"]["bm25_a"]["config"] == {"ranker": "bm25", "params": {"k1": 3}}
    assert report["provenance"]["versions"]["ir_measures"]
    assert report["systems"] == public(data["systems"], rep)  # the same, without local paths
    assert "±" in (rep / "results.md").read_text() and r"\toprule" in (rep / "results.tex").read_text()
    rows = [json.loads(x) for x in (tmp_path / "pt.jsonl").read_text().splitlines()]
    assert {r["kind"] for r in rows} == {"run", "tuned"}
    assert len(rows) == 5 * len(collection)  # base, three configurations, the tuned family


def test_explicit_tune_groups_and_generated_splits(files, capsys):
    root, _, paths = files
    code, out, _ = run_cli(
        [
            "evaluate",
            str(root / "coll.jsonl"),
            paths["base"],
            "--protocol",
            "official",
            "--tune",
            f"fam={paths['bm25_a']},{paths['bm25_b']}",
            "--n-splits",
            "7",
            "--seed",
            "3",
            "--json",
            "--quiet",
            "--measures",
            "nDCG@5",
        ],
        capsys,
    )
    assert code == 0
    data = json.loads(out)
    assert data["protocol"]["splits"]["source"] == "generated" and data["protocol"]["splits"]["seed"] == 3
    assert data["systems"]["fam"]["kind"] == "tuned"
    assert sum(data["systems"]["fam"]["choice_counts"].values()) == 7


@pytest.mark.parametrize(
    "extra, field",
    [
        (["--measures", "nDCG@x"], "--measures"),
        (["--baseline", "nobody"], "no such run file"),
        (["--protocol", "all", "--tune", "auto"], "--tune"),
        (["--tune", "oops"], "--tune"),
        (["--target", "Bogus@1", "--protocol", "official"], "--target"),
        (["--subset", "nope"], "--subset"),
    ],
)
def test_bad_input_exits_2_naming_the_field(files, capsys, extra, field):
    root, _, paths = files
    code, out, err = run_cli(["evaluate", str(root / "coll.jsonl"), paths["base"], "--quiet", *extra], capsys)
    assert code == 2 and field in err and out == ""


def test_missing_run_file_and_bad_run_line_exit_2(files, capsys, tmp_path):
    root, collection, _ = files
    code, _, err = run_cli(["evaluate", str(root / "coll.jsonl"), str(tmp_path / "none.run")], capsys)
    assert code == 2 and "none.run" in err
    bad = tmp_path / "bad.run"
    bad.write_text(f"{collection.ids[0]} Q0 d 1 0.5 t\n{collection.ids[0]} Q0 e 2\n")
    code, _, err = run_cli(["evaluate", str(root / "coll.jsonl"), str(bad)], capsys)
    assert code == 2 and f"{bad}:2" in err


def test_command_module_imports_nothing_heavy():
    code = "import sys, dsr.cli; print(sorted(m for m in ('ir_measures', 'scipy', 'matplotlib', 'torch') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_no_relevant_note_counts_at_the_measures_relevance_level(tmp_path, capsys):
    """A dialogue graded 1 at best has no relevant candidate under ``-l 2``: the note counts it
    there (and only there), beside those with nothing graded above 0; the measures it names are
    the ones that give it 0 (ir_measures' own values), nDCG, graded, does not."""
    import ir_measures

    qrels = tmp_path / "q.qrels"
    qrels.write_text("q0 0 a 0\nq0 0 b 0\nq1 0 c 1\nq1 0 d 0\nq2 0 e 2\nq2 0 f 1\n")
    run = tmp_path / "r.run"
    run.write_text("q0 Q0 a 1 2 x\nq0 Q0 b 2 1 x\nq1 Q0 c 1 2 x\nq1 Q0 d 2 1 x\nq2 Q0 f 1 2 x\nq2 Q0 e 2 1 x\n")

    def notes(*extra: str) -> list[str]:
        capsys.readouterr()
        assert main(["evaluate", "--qrels", str(qrels), str(run), "--measures", "nDCG@5", "RR", "AP", *extra, "--json"]) == 0
        return json.loads(capsys.readouterr().out)["notes"]

    assert notes() == ["1 dialogue(s) have no relevant candidate; they score 0 on every measure (as in trec_eval)"]
    at_2 = notes("-l", "2")
    assert at_2[0].startswith("1 dialogue(s) have no relevant candidate")
    assert at_2[1].startswith("1 more dialogue(s) have no candidate graded 2 or more: they score 0 on RR(rel=2), AP(rel=2)")
    values = {
        (m.query_id, str(m.measure)): m.value
        for m in ir_measures.iter_calc(
            [ir_measures.parse_measure(s) for s in ("RR(rel=2)", "AP(rel=2)", "nDCG@5")],
            ir_measures.read_trec_qrels(str(qrels)),
            ir_measures.read_trec_run(str(run)),
        )
    }
    assert values["q1", "RR(rel=2)"] == values["q1", "AP(rel=2)"] == 0 and values["q1", "nDCG@5"] > 0
