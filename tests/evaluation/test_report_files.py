"""A report a paper can use as it is: no absolute path, user or host name in any file
(runs named by system name or by their path relative to the report), every row
defined (the baseline with its parameters, a row equal to another said to be so),
``results.tex`` compiled by plain pdflatex, a test document that includes every
figure with its caption file, ``Results.table(formatted=True).to_latex()`` without
raw marks, and text tables whose columns line up whether a cell is marked or not."""

from __future__ import annotations

import copy
import getpass
import json
import os
import re
import shutil
import socket
import subprocess
from pathlib import Path

import numpy as np
import pytest

from dsr.cli import main
from dsr.collections.synthetic import make_collection, make_run
from dsr.core.data import write_benchmark
from dsr.evaluation import latex, tables
from dsr.evaluation import significance as sig
from dsr.evaluation.experiment import evaluate_runs
from dsr.evaluation.report import public

TEXT_FILES = ("results.md", "results.json", "results.tex", "results.csv", "comparison.csv")
needs_pdflatex = pytest.mark.skipif(
    shutil.which("pdflatex") is None, reason="pdflatex (Debian texlive-latex-base) is not installed"
)


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """Run files under a temporary folder (absolute paths, sidecars with command lines
    naming them), evaluated with a tuned family and a baseline into ``report/``."""
    root = tmp_path_factory.mktemp("report_paths")
    collection = make_collection(n=60, seed=5)
    write_benchmark(collection, root / "coll.jsonl")
    runs = root / "runs"
    runs.mkdir()
    for name, seed, quality in (("base", 1, 0.3), ("good", 2, 1.6), ("worse", 3, -0.8), ("bm25_a", 4, 0.2), ("bm25_b", 5, 0.9)):
        run = make_run(collection, seed=seed, quality=quality)
        run.config = {
            "ranker": "bm25",
            "params": {"k1": 0.9 + seed / 10, "b": 0.75},
            "command_line": f"dsr run {root / 'coll.jsonl'} --out {runs / name}.run",
            "inputs": [{"path": str(root / "coll.jsonl")}],
        }
        run.write(runs / f"{name}.run")
    shutil.copy(runs / "base.run", runs / "base_copy.run")  # a row equal to the baseline
    report = root / "report"
    argv = [
        "evaluate",
        str(root / "coll.jsonl"),
        *(str(runs / f"{n}.run") for n in ("base", "base_copy", "good", "worse")),
        "--tune",
        f"bm25={runs / 'bm25_a.run'},{runs / 'bm25_b.run'}",
        "--n-splits",
        "6",
        "--baseline",
        "base",
        "--report",
        str(report),
        "--quiet",
    ]
    assert main(argv) == 0
    return root, report


def _secrets(root: Path) -> list[str]:
    home = str(Path.home())
    return [str(root), str(root.resolve()), os.sep + "tmp" + os.sep, home, getpass.getuser(), socket.gethostname()]


def test_no_report_file_carries_a_path_user_or_host(made):
    root, report = made
    texts = {p.name: p.read_text(encoding="utf-8") for p in report.iterdir() if p.suffix in (".md", ".json", ".tex", ".csv")}
    assert set(TEXT_FILES) <= set(texts) and any(n.endswith(".caption.tex") for n in texts)
    for name, text in texts.items():
        for secret in _secrets(root):
            pattern = re.escape(secret) if os.sep in secret else rf"(?<![\w-]){re.escape(secret)}(?![\w-])"
            assert not re.search(pattern, text), (name, secret)
    for data in (p.read_bytes() for p in report.iterdir() if p.suffix in (".pdf", ".png", ".parquet")):
        assert str(root).encode() not in data and str(Path.home()).encode() not in data
    report_json = json.loads(texts["results.json"])
    assert report_json["runs"]["good"]["path"] == "good.run"  # outside the report: its name
    assert "- good: `good.run`" in texts["results.md"]


def test_public_keeps_paths_inside_the_report_relative(tmp_path):
    inside = tmp_path / "rep" / "runs" / "a.run.gz"
    text = f"--out {tmp_path / 'rep'} {inside} x=/home/someone/data/b.run see https://example.org/a"
    assert public(text, tmp_path / "rep") == "--out . runs/a.run.gz x=b.run see https://example.org/a"
    assert public({"p": [str(inside)], str(inside): 1}, tmp_path / "rep") == {"p": ["runs/a.run.gz"], "runs/a.run.gz": 1}
    assert public("better/worse ▲/▼ and a / b", tmp_path) == "better/worse ▲/▼ and a / b"


def test_every_row_is_defined_and_a_twin_of_the_baseline_says_so(made):
    _, report = made
    markdown = (report / "results.md").read_text(encoding="utf-8")
    systems = markdown.split("## Systems", 1)[1].split("\n\n", 2)[1]
    rows = dict(re.findall(r"^- \*\*(.+?)\*\*: (.+)$", systems, flags=re.M))
    assert set(rows) == {"base (baseline)", "base_copy", "good", "worse", "bm25"}
    assert "ranker bm25" in rows["base (baseline)"] and "k1=1" in rows["base (baseline)"]
    assert "b=0.75" in rows["base (baseline)"]
    assert "identical to base_copy in every column" in rows["base (baseline)"]
    assert "identical to base in every column" in rows["base_copy"]
    assert "identical" not in rows["good"]
    assert re.search(r"tuned family of 2 runs.*chosen on val in 6 splits", rows["bm25"])
    definitions = json.loads((report / "results.json").read_text())["definitions"]
    assert definitions["base"] == rows["base (baseline)"]
    tex = (report / "results.tex").read_text()
    assert r"\item[base]" in tex and "identical to base\\_copy" in tex


@needs_pdflatex
def test_results_tex_compiles_with_plain_pdflatex(made, tmp_path):
    _, report = made
    tex = (report / "results.tex").read_text(encoding="utf-8")
    assert not re.search(r"^\s*Run\s*&\s*&", tex, flags=re.M)  # no stray "Run & & ..." row
    assert sig.BETTER not in tex and sig.WORSE not in tex and "±" not in tex
    assert r"$^{\blacktriangle}$" in tex and r"$^{\blacktriangledown}$" in tex
    typeset = "\n".join(line for line in tex.splitlines() if not line.startswith("%"))
    assert "p $<$ 0.05" in typeset and "p < " not in typeset  # OT1 prints < as ¡
    shutil.copy(report / "results.tex", tmp_path)
    _pdflatex(tmp_path, "results.tex")
    assert (tmp_path / "results.pdf").read_bytes()[:5] == b"%PDF-"


@needs_pdflatex
def test_a_paper_includes_every_figure_as_it_is(made, tmp_path):
    _, report = made
    stems = sorted(p.name[: -len(".caption.tex")] for p in report.glob("*.caption.tex"))
    assert {"main", "measures", "diff_vs_baseline", "recall_at_k"} <= set(stems)
    for path in report.iterdir():
        if path.suffix in (".pdf", ".tex"):
            shutil.copy(path, tmp_path)
    body = "".join(
        f"\\begin{{figure}}[p]\\centering\\includegraphics[width=\\linewidth]{{{s}.pdf}}"
        f"\\input{{{s}.caption}}\\end{{figure}}\\clearpage\n"
        for s in stems
    )
    (tmp_path / "paper.tex").write_text(
        "\\documentclass{article}\n\\usepackage{graphicx}\n"
        + latex.PACKAGES
        + "\n\\begin{document}\n"
        + body
        + "\\listoffigures\n\\end{document}\n",
        encoding="utf-8",
    )
    log = _pdflatex(tmp_path, "paper.tex")
    assert "Float too large" not in log
    if shutil.which("pdftoppm"):
        subprocess.run(["pdftoppm", "-r", "30", "-png", str(tmp_path / "paper.pdf"), str(tmp_path / "page")], check=True)
        assert len(list(tmp_path.glob("page-*.png"))) >= len(stems) + 1


def _pdflatex(folder: Path, name: str) -> str:
    for _ in range(2):  # twice: the list of figures
        done = subprocess.run(
            ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", name],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stdout[-3000:]
    return done.stdout


@pytest.fixture(scope="module")
def results():
    collection = make_collection(n=60, seed=8)
    runs = {
        name: make_run(collection, seed=seed, quality=q)
        for name, seed, q in (("BM25_x & {y}", 1, 0.4), ("good", 2, 1.8), ("bad", 3, -1.0), ("same", 4, 0.5))
    }
    return evaluate_runs(collection, runs, measures=["nDCG@5", "RR"], baseline="BM25_x & {y}", progress=False, n_resamples=0)


@needs_pdflatex
def test_formatted_table_to_latex_has_no_raw_marks_and_compiles(results, tmp_path):
    frame = results.table(formatted=True)
    assert any(sig.BETTER in v for v in frame.to_numpy().ravel()) and any(sig.WORSE in v for v in frame.to_numpy().ravel())
    for text in (frame.to_latex(), results.table("all", formatted=True).to_latex()):
        assert all(ord(ch) < 128 for ch in text), [ch for ch in text if ord(ch) >= 128]
        assert r"$^{\blacktriangle}$" in text and r"BM25\_x \& \{y\}" in text
        assert not re.search(r"^\s*system\s*&\s*&", text, flags=re.M)
    (tmp_path / "t.tex").write_text(latex.document(frame.to_latex()), encoding="utf-8")
    _pdflatex(tmp_path, "t.tex")
    assert isinstance(results.table(formatted=False).to_numpy()[0, 0], float)


def test_text_tables_line_up_whether_a_cell_is_marked_or_not(results):
    for text in (tables.format_summary(results, ["nDCG@5", "RR"]), tables.format_text(results)):
        blocks = [b for b in text.split("\n\n") if "against the baseline" not in b.splitlines()[0]]
        checked = 0
        for block in blocks:
            rows = [r for r in block.splitlines()[2:] if re.search(r"\d\.\d{4}", r)]
            if not any(sig.BETTER in r or sig.WORSE in r for r in rows):
                continue
            # every cell's number ends at the same column in every row
            ends = [[m.end() for m in re.finditer(r"\d\.\d{4}(?=[▲▼ ]|$)", r)] for r in rows]
            assert len({tuple(e) for e in ends}) == 1, block
            checked += 1
        assert checked, text


def test_display_width_counts_wide_characters_twice():
    assert tables.display_width("0.5▲") == 4 and tables.display_width("漢字") == 4
    assert tables.display_width("e\u0301") == 1


@pytest.fixture(scope="module")
def drawn_here(tmp_path_factory):
    """Results of three systems on three measures, evaluated once (each test below has workers
    draw a copy of them as evaluated), and their figures drawn in this process into a home of
    their own (so a test's workers find no figures in their cache): (the results as evaluated,
    the copy drawn here, (captions, files))."""
    from dsr.evaluation.drawing import Drawing

    collection = make_collection(n=80, seed=3)
    runs = {
        name: make_run(collection, seed=seed, quality=q)
        for name, seed, q in (("base", 1, 0.4), ("good", 2, 1.8), ("bad", 3, -1.0))
    }
    evaluated = evaluate_runs(collection, runs, measures=["nDCG@5", "RR", "P@1"], baseline="base", progress=False)
    here = copy.deepcopy(evaluated)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DSR_HOME", str(tmp_path_factory.mktemp("drawn-here")))
        drawing = Drawing(here, workers=1)
        assert drawing.pool is None
        return evaluated, here, drawing.result()


@pytest.mark.slow  # starts forked drawing workers (a helper process)
def test_figures_drawn_by_workers_are_the_files_drawn_here(drawn_here):
    """The report's figures drawn by two forked workers: the same captions and the same
    bytes (PNG and PDF) as drawn in this process, and the intervals of the means the
    workers computed come back for the tables."""
    from dsr.evaluation.drawing import Drawing

    evaluated, here, (captions, files) = drawn_here
    made = copy.deepcopy(evaluated)
    there = Drawing(made, workers=2)
    assert there.pool is not None and len(there.futures) == 2
    assert there.result() == (captions, files)
    assert list(captions) == ["main", "measures", "subsets_nDCG_5", "diff_vs_baseline", "recall_at_k"]
    assert list(files) == [f"{stem}.{fmt}" for stem in captions for fmt in ("png", "pdf")]
    assert made._intervals.keys() == here._intervals.keys() and here._intervals
    for key, interval in here._intervals.items():
        for here_part, there_part in zip(interval, made._intervals[key]):  # mean, low, high
            np.testing.assert_array_equal(there_part, here_part)


@pytest.mark.slow  # starts forked drawing workers (a helper process)
def test_workers_draw_the_results_as_they_were_when_the_drawing_started(drawn_here):
    """The tables fill the results' caches (the intervals of the means) while the workers draw:
    the workers get the results as they stood when the drawing started, so this thread's
    writes neither reach them nor break their sending (a dict pickled while it grew failed a
    reproduce on CI: "dictionary changed size during iteration")."""
    from dsr.evaluation.drawing import Drawing

    evaluated, here, drawn = drawn_here
    made = copy.deepcopy(evaluated)
    there = Drawing(made, workers=2)  # this test's home holds no figures: the workers draw
    assert there.futures is not None
    written = {("written here", i) for i in range(200_000)}
    for key in written:  # what the tables do while the workers draw
        made._intervals[key] = (0.0, 0.0, 0.0)
    for future in there.futures:  # each worker's own intervals: none of those written here
        assert not written & future.result()[1].keys()
    assert there.result() == drawn
    assert made._intervals.keys() - here._intervals.keys() == written
