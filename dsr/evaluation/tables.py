"""Result tables: every table is a pandas DataFrame first, rendered from it.

* :func:`main_frame` — the results table (rows systems, columns measures, one
  block per subset): values as numbers, long format. Rendered as aligned text
  (the terminal), Markdown, LaTeX, CSV and JSON by :func:`render`; every
  format shows the same numbers. A value significantly better than the
  baseline's (adjusted p < alpha) carries ``▲``, significantly worse ``▼``.
* :func:`comparison_frame` — each system against the baseline per subset and
  measure: mean with its 95% interval, mean difference with its interval,
  Cohen's d_z, win/tie/loss counts, raw and adjusted p.
* :func:`pairs_frame` — with ``--all-pairs``: each mean with the letters of
  its group (systems sharing a letter are not significantly different).
* :func:`summary_wide` — the short form a terminal shows by default: the
  primary measure by subset (and the requested measures on all dialogues).

Where no difference is significant nothing is printed: "not significantly
different" is not "tied", and the legend says so.

Markdown is rendered here from the DataFrame (``DataFrame.to_markdown``
needs ``tabulate``, which dsr does not depend on); LaTeX through
``DataFrame.to_latex`` (jinja2); CSV through ``DataFrame.to_csv``.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from dsr.evaluation import significance as sig
from dsr.evaluation.definitions import _baseline_line
from dsr.evaluation.latex import LATEX_SPECIALS, comment, document, fit_width, latex_escape, tex  # noqa: F401 (re-exported)
from dsr.evaluation.measures import nan_to_none
from dsr.evaluation.protocol import summarise
from dsr.evaluation.results import Results

if TYPE_CHECKING:  # pandas itself is imported on first use (_pandas)
    import pandas as pd

FORMATS = ("text", "md", "latex", "csv", "json")


@dataclass
class Row:
    name: str
    means: list[float | None]
    sds: list[float | None]
    marks: list[str]
    #: a tuned family's out-of-sample values in the untuned block
    tuned: bool = False


@dataclass
class Block:
    subset: str
    kind: str  # "test" (mean ± sd over splits) or "all" (every dialogue)
    title: str
    rows: list[Row]


def _pandas() -> ModuleType:
    """pandas, imported on first use, in this one place (``dsr --help`` loads no pandas)."""
    import pandas

    return pandas


def blocks(results: Results) -> list[Block]:
    out = []
    for subset, index in results.subsets.items():
        n = len(index)
        if results.splits is not None:
            rows = []
            for name, system in results.systems.items():
                assert system.splits is not None, "every system has test-half means when the results have splits"
                mean, sd = summarise(system.splits[subset])
                rows.append(
                    Row(
                        name,
                        [nan_to_none(v) for v in mean],
                        [nan_to_none(v) for v in sd],
                        _marks(results, subset, name),
                        tuned=system.kind == "tuned",
                    )
                )
            title = f"{subset}: test halves, mean ± sd over {len(results.splits)} splits ({_tuning_note(results)})"
            out.append(Block(subset, "test", title, rows))
        # untuned: every run over all dialogues, and each tuned family by its
        # out-of-sample per-topic values (its configuration chosen on val per split)
        rows = [
            Row(name, [nan_to_none(v) for v in tv.mean(index)], [None] * len(results.measures), _marks(results, subset, name))
            for name, tv in results.runs.items()
        ]
        for name, system in results.systems.items():
            if system.kind == "tuned":
                values = system.per_topic[index]
                values = values[~np.isnan(values).any(axis=1)]
                rows.append(
                    Row(
                        name,
                        [
                            nan_to_none(v)
                            for v in (values.mean(axis=0) if len(values) else np.full(len(results.measures), np.nan))
                        ],
                        [None] * len(results.measures),
                        _marks(results, subset, name),
                        tuned=True,
                    )
                )
        untuned = ", untuned" if results.splits is not None else ""
        out.append(Block(subset, "all", f"{subset}: all {n} dialogues{untuned}", rows))
    return out


def _tuning_note(results: Results) -> str:
    split = results.splits
    assert split is not None, "a note on tuning is written for results with splits"
    source = split.source + (f", seed {split.seed}" if split.seed is not None else "")
    tuned = any(s.kind == "tuned" for s in results.systems.values())
    return f"{source}; " + (f"tuned on val by {results.target}" if tuned else "untuned")


def _marks(results: Results, subset: str, name: str) -> list[str]:
    return [results.mark(subset, name, m) for m in results.measures]


def main_frame(results: Results) -> pd.DataFrame:
    """The results table, long: one row per (block, subset, system, measure) with
    ``mean``, ``sd``, raw and adjusted p-values, ``mark`` (▲/▼/"") and ``significant``."""
    pd = _pandas()
    rows = []
    for block in blocks(results):
        for r in block.rows:
            for j, m in enumerate(results.measures):
                entry = (results.significance or {}).get(block.subset, {}).get(r.name, {}).get(m, {})
                rows.append(
                    {
                        "block": block.kind,
                        "subset": block.subset,
                        "title": block.title,
                        "run": r.name,
                        "kind": "tuned" if r.tuned else "run",
                        "label": _label(results, r.name) + (" (tuned, out of sample)" if r.tuned and block.kind == "all" else ""),
                        "measure": m,
                        "mean": np.nan if r.means[j] is None else r.means[j],
                        "sd": np.nan if r.sds[j] is None else r.sds[j],
                        **{
                            f"p_{k}": np.nan if entry.get(k) is None else entry[k]
                            for k in ("t", "t_holm", "t_adj", "perm", "perm_holm", "perm_adj")
                        },
                        "mark": r.marks[j],
                        "significant": int(bool(r.marks[j])),
                    }
                )
    return pd.DataFrame(
        rows,
        columns=[
            "block",
            "subset",
            "title",
            "run",
            "kind",
            "label",
            "measure",
            "mean",
            "sd",
            "p_t",
            "p_t_holm",
            "p_t_adj",
            "p_perm",
            "p_perm_holm",
            "p_perm_adj",
            "mark",
            "significant",
        ],
    )


def comparison_frame(results: Results) -> pd.DataFrame:
    """Each system against the baseline (empty without one): ``subset``, ``system``,
    ``measure``, ``mean``/``ci_low``/``ci_high`` (per-topic mean, 95% interval),
    ``diff``/``diff_low``/``diff_high``, ``d``, ``wins``/``ties``/``losses``, ``p``, ``p_adj``, ``mark``."""
    frame = results.to_frame()
    frame = frame[frame["system"] != results.baseline] if results.baseline else frame.iloc[0:0]
    frame = frame.rename(columns={"topic_mean": "mean_topics"})
    p = [
        ((results.significance or {}).get(s, {}).get(n, {}).get(m, {}) or {}).get(results.test)
        for s, n, m in zip(frame["subset"], frame["system"], frame["measure"])
    ]
    frame = frame.assign(p=[np.nan if v is None else v for v in p])
    return frame[
        [
            "subset",
            "system",
            "measure",
            "mean_topics",
            "ci_low",
            "ci_high",
            "diff",
            "diff_low",
            "diff_high",
            "d",
            "wins",
            "ties",
            "losses",
            "p",
            "p_adj",
            "mark",
        ]
    ].reset_index(drop=True)


def pairs_frame(results: Results) -> pd.DataFrame:
    """With all-pairs testing: ``subset``, ``system``, ``measure``, ``mean``, ``group`` (letters)."""
    pd = _pandas()
    rows = []
    for subset, by_measure in (results.pairs or {}).items():
        for measure, entry in by_measure.items():
            for name in entry["order"]:
                rows.append(
                    {
                        "subset": subset,
                        "system": name,
                        "measure": measure,
                        "mean": entry["means"][name],
                        "group": entry["letters"][name],
                    }
                )
    return pd.DataFrame(rows, columns=["subset", "system", "measure", "mean", "group"])


# --- rendering ---------------------------------------------------------------------------


def _cell(mean: float | None, sd: float | None, mark: str | None, digits: int, pm: str = "±") -> str:
    if mean is None or mean != mean:
        return "–"
    text = f"{mean:.{digits}f}"
    if sd is not None and sd == sd:
        text += f"{pm}{sd:.{digits}f}"
    return text + (mark or "")


def cell(row: Row, j: int, digits: int = 4, pm: str = "±") -> str:
    return _cell(row.means[j], row.sds[j], row.marks[j], digits, pm)


def legend(results: Results) -> str:
    """The primary measure, and what ▲/▼ (and no mark) mean."""
    primary = f"Primary measure: {results.primary_measure}."
    if results.baseline is None:
        return primary + " No baseline: no significance marks."
    test = "paired t-test" if results.test == "t" else "randomisation test"
    return (
        f"{sig.BETTER}/{sig.WORSE} significantly better/worse than the baseline {results.baseline}: "
        f"p < {results.alpha:g} ({test}, two-sided, {results.correction_text()}); no mark: "
        f"not significantly different. {primary}"
    )


def _what(results: Results) -> str:
    if results.splits is None:
        return "mean over all dialogues"
    return f"test halves, mean ± sd over {len(results.splits)} splits ({_tuning_note(results)})"


def summary_wide(results: Results, measures: Sequence[str] | None = None, digits: int = 4) -> list[tuple[str, pd.DataFrame]]:
    """``[(title, DataFrame)]`` of the short summary: ``measures`` (when given and not
    just the primary) on all dialogues, then the primary measure by subset."""
    primary = results.primary_measure
    out = []
    measures = [m for m in dict.fromkeys(measures or []) if m in results.measures]
    if measures and measures != [primary]:
        table = results.table("all", measures, formatted=True, digits=digits)
        out.append((f"all {len(results.subsets['all'])} dialogues: {_what(results)}", _relabel(results, table)))
    if len(results.subsets) > 1 or not out:
        table = results.table(measures=[primary], formatted=True, digits=digits).droplevel("measure", axis=1)
        table.columns = [f"{s} ({len(results.subsets[s])})" for s in table.columns]
        out.append((f"{primary} (primary measure) by subset (dialogues): {_what(results)}", _relabel(results, table)))
    return out


def _relabel(results: Results, table: pd.DataFrame) -> pd.DataFrame:
    table = table.copy()
    table.index = [_label(results, n) for n in table.index]
    table.index.name, table.columns.name = "system", None
    return table


def format_summary(results: Results, measures: Sequence[str] | None = None, digits: int = 4) -> str:
    """The short text a terminal shows by default (``--verbose`` prints :func:`format_text`)."""
    text = "\n\n".join(f"{title}\n{_text_table(t)}" for title, t in summary_wide(results, measures, digits))
    if results.notes:
        text += "\n\n" + "\n".join(f"note: {n}" for n in results.notes)
    return text + "\n" + legend(results) + "\n" + _baseline_line(results)


def _label(results: Results, name: str) -> str:
    return f"{name} (baseline)" if name == results.baseline else name


def wide(results: Results, frame: Any = None, digits: int = 4) -> list[tuple[str, Any]]:
    """``[(title, DataFrame)]``: each block of :func:`main_frame` as a wide table of
    formatted cells (index: runs, columns: measures)."""
    frame = main_frame(results) if frame is None else frame
    out = []
    for (title), part in frame.groupby("title", sort=False):
        part = part.assign(cell=[_cell(m, s, k, digits) for m, s, k in zip(part["mean"], part["sd"], part["mark"])])
        table = part.pivot(index="label", columns="measure", values="cell")
        table = table.loc[list(dict.fromkeys(part["label"])), results.measures]
        table.index.name, table.columns.name = "run", None
        out.append((title, table))
    return out


def _markdown_table(table: pd.DataFrame) -> str:
    header = [table.index.name or "", *map(str, table.columns)]
    lines = ["| " + " | ".join(header) + " |", "|---|" + "---:|" * len(table.columns)]
    for label, row in table.iterrows():
        lines.append("| " + " | ".join([str(label), *map(str, row.tolist())]) + " |")
    return "\n".join(lines)


def _text_table(table: pd.DataFrame) -> str:
    """Aligned text: labels left, cells right, a mark slot at the end of every cell of a
    column where any cell carries ▲/▼ (so the numbers line up whether marked or not),
    widths measured as a terminal draws them (:func:`display_width`)."""
    header = [table.index.name or "", *map(str, table.columns)]
    body = [[str(label), *map(str, row.tolist())] for label, row in table.iterrows()]
    marks = (sig.BETTER, sig.WORSE)
    for c in range(1, len(header)):
        if any(r[c].endswith(marks) for r in body):
            for r in body:
                r[c] = r[c] if r[c].endswith(marks) else r[c] + " "
    rows = [header, *body]
    widths = [max(display_width(r[c]) for r in rows) for c in range(len(header))]
    return "\n".join("  ".join(_pad(v, widths[c], left=c == 0) for c, v in enumerate(r)).rstrip() for r in rows)


def display_width(text: str) -> int:
    """Columns ``text`` takes in a terminal: East Asian wide and full-width characters two,
    combining marks none, everything else (▲, ▼, ±, Δ: one in Unicode's tables) one."""
    return sum(0 if unicodedata.combining(ch) else 2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def _pad(text: str, width: int, left: bool) -> str:
    gap = " " * max(0, width - display_width(text))
    return text + gap if left else gap + text


def _comparison_wide(results: Results, measure: str | None = None, digits: int = 4) -> list[tuple[str, pd.DataFrame]]:
    """Per subset, the comparison with the baseline on one measure (the primary one)."""
    frame = comparison_frame(results)
    measure = measure or results.primary_measure
    frame = frame[frame["measure"] == measure]
    out = []
    for subset, part in frame.groupby("subset", sort=False):
        table = part.set_index("system")[[]].copy()
        table[f"{measure} [95% CI]"] = [
            f"{m:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"
            for m, lo, hi in zip(part["mean_topics"], part["ci_low"], part["ci_high"])
        ]
        table[f"Δ vs {results.baseline} [95% CI]"] = [
            f"{d:+.{digits}f} [{lo:+.{digits}f}, {hi:+.{digits}f}]{k}"
            for d, lo, hi, k in zip(part["diff"], part["diff_low"], part["diff_high"], part["mark"])
        ]
        table["d"] = ["–" if v != v else f"{v:+.2f}" for v in part["d"]]
        table["W/T/L"] = [f"{w}/{t}/{lo}" for w, t, lo in zip(part["wins"], part["ties"], part["losses"])]
        table["p (adj.)"] = ["–" if v != v else f"{v:.3g}" for v in part["p_adj"]]
        table.index.name = "system"
        out.append(
            (
                f"{subset}: against the baseline {results.baseline} on {measure}, the primary "
                f"measure (per-topic means; {results.interval_text(measure)}; differences: "
                "95% t interval)",
                table,
            )
        )
    return out


def _pairs_wide(results: Results, digits: int = 4) -> list[tuple[str, pd.DataFrame]]:
    frame = pairs_frame(results)
    out = []
    for subset, part in frame.groupby("subset", sort=False):
        part = part.assign(cell=[f"{m:.{digits}f} {g}" for m, g in zip(part["mean"], part["group"])])
        table = part.pivot(index="system", columns="measure", values="cell")
        table = table.loc[list(results.systems), results.measures]
        table.columns.name = None
        out.append(
            (
                f"{subset}: all pairs, per-topic means ({'t-test' if results.test == 't' else 'randomisation'}, "
                f"{sig.CORRECTION_NAMES[results.correction]} over the pairs); "
                "systems sharing a letter are not significantly different",
                table,
            )
        )
    return out


def _all_wide(results: Results, digits: int = 4) -> list[tuple[str, pd.DataFrame]]:
    tables = wide(results, digits=digits)
    if results.baseline is not None:
        tables += _comparison_wide(results, digits=digits)
    if results.pairs is not None:
        tables += _pairs_wide(results, digits)
    return tables


def format_text(results: Results, digits: int = 4) -> str:
    """Every table as aligned plain text, one block per subset (``dsr evaluate --verbose``)."""
    text = "\n\n".join(f"{title}\n{_text_table(t)}" for title, t in _all_wide(results, digits))
    if results.notes:
        text += "\n\n" + "\n".join(f"note: {n}" for n in results.notes)
    return text + "\n" + legend(results) + "\n" + _baseline_line(results)


def to_markdown(results: Results, digits: int = 4, tables: Sequence[tuple[str, pd.DataFrame]] | None = None) -> str:
    """Every table (or ``tables``, ``[(title, frame)]``) as Markdown, with the notes and the legend."""
    tables = _all_wide(results, digits) if tables is None else tables
    text = "\n\n".join(f"### {title}\n\n{_markdown_table(t)}" for title, t in tables) + "\n"
    text += "".join(f"\n- note: {n}" for n in results.notes) + ("\n" if results.notes else "")
    return text + "\n" + legend(results) + "\n" + _baseline_line(results)


def to_csv(results: Results) -> str:
    """Long format: one line per (block, subset, run, measure), with p-values when tested."""
    frame = main_frame(results).drop(columns=["title", "label"])
    return frame_csv(frame)


def frame_csv(frame: pd.DataFrame) -> str:
    """A frame as CSV, floats as their shortest exact repr (they read back equal)."""
    return frame.to_csv(index=False, lineterminator="\n", float_format=lambda v: repr(float(v)), na_rep="")


def to_json(results: Results) -> str:
    """The tables' frames as JSON records: ``{"table": [...], "comparison": [...], "pairs": [...]}``."""

    def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
        return [
            {
                k: (
                    None
                    if isinstance(v, float) and v != v
                    else (v.item() if hasattr(v, "item") else (None if v is None or str(v) == "<NA>" else v))
                )
                for k, v in row.items()
            }
            for row in frame.to_dict(orient="records")
        ]

    out = {"table": records(main_frame(results))}
    if results.baseline is not None:
        out["comparison"] = records(comparison_frame(results))
    if results.pairs is not None:
        out["pairs"] = records(pairs_frame(results))
    return json.dumps(out, indent=2, ensure_ascii=False) + "\n"


def to_latex(results: Results, digits: int = 3, extras: bool = False) -> str:
    """One ``tabular`` per table (booktabs, ``DataFrame.to_latex``), each after a ``%``
    comment with its title; in the results blocks the best mean per column is bold; ▲/▼
    (amssymb's triangles, :mod:`dsr.evaluation.latex`) mark significantly better/worse.

    ``extras`` adds the comparison with the baseline and the all-pairs groups
    (reports and ``--format latex``); without, only the results blocks (what the
    leaderboard exports: win/tie/loss counts would tell a hidden phase's per-topic story)."""
    parts = [comment(title) + body for title, body in latex_tables(results, digits, extras)]
    text = "\n".join(parts)
    if legend(results):
        text += comment(legend(results))
    return text + "".join(comment(f"note: {n}") for n in results.notes)


def latex_tables(results: Results, digits: int = 3, extras: bool = False) -> list[tuple[str, str]]:
    """``[(title, tabular)]`` of :func:`to_latex`."""
    frame = main_frame(results)
    parts = []
    for (title, table), (_, block) in zip(wide(results, frame, digits), frame.groupby("title", sort=False)):
        best = block.groupby("measure")["mean"].max()
        table = table.copy()
        for measure in results.measures:
            means = block[block["measure"] == measure].set_index("run")["mean"]
            cells = []
            for label, run in zip(table.index, dict.fromkeys(block["run"])):
                text = tex(table.loc[label, measure])
                value = means.get(run)
                if value == value and value is not None and round(value, digits) == round(best[measure], digits):
                    head = f"{value:.{digits}f}"
                    text = text.replace(head, r"\textbf{" + head + "}", 1)
                cells.append(text)
            table[measure] = cells
        parts.append((title, _latex_table(table)))
    extra = []
    if extras and results.baseline is not None:
        extra += _comparison_wide(results, digits=digits)
    if extras and results.pairs is not None:
        extra += _pairs_wide(results, digits)
    for title, table in extra:
        parts.append((title, _latex_table(table.map(tex))))
    return parts


def to_latex_document(results: Results, digits: int = 3, systems: str = "") -> str:
    """A report's ``results.tex``: every table of :func:`to_latex` (with extras) under its
    title, the legend, and ``systems`` (LaTeX saying what each row is), in a complete
    document that plain ``pdflatex`` compiles (:func:`dsr.evaluation.latex.document`). A
    ``tabular`` pastes into a paper that loads amssymb and booktabs."""
    body = [f"\\subsection*{{{tex(title)}}}\n{fit_width(table)}" for title, table in latex_tables(results, digits, True)]
    body.append("\n" + tex(legend(results)) + "\n")
    body += [tex(f"Note: {n}") + "\n" for n in results.notes]  # e.g. a fast backend's distance from torch
    if systems:
        body.append(systems)
    return document("\n".join(body), f"Evaluation on {results.collection.get('name')}")


def _latex_table(table: pd.DataFrame) -> str:
    """A wide table of LaTeX cells as a booktabs ``tabular``; the row labels are its first
    column, ``Run`` (a named index would add a stray ``Run & & ...`` row)."""
    table = table.copy()
    table.insert(0, "Run", [tex(str(i)) for i in table.index])
    table.columns = ["Run", *(tex(str(c)) for c in table.columns[1:])]
    body = table.to_latex(escape=False, index=False, column_format="l" + "r" * (len(table.columns) - 1))
    return body.rstrip("\n") + "\n"


def render(results: Results, fmt: str = "text", verbose: bool = True, measures: Sequence[str] | None = None) -> str:
    """The printed tables in ``fmt``: text, md, latex, csv (long) or json (records).

    ``verbose=False`` gives text and Markdown the short summary (:func:`summary_wide`,
    ``measures`` on all dialogues and the primary measure by subset); LaTeX, CSV and
    JSON are exports and always hold every table."""
    if fmt == "latex":
        return to_latex(results, extras=True)
    if not verbose and fmt == "text":
        return format_summary(results, measures)
    if not verbose and fmt == "md":
        return to_markdown(results, tables=summary_wide(results, measures))
    return {"text": format_text, "md": to_markdown, "csv": to_csv, "json": to_json}[fmt](results)
