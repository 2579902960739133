"""The line under a table made on a fast backend (dsr.indexes.exactness): what it says, where it
goes (tables, reports, run sidecars, the reproduce manifest) and the measured figures it reads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dsr.collections import load_collection
from dsr.evaluation import tables
from dsr.evaluation.experiment import evaluate_runs
from dsr.indexes import backends, exactness
from dsr.rankers import make_ranker
from tests.support.data import REAL_CMU_DOG

pytestmark = REAL_CMU_DOG  # the real collections are built once, by the worker that builds them for every module

JUDGED = {"name": "cmu_dog_judged", "hash": "h115"}
MEASURED = {
    "exact": "torch",
    "collections": {
        "cmu_dog_judged": {
            "hash": "h115",
            "backends": {
                "openvino-int8": {
                    "measure": "nDCG@5",
                    "max_delta": 0.0123,
                    "marks_flipped": 2,
                    "date": "2026-11-26",
                    "marks_flipped_any_measure": 5,
                    "cpu": "AMD EPYC",
                },
                "openvino": {"measure": "nDCG@5", "max_delta": 0.0, "marks_flipped": 0, "date": "2026-11-26", "cpu": "AMD EPYC"},
            },
        },
        "cmu_dog-valid": {
            "hash": "h502",
            "backends": {
                "openvino-int8": {
                    "measure": "nDCG@5",
                    "max_delta": 0.0071,
                    "marks_flipped": 1,
                    "date": "2026-11-26",
                    "cpu": "AMD EPYC",
                }
            },
        },
    },
}


@pytest.fixture
def figures(monkeypatch):
    monkeypatch.setattr(exactness, "measured", lambda: MEASURED)


def test_a_measured_collection_gets_its_own_figure_date_and_cpu(figures):
    line = exactness.note(JUDGED, "openvino-int8")
    assert line == (
        "openvino-int8: figures differ from the exact backend (torch) by up to 0.0123 nDCG@5 on this "
        "collection (2 ▲/▼ marks of the table flipped there, 5 over every measure; measured 2026-11-26 on "
        "AMD EPYC); marks may differ"
    )
    assert "(0 ▲/▼ marks of the table flipped there, 0 over every measure;" in exactness.note(JUDGED, "openvino")
    assert "\n" not in line


def _cpu_row(cpu, units, date, delta, flips, every=0):
    return {
        "measure": "nDCG@5",
        "max_delta": delta,
        "marks_flipped": flips,
        "marks_flipped_any_measure": every,
        "date": date,
        "cpu": cpu,
        "units": units,
    }


def test_each_kind_of_cpu_keeps_its_figures_and_the_note_quotes_the_largest(monkeypatch):
    epyc = _cpu_row("AMD EPYC", ["avx512_vnni"], "2026-11-27", 0.0226, 1, 9)
    xeon = _cpu_row("Intel Xeon", [], "2026-11-28", 0.0251, 1, 13)
    first = exactness.merge_measurement(None, epyc)
    assert first == epyc  # one kind: the row as measured, no list
    both = exactness.merge_measurement(first, xeon)
    assert both["max_delta"] == 0.0251 and both["cpu"] == "Intel Xeon"  # the larger figure is the row
    assert both["by_cpu"] == [epyc, xeon]  # every kind kept, in a stable order
    # the same kind measured again replaces its own figures only, and the row follows the largest
    again = exactness.merge_measurement(both, _cpu_row("Intel Xeon", [], "2026-11-29", 0.0100, 0, 2))
    assert [r["date"] for r in again["by_cpu"]] == ["2026-11-27", "2026-11-29"]
    assert again["max_delta"] == 0.0226 and again["cpu"] == "AMD EPYC" and again["marks_flipped_any_measure"] == 9
    # the same name with other units is another kind (an AMX Xeon is not a Skylake Xeon)
    amx = exactness.merge_measurement(again, _cpu_row("Intel Xeon", ["amx_int8"], "2026-11-30", 0.0200, 2))
    assert len(amx["by_cpu"]) == 3 and amx["max_delta"] == 0.0226
    data = {"collections": {"cmu_dog_judged": {"hash": "h115", "backends": {"openvino-int8": both}}}}
    monkeypatch.setattr(exactness, "measured", lambda: data)
    assert exactness.note(JUDGED, "openvino-int8") == (
        "openvino-int8: figures differ from the exact backend (torch) by up to 0.0251 nDCG@5 on this "
        "collection (at most 1 ▲/▼ mark of the table flipped there, 13 over every measure; the largest of 2 "
        "kinds of CPU measured: AMD EPYC (VNNI) 2026-11-27, Intel Xeon (no VNNI/AMX) 2026-11-28); marks may differ"
    )
    # two Xeons (an AMX one and a Skylake) are told apart by what their int8 kernels run on
    data["collections"]["cmu_dog_judged"]["backends"]["openvino-int8"] = amx
    assert (
        "3 kinds of CPU measured: AMD EPYC (VNNI) 2026-11-27, Intel Xeon (no VNNI/AMX) 2026-11-29, Intel Xeon (AMX) 2026-11-30)"
        in (exactness.note(JUDGED, "openvino-int8"))
    )
    # the marks are the most of any kind, also where another kind had the larger difference
    fewer_marks = exactness.merge_measurement(first, _cpu_row("Intel Xeon", [], "2026-11-28", 0.0300, 0, 2))
    data["collections"]["cmu_dog_judged"]["backends"]["openvino-int8"] = fewer_marks
    assert "up to 0.0300 nDCG@5 on this collection (at most 1 ▲/▼ mark of the table flipped there, 9 over every" in (
        exactness.note(JUDGED, "openvino-int8")
    )


def test_the_exact_backend_gets_no_line(figures):
    assert exactness.note(JUDGED, "torch") is None
    assert exactness.note(JUDGED, None) is None
    assert exactness.notes(JUDGED, [{"params": {"backend": "torch"}}, {"ranker": "bm25"}]) == []


def test_an_unmeasured_collection_or_build_says_so_and_gives_the_largest_figure_measured(figures):
    other = exactness.note({"name": "sample", "hash": "s"}, "openvino-int8")
    assert "by an amount not measured on this collection" in other
    assert "up to 0.0123 nDCG@5 on cmu_dog_judged, the largest of 2 measured" in other
    rebuilt = exactness.note({"name": "cmu_dog_judged", "hash": "edited"}, "openvino-int8")
    assert "not measured on this build of the collection" in rebuilt
    assert "nor on any other" in exactness.note(JUDGED, "openvino-bf16")  # nothing measured for it


def test_a_table_of_another_model_says_its_amount_was_not_measured(monkeypatch):
    """The figures hold for the model measured (the suite's zero-shot bi-encoder): a table
    whose fast-backend runs used another model (--dense-model, a trained one) is told so."""
    minilm, other = "a" * 64, "b" * 64
    with_model = json.loads(json.dumps(MEASURED))
    with_model["collections"]["cmu_dog_judged"]["model"] = {"name": "all-MiniLM-L6-v2", "weights_sha256": minilm}
    monkeypatch.setattr(exactness, "measured", lambda: with_model)
    measured_line = exactness.note(JUDGED, "openvino-int8")
    assert exactness.note(JUDGED, "openvino-int8", [minilm]) == measured_line  # the model measured
    assert "up to 0.0123 nDCG@5 on this collection (2 ▲/▼ marks" in measured_line
    line = exactness.note(JUDGED, "openvino-int8", [minilm, other])
    assert line == (
        "openvino-int8: figures differ from the exact backend (torch) by an amount not measured for "
        "this table's model (weights bbbbbbbbbbbb); with all-MiniLM-L6-v2 up to 0.0123 nDCG@5 on this "
        "collection (measured 2026-11-26 on AMD EPYC); marks may differ"
    )
    # from runs' configs: each fast backend with the models that ran on it
    configs = [
        {"ranker": "dense", "params": {"backend": "openvino-int8"}, "model": {"weights_sha256": minilm}},
        {"reranker": "cross-encoder", "params": {"backend": "openvino-int8"}, "model": {"weights_sha256": other}},
        {"ranker": "dense", "params": {"backend": "openvino"}, "model": {"weights_sha256": other}},
    ]
    assert exactness.models_in(configs[1]) == [("openvino-int8", other)]
    lines = exactness.notes(JUDGED, configs)
    assert lines[0] == line
    assert lines[1].startswith("openvino: figures differ from the exact backend (torch) by an amount not measured for")
    assert exactness.notes(JUDGED, configs[:1]) == [measured_line]


def test_backends_are_found_in_nested_configs_once_each_in_order(figures):
    configs = [
        {"ranker": "bm25", "params": {"k1": 0.9}},
        {"reranker": "cross-encoder", "params": {"backend": "torch"}, "first_stage": {"params": {"backend": "openvino"}}},
        {"members": [{"config": {"params": {"backend": "openvino-int8"}}}]},
        {"params": {"backend": "openvino"}},
    ]
    assert [exactness.backends_in(c) for c in configs] == [[], ["torch", "openvino"], ["openvino-int8"], ["openvino"]]
    lines = exactness.notes(JUDGED, configs)
    assert [line.split(":")[0] for line in lines] == ["openvino", "openvino-int8"]


def test_the_line_is_the_first_under_the_table_of_runs_made_on_a_fast_backend(figures):
    sample = load_collection("sample")
    exact = make_ranker("bm25").rank(sample)
    fast = make_ranker("bm25", query="last").rank(sample)
    fast.config = {**fast.config, "params": {**fast.config["params"], "backend": "openvino-int8"}}
    results = evaluate_runs(sample, {"exact": exact, "fast": fast}, baseline="exact", progress=False)
    assert results.notes[0] == exactness.note(sample.describe(), "openvino-int8")
    text = tables.render(results, "text", verbose=False)
    table, _, under = text.partition("\n\n")
    assert under.splitlines()[0] == f"note: {results.notes[0]}"
    assert sum("figures differ from the exact backend" in line for line in text.splitlines()) == 1
    assert results.notes[0] in tables.render(results, "md", verbose=True)
    assert "% note: openvino-int8: figures differ from the exact backend" in tables.render(results, "latex")
    assert "Note: openvino-int8: figures differ from the exact backend" in tables.to_latex_document(results)
    plain = evaluate_runs(sample, {"exact": exact}, progress=False)
    assert not any("exact backend" in n for n in plain.notes)


def test_the_shipped_figures_name_real_collections_backends_dates_and_cpus():
    data = exactness.measured()
    assert data["exact"] == exactness.EXACT == backends.DEFAULT_BACKEND
    assert data["collections"], "bench/backend_deltas.py --write has not been run"
    for name, entry in data["collections"].items():
        assert len(entry["hash"]) == 64, name
        for backend, row in entry["backends"].items():
            assert backend in backends.BACKENDS and backend != "torch"
            assert row["measure"] == "nDCG@5" and 0 <= row["max_delta"] <= row["max_delta_any_measure"] < 1
            assert row["marks_flipped"] == len(row["flipped"]) <= row["marks_flipped_any_measure"]
            assert row["date"][:4] >= "2026" and row["cpu"] and 0 <= row["cells_changed"] <= row["cells"]
            kinds = row.get("by_cpu", [row])  # the row is the largest of the kinds of CPU measured
            assert row["max_delta"] == max(r["max_delta"] for r in kinds), (name, backend)
            assert len({(r["cpu"], tuple(r["units"])) for r in kinds}) == len(kinds), (name, backend)
    for name in ("cmu_dog_judged", "cmu_dog_dev", "cmu_dog-valid"):
        assert "openvino-int8" in data["collections"][name]["backends"], name


def test_the_shipped_figures_match_the_collections_they_name(shared_data, real_home, monkeypatch):
    monkeypatch.setenv("DSR_HOME", str(real_home))
    data = exactness.measured()["collections"]
    judged = load_collection("cmu_dog_judged", str(shared_data / "judged"))
    dev = load_collection("cmu_dog_dev", str(shared_data / "cmu_dog"))
    assert data["cmu_dog_judged"]["hash"] == judged.content_hash
    assert data["cmu_dog_dev"]["hash"] == dev.content_hash
    line = exactness.note(dev.describe(), "openvino-int8")
    assert f"by up to {data['cmu_dog_dev']['backends']['openvino-int8']['max_delta']:.4f} nDCG@5 on this" in line


@pytest.mark.slow
def test_reproduce_on_a_fast_backend_says_so_under_the_table_in_the_manifest_and_model_rows_sidecars(tmp_path, figures):
    from dsr.baselines import reproduce
    from tests.support.tiny_bert import collection_texts, make_tiny_bert

    sample = load_collection("sample")
    tiny = make_tiny_bert(tmp_path / "tiny", collection_texts(sample), num_labels=None)
    out = reproduce(sample, tmp_path / "out", dense_model=str(tiny), backend="openvino", strategies=["all"], n_splits=5)
    line = exactness.note(sample.describe(), "openvino")
    assert out["results"].notes[0] == line
    assert out["manifest"]["exactness"] == line and out["manifest"]["parameters"]["backend"] == "openvino"
    assert f"- note: {line}" in (tmp_path / "out" / "results.md").read_text(encoding="utf-8")
    sidecars = {
        json.loads(p.read_text())["system"]: json.loads(p.read_text()) for p in Path(tmp_path / "out" / "runs").glob("*.json")
    }
    assert sidecars["dense (all)"]["exactness"] == line
    assert sidecars["RRF(BM25, dense)"]["exactness"] == line
    assert "exactness" not in sidecars["BM25"] and "exactness" not in sidecars["random"]
    exact = reproduce(sample, tmp_path / "exact", dense_model=str(tiny), strategies=["all"], n_splits=5)
    assert exact["manifest"]["parameters"]["backend"] == "torch" and "exactness" not in exact["manifest"]
    assert not any("exact backend" in n for n in exact["results"].notes)
