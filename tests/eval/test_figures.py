"""Figures a publisher accepts: TrueType fonts (pdffonts), footnotes that never cover a
tick label, bootstrap intervals on every bar under both protocols, a hue per family
from a colour-blind-safe palette with the baseline set apart, and a main figure one
ACM column wide."""

from __future__ import annotations

import colorsys
import io
import shutil
import subprocess

import numpy as np
import pytest
from matplotlib.colors import to_rgb
from matplotlib.figure import Figure

from eval import figures
from eval.protocol import generate_splits
from eval.results import evaluate_runs
from retrieval.collections.synthetic import make_collection, make_run

OKABE_ITO = {"#0072B2", "#E69F00", "#009E73", "#CC79A7", "#999999", "#56B4E9"}


def _runs(collection):
    runs = {}
    for name, ranker, seed, quality in (("BM25 (last)", "bm25", 1, 0.5), ("BM25 (all)", "bm25", 2, 0.8),
                                        ("dense (last)", "dense", 3, 1.2), ("dense (all)", "dense", 4, 1.4),
                                        ("random", "random", 5, 0.0), ("RRF", None, 6, 1.3)):
        run = make_run(collection, seed=seed, quality=quality)
        run.config = {"ranker": ranker} if ranker else {"fusion": "rrf"}
        runs[name] = run
    return runs


@pytest.fixture(scope="module", params=["all", "official"])
def results(request):
    collection = make_collection(n=80, seed=3)
    runs = _runs(collection)
    info = {name: {"config": run.config} for name, run in runs.items()}
    if request.param == "all":
        return evaluate_runs(collection, runs, measures=["nDCG@5", "RR", "P@1"], baseline="BM25 (all)",
                             run_info=info, progress=False, n_resamples=0)
    grid = {f"k1={k}": make_run(collection, seed=10 + k, quality=0.3 * k) for k in range(1, 4)}
    for run in grid.values():
        run.config = {"ranker": "bm25"}
    return evaluate_runs(collection, runs, measures=["nDCG@5", "RR", "P@1"],
                         splits=generate_splits(collection.ids, 6, 0), families={"BM25": grid},
                         baseline="BM25", run_info={**info, "BM25": {"ranker": "bm25"}}, progress=False,
                         n_resamples=0)


@pytest.fixture(scope="module")
def drawn(results):
    return results.plot("all")


def test_every_report_figure_is_drawn(results, drawn):
    assert set(drawn) == {"main", "measures", "subsets_nDCG_5", "diff_vs_baseline", "recall_at_k"}
    assert all(isinstance(fig, Figure) for fig in drawn.values())
    assert isinstance(results.plot("main", measure="RR"), Figure)


def test_pdfs_embed_truetype_fonts_never_type3(drawn, tmp_path):
    for stem, fig in drawn.items():
        buffer = io.BytesIO()
        fig.savefig(buffer, format="pdf")      # a user's own savefig: PaperFigure keeps Type 42
        data = buffer.getvalue()
        assert b"/Type3" not in data, stem
        assert b"/FontFile2" in data, stem    # an embedded TrueType font program
        (tmp_path / f"{stem}.pdf").write_bytes(data)
    if shutil.which("pdffonts") is None:
        pytest.skip("pdffonts (Debian poppler-utils) is not installed; .ci/run installs it")
    for stem in drawn:
        out = subprocess.run(["pdffonts", str(tmp_path / f"{stem}.pdf")], capture_output=True, text=True,
                             check=True).stdout.splitlines()
        rows = [line for line in out[2:] if line.strip()]
        assert rows, stem
        for row in rows:   # name, type (may be two words), encoding, emb, sub, uni, object ID
            assert "Type 3" not in row and "TrueType" in row, (stem, row)
            assert row.split()[-5] == "yes", (stem, row)     # embedded


def _boxes(fig):
    """The footnote's box, and each visible axes' tight box (its drawn tick labels, axis
    labels and title included), in display units."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    notes = fig.findobj(lambda a: hasattr(a, "get_gid") and a.get_gid() == "dsr-footnote")
    axes = [ax.get_tightbbox(renderer) for ax in fig.axes if ax.get_visible()]
    return [n.get_window_extent(renderer) for n in notes], axes, fig.bbox


def test_footnotes_never_overlap_tick_labels(drawn):
    for stem, fig in drawn.items():
        notes, axes, page = _boxes(fig)
        assert len(notes) == 1 and axes, stem
        note = notes[0]
        assert note.x0 >= page.x0 - 0.5 and note.y0 >= page.y0 - 0.5 and note.x1 <= page.x1 + 0.5, stem
        for box in axes:
            assert not note.overlaps(box), (stem, box)


def test_bars_carry_bootstrap_intervals_of_the_means(results, drawn):
    ax = drawn["main"].axes[0]
    names = figures.system_order(results, list(results.systems if results.splits else results.runs))
    bars = _bars(ax)
    assert len(bars) == len(names)
    segments = bars.errorbar.lines[2][0].get_segments()     # the interval of each bar
    for name, bar, segment in zip(names, bars, segments):
        mean, low, high = (v[0] for v in results.mean_ci("all", name))   # nDCG@5 is the first
        assert bar.get_width() == pytest.approx(mean)
        assert sorted(x for x, _ in segment) == pytest.approx([low, high])
        assert 0 <= low <= mean <= high <= 1
    footnote = drawn["main"].findobj(lambda a: hasattr(a, "get_gid") and a.get_gid() == "dsr-footnote")[0]
    text = " ".join(footnote.get_text().split())
    assert "95% percentile bootstrap interval" in text and "no mark: not significantly different" in text


def _bars(ax):
    from matplotlib.container import BarContainer

    return next(c for c in ax.containers if isinstance(c, BarContainer))


def _hue(colour) -> float:
    return colorsys.rgb_to_hsv(*to_rgb(colour))[0]


def test_a_hue_per_family_and_the_baseline_set_apart(results, drawn):
    colours = figures.system_colours(results)
    assert figures.family_of("BM25 (last)", results.run_info["BM25 (last)"]) == "BM25"
    assert figures.family_of("RRF", results.run_info["RRF"]) == "fusion"
    assert abs(_hue(colours["BM25 (last)"]) - _hue(colours["BM25 (all)"])) < 0.02
    assert abs(_hue(colours["dense (last)"]) - _hue(colours["dense (all)"])) < 0.02
    assert abs(_hue(colours["BM25 (last)"]) - _hue(colours["dense (last)"])) > 0.2
    assert colours["BM25 (last)"] != colours["BM25 (all)"]           # a shade per member
    hues = {round(_hue(h), 2) for h in OKABE_ITO if h != "#999999"}
    for name in ("BM25 (last)", "dense (all)", "RRF"):
        assert round(_hue(colours[name]), 2) in hues                  # from Okabe-Ito's palette
    ax = drawn["main"].axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels[0] == f"{results.baseline} (baseline)"              # first, hatched, ruled off
    assert _bars(ax)[0].get_hatch() and not _bars(ax)[1].get_hatch()
    assert any(np.allclose(line.get_ydata(), 0.5) for line in ax.get_lines())


def test_every_panel_lists_the_baseline_first(results, drawn):
    for stem in ("main", "measures", "subsets_nDCG_5"):
        for ax in drawn[stem].axes:
            if not ax.get_visible():
                continue
            bottom, top = ax.get_ylim()
            assert top < bottom, (stem, ax.get_title())        # row 0 (the baseline) on top
            ticks = [t.get_text() for t in ax.get_yticklabels()]
            assert not ticks or ticks[0] == f"{results.baseline} (baseline)", stem   # others share y


def test_main_figure_is_one_acm_column(drawn):
    assert drawn["main"].get_figwidth() == pytest.approx(figures.ACM_COLUMN_IN)
    assert drawn["subsets_nDCG_5"].get_figwidth() == pytest.approx(figures.ACM_PAGE_IN)
