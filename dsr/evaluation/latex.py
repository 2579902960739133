"""LaTeX that plain ``pdflatex`` compiles: escaping, the significance marks, a document.

* :func:`latex_escape` — any text as LaTeX that prints it (the one helper for
  every LaTeX dsr writes).
* :func:`tex` — a table cell or title: escaped, ▲/▼ as ``$^{\\blacktriangle}$``
  / ``$^{\\blacktriangledown}$`` (amssymb), ± as ``$\\pm$``, Δ as ``$\\Delta$``;
  no character pdflatex has no definition for is left.
* :data:`PACKAGES` / :func:`document` — the preamble a report's ``results.tex``
  carries: ``amssymb`` (the marks) and ``booktabs`` (``\\toprule``...), with
  plain ``\\hline`` rules where booktabs is not installed (Debian's
  ``texlive-latex-base`` alone), so ``pdflatex results.tex`` always compiles.
"""

from __future__ import annotations

from dsr.evaluation import significance as sig

#: the significance marks as LaTeX (amssymb's triangles, raised)
MARKS = {sig.BETTER: r"$^{\blacktriangle}$", sig.WORSE: r"$^{\blacktriangledown}$"}

#: every character TeX treats specially, as text (``^^5c`` would otherwise be a backslash)
LATEX_SPECIALS = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}

#: characters dsr's tables and titles use, as 7-bit LaTeX (``<``, ``>`` and ``|`` too: in
#: text, OT1 fonts print them as ¡, ¿ and an em dash)
SYMBOLS = {
    "±": r"$\pm$",
    "Δ": r"$\Delta$",
    "–": "--",
    "—": "---",
    "×": r"$\times$",
    "≤": r"$\leq$",
    "≥": r"$\geq$",
    "…": r"\ldots{}",
    "<": r"$<$",
    ">": r"$>$",
    "|": r"$|$",
    "’": "'",
    "“": "``",
    "”": "''",
    "→": r"$\rightarrow$",
}

#: what a document needs for dsr's tables (``results.tex`` loads these)
PACKAGES = r"""\usepackage{amssymb}   % the marks: $^{\blacktriangle}$ better, $^{\blacktriangledown}$ worse
\IfFileExists{booktabs.sty}{\usepackage{booktabs}}{%   booktabs rules, or plain ones without it
  \providecommand{\toprule}{\hline}\providecommand{\midrule}{\hline}\providecommand{\bottomrule}{\hline}}"""


def latex_escape(text: str) -> str:
    """``text`` as LaTeX that prints it: every special character escaped; line breaks and
    other control characters become spaces, so a value cannot end a table row or a ``%``
    comment line."""
    out = []
    for ch in str(text):
        if ch in LATEX_SPECIALS:
            out.append(LATEX_SPECIALS[ch])
        elif ch.isprintable() or ch == " ":
            out.append(ch)
        else:
            out.append(" ")
    return "".join(out)


def tex(text: str) -> str:
    """A cell, label or title as LaTeX: escaped, the marks and symbols as macros; letters up
    to Latin Extended-A stay (LaTeX reads UTF-8 and knows them), any other character becomes
    ``[U+XXXX]`` (pdflatex stops on a character it has no definition for)."""
    out = []
    for ch in latex_escape(text):
        if ch in MARKS:
            out.append(MARKS[ch])
        elif ch in SYMBOLS:
            out.append(SYMBOLS[ch])
        elif ord(ch) < 0x180:
            out.append(ch)
        else:
            out.append(f"[U+{ord(ch):04X}]")
    return "".join(out)


def comment(text: str) -> str:
    """``text`` as one ``%`` comment line (marks spelt out, ASCII only)."""
    words = str(text).replace(sig.BETTER, "blacktriangle").replace(sig.WORSE, "blacktriangledown")
    return "% " + tex(words).replace("$", "") + "\n"


def fit_width(tabular: str) -> str:
    """``tabular`` centred, scaled down to the line's width when wider (graphicx)."""
    return (
        "\\begin{center}\n\\resizebox{\\ifdim\\width>\\linewidth\\linewidth\\else\\width\\fi}{!}{%\n"
        + tabular.rstrip("\n")
        + "}\n\\end{center}\n"
    )


def document(body: str, title: str = "") -> str:
    """``body`` in a complete article that plain ``pdflatex`` compiles (landscape, small
    margins: a results table has a column per measure)."""
    return (
        "\\documentclass{article}\n"
        "\\usepackage[landscape,margin=1.5cm]{geometry}\n\\usepackage{graphicx}\n"
        f"{PACKAGES}\n"
        "\\begin{document}\n\\small\n"
        + (f"\\section*{{{tex(title)}}}\n" if title else "")
        + body.rstrip("\n")
        + "\n\\end{document}\n"
    )
