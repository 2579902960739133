"""Figures a paper includes unchanged: TrueType fonts (pdffonts), the caption kept out
of the figure (results.md and STEM.caption.tex hold it), panels on one value axis, a
few highlighted systems in recall_at_k with a compact legend inside the axes, one line
width, 300 dpi PNGs, every figure rendered from its PDF (pdftoppm) with nothing cut
off; bootstrap intervals on every bar under both protocols, a hue per family from a
colour-blind-safe palette with the baseline set apart, a main figure one ACM column wide."""

from __future__ import annotations

import colorsys
import io
import shutil
import subprocess

import numpy as np
import pytest
from matplotlib.colors import to_rgb
from matplotlib.figure import Figure

from dsr.collections.synthetic import make_collection, make_run
from dsr.evaluation import figure_files, figures
from dsr.evaluation.experiment import evaluate_runs
from dsr.evaluation.protocol import generate_splits

OKABE_ITO = {"#0072B2", "#E69F00", "#009E73", "#CC79A7", "#999999", "#56B4E9"}


def _runs(collection):
    runs = {}
    for name, ranker, seed, quality in (
        ("BM25 (last)", "bm25", 1, 0.5),
        ("BM25 (all)", "bm25", 2, 0.8),
        ("dense (last)", "dense", 3, 1.2),
        ("dense (all)", "dense", 4, 1.4),
        ("random", "random", 5, 0.0),
        ("RRF", None, 6, 1.3),
    ):
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
        return evaluate_runs(
            collection,
            runs,
            measures=["nDCG@5", "RR", "P@1"],
            baseline="BM25 (all)",
            run_info=info,
            progress=False,
            n_resamples=0,
        )
    grid = {f"k1={k}": make_run(collection, seed=10 + k, quality=0.3 * k) for k in range(1, 4)}
    for run in grid.values():
        run.config = {"ranker": "bm25"}
    return evaluate_runs(
        collection,
        runs,
        measures=["nDCG@5", "RR", "P@1"],
        splits=generate_splits(collection.ids, 6, 0),
        families={"BM25": grid},
        baseline="BM25",
        run_info={**info, "BM25": {"ranker": "bm25"}},
        progress=False,
        n_resamples=0,
    )


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
        fig.savefig(buffer, format="pdf")  # a user's own savefig: PaperFigure keeps Type 42
        data = buffer.getvalue()
        assert b"/Type3" not in data, stem
        assert b"/FontFile2" in data, stem  # an embedded TrueType font program
        (tmp_path / f"{stem}.pdf").write_bytes(data)
    if shutil.which("pdffonts") is None:
        pytest.skip("pdffonts (Debian poppler-utils) is not installed; .ci/run installs it")
    for stem in drawn:
        out = subprocess.run(
            ["pdffonts", str(tmp_path / f"{stem}.pdf")], capture_output=True, text=True, check=True
        ).stdout.splitlines()
        rows = [line for line in out[2:] if line.strip()]
        assert rows, stem
        for row in rows:  # name, type (may be two words), encoding, emb, sub, uni, object ID
            assert "Type 3" not in row and "TrueType" in row, (stem, row)
            assert row.split()[-5] == "yes", (stem, row)  # embedded


def _texts(fig):
    """Every piece of text drawn in the figure."""
    from matplotlib.text import Text

    return [t.get_text() for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]


def test_the_caption_is_kept_out_of_the_figure(drawn):
    for stem, fig in drawn.items():
        caption = figures.caption(fig)
        assert len(caption) > 60 and caption.endswith("."), stem
        drawn_text = " ".join(_texts(fig))
        for words in ("no mark", "Bars:", "bootstrap", "most often", "minus"):
            assert words not in drawn_text, (stem, words)


def test_everything_drawn_lies_inside_the_figure(drawn):
    for stem, fig in drawn.items():
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        page = fig.bbox
        for ax in fig.axes:
            if ax.get_visible():
                box = ax.get_tightbbox(renderer)
                assert box.x0 >= page.x0 - 1 and box.y0 >= page.y0 - 1, (stem, box)
                assert box.x1 <= page.x1 + 1 and box.y1 <= page.y1 + 1, (stem, box)


def test_panels_share_their_value_axis(results, drawn):
    for stem in ("measures", "subsets_nDCG_5"):
        limits = {ax.get_xlim() for ax in drawn[stem].axes if ax.get_visible()}
        assert len(limits) == 1, (stem, limits)
    assert len({ax.get_ylim() for ax in drawn["diff_vs_baseline"].axes if ax.get_visible()}) == 1


def test_recall_at_k_names_a_few_systems_in_a_compact_legend(results, drawn):
    fig = drawn["recall_at_k"]
    ax = fig.axes[0]
    legend = ax.get_legend()
    labels = [t.get_text() for t in legend.get_texts()]
    named = figures.highlighted(results, list(results.run_objects))
    assert labels[0] == f"{results.baseline} (baseline)"
    assert set(labels[:-1]) | {labels[-1]} >= {figures._label(results, n) for n in named}
    families = {figures.family_of(n, results.run_info.get(n)) for n in results.run_objects}
    assert len(named) <= len(families) + 1 < len(results.run_objects)
    assert labels[-1].endswith("others")
    assert fig.get_figwidth() == pytest.approx(figures.ACM_COLUMN_IN)
    fig.canvas.draw()
    inside = ax.get_window_extent()
    box = legend.get_window_extent()
    assert inside.x0 <= box.x0 and box.x1 <= inside.x1 and inside.y0 <= box.y0 and box.y1 <= inside.y1
    colours = {line.get_label(): line.get_color() for line in ax.get_lines()}
    named_colours = [to_rgb(colours[figures._label(results, n)]) for n in named]
    assert len(set(named_colours)) == len(named_colours)  # each named line its own colour


def _widths(fig):
    """The widths of every line drawn on the axes: curves, rules, bar edges, whiskers, caps."""
    from matplotlib.collections import LineCollection
    from matplotlib.patches import Rectangle

    widths = set()
    for ax in fig.axes:
        for line in ax.get_lines():
            if line.get_linestyle() != "None":
                widths.add(round(line.get_linewidth(), 3))
            elif line.get_marker() not in ("None", None, ""):  # error-bar caps
                widths.add(round(line.get_markeredgewidth(), 3))
        for coll in ax.collections:
            if isinstance(coll, LineCollection):  # whiskers
                widths.update(round(w, 3) for w in coll.get_linewidths())
        for patch in ax.patches:
            if isinstance(patch, Rectangle) and patch.get_linewidth() > 0 and patch.get_visible():
                widths.add(round(patch.get_linewidth(), 3))
        widths.add(round(ax.spines["bottom"].get_linewidth(), 3))
    return widths


def test_every_line_has_one_width(drawn):
    for stem, fig in drawn.items():
        assert _widths(fig) == {figures.LINE_WIDTH}, stem


@pytest.mark.slow  # every figure drawn twice at 300 dpi and quantised, per results set
def test_a_png_holds_the_pixels_of_matplotlib_s_own_png_in_256_colours(results):
    """The PNG is made from Agg's pixels directly (not from matplotlib's PNG, decoded again):
    the same pixels, so the same 256 colours, for every figure and at a height that is not a
    whole number of pixels at 300 dpi (each figure is drawn twice: one for each path)."""
    from PIL import Image

    def draw() -> dict:
        odd = figures.new_figure(7.0, 1.05)  # 1.05 in * 300 dpi is 314.99...: Agg's canvas has 315 rows
        odd.gca().plot([0, 1], [1, 0])
        return {**results.plot("all"), "odd": odd}

    ours, theirs = draw(), draw()
    for stem, fig in ours.items():
        files = figure_files.figure_files(fig, stem, ("png",))
        own = io.BytesIO()
        theirs[stem].savefig(own, format="png", dpi=300)
        expected = Image.open(io.BytesIO(own.getvalue())).convert("RGB").quantize(256, method=Image.Quantize.MEDIANCUT)
        got = Image.open(io.BytesIO(files[f"{stem}.png"]))
        assert got.size == expected.size, stem
        assert np.array_equal(np.asarray(got.convert("RGB")), np.asarray(expected.convert("RGB"))), stem


@pytest.mark.slow  # every figure written at 300 dpi and every PDF rendered, per results set
def test_pngs_are_300_dpi_and_every_pdf_renders(drawn, tmp_path):
    import struct

    for stem, fig in drawn.items():
        files = figure_files.figure_files(fig, stem)
        png = files[f"{stem}.png"]
        width, height = struct.unpack(">II", png[16:24])  # the IHDR chunk
        assert width == pytest.approx(fig.get_figwidth() * 300, abs=2), stem
        assert height == pytest.approx(fig.get_figheight() * 300, abs=2), stem
        (tmp_path / f"{stem}.pdf").write_bytes(files[f"{stem}.pdf"])
    if shutil.which("pdftoppm") is None:
        pytest.skip("pdftoppm (Debian poppler-utils) is not installed")
    from matplotlib.image import imread

    for stem, fig in drawn.items():
        subprocess.run(
            ["pdftoppm", "-r", "100", "-png", "-singlefile", str(tmp_path / f"{stem}.pdf"), str(tmp_path / f"render-{stem}")],
            check=True,
        )
        image = imread(tmp_path / f"render-{stem}.png")
        assert image.shape[1] == pytest.approx(fig.get_figwidth() * 100, abs=2), stem
        ink = image[..., :3].mean(axis=2) < 0.5
        assert ink.mean() > 0.01, stem  # drawn, not blank
        margin = ink[:, :2].any() or ink[:, -2:].any() or ink[:2].any() or ink[-2:].any()
        assert not margin, stem  # nothing cut at the edge


def test_bars_carry_bootstrap_intervals_of_the_means(results, drawn):
    ax = drawn["main"].axes[0]
    names = figures.system_order(results, list(results.systems if results.splits else results.runs))
    bars = _bars(ax)
    assert len(bars) == len(names)
    segments = bars.errorbar.lines[2][0].get_segments()  # the interval of each bar
    for name, bar, segment in zip(names, bars, segments):
        mean, low, high = (v[0] for v in results.mean_ci("all", name))  # nDCG@5 is the first
        assert bar.get_width() == pytest.approx(mean)
        assert sorted(x for x, _ in segment) == pytest.approx([low, high])
        assert 0 <= low <= mean <= high <= 1
    text = figures.caption(drawn["main"])
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
    assert colours["BM25 (last)"] != colours["BM25 (all)"]  # a shade per member
    hues = {round(_hue(h), 2) for h in OKABE_ITO if h != "#999999"}
    for name in ("BM25 (last)", "dense (all)", "RRF"):
        assert round(_hue(colours[name]), 2) in hues  # from Okabe-Ito's palette
    ax = drawn["main"].axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels[0] == f"{results.baseline} (baseline)"  # first, hatched, ruled off
    assert _bars(ax)[0].get_hatch() and not _bars(ax)[1].get_hatch()
    assert any(np.allclose(line.get_ydata(), 0.5) for line in ax.get_lines())


def test_every_panel_lists_the_baseline_first(results, drawn):
    for stem in ("main", "measures", "subsets_nDCG_5"):
        for ax in drawn[stem].axes:
            if not ax.get_visible():
                continue
            bottom, top = ax.get_ylim()
            assert top < bottom, (stem, ax.get_title())  # row 0 (the baseline) on top
            ticks = [t.get_text() for t in ax.get_yticklabels()]
            assert not ticks or ticks[0] == f"{results.baseline} (baseline)", stem  # others share y


def test_main_figure_is_one_acm_column(drawn):
    assert drawn["main"].get_figwidth() == pytest.approx(figures.ACM_COLUMN_IN)
    assert drawn["subsets_nDCG_5"].get_figwidth() == pytest.approx(figures.ACM_PAGE_IN)


def test_a_system_identical_to_the_baseline_gets_no_empty_panel():
    """A run that ranks every dialogue as the baseline does has no difference to draw: it is named
    in the caption, and every panel drawn holds a difference (a filled area)."""
    collection = make_collection(n=40, seed=5)
    runs = {"base": make_run(collection, seed=1, quality=0.5), "other": make_run(collection, seed=2, quality=1.0)}
    runs["copy"] = make_run(collection, seed=1, quality=0.5)  # the same ranking as the baseline
    results = evaluate_runs(collection, runs, measures=["nDCG@5", "RR"], baseline="base", progress=False, n_resamples=0)
    fig = figures.diff_figure(results)
    shown = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title().split()[0] for ax in shown] == ["other"]
    assert all(ax.collections and any(len(c.get_paths()) for c in ax.collections) for ax in shown)
    assert "no different from base on any dialogue: copy" in figures.caption(fig)
    only_copy = evaluate_runs(
        collection, {k: runs[k] for k in ("base", "copy")}, measures=["nDCG@5"], baseline="base", progress=False, n_resamples=0
    )
    assert figures.diff_figure(only_copy) is None  # nothing to draw, as with no other system
