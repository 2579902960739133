"""The measure registry: every measure ir_measures parses is computed or refused with a
clear message (exit 2, never an internal error); Judged@k, NumQ, NumRet, ERR@k and RBP
equal ir_measures on the same input; the unjudged fraction is reported on pooled labels;
``dsr validate --qrels`` reads plain TREC files."""

from __future__ import annotations

import json

import ir_measures
import pytest

import dsr
from dsr.cli import main
from dsr.core.errors import InputError
from dsr.core.run import load_run
from dsr.evaluation import registry
from dsr.evaluation.measures import Evaluator, parse_measures


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The sample's qrels and a BM25 run written to disk, and a pooled copy of the qrels: the
    judgements of a third of each topic's candidates removed (as a pool of other systems)."""
    folder = tmp_path_factory.mktemp("registry")
    sample = dsr.load_collection("sample")
    dsr.ranker("bm25", query="all")(sample).write(folder / "bm25.run")
    qrels = dsr.qrels(sample)
    full = folder / "full.qrels"
    full.write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items() for d, g in docs.items()))
    pooled = folder / "pooled.qrels"
    pooled.write_text(
        "# a pool: judgements of the other systems' top documents\n"
        + "".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items() for n, (d, g) in enumerate(docs.items()) if n % 3)
    )
    return folder


def their_qrels(path):
    """The qrels as ir_measures' Qrel records (its reader stops on the '#' line dsr skips)."""
    return [
        ir_measures.Qrel(q, d, int(g))
        for q, _, d, g in (line.split() for line in path.read_text().splitlines() if line and not line.startswith("#"))
    ]


def family_strings():
    """One string per family ir_measures registers, with a cutoff where it takes one."""
    out = []
    for name in sorted(ir_measures.measures.registry):
        measure = getattr(ir_measures, name)
        out.append(f"{name}@5" if "cutoff" in measure.SUPPORTED_PARAMS else name)
    return out


@pytest.mark.parametrize("measure", family_strings())
def test_every_measure_ir_measures_parses_works_or_is_refused_clearly(measure, files, capsys):
    code = main(["evaluate", "--qrels", str(files / "full.qrels"), str(files / "bm25.run"), "--measures", measure, "--json"])
    out, err = capsys.readouterr()
    family = registry.lookup(ir_measures.parse_measure(measure))
    assert family is not None, f"{measure}: not declared in dsr/evaluation/registry.py"
    if code == 0:
        assert family.refused is None
        assert json.loads(out)
    else:
        assert code == 2, err
        assert "Traceback" not in err and "internal error" not in err
        assert measure.split("@")[0] in err and ("--measures" in err)


@pytest.mark.parametrize(
    "measure",
    [
        "Judged@10",
        "Judged@5",
        "NumQ",
        "NumRet",
        "NumRet(rel=1)",
        "NumRel",
        "ERR@10",
        "RBP",
        "RBP(p=0.9,rel=1)",
        "nDCG@5",
        "IPrec@0.5",
    ],
)
def test_values_equal_ir_measures_on_the_same_files(measure, files):
    """Per topic, on the pooled qrels (unjudged documents in every top 10) and the full ones."""
    run = load_run(files / "bm25.run")
    for qrels_file in ("pooled.qrels", "full.qrels"):
        qrels = their_qrels(files / qrels_file)
        by_topic: dict = {}
        for q in qrels:
            by_topic.setdefault(q.query_id, {})[q.doc_id] = q.relevance
        parsed = parse_measures([measure])[0]
        ours = Evaluator(by_topic, [parsed])(run)
        # topics numbered for ir_measures as dsr numbers them (gdeval, ERR's provider, reads digits only)
        number = {t: str(i) for i, t in enumerate(by_topic)}
        numbered = [ir_measures.Qrel(number[q.query_id], q.doc_id, q.relevance) for q in qrels]
        scores = {number[q]: docs for q, docs in run.as_dict().items() if q in number}
        theirs = {t: v for t, v in ((m.query_id, m.value) for m in ir_measures.iter_calc([parsed], numbered, scores))}
        theirs = {t: theirs[number[t]] for t in by_topic if number[t] in theirs}
        for topic, value in zip(ours.topics, ours.values[:, 0]):
            assert value == pytest.approx(theirs[topic], abs=1e-12), (measure, qrels_file, topic)


def test_judged_at_10_on_pooled_labels_and_the_unjudged_fraction(files, capsys):
    """Judged@10 no longer crashes; on pooled labels the unjudged share is reported."""
    assert (
        main(
            [
                "evaluate",
                "--qrels",
                str(files / "pooled.qrels"),
                str(files / "bm25.run"),
                "--measures",
                "Judged@10,nDCG@5",
                "--json",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    qrels = their_qrels(files / "pooled.qrels")
    run = load_run(files / "bm25.run")
    expected = ir_measures.calc_aggregate([ir_measures.Judged @ 10], list(qrels), run.as_dict())
    judged = out["unjudged"]["judged"]["bm25"]
    assert judged == pytest.approx(expected[ir_measures.Judged @ 10], abs=1e-12)
    assert 0.5 < judged < 0.9 and out["unjudged"]["at"] == 10
    assert main(["evaluate", "--qrels", str(files / "pooled.qrels"), str(files / "bm25.run"), "--measures", "nDCG@5"]) == 0
    assert "unjudged in the top 10" in capsys.readouterr().err
    # on full labels nothing is unjudged and nothing is said
    assert main(["evaluate", "--qrels", str(files / "full.qrels"), str(files / "bm25.run"), "--json"]) == 0
    assert "unjudged" not in json.loads(capsys.readouterr().out)


def test_refusals_name_the_reason():
    for measure, words in (("alpha_nDCG@5", "intent-aware"), ("SDCG@5", "max_rel="), ("IPrec", "recall level"), ("RBP@5", "RBP")):
        with pytest.raises(InputError) as err:
            Evaluator({"q": {"d": 1}}, parse_measures([measure]))
        assert words in str(err.value)


def test_registry_declares_each_family_once_with_what_reports_need():
    names = [f.name for f in registry.FAMILIES]
    assert len(names) == len(set(names))
    assert set(names) == {getattr(ir_measures, n).NAME for n in ir_measures.measures.registry}
    nd = ir_measures.parse_measure("nDCG@5")
    assert registry.display_name(nd) == "nDCG@5" and registry.direction(nd) == 1 and registry.bounded(nd)
    assert registry.display_name(ir_measures.parse_measure("Rprec")) == "R-prec"
    assert registry.direction(ir_measures.parse_measure("Judged@10")) == 0
    assert not registry.bounded(ir_measures.parse_measure("NumRet"))
    assert any(line.strip().startswith("Judged@k") for line in registry.help_lines())


def test_evaluate_help_lists_the_registry(capsys):
    with pytest.raises(SystemExit):
        main(["evaluate", "--help"])
    out = capsys.readouterr().out
    assert "Judged@k" in out and "ERR@k" in out and "trec_eval" in out and "--qrels" in out


def test_validate_takes_a_qrels_file(files, capsys):
    """Unjudged documents are counted (not problems), as trec_eval reads a pooled qrels."""
    assert main(["validate", "--qrels", str(files / "pooled.qrels"), str(files / "bm25.run"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["valid"] and out["unjudged_lines"] > 100 and out["problems"] == []
    bad = files / "bad.run"
    bad.write_text((files / "bm25.run").read_text() + "t Q0 x 1 notanumber tag\n")
    assert main(["validate", "--qrels", str(files / "full.qrels"), str(bad)]) == 2
    assert "score is not a number" in capsys.readouterr().out


@pytest.mark.parametrize(
    "args, words",
    [
        (["-M", "0"], "--max-docs"),
        (["-l", "0"], "--relevance-level"),
        (["--measures", "alpha_nDCG@5"], "intent-aware"),
    ],
)
def test_bad_trec_eval_options_are_exit_2_naming_the_option(args, words, files, capsys):
    code = main(["evaluate", "--qrels", str(files / "full.qrels"), str(files / "bm25.run"), *args])
    err = capsys.readouterr().err
    assert code == 2 and words in err and "Traceback" not in err


def test_bad_qrels_files_are_exit_2_naming_file_and_line(files, tmp_path, capsys):
    bad = tmp_path / "bad.qrels"
    bad.write_text("# header\nq 0 d 1\nq 0 d2 one\n")
    assert main(["evaluate", "--qrels", str(bad), str(files / "bm25.run")]) == 2
    err = capsys.readouterr().err
    assert "bad.qrels:3" in err and "grade" in err
    assert main(["evaluate", "--qrels", str(tmp_path / "none.qrels"), str(files / "bm25.run")]) == 2
    assert "no such qrels file" in capsys.readouterr().err
    assert main(["validate", "--qrels", str(files / "full.qrels"), str(files / "bm25.run"), str(files / "bm25.run")]) == 2
