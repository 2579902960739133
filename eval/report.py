"""``--report DIR``: the tables as Markdown, CSV, JSON and LaTeX, plus figures (PNG, PDF, SVG).

Files written, as a set: built in a hidden sibling folder after everything
has been computed and swapped in at the end (``retrieval.atomic.atomic_dir``),
so a failure or a kill leaves the previous report or the new one, never a mix:

* ``results.md``, ``results.csv``, ``results.json``, ``results.tex`` — the same
  numbers as the terminal table; ``results.json`` also records the collection
  (name, content hash), the split protocol (source, N, seed), measures, runs
  (paths, sha256, sidecar configs), significance settings, package versions,
  machine, date and command;
* ``comparison.csv`` (with a baseline) — each system against it per subset and
  measure: per-topic mean and 95% interval, mean difference and interval,
  Cohen's d_z, wins/ties/losses, raw and adjusted p, mark
  (``eval.tables.comparison_frame``); ``pairs.csv`` (with all pairs) — each
  mean with its group letters (``eval.tables.pairs_frame``);
* ``per_topic.tsv`` — per-topic values (see ``eval.results.write_per_topic``);
* every figure as ``.png``, vector ``.pdf`` and ``.svg``; each system has one
  colour in every figure (:func:`system_colours`); ▲/▼ over a bar mark a
  system significantly better/worse than the baseline on that subset;
* ``bars_MEASURE`` — one bar chart per measure: a bar per system on the first
  subset ("all"); error bars = sd over the splits' test halves when there are splits;
* ``subsets_TARGET`` — the breakdown by subset (e.g. plain vs grounded) on the
  target measure, a bar per system and subset, when the collection has subsets;
* ``diff_vs_baseline`` — per-topic differences against the baseline on the
  target measure (sorted), a panel per system on one shared y-scale;
* ``recall_at_k`` — mean R@k for k = 1..max candidates, per untuned run and per
  tuned family (its configuration chosen most often over the splits, as labelled).
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Sequence

import numpy as np

from eval import tables
from eval.protocol import summarise
from eval.results import Results, write_per_topic
from retrieval.atomic import atomic_dir, atomic_write
from retrieval.provenance import package_versions, slug, stamp


def provenance(command: Sequence[str] | None = None) -> dict:
    """The report's stamp: when, which command, versions, machine (retrieval.provenance.stamp)."""
    return stamp(command)


def report_json(results: Results, command: Sequence[str] | None = None) -> dict:
    curves = {name: (f"tuned family: its configuration chosen most often, {results.modal_config(name)}"
                     if results.modal_config(name) else "untuned run")
              for name in results.run_objects}
    return {**results.to_json(), "provenance": provenance(command),
            "figures": {"recall_at_k": curves, "colours": "one per system, the same in every figure"}}


#: what a report folder holds (``atomic_dir`` replaces a folder holding only these)
REPORT_FILES = ("results.md", "results.csv", "results.json", "results.tex", "per_topic.tsv",
                "comparison.csv", "pairs.csv", "*.png", "*.pdf", "*.svg")


def write_report(results: Results, directory: str | Path, command: Sequence[str] | None = None) -> list[Path]:
    """Write the report into ``directory`` as a set; returns the paths written.

    The files are built in a hidden sibling folder and swapped in at the end, so
    a failure or a kill leaves the previous report (or none), never a mix; files
    of an earlier report that this one does not write (plots of other measures)
    are gone afterwards. A ``directory`` holding other files is refused (exit 2).
    """
    directory = Path(directory)
    with atomic_dir(directory, REPORT_FILES, field="--report") as staging:
        names = write_report_files(results, staging, command)
    return [directory / name for name in names]


def write_report_files(results: Results, directory: Path,
                       command: Sequence[str] | None = None) -> list[str]:
    """Write the report's files into an existing folder (one at a time); returns their names."""
    texts = {
        "results.md": _markdown(results),
        "results.csv": tables.to_csv(results),
        "results.json": json.dumps(report_json(results, command), indent=2, sort_keys=True,
                                   ensure_ascii=False) + "\n",
        "results.tex": tables.to_latex(results, extras=True),
    }
    if results.baseline is not None:
        texts["comparison.csv"] = tables.frame_csv(tables.comparison_frame(results))
    if results.pairs is not None:
        texts["pairs.csv"] = tables.frame_csv(tables.pairs_frame(results))
    images = _plots(results)
    written = []
    for name, text in texts.items():
        with atomic_write(directory / name) as handle:
            handle.write(text)
        written.append(name)
    write_per_topic(results, directory / "per_topic.tsv")
    written.append("per_topic.tsv")
    for name, data in images.items():
        with atomic_write(directory / name, "wb") as handle:
            handle.write(data)
        written.append(name)
    return written


def _markdown(results: Results) -> str:
    c = results.collection
    proto = results.protocol_json()
    lines = [f"# Evaluation on {c.get('name')}", "",
             f"- collection: `{c.get('name')}`, {c.get('dialogues')} dialogues, sha256 `{c.get('hash')}`",
             f"- protocol: {proto['name']}"
             + (f" — {proto['splits']['n']} splits ({proto['splits']['source']}"
                + (f", seed {proto['splits']['seed']}" if 'seed' in proto['splits'] else "")
                + (f", {proto['splits']['path']}" if 'path' in proto['splits'] else "")
                + f"), target {proto['target']}; {proto['sd']}" if results.splits is not None else ""),
             f"- measures: {', '.join(results.measures)}"]
    for name, info in results.run_info.items():
        if "members" in info:
            lines.append(f"- {name}: tuned family of {', '.join(map(str, info['members']))}")
            continue
        where = f"`{info['path']}`" if "path" in info else "(in memory)"
        lines.append(f"- {name}: {where}" + (f" — {json.dumps(info['config'], sort_keys=True)}"
                                              if info.get("config") else ""))
    versions = package_versions()
    lines.append("- versions: " + ", ".join(f"{k} {v}" for k, v in versions.items() if v))
    lines.append("")
    return "\n".join(lines) + "\n" + tables.to_markdown(results) + "".join(
        f"\n- note: {n}" for n in results.notes) + ("\n" if results.notes else "")


def _figure_files(fig, stem: str) -> dict[str, bytes]:
    """The figure as PNG (120 dpi), vector PDF and SVG, without dates in the vector files
    (so a rerun writes the same bytes)."""
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    out = {}
    for fmt, meta in (("png", None), ("pdf", {"CreationDate": None, "ModDate": None}),
                      ("svg", {"Date": None})):
        buffer = io.BytesIO()
        # constrained layout (set on every figure) fits the labels; bbox_inches="tight"
        # would render each figure twice
        kwargs = {"dpi": 120} if fmt == "png" else {"metadata": meta}
        if fmt == "svg":
            with matplotlib.rc_context({"svg.hashsalt": "dsr"}):
                fig.savefig(buffer, format=fmt, **kwargs)
        else:
            fig.savefig(buffer, format=fmt, **kwargs)
        # The layout found for the first format serves the others: no engine left (not even
        # matplotlib's placeholder), so they skip the extra draw that lays a figure out.
        with matplotlib.rc_context({"figure.autolayout": False, "figure.constrained_layout.use": False}):
            fig.set_layout_engine(None)
        out[f"{stem}.{fmt}"] = buffer.getvalue()
    return out


def system_colours(results: Results) -> dict[str, tuple]:
    """One colour per system, the same in every figure: systems in table order
    (tuned families and untuned runs), from matplotlib's tab10 then tab20."""
    from matplotlib import colormaps

    names = list(dict.fromkeys([*results.systems, *results.runs]))
    palette = (list(colormaps["tab10"].colors) + list(colormaps["Dark2"].colors)
               + list(colormaps["Set1"].colors))
    return {n: palette[k % len(palette)] for k, n in enumerate(names)}


def _mark_bars(ax, bars, marks, tops) -> None:
    """▲/▼ above each bar whose system is significantly better/worse than the baseline."""
    for bar, mark, top in zip(bars, marks, tops):
        if mark:
            ax.annotate(mark, (bar.get_x() + bar.get_width() / 2, top), xytext=(0, 2),
                        textcoords="offset points", ha="center", va="bottom", fontsize=8,
                        color="tab:green" if mark == "▲" else "tab:red")


def _sig_note(results: Results) -> str:
    if results.baseline is None:
        return ""
    return (f"▲/▼ significantly better/worse than {results.baseline} "
            f"({'t-test' if results.test == 't' else 'randomisation'}, {results.correction}, "
            f"family {results.family}, p < {results.alpha:g})")


def _plots(results: Results) -> dict[str, bytes]:
    # Figure + the Agg canvas directly: no pyplot, no global backend switch.
    from matplotlib.figure import Figure

    images: dict[str, bytes] = {}
    colours = system_colours(results)
    subsets = list(results.subsets)
    if results.splits is not None:
        names = list(results.systems)
        stats = {s: {n: summarise(results.systems[n].splits[s]) for n in names} for s in subsets}
        what = f"test halves, mean ± sd over {len(results.splits)} splits"
    else:
        names = list(results.runs)
        stats = {s: {n: (results.runs[n].mean(results.subsets[s]), None) for n in names} for s in subsets}
        what = "all dialogues"
    first = subsets[0]
    x = np.arange(len(names))
    labels = [f"{n} (baseline)" if n == results.baseline else n for n in names]
    for j, measure in enumerate(results.measures):
        # one comparison per figure: every system on one measure, on the first subset ("all")
        fig = Figure(figsize=(max(4.0, 1.0 + 0.55 * len(names)), 3.6), layout="constrained")
        ax = fig.add_subplot()
        means = np.array([stats[first][n][0][j] for n in names], dtype=float)
        sds = (np.array([stats[first][n][1][j] for n in names], dtype=float)
               if results.splits is not None else None)
        bars = ax.bar(x, means, 0.7, yerr=sds, capsize=3, color=[colours[n] for n in names],
                      edgecolor="black", linewidth=0.4)
        tops = means + (np.nan_to_num(sds) if sds is not None else 0)
        _mark_bars(ax, bars, [results.mark(first, n, measure) for n in names], tops)
        ax.set_xticks(x, labels, rotation=35, ha="right", fontsize=8)
        ax.set_ylabel(measure)
        ax.set_ylim(0, max(1e-9, np.nanmax(tops) if len(tops) else 1) * 1.12)
        ax.set_title(f"{measure} on {first} ({what})", fontsize=9)
        if results.baseline is not None:
            fig.text(0.01, 0.005, _sig_note(results), fontsize=6, ha="left", va="bottom")
        images.update(_figure_files(fig, f"bars_{slug(measure)}"))

    measure = results.target or ("nDCG@5" if "nDCG@5" in results.measures else results.measures[0])
    j = results.measures.index(measure)
    if len(subsets) > 1:
        # plain vs grounded (every subset beside "all"): a group per system, a bar per subset
        parts = [s for s in subsets if s != "all"] or subsets
        fig = Figure(figsize=(max(4.5, 1.2 + 0.7 * len(names)), 3.8), layout="constrained")
        ax = fig.add_subplot()
        width = 0.8 / len(parts)
        hatches = ["", "///", "...", "xx", "\\\\"]
        top_all = 0.0
        for k, subset in enumerate(parts):
            means = np.array([stats[subset][n][0][j] for n in names], dtype=float)
            sds = (np.array([stats[subset][n][1][j] for n in names], dtype=float)
                   if results.splits is not None else None)
            bars = ax.bar(x + (k - (len(parts) - 1) / 2) * width, means, width, yerr=sds, capsize=2,
                          color=[colours[n] for n in names], edgecolor="black", linewidth=0.4,
                          hatch=hatches[k % len(hatches)], label=subset)
            tops = means + (np.nan_to_num(sds) if sds is not None else 0)
            top_all = max(top_all, float(np.nanmax(tops)) if len(tops) else 0.0)
            _mark_bars(ax, bars, [results.mark(subset, n, measure) for n in names], tops)
        ax.set_xticks(x, labels, rotation=35, ha="right", fontsize=8)
        ax.set_ylabel(measure)
        ax.set_ylim(0, max(top_all, 1e-9) * 1.12)
        ax.set_title(f"{measure} by subset ({what}); bar pattern = subset", fontsize=9)
        from matplotlib.patches import Patch

        ax.legend(handles=[Patch(facecolor="white", edgecolor="black", hatch=hatches[k % len(hatches)],
                                 label=s) for k, s in enumerate(parts)], fontsize=8)
        if results.baseline is not None:
            fig.text(0.01, 0.005, _sig_note(results), fontsize=6, ha="left", va="bottom")
        images.update(_figure_files(fig, f"subsets_{slug(measure)}"))

    if results.baseline is not None:
        base = results.systems[results.baseline].per_topic[:, j]
        others = [n for n in results.systems if n != results.baseline]
        cols = min(3, len(others)) or 1
        rows = -(-len(others) // cols)
        # a panel per system, one shared y-scale so panels compare at a glance: a
        # filled curve of sorted differences (not a bar per topic), so 20 systems
        # x 846 topics draw in a second
        fig = Figure(figsize=(4.2 * cols, 2.4 * rows + 0.4), layout="constrained")
        axes = fig.subplots(rows, cols, sharey=True, squeeze=False)
        for k, name in enumerate(others):
            diff = results.systems[name].per_topic[:, j] - base
            diff = np.sort(diff[~np.isnan(diff)])[::-1]
            entry = (results.significance or {}).get(first, {}).get(name, {}).get(measure, {})
            ax = axes[k // cols][k % cols]
            xs = np.arange(len(diff))
            ax.fill_between(xs, diff, 0, where=diff >= 0, color="tab:blue", step="mid", linewidth=0)
            ax.fill_between(xs, diff, 0, where=diff < 0, color="tab:red", step="mid", linewidth=0)
            ax.axhline(0, color="black", linewidth=0.6)
            ax.set_xlabel("topics (sorted)", fontsize=8)
            ax.set_ylabel(f"Δ {measure}", fontsize=8)
            p = results.adjusted_p(first, name, measure)
            mark = results.mark(first, name, measure)
            wtl = (f", W/T/L {entry['wins']}/{entry['ties']}/{entry['losses']}"
                   if "wins" in entry else "")
            ax.set_title(f"{name} − {results.baseline} {mark}\nmean Δ "
                         f"{np.mean(diff) if len(diff) else float('nan'):+.4f}"
                         + (f", p (adj.) = {p:.3g}" if p is not None else "") + wtl, fontsize=8)
            ax.xaxis.get_major_locator().set_params(integer=True)
        for k in range(len(others), rows * cols):
            axes[k // cols][k % cols].set_visible(False)
        fig.suptitle(f"per-topic {measure} differences against {results.baseline} ({first}; blue: "
                     "better, red: worse)", fontsize=9)
        if others:
            images.update(_figure_files(fig, "diff_vs_baseline"))

    if results.run_objects:
        from eval.measures import Evaluator, parse_measures

        depth = max((len(r) for r in results.qrels.values()), default=0) or 1
        ks = list(range(1, depth + 1))
        evaluator = Evaluator(results.qrels, parse_measures([f"R@{k}" for k in ks]), results.topics)
        fig = Figure(figsize=(9.5, 4.2), layout="constrained")
        ax = fig.add_subplot()
        for name, run in results.run_objects.items():
            config = results.modal_config(name)
            label = (f"{name} (baseline)" if name == results.baseline else name) + (
                f" [{config}]" if config else "")
            ax.plot(ks, evaluator(run).mean(), label=label,
                    linewidth=2.2 if name == results.baseline else 1.2,
                    color=colours.get(name), linestyle="--" if name == results.baseline else "-")
        ax.set_xlabel("k")
        ax.set_ylabel("R@k (all dialogues)")
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
        ax.set_title("recall at k; a tuned family [config] is its configuration chosen most "
                     "often over the splits", fontsize=8)
        images.update(_figure_files(fig, "recall_at_k"))
    return images
