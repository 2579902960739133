"""``--report DIR``: the tables as Markdown, CSV, JSON and LaTeX, plus PNG plots.

Files written, as a set: built in a hidden sibling folder after everything
has been computed and swapped in at the end (``retrieval.atomic.atomic_dir``),
so a failure or a kill leaves the previous report or the new one, never a mix:

* ``results.md``, ``results.csv``, ``results.json``, ``results.tex`` — the same
  numbers as the terminal table; ``results.json`` also records the collection
  (name, content hash), the split protocol (source, N, seed), measures, runs
  (paths, sha256, sidecar configs), significance settings, package versions,
  machine, date and command;
* ``per_topic.tsv`` — per-topic values (see ``eval.results.write_per_topic``);
* ``bars_MEASURE.png`` — one bar chart per measure (a bar per system and
  subset; error bars = sd over the splits' test halves when there are splits);
* ``diff_vs_baseline.png`` — per-topic differences against the baseline on the
  target measure (sorted), when there is a baseline;
* ``recall_at_k.png`` — mean R@k for k = 1..max candidates, per untuned run.
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
    return {**results.to_json(), "provenance": provenance(command)}


#: what a report folder holds (``atomic_dir`` replaces a folder holding only these)
REPORT_FILES = ("results.md", "results.csv", "results.json", "results.tex", "per_topic.tsv",
                "*.png")


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
        "results.tex": tables.to_latex(results),
    }
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


def _png(fig) -> bytes:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    buffer = io.BytesIO()
    # constrained layout (set on every figure) fits the labels; bbox_inches="tight"
    # would render each figure twice
    fig.savefig(buffer, format="png", dpi=120)
    return buffer.getvalue()


def _plots(results: Results) -> dict[str, bytes]:
    # Figure + the Agg canvas directly: no pyplot, no global backend switch.
    from matplotlib.figure import Figure

    images: dict[str, bytes] = {}
    subsets = list(results.subsets)
    if results.splits is not None:
        names = list(results.systems)
        stats = {s: {n: summarise(results.systems[n].splits[s]) for n in names} for s in subsets}
    else:
        names = list(results.runs)
        stats = {s: {n: (results.runs[n].mean(results.subsets[s]), None) for n in names} for s in subsets}
    width = 0.8 / max(len(subsets), 1)
    x = np.arange(len(names))
    for j, measure in enumerate(results.measures):
        fig = Figure(figsize=(max(4.0, 1.0 + 0.9 * len(names)), 3.6), layout="constrained")
        ax = fig.add_subplot()
        for k, subset in enumerate(subsets):
            means = [stats[subset][n][0][j] for n in names]
            sds = ([stats[subset][n][1][j] for n in names] if results.splits is not None else None)
            ax.bar(x + (k - (len(subsets) - 1) / 2) * width, means, width, yerr=sds, capsize=3,
                   label=subset)
        ax.set_xticks(x, names, rotation=30, ha="right")
        ax.set_ylabel(measure)
        what = (f"test halves, mean ± sd over {len(results.splits)} splits"
                if results.splits is not None else "all dialogues")
        ax.set_title(f"{measure} ({what})", fontsize=9)
        if len(subsets) > 1:
            ax.legend(fontsize=8)
        images[f"bars_{slug(measure)}.png"] = _png(fig)

    if results.baseline is not None:
        measure = results.target or ("nDCG@5" if "nDCG@5" in results.measures else results.measures[0])
        j = results.measures.index(measure)
        base = results.systems[results.baseline].per_topic[:, j]
        others = [n for n in results.systems if n != results.baseline]
        cols = min(3, len(others)) or 1
        rows = -(-len(others) // cols)
        # one figure, a panel per system: a filled curve of sorted differences
        # (not a bar per topic), so 20 systems x 846 topics draw in a second
        fig = Figure(figsize=(4.2 * cols, 2.6 * rows), layout="constrained")
        for k, name in enumerate(others):
            diff = results.systems[name].per_topic[:, j] - base
            diff = np.sort(diff[~np.isnan(diff)])[::-1]
            entry = (results.significance or {}).get("all", {}).get(name, {}).get(measure, {})
            ax = fig.add_subplot(rows, cols, k + 1)
            x = np.arange(len(diff))
            ax.fill_between(x, diff, 0, where=diff >= 0, color="tab:blue", step="mid", linewidth=0)
            ax.fill_between(x, diff, 0, where=diff < 0, color="tab:red", step="mid", linewidth=0)
            ax.axhline(0, color="black", linewidth=0.6)
            ax.set_xlabel("topics (sorted)", fontsize=8)
            ax.set_ylabel(f"Δ {measure}", fontsize=8)
            p = entry.get(f"{results.test}_holm")
            ax.set_title(f"{name} − {results.baseline}: mean Δ "
                         f"{np.mean(diff) if len(diff) else float('nan'):+.4f}"
                         + (f", p (Holm) = {p:.3g}" if p is not None else ""), fontsize=8)
        if others:
            images["diff_vs_baseline.png"] = _png(fig)

    if results.run_objects:
        from eval.measures import Evaluator, parse_measures

        depth = max((len(r) for r in results.qrels.values()), default=0) or 1
        ks = list(range(1, depth + 1))
        evaluator = Evaluator(results.qrels, parse_measures([f"R@{k}" for k in ks]), results.topics)
        fig = Figure(figsize=(5.5, 3.8), layout="constrained")
        ax = fig.add_subplot()
        for name, run in results.run_objects.items():
            ax.plot(ks, evaluator(run).mean(), label=name, linewidth=1.2)
        ax.set_xlabel("k")
        ax.set_ylabel("R@k (all dialogues)")
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
        images["recall_at_k.png"] = _png(fig)
    return images
