"""Figures of a report, made for a paper: what ``Results.plot`` returns and reports save.

* Fonts are embedded as TrueType (``pdf.fonttype`` 42), never Type 3, which
  publishers' checkers (ACM, IEEE PDF eXpress) reject; a :class:`PaperFigure`
  saves with this style wherever it is saved from.
* Every bar carries the 95% interval of its mean (``Results.interval_text``: a
  percentile bootstrap over the dialogues by default), under every protocol; a
  tuned family's bar is its out-of-sample per-topic mean (the sd over the
  overlapping test halves is not an interval and is not drawn).
* Colours say the family: BM25 variants are shades of one hue, dense models of
  another, fusions, rerankers and the reference rows (random, initial) of others,
  from Okabe and Ito's colour-blind-safe palette; the baseline is hatched and
  drawn first, set apart by a line.
* ▲/▼ mark a system significantly better/worse than the baseline; the caption
  says by which test, and that no mark means "not significantly different".
* The caption is never drawn in the figure (a paper sets its own): :func:`caption`
  gives it, reports write it in ``results.md`` and in ``STEM.caption.tex``.
* Panels of one figure share their value axis (``measures``: every measure bounded
  to [0, 1] on one scale; ``subsets_M``; ``diff_vs_baseline``), so bars compare
  across panels; every line (bar edges, whiskers and their caps, rules, curves) is
  :data:`LINE_WIDTH` wide.
* ``main``: the primary measure per system, one ACM column wide (3.33 in);
  ``measures`` a panel per measure; ``subsets_M`` a panel per subset;
  ``diff_vs_baseline`` sorted per-topic differences; ``recall_at_k`` R@k curves of
  a few highlighted systems (the baseline and the best of each family, each in its
  family's hue, a compact legend inside the axes) over the others in light grey.
  Reports save each as a 300 dpi PNG and a PDF.

No pyplot: figures are :class:`matplotlib.figure.Figure` objects drawn by the
Agg canvas, so nothing touches a global backend.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ParamSpec, Protocol, TypeVar

import numpy as np

from dsr.core.errors import InputError
from dsr.core.provenance import slug
from dsr.evaluation import significance as sig
from dsr.evaluation.measures import Evaluator, parse_measures

if TYPE_CHECKING:  # matplotlib itself is imported on first use (_mpl)
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.typing import RcKeyType

    from dsr.core.run import Run
    from dsr.evaluation.measures import TopicValues
    from dsr.evaluation.protocol import Splits

_P = ParamSpec("_P")
_R = TypeVar("_R")


class _Row(Protocol):
    """What a figure reads of a table's row (:class:`dsr.evaluation.results.System`)."""

    @property
    def kind(self) -> str: ...

    @property
    def per_topic(self) -> np.ndarray: ...


class ResultsView(Protocol):
    """What the figures read of their results (:class:`dsr.evaluation.results.Results` is one;
    that module draws with this one, so the figures name what they read rather than import it)."""

    @property
    def baseline(self) -> str | None: ...
    @property
    def measures(self) -> Sequence[str]: ...
    @property
    def primary_measure(self) -> str: ...
    @property
    def subsets(self) -> Mapping[str, np.ndarray]: ...
    @property
    def systems(self) -> Mapping[str, _Row]: ...
    @property
    def runs(self) -> Mapping[str, TopicValues]: ...
    @property
    def run_info(self) -> Mapping[str, dict[str, Any]]: ...
    @property
    def run_objects(self) -> Mapping[str, Run]: ...
    @property
    def qrels(self) -> Mapping[str, Mapping[str, int]]: ...
    @property
    def topics(self) -> Sequence[str]: ...
    @property
    def splits(self) -> Splits | None: ...
    @property
    def significance(self) -> Mapping[str, dict[str, Any]] | None: ...
    @property
    def test(self) -> str: ...
    @property
    def alpha(self) -> float: ...

    def summary(self, subset: str = "all") -> dict[str, dict[str, tuple[float, float | None]]]: ...
    def modal_config(self, system: str) -> str | None: ...
    def adjusted_p(self, subset: str, system: str, measure: str) -> float | None: ...
    def mark(self, subset: str, system: str, measure: str) -> str: ...
    def correction_text(self) -> str: ...
    def mean_ci(self, subset: str, system: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]: ...
    def interval_text(self, measure: str | None = None) -> str: ...


#: widths of ACM's sigconf template: one column (241 pt) and the full text width (506 pt)
ACM_COLUMN_IN = 3.33
ACM_PAGE_IN = 7.0
#: the one line width (points) of every line drawn: bar edges, whiskers, caps, rules, curves
LINE_WIDTH = 0.75
#: PNG resolution (print quality; the PDF is the vector original)
PNG_DPI = 300
STYLE: dict[RcKeyType, Any] = {
    "pdf.fonttype": 42,
    "ps.fonttype": 42,  # TrueType (Type 42) fonts, no Type 3
    "svg.fonttype": "none",
    "svg.hashsalt": "dsr",  # SVG text stays text; stable ids
    "font.size": 7,
    "axes.titlesize": 7.5,
    "axes.labelsize": 7,
    "xtick.labelsize": 6.5,
    "ytick.labelsize": 6.5,
    "legend.fontsize": 6.5,
    "axes.linewidth": LINE_WIDTH,
    "xtick.major.width": LINE_WIDTH,
    "ytick.major.width": LINE_WIDTH,
    "grid.linewidth": LINE_WIDTH,
    "lines.linewidth": LINE_WIDTH,
    "patch.linewidth": LINE_WIDTH,
    "hatch.linewidth": LINE_WIDTH,
}
#: Okabe and Ito (2008), "Color universal design": a base hue per family of systems
FAMILY_HUES = {
    "BM25": "#0072B2",
    "dense": "#E69F00",
    "fusion": "#009E73",
    "reranker": "#CC79A7",
    "reference": "#999999",
    "other": "#56B4E9",
}
#: words in a system's recorded ranker, reranker or name that place it in a family
FAMILY_WORDS = (
    ("reference", ("random", "initial")),
    ("fusion", ("fusion", "rrf", "comb", "isr", "borda")),
    ("reranker", ("cross-encoder", "cross_encoder", "monot5", "reranker")),
    ("dense", ("dense", "bi-encoder", "biencoder", "minilm", "e5", "bge", "contriever")),
    ("BM25", ("bm25", "lexical", "tfidf", "qld")),
)
BETTER_COLOUR, WORSE_COLOUR = "#0072B2", "#D55E00"
#: the systems a crowded figure does not name (light grey lines behind the named ones)
OTHERS_COLOUR = "#D0D0D0"
KINDS = ("main", "measures", "subsets", "diff", "recall")


_LOADED: dict[str, Any] = {}


def _mpl() -> dict[str, Any]:
    """matplotlib, imported on first use, in this one place (``dsr --help`` loads none of
    it): ``rc_context``, ``to_rgb`` and :class:`PaperFigure`, a Figure that saves with
    :data:`STYLE` (TrueType fonts) wherever ``savefig`` is called."""
    if not _LOADED:
        import matplotlib
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.colors import to_rgb
        from matplotlib.figure import Figure
        from PIL import Image

        class PaperFigure(Figure):
            def savefig(self, *args: Any, **kwargs: Any) -> None:
                with matplotlib.rc_context(STYLE):
                    super().savefig(*args, **kwargs)

        _LOADED.update(
            rc_context=matplotlib.rc_context, to_rgb=to_rgb, PaperFigure=PaperFigure, canvas=FigureCanvasAgg, Image=Image
        )
    return _LOADED


def new_figure(width: float, height: float) -> Figure:
    """A :class:`PaperFigure` (constrained layout) on the Agg canvas."""
    mpl = _mpl()
    with mpl["rc_context"](STYLE):
        fig = mpl["PaperFigure"](figsize=(width, height), layout="constrained")
    mpl["canvas"](fig)
    return fig


def to_rgb(colour: str) -> tuple[float, float, float]:
    return _mpl()["to_rgb"](colour)


def styled(draw: Callable[_P, _R]) -> Callable[_P, _R]:
    """Run a drawing function under :data:`STYLE` (font sizes are read when text is made)."""

    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        with _mpl()["rc_context"](STYLE):
            return draw(*args, **kwargs)

    wrapper.__doc__, wrapper.__name__ = draw.__doc__, draw.__name__
    return wrapper


# --- families and colours --------------------------------------------------------


def family_of(name: str, info: dict | None = None) -> str:
    """The family a system belongs to, from what its run recorded (ranker, reranker,
    fusion, a pipeline's last stage), else from its name."""
    info = info or {}
    config = found if isinstance(found := info.get("config"), dict) else {}
    described = [
        str(d.get(k)) for d in (info, config) for k in ("family", "fusion", "reranker", "ranker") if isinstance(d.get(k), str)
    ]
    pipeline = config.get("pipeline") or info.get("pipeline")
    if isinstance(pipeline, list) and pipeline and isinstance(pipeline[-1], dict):
        described.insert(0, " ".join(str(v) for v in pipeline[-1].values() if isinstance(v, str)))
    for text in [*described, name.split(">>")[-1], name]:
        lowered = text.lower()
        for family, words in FAMILY_WORDS:
            if any(re.search(rf"(^|[^a-z]){re.escape(w)}", lowered) for w in words):
                return family
    return "other"


def _shades(hex_colour: str, n: int, apart_from_base: bool = False) -> list[tuple[float, float, float]]:
    """``n`` shades of one hue, dark to light (mixed with black, then with white);
    ``apart_from_base``: none of them the hue itself (the baseline has it)."""
    base = np.array(to_rgb(hex_colour))
    if n == 1 and not apart_from_base:
        return [tuple(base)]
    steps = list(np.linspace(-0.35, 0.55, n + apart_from_base))
    if apart_from_base:
        steps.remove(min(steps, key=abs))
    return [tuple(np.clip(base * (1 + t) if t < 0 else base + (1 - base) * t, 0, 1)) for t in steps]


def system_order(results: ResultsView, names: list[str]) -> list[str]:
    """The baseline first, then the systems grouped by family: the baseline's own family
    first, the others in table order (members in table order)."""
    families: dict[str, list[str]] = {}
    if results.baseline in names:
        families[family_of(results.baseline, results.run_info.get(results.baseline))] = []
    for name in names:
        if name != results.baseline:
            families.setdefault(family_of(name, results.run_info.get(name)), []).append(name)
    head = [results.baseline] if results.baseline in names else []
    return head + [n for members in families.values() for n in members]


def system_colours(results: ResultsView) -> dict[str, tuple]:
    """One colour per system, the same in every figure: a hue per family (Okabe-Ito),
    a shade per member."""
    names = list(dict.fromkeys([*results.systems, *results.runs]))
    families: dict[str, list[str]] = {}
    for name in names:
        families.setdefault(family_of(name, results.run_info.get(name)), []).append(name)
    colours: dict[str, Any] = {}
    for family, members in families.items():
        others = [m for m in members if m != results.baseline]
        colours.update(zip(others, _shades(FAMILY_HUES[family], len(others), results.baseline in members)))
        if results.baseline in members:  # the family's own colour, hatched in the bars
            colours[results.baseline] = to_rgb(FAMILY_HUES[family])
    return colours


# --- shared pieces -----------------------------------------------------------------


def set_caption(fig: Figure, text: str) -> None:
    """Keep ``text`` as the figure's caption, outside it (:func:`caption`)."""
    fig.dsr_caption = " ".join(text.split())  # type: ignore[attr-defined]  # the caption travels with its figure


def caption(fig: Figure) -> str:
    """The caption of a figure made here: what it shows, its intervals and marks (a paper
    sets it under the figure; reports write it in results.md and ``STEM.caption.tex``)."""
    return getattr(fig, "dsr_caption", "")


def significance_note(results: ResultsView) -> str:
    if results.baseline is None:
        return ""
    test = "paired t-test" if results.test == "t" else "randomisation test"
    return (
        f"{sig.BETTER}/{sig.WORSE}: significantly better/worse than {results.baseline} "
        f"({test}, {results.correction_text()}, p < {results.alpha:g}); no mark: not "
        "significantly different."
    )


def _interval_note(results: ResultsView, measure: str) -> str:
    tuned = any(s.kind == "tuned" for s in results.systems.values())
    return f"Bars: mean over the dialogues with its {results.interval_text(measure)}" + (
        "; tuned families: out-of-sample values (each split's val choice on its test half)." if tuned else "."
    )


def _intervals(results: ResultsView, names: list[str], subset: str, j: int) -> tuple[np.ndarray, np.ndarray]:
    """Means and the (2, n) error-bar extents of each system's interval on ``subset``."""
    stats = [results.mean_ci(subset, n) for n in names]
    means = np.array([s[0][j] for s in stats], dtype=float)
    low = np.array([s[1][j] for s in stats], dtype=float)
    high = np.array([s[2][j] for s in stats], dtype=float)
    return means, np.vstack([np.maximum(means - low, 0), np.maximum(high - means, 0)])


def _names(results: ResultsView) -> list[str]:
    names = list(results.systems) if results.splits is not None else list(results.runs)
    return system_order(results, names)


def _label(results: ResultsView, name: str) -> str:
    return f"{name} (baseline)" if name == results.baseline else name


def _hbars(ax: Axes, results: ResultsView, names: list[str], subset: str, measure: str, colours: Mapping[str, tuple]) -> float:
    """Horizontal bars with intervals and marks, the baseline hatched and set apart;
    returns the highest interval end (callers set one value axis for their panels)."""
    j = results.measures.index(measure)
    means, err = _intervals(results, names, subset, j)
    y = np.arange(len(names))
    bars = ax.barh(
        y,
        means,
        0.72,
        xerr=err,
        color=[colours[n] for n in names],
        edgecolor="black",
        linewidth=LINE_WIDTH,
        error_kw={"elinewidth": LINE_WIDTH, "capsize": 1.5, "capthick": LINE_WIDTH},
    )
    tops = np.nan_to_num(means + err[1])
    for bar, name, top in zip(bars, names, tops):
        if name == results.baseline:
            bar.set_hatch("/////")
            ax.axvline(bar.get_width(), color="black", linewidth=LINE_WIDTH, linestyle=":", zorder=0)
        mark = results.mark(subset, name, measure)
        if mark:
            ax.annotate(
                mark,
                (top, bar.get_y() + bar.get_height() / 2),
                xytext=(1.5, 0),
                textcoords="offset points",
                ha="left",
                va="center",
                fontsize=6,
                color=BETTER_COLOUR if mark == sig.BETTER else WORSE_COLOUR,
            )
    if results.baseline in names and len(names) > 1:
        ax.axhline(0.5, color="black", linewidth=LINE_WIDTH)
    ax.set_yticks(y, [_label(results, n) for n in names])
    ax.set_ylim(len(names) - 0.5, -0.5)  # first row on top (not invert_yaxis: shared axes would flip back)
    ax.grid(axis="x", linewidth=LINE_WIDTH, alpha=0.3)
    ax.set_axisbelow(True)
    top = float(np.nanmax(tops)) if len(tops) else 1.0
    _value_axis([ax], top)
    return top


def _value_axis(axes: Iterable[Axes], top: float) -> None:
    """One value axis for ``axes``: 0 to ``top`` plus room for the marks."""
    for ax in axes:
        ax.set_xlim(0, max(1e-9, top) * 1.1)


# --- the figures -------------------------------------------------------------------


@styled
def main_figure(results: ResultsView, measure: str | None = None, subset: str = "all") -> Figure:
    """One measure (default: the primary) per system on one subset, one ACM column wide."""
    measure = measure or results.primary_measure
    names = _names(results)
    fig = new_figure(ACM_COLUMN_IN, 0.5 + 0.15 * len(names))
    ax = fig.add_subplot()
    _hbars(ax, results, names, subset, measure, system_colours(results))
    n = len(results.subsets[subset])
    ax.set_xlabel(f"{measure} ({subset}, {n} dialogues)")
    set_caption(
        fig,
        " ".join(
            filter(
                None,
                [
                    f"{measure} per system on {subset} ({n} dialogues).",
                    _interval_note(results, measure),
                    significance_note(results),
                ],
            )
        ),
    )
    return fig


@styled
def measures_figure(results: ResultsView, subset: str = "all") -> Figure:
    """A panel per measure (every system, its interval and marks), the full text width."""
    names = _names(results)
    cols = min(3, len(results.measures))
    rows = -(-len(results.measures) // cols)
    fig = new_figure(ACM_PAGE_IN, rows * (0.45 + 0.12 * len(names)) + 0.1)
    axes = fig.subplots(rows, cols, squeeze=False)
    colours = system_colours(results)
    bounded, top = [], 0.0
    for k, measure in enumerate(results.measures):
        ax = axes[k // cols][k % cols]
        panel_top = _hbars(ax, results, names, subset, measure, colours)
        ax.set_title(measure)
        if k % cols:
            ax.tick_params(labelleft=False)
        if panel_top <= 1.0:  # measures in [0, 1] share one scale; counts keep their own
            bounded.append(ax)
            top = max(top, panel_top)
    _value_axis(bounded, top)
    for k in range(len(results.measures), rows * cols):
        axes[k // cols][k % cols].set_visible(False)
    set_caption(
        fig,
        f"Every measure on {subset} ({len(results.subsets[subset])} dialogues; measures in "
        "[0, 1] on one scale). "
        + " ".join(filter(None, [_interval_note(results, results.primary_measure), significance_note(results)])),
    )
    return fig


@styled
def subsets_figure(results: ResultsView, measure: str | None = None) -> Figure:
    """A panel per subset (beside "all"), one measure, the full text width."""
    measure = measure or results.primary_measure
    parts = [s for s in results.subsets if s != "all"] or list(results.subsets)
    names = _names(results)
    fig = new_figure(ACM_PAGE_IN, 0.6 + 0.15 * len(names))
    axes = fig.subplots(1, len(parts), sharey=True, squeeze=False)[0]
    colours = system_colours(results)
    top = 0.0
    for ax, subset in zip(axes, parts):
        top = max(top, _hbars(ax, results, names, subset, measure, colours))
        ax.set_title(f"{subset} ({len(results.subsets[subset])} dialogues)")
        ax.set_xlabel(measure)
    _value_axis(axes, top)
    for ax in axes[1:]:
        ax.tick_params(labelleft=False)
    set_caption(
        fig,
        " ".join(
            filter(
                None,
                [
                    f"{measure} per system, a panel per subset (one scale).",
                    _interval_note(results, measure),
                    significance_note(results),
                ],
            )
        ),
    )
    return fig


@styled
def diff_figure(results: ResultsView, measure: str | None = None, subset: str = "all") -> Figure | None:
    """Per-topic differences against the baseline, sorted, a panel per system (shared y)."""
    measure = measure or results.primary_measure
    if results.baseline is None:
        return None
    j = results.measures.index(measure)
    index = results.subsets[subset]
    base = results.systems[results.baseline].per_topic[index, j]
    others = [n for n in _names(results) if n != results.baseline]
    # a system no different from the baseline on any dialogue would draw an empty panel: it is
    # named in the caption instead
    same = [n for n in others if not np.any(_differences(results, n, base, index, j) != 0)]
    others = [n for n in others if n not in same]
    if not others:
        return None
    cols = min(3, len(others))
    rows = -(-len(others) // cols)
    fig = new_figure(ACM_PAGE_IN, 1.35 * rows + 0.2)
    axes = fig.subplots(rows, cols, sharey=True, squeeze=False)
    for k, name in enumerate(others):
        diff = np.sort(_differences(results, name, base, index, j))[::-1]
        ax = axes[k // cols][k % cols]
        xs = np.arange(len(diff))
        # a filled curve, not a bar per topic: 20 systems x 846 topics draw in a second
        ax.fill_between(xs, diff, 0, where=diff >= 0, color=BETTER_COLOUR, step="mid", linewidth=0)
        ax.fill_between(xs, diff, 0, where=diff < 0, color=WORSE_COLOUR, step="mid", linewidth=0)
        ax.axhline(0, color="black", linewidth=LINE_WIDTH)
        ax.set_title(_diff_title(results, subset, name, measure, diff), fontsize=6)
        ax.xaxis.get_major_locator().set_params(integer=True)
    for k in range(len(others), rows * cols):
        axes[k // cols][k % cols].set_visible(False)
    for ax in axes[-1]:
        ax.set_xlabel("dialogues, sorted by difference")
    for row in axes:
        row[0].set_ylabel(f"Δ {measure}")
    set_caption(
        fig,
        f"Per-dialogue {measure} of each system minus {results.baseline}'s on {subset} "
        f"(blue: better, orange: worse; tuned families: out-of-sample values). "
        + (f"Not drawn, no different from {results.baseline} on any dialogue: {', '.join(same)}. " if same else "")
        + significance_note(results),
    )
    return fig


def _differences(results: ResultsView, name: str, base: np.ndarray, index: np.ndarray, j: int) -> np.ndarray:
    """``name``'s per-dialogue values minus the baseline's, where both have one."""
    diff = results.systems[name].per_topic[index, j] - base
    return diff[~np.isnan(diff)]


def _diff_title(results: ResultsView, subset: str, name: str, measure: str, diff: np.ndarray) -> str:
    entry = (results.significance or {}).get(subset, {}).get(name, {}).get(measure, {})
    p = results.adjusted_p(subset, name, measure)
    wtl = f", W/T/L {entry['wins']}/{entry['ties']}/{entry['losses']}" if "wins" in entry else ""
    mean = np.mean(diff) if len(diff) else float("nan")
    return f"{name} {results.mark(subset, name, measure)}\nΔ {mean:+.3f}" + (f", p (adj.) {p:.2g}" if p is not None else "") + wtl


def highlighted(results: ResultsView, names: list[str]) -> list[str]:
    """The systems a crowded figure names: the baseline and the best of each family on
    the primary measure over all dialogues (table order kept)."""
    summary = results.summary("all")
    primary = results.primary_measure

    def score(name: str) -> float:
        if name in summary:
            return summary[name][primary][0]
        return float(results.runs[name].mean(results.subsets["all"])[results.measures.index(primary)])

    best: dict[str, str] = {}
    for name in names:
        family = family_of(name, results.run_info.get(name))
        if name != results.baseline and (family not in best or score(name) > score(best[family])):
            best[family] = name
    chosen = {results.baseline, *best.values()}
    return [n for n in names if n in chosen]


@styled
def recall_figure(results: ResultsView) -> Figure | None:
    """Mean R@k for k = 1..the most candidates: the baseline (black, dashed) and the best
    system of each family (its family's hue) named in a compact legend; every other
    system a light grey line (reference rows dotted dark grey). A tuned family is drawn with its configuration chosen most
    often over the splits (named in the caption). One ACM column wide."""
    if not results.run_objects:
        return None
    depth = max((len(r) for r in results.qrels.values()), default=0) or 1
    ks = list(range(1, depth + 1))
    evaluator = Evaluator(results.qrels, parse_measures([f"R@{k}" for k in ks]), results.topics)
    fig = new_figure(ACM_COLUMN_IN, 2.4)
    ax = fig.add_subplot()
    names = system_order(results, list(results.run_objects))
    shown = highlighted(results, names)
    for name in [n for n in names if n not in shown]:
        ax.plot(ks, evaluator(results.run_objects[name]).mean(), color=OTHERS_COLOUR, linewidth=LINE_WIDTH, zorder=1)
    for name in sorted(shown, key=lambda n: n == results.baseline):  # the baseline's dashes on top
        baseline = name == results.baseline
        family = family_of(name, results.run_info.get(name))
        colour = "black" if baseline else "#555555" if family == "reference" else FAMILY_HUES[family]
        style = "--" if baseline else ":" if family == "reference" else "-"
        ax.plot(
            ks,
            evaluator(results.run_objects[name]).mean(),
            label=_label(results, name),
            color=colour,
            linewidth=LINE_WIDTH,
            linestyle=style,
            zorder=2,
        )
    if len(shown) < len(names):
        ax.plot([], [], color=OTHERS_COLOUR, linewidth=LINE_WIDTH, label=f"{len(names) - len(shown)} others")
    ax.set_xlabel("k")
    ax.set_ylabel("R@k (all dialogues)")
    ax.set_xlim(1, depth)
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3, linewidth=LINE_WIDTH)
    ax.set_axisbelow(True)
    handles, labels = ax.get_legend_handles_labels()
    baseline_label = None if results.baseline is None else _label(results, results.baseline)
    order = sorted(range(len(labels)), key=lambda i: labels[i] != baseline_label)
    ax.legend(
        [handles[i] for i in order],
        [labels[i] for i in order],
        loc="lower right",
        frameon=False,
        fontsize=5.5,
        handlelength=2.2,
        borderaxespad=0.3,
        labelspacing=0.25,
    )
    configs = "; ".join(f"{n}: {results.modal_config(n)}" for n in shown if results.modal_config(n))
    set_caption(
        fig,
        f"Mean recall at k over all {len(results.subsets['all'])} dialogues: the baseline "
        f"(dashed) and the best system of each family on {results.primary_measure} "
        "(grey: the others). A tuned family is drawn with its configuration chosen most "
        "often over the splits" + (f" ({configs})." if configs else "."),
    )
    return fig


def figure_makers(results: ResultsView) -> dict[str, Callable[[], Any]]:
    """What draws each figure of a report, by file stem (``main``, ``measures``,
    ``subsets_M``, ``diff_vs_baseline``, ``recall_at_k``); a maker may give None (nothing
    to draw)."""
    primary = results.primary_measure
    out: dict[str, Callable[[], Any]] = {"main": lambda: main_figure(results)}
    if len(results.measures) > 1:
        out["measures"] = lambda: measures_figure(results)
    if len(results.subsets) > 1:
        out[f"subsets_{slug(primary)}"] = lambda: subsets_figure(results)
    out["diff_vs_baseline"] = lambda: diff_figure(results)
    out["recall_at_k"] = lambda: recall_figure(results)
    return out


def figures(results: ResultsView) -> dict[str, Any]:
    """Every figure of a report, by file stem (:func:`figure_makers`)."""
    drawn = {stem: make() for stem, make in figure_makers(results).items()}
    return {k: v for k, v in drawn.items() if v is not None}


def plot(
    results: ResultsView, kind: str = "main", measure: str | None = None, subset: str | None = None
) -> Figure | dict[str, Any] | None:
    """``Results.plot``: one figure of ``kind`` (:data:`KINDS`), or ``"all"``: :func:`figures`."""
    if measure is not None and measure not in results.measures:
        raise InputError(f"measure {measure!r} was not computed; these were: {', '.join(results.measures)}", field="measure")
    if kind == "all":
        return figures(results)
    makers = {
        "main": lambda: main_figure(results, measure, subset or "all"),
        "measures": lambda: measures_figure(results, subset or "all"),
        "subsets": lambda: subsets_figure(results, measure),
        "diff": lambda: diff_figure(results, measure, subset or "all"),
        "recall": lambda: recall_figure(results),
    }
    if kind not in makers:
        raise InputError(f"unknown figure {kind!r}; choose from {', '.join(KINDS)} or all", field="kind")
    return makers[kind]()
