"""``dsr reproduce`` end to end on the bundled sample collection."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dsr.cli import main
from dsr.collections import load_collection
from tests.support.tiny_bert import collection_texts, make_tiny_bert

pytestmark = pytest.mark.xdist_group("reproduce")  # one worker sets up the module fixtures (tests/support/order.py GROUPS)


@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory) -> Path:
    return make_tiny_bert(tmp_path_factory.mktemp("ce"), collection_texts(load_collection("sample")), initializer_range=0.5)


@pytest.mark.slow
def test_reproduce_without_dense_writes_report_runs_and_manifest(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["reproduce", "sample", "--out", str(out), "--no-dense", "--n-splits", "10"]) == 0
    printed = capsys.readouterr().out
    assert "BM25" in printed and "cross-encoder row skipped" in printed
    manifest = json.loads((out / "manifest.json").read_text())
    sample = load_collection("sample")
    assert manifest["collection"]["hash"] == sample.content_hash
    assert manifest["protocol"]["splits"]["n"] == 10
    assert manifest["models"]["cross_encoder"].startswith("skipped")
    assert {"load", "bm25", "evaluate", "write", "total"} <= set(manifest["wall_time_s"])
    assert manifest["versions"]["numpy"]
    for name in ("results.md", "results.csv", "results.json", "results.tex"):
        assert (out / name).stat().st_size > 0
    runs = manifest["runs"]
    assert {"random", "initial", "BM25", "BM25 (last)", "BM25 (title+all)"} <= set(runs)
    # every run file written is a valid submission for the collection
    for entry in runs.values():
        assert not Path(entry["path"]).is_absolute()  # relative to the report
        assert main(["validate", "sample", str(out / entry["path"])]) == 0
    # and dsr evaluate, and the report's per-topic values, agree with a plain walk of each file
    from tools import crosscheck_eval

    capsys.readouterr()
    assert crosscheck_eval.main(["sample", str(out)]) == 0
    assert "agree to 1e-09" in capsys.readouterr().out
    # the tuned family's file is the configuration chosen most often on val
    side = json.loads((out / (runs["BM25 (last)"]["path"] + ".json")).read_text())
    counts = side["chosen_on_val"]
    assert sum(counts.values()) == 10 and counts[side["config"]] == max(counts.values())
    results = json.loads((out / "results.json").read_text())
    assert results["collection"]["hash"] == sample.content_hash
    # tuned systems are in the untuned tables (out-of-sample values) and in the recall@k
    # figure (the configuration chosen most often), so the figure has its BM25 baseline
    import pandas as pd

    table = pd.read_csv(out / "results.csv")
    untuned = table[table.block == "all"]
    assert set(untuned.loc[untuned.run == "BM25", "kind"]) == {"tuned"}
    assert "BM25 (baseline)" in printed and "nDCG@5 (primary measure) by subset" in printed
    assert main(["reproduce", "sample", "--out", str(out), "--no-dense", "--n-splits", "10", "--verbose"]) == 0
    assert "BM25 (baseline) (tuned, out of sample)" in capsys.readouterr().out
    curves = results["figures"]["recall_at_k"]
    assert {"BM25", "BM25 (last)", "random"} <= set(curves)
    assert curves["BM25"].endswith(json.loads((out / (runs["BM25"]["path"] + ".json")).read_text())["config"])
    for stem in ("recall_at_k", "diff_vs_baseline", "subsets_nDCG_5", "main", "measures"):
        assert all((out / f"{stem}.{ext}").stat().st_size > 0 for ext in ("png", "pdf"))


#: the full suite (every row) with a cross-encoder, as the two tests below run it (the fast one
#: adds --backend); two measures, the primary one and RR, so that every figure is drawn
FULL = ["reproduce", "sample", "--queries", "last", "all", "--n-splits", "5", "--measures", "nDCG@5", "RR"]


@pytest.fixture(scope="module")
def full_run(tmp_path_factory, tiny_cross_encoder):
    """The full suite with the tiny cross-encoder, run once in a DSR_HOME of this module's (the
    tests below set it to reuse its caches); yields (home, args, report folder, what it printed
    on stderr, embeddings encoded)."""
    import contextlib
    import io

    from dsr.indexes.embeddings import stats

    home = tmp_path_factory.mktemp("full-home")
    args = [*FULL, "--cross-encoder", str(tiny_cross_encoder)]
    out = tmp_path_factory.mktemp("full") / "a"
    err = io.StringIO()
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        patch.setenv("DSR_HOME", str(home))
        patch.setattr("dsr.core.quiet.progress_shown", lambda: True)  # build notices: a terminal's
        stats.reset()
        assert main([*args, "--out", str(out)]) == 0
    return home, args, out, err.getvalue(), stats.encoded


@pytest.mark.slow
def test_reproduce_full_suite_with_a_cross_encoder_reuses_its_caches(full_run, tmp_path, capsys, monkeypatch):
    from dsr.indexes.embeddings import stats

    home, args, first, first_err, encoded = full_run
    assert encoded > 0
    assert "building cross-encoder-scores" in first_err
    manifest = json.loads((first / "manifest.json").read_text())
    assert {"dense (last)", "dense (all)", "RRF(BM25, dense)", "cross-encoder"} <= set(manifest["runs"])
    assert manifest["models"]["dense"]["weights_sha256"].startswith("53aa5117")
    assert manifest["models"]["cross_encoder"]["source"] == "folder"
    # the second run reuses the cross-encoder's scores and the embeddings
    monkeypatch.setenv("DSR_HOME", str(home))
    stats.reset()
    assert main([*args, "--out", str(tmp_path / "b")]) == 0
    second = capsys.readouterr()
    assert "cross-encoder-scores" not in second.err
    assert stats.encoded == 0 and stats.reused > 0
    a = (first / "results.csv").read_text()
    b = (tmp_path / "b" / "results.csv").read_text()
    assert a == b


@pytest.mark.slow
def test_reproduce_on_a_fast_backend_names_it_and_keeps_the_table_close(full_run, tmp_path, exports, monkeypatch):
    home, args, exact_out, _, _ = full_run
    monkeypatch.setenv("DSR_HOME", str(home))
    exports.seed(home, "all-MiniLM-L6-v2", "bi-encoder", "openvino")  # the run's one export of it
    assert main([*args, "--backend", "openvino", "--out", str(tmp_path / "fast")]) == 0
    manifest = json.loads((tmp_path / "fast" / "manifest.json").read_text())
    assert manifest["parameters"]["backend"] == "openvino"
    assert "export (beside bm25)" in manifest["wall_time_s"]  # the export ran beside the BM25 stage
    assert manifest["parameters"]["systems"]["dense (last)"]["params"]["backend"] == "openvino"
    assert manifest["parameters"]["systems"]["cross-encoder"]["params"]["backend"] == "openvino"
    # the figures measured hold for MiniLM's rows; the tiny cross-encoder's were never measured,
    # so the manifest (every model) and its row's sidecar say so, naming its weights
    tiny = manifest["models"]["cross_encoder"]["weights_sha256"][:12]
    unmeasured = f"openvino: figures differ from the exact backend (torch) by an amount not measured for this table's model (weights {tiny})"
    assert manifest["exactness"].startswith(unmeasured)
    lines = {}
    for row in ("cross-encoder", "dense (last)", "BM25", "random"):
        sidecar = json.loads((tmp_path / "fast" / (manifest["runs"][row]["path"] + ".json")).read_text())
        lines[row] = sidecar.get("exactness")
        if row == "cross-encoder":  # the reranked row's config names the backend it ran on
            assert sidecar["params"]["backend"] == "openvino", sidecar
    assert lines["cross-encoder"].startswith(unmeasured)
    assert lines["dense (last)"].startswith("openvino: figures differ from the exact backend (torch) by up to")
    assert lines["BM25"] is None and lines["random"] is None
    assert json.loads((exact_out / "manifest.json").read_text())["parameters"]["backend"] == "torch"
    exact, fast = _means(exact_out, "nDCG@5"), _means(tmp_path / "fast", "nDCG@5")
    assert set(exact) == set(fast)
    compared = [key for key in exact if key[2] in ("dense (last)", "cross-encoder")]
    assert len(compared) >= 4
    # fp32 OpenVINO gives torch's scores (MiniLM: 5e-8 apart, check.json; this tiny random
    # cross-encoder: ~1e-5, its large weights putting 352 candidate pairs of the sample within
    # 1e-4 of each other, so a near-tie may flip and move a test half's nDCG@5 by ~0.01).
    # The dense rows' table agrees to 3 decimals; the cross-encoder's scores agree pair by pair.
    for key in compared:
        if key[2] == "dense (last)":
            assert fast[key] == pytest.approx(exact[key], abs=1e-3), key
    from dsr.core.run import load_run

    torch_run, fast_run = (load_run(out / "runs" / "cross-encoder.run.gz") for out in (exact_out, tmp_path / "fast"))
    for dialogue, ranking in torch_run.rankings.items():
        got = dict(fast_run.rankings[dialogue])
        assert set(got) == {c for c, _ in ranking}
        assert max(abs(got[c] - score) for c, score in ranking) < 1e-4, dialogue


def _means(out: Path, measure: str) -> dict[tuple[str, str, str], float]:
    """(block, subset, run) -> mean of ``measure``, from a report's results.csv."""
    import csv

    with open(out / "results.csv", newline="", encoding="utf-8") as f:
        return {
            (r["block"], r["subset"], r["run"]): float(r["mean"])
            for r in csv.DictReader(f)
            if r["measure"] == measure and r["mean"]
        }


def test_reproduce_without_a_collection_says_what_to_do(tmp_path, capsys):
    assert main(["reproduce", "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert "dsr data fetch sigir2022" in err and "dsr reproduce sample" in err
    assert not (tmp_path / "x").exists()


def test_reproduce_rejects_unknown_strategy(tmp_path, capsys):
    assert main(["reproduce", "sample", "--queries", "nope", "--out", str(tmp_path / "x")]) == 2
    assert "nope" in capsys.readouterr().err


@pytest.mark.slow
def test_the_trained_row_has_a_zero_shot_row_with_the_same_query_and_text(tmp_path, full_run, monkeypatch):
    """The trained bi-encoder row is read against the zero-shot model with its card's query
    and candidate text: a 'trained' model that is the zero-shot weights themselves gives
    exactly that row, and not the table's body-only row. (With a copy of the full run's indexes:
    MiniLM's vectors of the candidates' bodies are reused; one measure, nDCG@5, is read.)"""
    import shutil

    home = tmp_path / "home"
    shutil.copytree(full_run[0] / "indexes", home / "indexes")  # not its exports (the fast test's)
    monkeypatch.setenv("DSR_HOME", str(home))

    from dsr.core.models import resolve_model
    from dsr.core.run import load_run
    from dsr.training.card import CARD_FILE

    base = Path(resolve_model("all-MiniLM-L6-v2", "bi-encoder").path)
    trained = tmp_path / "same-weights"
    shutil.copytree(base, trained)
    (trained / CARD_FILE).write_text(
        json.dumps({"kind": "bi-encoder", "query": "title+recent", "text": "title: body"}), encoding="utf-8"
    )
    out = tmp_path / "out"
    assert (
        main(
            [
                "reproduce",
                "sample",
                "--queries",
                "title+recent",
                "--n-splits",
                "5",
                "--no-cross-encoder",
                "--trained-dense",
                str(trained),
                "--measures",
                "nDCG@5",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    manifest = json.loads((out / "manifest.json").read_text())
    row = "dense (title+recent, title: body)"
    assert manifest["parameters"]["systems"]["trained bi-encoder"]["zero-shot row"] == row
    assert manifest["parameters"]["systems"][row]["params"]["text"] == "title: body"
    runs = {name: load_run(out / manifest["runs"][name]["path"]) for name in ("trained bi-encoder", row, "dense (title+recent)")}
    assert runs["trained bi-encoder"].rankings == runs[row].rankings
    assert runs[row].rankings != runs["dense (title+recent)"].rankings
    means = _means(out, "nDCG@5")
    assert means[("all", "all", "trained bi-encoder")] == means[("all", "all", row)]


def test_the_same_text_row_is_the_tables_own_row_for_bodies():
    from dsr.baselines import same_text_row

    assert same_text_row({"query": "title+recent", "text": "body"}) == "dense (title+recent)"
    assert same_text_row({"query": "last", "text": "title: body"}) == "dense (last, title: body)"
