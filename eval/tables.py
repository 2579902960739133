"""Result tables: rows systems, columns measures, one block per subset.

The same blocks render as aligned text (the terminal), Markdown, CSV and
LaTeX, so every format shows the same numbers. Values significantly different
from the baseline's (Holm-adjusted p < alpha) carry ``†``.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass

from eval.measures import nan_to_none
from eval.protocol import summarise
from eval.results import Results
from eval.significance import MARK


@dataclass
class Row:
    name: str
    means: list[float | None]
    sds: list[float | None]
    marks: list[bool]


@dataclass
class Block:
    subset: str
    kind: str            # "test" (mean ± sd over splits) or "all" (every dialogue)
    title: str
    rows: list[Row]


def blocks(results: Results) -> list[Block]:
    out = []
    for subset, index in results.subsets.items():
        n = len(index)
        if results.splits is not None:
            rows = []
            for name, system in results.systems.items():
                mean, sd = summarise(system.splits[subset])
                rows.append(Row(name, [nan_to_none(v) for v in mean], [nan_to_none(v) for v in sd],
                                _marks(results, subset, name)))
            title = (f"{subset}: test halves, mean ± sd over {len(results.splits)} splits "
                     f"({_tuning_note(results)})")
            out.append(Block(subset, "test", title, rows))
        rows = [Row(name, [nan_to_none(v) for v in tv.mean(index)], [None] * len(results.measures),
                    _marks(results, subset, name))
                for name, tv in results.runs.items()]
        untuned = ", untuned" if results.splits is not None else ""
        out.append(Block(subset, "all", f"{subset}: all {n} dialogues{untuned}", rows))
    return out


def _tuning_note(results: Results) -> str:
    split = results.splits
    source = split.source + (f", seed {split.seed}" if split.seed is not None else "")
    tuned = any(s.kind == "tuned" for s in results.systems.values())
    return f"{source}; " + (f"tuned on val by {results.target}" if tuned else "untuned")


def _marks(results: Results, subset: str, name: str) -> list[bool]:
    return [results.significant(subset, name, m) for m in results.measures]


def cell(row: Row, j: int, digits: int = 4, pm: str = "±") -> str:
    mean = row.means[j]
    if mean is None:
        return "–"
    text = f"{mean:.{digits}f}"
    if row.sds[j] is not None:
        text += f"{pm}{row.sds[j]:.{digits}f}"
    return text + (MARK if row.marks[j] else "")


def legend(results: Results) -> str:
    if results.baseline is None:
        return ""
    test = "paired t-test" if results.test == "t" else "randomisation test"
    return (f"{MARK} p < {results.alpha:g} against the baseline {results.baseline} "
            f"({test}, two-sided, Holm-corrected)")


def _label(results: Results, name: str) -> str:
    return f"{name} (baseline)" if name == results.baseline else name


def format_text(results: Results, digits: int = 4) -> str:
    """Aligned plain-text tables, one block per subset (what ``dsr evaluate`` prints)."""
    parts = []
    for block in blocks(results):
        header = ["run", *results.measures]
        body = [[_label(results, r.name), *(cell(r, j, digits) for j in range(len(results.measures)))]
                for r in block.rows]
        widths = [max(len(row[c]) for row in [header, *body]) for c in range(len(header))]
        lines = [block.title,
                 "  ".join(h.ljust(widths[0]) if c == 0 else h.rjust(widths[c]) for c, h in enumerate(header))]
        for row in body:
            lines.append("  ".join(v.ljust(widths[0]) if c == 0 else v.rjust(widths[c])
                                   for c, v in enumerate(row)))
        parts.append("\n".join(lines))
    text = "\n\n".join(parts)
    if results.notes:
        text += "\n\n" + "\n".join(f"note: {n}" for n in results.notes)
    if legend(results):
        text += "\n" + legend(results)
    return text + "\n"


def to_markdown(results: Results, digits: int = 4) -> str:
    parts = []
    for block in blocks(results):
        lines = [f"### {block.title}", "",
                 "| run | " + " | ".join(results.measures) + " |",
                 "|---|" + "---:|" * len(results.measures)]
        for r in block.rows:
            lines.append(f"| {_label(results, r.name)} | "
                         + " | ".join(cell(r, j, digits) for j in range(len(results.measures))) + " |")
        parts.append("\n".join(lines))
    text = "\n\n".join(parts) + "\n"
    if legend(results):
        text += "\n" + legend(results) + "\n"
    return text


def to_csv(results: Results) -> str:
    """Long format: one line per (block, subset, run, measure), with p-values when tested."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["block", "subset", "run", "measure", "mean", "sd", "p_t", "p_t_holm",
                     "p_perm", "p_perm_holm", "significant"])
    for block in blocks(results):
        for r in block.rows:
            for j, m in enumerate(results.measures):
                entry = (results.significance or {}).get(block.subset, {}).get(r.name, {}).get(m, {})
                writer.writerow([block.kind, block.subset, r.name, m,
                                 "" if r.means[j] is None else repr(r.means[j]),
                                 "" if r.sds[j] is None else repr(r.sds[j]),
                                 *("" if entry.get(k) is None else repr(entry[k])
                                   for k in ("t", "t_holm", "perm", "perm_holm")),
                                 int(r.marks[j])])
    return out.getvalue()


def _tex(text: str) -> str:
    text = text.replace("\\", "\x00")
    for ch in "&%$#_{}":
        text = text.replace(ch, "\\" + ch)
    return text.replace("\x00", r"\textbackslash{}")


def to_latex(results: Results, digits: int = 3) -> str:
    """One ``tabular`` per block (booktabs), the best mean per column in bold."""
    parts = []
    for block in blocks(results):
        cols = "l" + "r" * len(results.measures)
        lines = [f"% {block.title}", r"\begin{tabular}{" + cols + "}", r"\toprule",
                 " & ".join(["Run", *(_tex(m) for m in results.measures)]) + r" \\", r"\midrule"]
        best = []
        for j in range(len(results.measures)):
            vals = [r.means[j] for r in block.rows if r.means[j] is not None]
            best.append(max(vals) if vals else None)
        for r in block.rows:
            cells = []
            for j in range(len(results.measures)):
                if r.means[j] is None:
                    cells.append("--")
                    continue
                text = f"{r.means[j]:.{digits}f}"
                if best[j] is not None and round(r.means[j], digits) == round(best[j], digits):
                    text = r"\textbf{" + text + "}"
                if r.sds[j] is not None:
                    text += rf"$\pm${r.sds[j]:.{digits}f}"
                if r.marks[j]:
                    text += r"$^\dagger$"
                cells.append(text)
            lines.append(" & ".join([_tex(_label(results, r.name)), *cells]) + r" \\")
        lines += [r"\bottomrule", r"\end{tabular}"]
        parts.append("\n".join(lines))
    text = "\n\n".join(parts) + "\n"
    if legend(results):
        text += "% " + legend(results).replace(MARK, "dagger") + "\n"
    return text
