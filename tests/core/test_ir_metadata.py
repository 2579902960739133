"""ir_metadata headers: written on request by run/rerank/fuse, read back by dsr, PRIMAD fields."""

from __future__ import annotations

import json

import ir_measures
import pytest
import yaml

from dsr.cli import main
from dsr.core.errors import InputError
from dsr.core.ir_metadata import config_from_header, format_header, parse_header
from dsr.core.run import Run, read_trec_run

# The header of ir_metadata's documentation (schema v0.1), shortened, as a run file carries it.
DOCUMENTED = """\
# ir_metadata.start
# schema-version: 0.1
# run-version: 1.0
# tag: h2oloo.ccrf.04.core17.ax_e3_0.6
# platform:
#   hardware:
#     cpu:
#       model: Intel(R) Xeon(R) Gold 6144 CPU @ 3.50GHz
#       number of cores: 16
# implementation:
#   executable:
#     cmd: python generate_runs.py --config ccrf.04_core17_BM25+AX.json
# method:
#   automatic: true
#   retrieval:
#   - name: bm25
#     b: 0.4
#     k1: 0.9
#   - name: axiomatic reranker
#     reranks: bm25
# data:
#   test collection:
#     name: The New York Times Annotated Corpus
#     ir_datasets: https://ir-datasets.com/nyt
# ir_metadata.end
"""


def _plain_yaml(path) -> dict:
    """The header parsed independently: '# ' stripped between the markers, then YAML."""
    lines = path.read_text().splitlines()
    start, end = lines.index("# ir_metadata.start"), lines.index("# ir_metadata.end")
    return yaml.safe_load("\n".join(line[2:] for line in lines[start + 1 : end]))


def test_parse_the_documented_example():
    meta = parse_header(DOCUMENTED.splitlines(keepends=True))
    assert meta["tag"] == "h2oloo.ccrf.04.core17.ax_e3_0.6"
    assert meta["platform"]["hardware"]["cpu"]["number of cores"] == 16
    assert meta["method"]["retrieval"][1] == {"name": "axiomatic reranker", "reranks": "bm25"}
    config = config_from_header(meta)
    assert config["command_line"].startswith("python generate_runs.py")
    assert config["collection"] == {"name": "The New York Times Annotated Corpus"}
    assert parse_header(["q1 Q0 d1 1 2.0 x\n"]) == {}
    # YAML dates and number keys become JSON-ready text (the header goes into sidecars)
    dated = parse_header(
        ["# ir_metadata.start\n", "# actor:\n", "#   date: 2022-07-11\n", "#   1: first\n", "# ir_metadata.end\n"]
    )
    assert dated == {"actor": {"date": "2022-07-11", "1": "first"}}
    json.dumps(dated, sort_keys=True)


def test_bad_headers_name_the_line():
    with pytest.raises(InputError, match=r"run:1: .*without"):
        parse_header(["# ir_metadata.start\n", "# tag: x\n", "q1 Q0 d1 1 2.0 x\n"], path="run")
    with pytest.raises(InputError, match=r"run:3: ir_metadata header is not valid YAML"):
        parse_header(["# ir_metadata.start\n", "# tag: x\n", "# a: b: c\n", "# d: 1\n", "# ir_metadata.end\n"], path="run")


def test_run_with_ir_metadata_header(tmp_path, capsys):
    plain, annotated = tmp_path / "plain.run", tmp_path / "annotated.run"
    assert main(["run", "sample", "--ranker", "bm25", "--param", "k1=0.9", "--out", str(plain)]) == 0
    assert main(["run", "sample", "--ranker", "bm25", "--param", "k1=0.9", "--out", str(annotated), "--ir-metadata"]) == 0
    assert not plain.read_text().startswith("#")
    text = annotated.read_text()
    assert text.startswith("# ir_metadata.start\n")
    body = [line for line in text.splitlines(keepends=True) if not line.startswith("#")]
    assert "".join(body) == plain.read_text()

    meta = _plain_yaml(annotated)
    side = json.loads((tmp_path / "annotated.run.json").read_text())
    assert side["ir_metadata_header"] is True
    assert meta["tag"] == side["tag"] == body[0].split()[5]
    assert meta["schema-version"] == 0.1
    assert meta["method"]["retrieval"] == [{"name": "bm25", "method": "dsr run --ranker bm25", "params": side["params"]}]
    assert meta["method"]["retrieval"][0]["params"]["k1"] == 0.9
    assert meta["data"]["test collection"]["hash"] == side["collection"]["hash"]
    assert meta["data"]["test collection"]["ir_datasets"] == "dsr/sample"
    assert meta["implementation"]["executable"]["cmd"] == side["command_line"]
    assert f"numpy=={side['versions']['numpy']}" in meta["platform"]["software"]["libraries"]["python"]

    # dsr reads it as the same run; other tools' readers reject '#' lines (why it is opt-in)
    assert read_trec_run(annotated).rankings == read_trec_run(plain).rankings
    assert main(["validate", "sample", str(annotated)]) == 0
    with pytest.raises(ValueError):
        list(ir_measures.read_trec_run(str(annotated)))
    capsys.readouterr()
    for path in (plain, annotated):
        assert main(["evaluate", "sample", str(path), "--json", "--quiet", "--measures", "AP"]) == 0
    first, second = (json.loads(chunk) for chunk in _split_json(capsys.readouterr().out))
    assert first["runs"]["plain"]["all_dialogues"] == second["runs"]["annotated"]["all_dialogues"]


def _split_json(text: str) -> list[str]:
    decoder, chunks, i = json.JSONDecoder(), [], 0
    while i < len(text.strip()):
        obj, end = decoder.raw_decode(text, i)
        chunks.append(text[i:end])
        i = end + 1
    return chunks


def test_a_run_without_sidecar_takes_its_config_from_the_header(tmp_path, capsys):
    run = tmp_path / "r.run"
    assert main(["run", "sample", "--ranker", "bm25", "--out", str(run), "--ir-metadata"]) == 0
    side = json.loads((tmp_path / "r.run.json").read_text())
    (tmp_path / "r.run.json").unlink()
    config = Run.read(run).config
    assert config["collection"]["hash"] == side["collection"]["hash"]
    assert config["ir_metadata"]["tag"] == side["tag"]
    # and it is kept in the sidecar of what is made from it
    fused = tmp_path / "f.run"
    assert main(["fuse", str(run), str(run), "--method", "rrf", "--out", str(fused), "--ir-metadata"]) == 0
    fused_side = json.loads((tmp_path / "f.run.json").read_text())
    assert fused_side["inputs"][0]["config"]["ir_metadata"]["tag"] == side["tag"]
    stages = _plain_yaml(fused)["method"]["retrieval"]
    assert stages[-1]["name"] == "fusion rrf" and stages[-1]["ensembles"] == ["bm25", "bm25 #2"]


def test_rerank_header_names_the_stage_it_reranks(tmp_path):
    first, second = tmp_path / "bm25.run", tmp_path / "rerank.run"
    assert main(["run", "sample", "--ranker", "bm25", "--out", str(first)]) == 0
    argv = f"rerank sample --run {first} --reranker bi-encoder --model all-MiniLM-L6-v2 --top-k 3 --out {second} --ir-metadata"
    assert main(argv.split()) == 0
    stages = _plain_yaml(second)["method"]["retrieval"]
    assert [s["name"] for s in stages] == ["bm25", "bi-encoder"]
    assert stages[1]["reranks"] == "bm25" and stages[1]["params"]["top_k"] == 3
    assert stages[1]["models"] == ["all-MiniLM-L6-v2"]


def test_format_header_lines_are_comments():
    lines = format_header({"tag": "x", "ranker": "bm25", "params": {"k1": 1.2}})
    assert lines[0] == "# ir_metadata.start" and lines[-1] == "# ir_metadata.end"
    assert all(line.startswith("#") and "\n" not in line for line in lines)
    assert parse_header([line + "\n" for line in lines])["method"]["retrieval"][0]["params"] == {"k1": 1.2}


def test_a_bad_line_below_a_header_is_named_not_a_header_line(tmp_path, capsys):
    plain = tmp_path / "plain.run"
    assert main(["run", "sample", "--ranker", "bm25", "--out", str(plain)]) == 0
    lines = plain.read_text().splitlines(keepends=True)
    lines[7] = "nope " + lines[7].split(" ", 1)[1]
    header = ["# ir_metadata.start\n", "# tag: x\n", "# cmd: a b c d\n", "# ir_metadata.end\n"]
    run = tmp_path / "bad.run"
    run.write_text("".join(header + lines))
    capsys.readouterr()
    assert (
        main(["fuse", str(run), str(plain), "--collection", "sample", "--method", "rrf", "--out", str(tmp_path / "f.run")]) == 2
    )
    assert f"{run}:{len(header) + 8}: field 'qid': topic 'nope'" in capsys.readouterr().err


def test_a_loosely_written_foreign_header_is_kept_not_fatal(tmp_path):
    plain = tmp_path / "plain.run"
    assert main(["run", "sample", "--ranker", "bm25", "--out", str(plain)]) == 0
    foreign = tmp_path / "foreign.run"
    foreign.write_text("# ir_metadata.start\n# tag: theirs\n# method: bm25\n# data: nyt\n# ir_metadata.end\n" + plain.read_text())
    config = Run.read(foreign).config
    assert config == {"ir_metadata": {"tag": "theirs", "method": "bm25", "data": "nyt"}}
    fused = tmp_path / "f.run"
    assert main(["fuse", str(foreign), str(plain), "--method", "rrf", "--out", str(fused), "--ir-metadata"]) == 0
    assert _plain_yaml(fused)["method"]["retrieval"][-1]["ensembles"] == ["bm25-query=all", "bm25"]
