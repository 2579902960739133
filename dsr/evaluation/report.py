"""``--report DIR``: the tables as Markdown, CSV, JSON and LaTeX, plus figures (PNG, PDF, SVG).

Files written, as a set: built in a hidden sibling folder after everything
has been computed and swapped in at the end (``dsr.core.atomic.atomic_dir``),
so a failure or a kill leaves the previous report or the new one, never a mix:

* ``results.md``, ``results.csv``, ``results.json``, ``results.tex`` — the same
  numbers as the terminal table; ``results.json`` also records the collection
  (name, content hash), the split protocol (source, N, seed), measures, runs
  (paths, sha256, sidecar configs), significance settings, package versions,
  machine, date and command;
* ``comparison.csv`` (with a baseline) — each system against it per subset and
  measure: per-topic mean and 95% interval, mean difference and interval,
  Cohen's d_z, wins/ties/losses, raw and adjusted p, mark
  (``dsr.evaluation.tables.comparison_frame``); ``pairs.csv`` (with all pairs) — each
  mean with its group letters (``dsr.evaluation.tables.pairs_frame``);
* ``per_topic.parquet`` — per-topic values, one row per (system, dialogue)
  (``Results.per_topic_frame``); ``per_split.parquet`` (with splits) — each
  split's test-half mean per system and subset, and a tuned family's
  configuration chosen on that split's val half (``Results.split_frame``).
  ``results.json`` stays the summary (a report of the 115-dialogue judged set
  is well under 2 MB);
* ``results.tex`` is a complete document plain pdflatex compiles (:mod:`dsr.evaluation.latex`);
  ``results.md``, ``results.tex`` and ``results.json`` (``definitions``) say what
  every row is (:func:`dsr.evaluation.definitions.system_definitions`);
* no file carries a local path, user or host name (:func:`public`): a run is named
  by its system name and by its path relative to the report, a file outside the
  report by its name;
* ``STEM.caption.tex`` — each figure's caption (``\\caption{...}\\label{...}``),
  which is never drawn inside the figure;
* every figure as a 300 dpi ``.png`` and vector ``.pdf`` (TrueType fonts; :mod:`dsr.evaluation.figures`):
  ``main`` (the primary measure, one ACM column wide), ``measures`` (a panel per
  measure), ``subsets_PRIMARY`` (a panel per subset), ``diff_vs_baseline`` and
  ``recall_at_k``; bars carry 95% intervals (bootstrap by default), colours say
  the family, ▲/▼ the significant differences.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dsr.core.atomic import atomic_dir, atomic_write
from dsr.core.provenance import package_versions, stamp
from dsr.evaluation import definitions, latex, tables
from dsr.evaluation.drawing import Drawing
from dsr.evaluation.results import Results, write_frame, write_per_topic


def provenance(command: Sequence[str] | None = None) -> dict:
    """The report's stamp: when, which command, versions, machine (dsr.core.provenance.stamp)."""
    return stamp(command)


def report_json(results: Results, command: Sequence[str] | None = None, systems: dict[str, str] | None = None) -> dict:
    curves = {
        name: (
            f"tuned family: its configuration chosen most often, {results.modal_config(name)}"
            if results.modal_config(name)
            else "untuned run"
        )
        for name in results.run_objects
    }
    systems = definitions.system_definitions(results) if systems is None else systems
    return {
        **results.to_json(),
        "provenance": provenance(command),
        "definitions": systems,
        "files": {
            "per_topic.parquet": "per-topic values (Results.per_topic_frame)",
            "per_split.parquet": "per-split test-half means and choices (Results.split_frame)",
        },
        "figures": {
            "recall_at_k": curves,
            "main": f"{results.primary_measure} per system",
            "intervals": results.interval_text(),
            "colours": "a hue per family (Okabe-Ito), a shade per system, the same in every figure",
        },
    }


#: what a report folder holds (``atomic_dir`` replaces a folder holding only these;
#: per_topic.tsv is what reports before the Parquet files held)
REPORT_FILES = (
    "results.md",
    "results.csv",
    "results.json",
    "results.tex",
    "*.caption.tex",
    "per_topic.parquet",
    "per_split.parquet",
    "per_topic.tsv",
    "comparison.csv",
    "pairs.csv",
    "*.png",
    "*.pdf",
    "*.svg",
)


#: an absolute path in text: ``/``, ``~/`` or ``C:/`` at the start or after a space, quote,
#: ``=``, bracket, comma or backtick, then anything but spaces, quotes and closing brackets
_ABSOLUTE = re.compile(r"""(?:(?<=^)|(?<=[\s"'`=(\[,{]))(?:~|[A-Za-z]:)?/[^\s"'`<>|,;)\]}]+""")


def public(value: Any, base: str | Path) -> Any:
    """``value`` (text, or JSON-like lists and dicts of it) with every absolute path made
    public: relative to ``base`` (the report's folder) when inside it, else the file's own
    name; the home folder, user and host never appear."""
    if isinstance(value, dict):
        return {public(k, base): public(v, base) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [public(v, base) for v in value]
    if not isinstance(value, str):
        return value
    base = os.path.realpath(os.path.expanduser(str(base)))
    return _ABSOLUTE.sub(lambda m: _public_path(m.group(0), base), value)


def _public_path(text: str, base: str) -> str:
    path = os.path.realpath(os.path.expanduser(text))
    if path == base:
        return "."
    if path.startswith(base + os.sep):
        return Path(os.path.relpath(path, base)).as_posix()
    name = Path(text.rstrip("/")).name
    return name or "."


def write_report(results: Results, directory: str | Path, command: Sequence[str] | None = None) -> list[Path]:
    """Write the report into ``directory`` as a set; returns the paths written.

    The files are built in a hidden sibling folder and swapped in at the end, so
    a failure or a kill leaves the previous report (or none), never a mix; files
    of an earlier report that this one does not write (plots of other measures)
    are gone afterwards. A ``directory`` holding other files is refused (exit 2).
    """
    directory = Path(directory)
    with atomic_dir(directory, REPORT_FILES, field="directory") as staging:
        names = write_report_files(results, staging, command, shown=directory)
    return [directory / name for name in names]


def write_report_files(
    results: Results,
    directory: Path,
    command: Sequence[str] | None = None,
    shown: str | Path | None = None,
    drawing: Drawing | None = None,
) -> list[str]:
    """Write the report's files into an existing folder (one at a time); returns their names.
    ``shown``: where the report will be read (the folder ``directory`` becomes): paths
    inside it are written relative to it, any other path as its file's name
    (:func:`public`), so no report carries a local path, user or host name. The figures
    are drawn by worker processes (``drawing``: started by the caller, else here)."""
    base = shown if shown is not None else directory
    drawing = drawing or Drawing(results)
    write_per_topic(results, directory / "per_topic.parquet")
    if results.splits is not None:
        write_frame(results.split_frame(), directory / "per_split.parquet")
    captions, images = drawing.result()  # with the intervals of the means the tables show too
    systems = definitions.system_definitions(results)
    texts = {
        "results.md": public(_markdown(results, captions, systems), base),
        "results.csv": tables.to_csv(results),
        # one line (`jq .` or `python -m json.tool` indent it): indented, it was 40% spaces
        "results.json": json.dumps(public(report_json(results, command, systems), base), sort_keys=True, ensure_ascii=False)
        + "\n",
        "results.tex": public(tables.to_latex_document(results, systems=_latex_systems(systems)), base),
    }
    for stem, text in captions.items():  # \begin{figure}...\input{main.caption}\end{figure}
        texts[f"{stem}.caption.tex"] = f"\\caption{{{latex.tex(text)}}}\\label{{fig:dsr-{stem}}}\n"
    if results.baseline is not None:
        texts["comparison.csv"] = tables.frame_csv(tables.comparison_frame(results))
    if results.pairs is not None:
        texts["pairs.csv"] = tables.frame_csv(tables.pairs_frame(results))
    written = []
    for name, text in texts.items():
        with atomic_write(directory / name) as handle:
            handle.write(text)
        written.append(name)
    written.append("per_topic.parquet")
    if results.splits is not None:
        written.append("per_split.parquet")
    for name, data in images.items():
        with atomic_write(directory / name, "wb") as handle:
            handle.write(data)
        written.append(name)
    return written


def _markdown(results: Results, captions: dict[str, str], systems: dict[str, str]) -> str:
    c = results.collection
    proto = results.protocol_json()
    lines = [
        f"# Evaluation on {c.get('name')}",
        "",
        f"- collection: `{c.get('name')}`, {c.get('dialogues')} dialogues, sha256 `{c.get('hash')}`",
        f"- protocol: {proto['name']}"
        + (
            f" — {proto['splits']['n']} splits ({proto['splits']['source']}"
            + (f", seed {proto['splits']['seed']}" if "seed" in proto["splits"] else "")
            + (f", {proto['splits']['path']}" if "path" in proto["splits"] else "")
            + f"), target {proto['target']}; {proto['sd']}"
            if results.splits is not None
            else ""
        ),
        f"- measures: {', '.join(results.measures)}; primary measure: {results.primary_measure}",
        f"- intervals: {results.interval_text()}",
        "- per-topic values: `per_topic.parquet`",
        "",
        "![main figure](main.png)",
        "",
        f"*Figure (`main.pdf`): {captions.get('main', '')}*",
        "",
        "## Systems",
        "",
    ]
    lines += [f"- **{tables._label(results, name)}**: {text}" for name, text in systems.items()]
    lines += ["", "Run files:", ""]
    for name, info in results.run_info.items():
        if "members" in info:
            lines.append(f"- {name}: tuned family of {', '.join(map(str, info['members']))}")
            continue
        where = f"`{info['path']}`" if "path" in info else "(in memory)"
        lines.append(f"- {name}: {where}" + (f" — {json.dumps(info['config'], sort_keys=True)}" if info.get("config") else ""))
    versions = package_versions()
    lines += [
        "",
        "versions: " + ", ".join(f"{k} {v}" for k, v in versions.items() if v),
        "",
        "## Figures",
        "",
        "Each figure is a PDF (TrueType fonts) and a 300 dpi PNG; its caption is here and in "
        "`STEM.caption.tex` (`\\begin{figure}\\includegraphics{main.pdf}\\input{main.caption}"
        "\\end{figure}`), never drawn inside it.",
        "",
    ]
    lines += [f"- `{stem}`: {text}" for stem, text in captions.items()]
    lines += ["", "## Tables", ""]
    return "\n".join(lines) + "\n" + tables.to_markdown(results)  # the notes under the tables


def _latex_systems(systems: dict[str, str]) -> str:
    """The systems' definitions as a LaTeX list for ``results.tex``."""
    items = "".join(f"\\item[{latex.tex(name)}] {latex.tex(text)}\n" for name, text in systems.items())
    return f"\\paragraph{{Systems}}\n\\begin{{description}}\n{items}\\end{{description}}\n"
