"""The measure registry: each measure family dsr knows is declared once, here.

A measure is still an ir_measures string as papers print it (``nDCG@5``,
``RR(rel=2)``, ``Judged@10``); its *family* (ir_measures' ``NAME``: ``nDCG``,
``RR``, ``Judged``...) is declared below with its display name, direction,
whether its values lie in [0, 1], the cutoffs tables and figures offer, and
a line of help. The command line's help, the evaluator (which families it
computes and which it refuses, with the reason), the reports and figures (display
names, directions, bounds) and the leaderboard read it; nothing else lists
measures.

The interface is small on purpose:

* :func:`lookup` (an ir_measures measure object or its family name -> :class:`Family`);
* :func:`display_name`, :func:`direction`, :func:`bounded` of a measure object;
* :func:`refusal` (None, or why dsr will not compute a measure: exit 2);
* :data:`DEFAULT_MEASURES`, :data:`DEFAULT_PRIMARY`, :func:`help_lines`.

It imports nothing heavy (``dsr --help`` reads it); a measure *string* is parsed
by :func:`dsr.evaluation.measures.parse_measures`, which checks it against this registry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dsr.core import registry as core_registry


@dataclass(frozen=True)
class Family:
    """One measure family as dsr reports it."""

    #: ir_measures' canonical family name (``measure.NAME``)
    name: str
    #: how tables and figures print the family (``nDCG``, ``Judged``...)
    display: str
    #: +1 higher is better; -1 lower is better; 0 descriptive (counts, judged fractions):
    #: no "better", so no ▲/▼ sense of its own
    direction: int
    #: values lie in [0, 1] (intervals are bootstrapped or clipped there)
    bounded: bool
    #: the cutoffs offered by default (help, figures' R@k curves); () when it takes none
    cutoffs: tuple[int, ...]
    #: one line of help
    about: str
    #: None when dsr computes it; else why not (printed with exit 2)
    refused: str | None = None
    #: a measure of the family as a paper prints it, where the name alone is not one
    #: (``IPrec@0.5``; :mod:`dsr.testing` parses it and prints it back)
    example: str = ""


_IA = "needs intent-aware qrels (one grade per subtopic); dsr's qrels have one grade per sentence"

FAMILIES: tuple[Family, ...] = (
    Family("RR", "RR", 1, True, (), "reciprocal rank of the first relevant sentence (trec_eval recip_rank)"),
    Family("nDCG", "nDCG", 1, True, (1, 3, 5, 10), "normalised DCG, grades as gains (trec_eval ndcg_cut)"),
    Family("P", "P", 1, True, (1, 5, 10), "precision at k (trec_eval P)"),
    Family("R", "R", 1, True, (5, 10, 20, 50), "recall at k (trec_eval recall)"),
    Family("AP", "AP", 1, True, (), "average precision (trec_eval map; AP@k: map_cut)"),
    Family("Rprec", "R-prec", 1, True, (), "precision at R, R the topic's relevant count"),
    Family("Success", "Success", 1, True, (1, 5, 10), "1 when a relevant sentence is in the top k"),
    Family("Bpref", "bpref", 1, True, (), "binary preference (judged non-relevant above relevant)"),
    Family("infAP", "infAP", 1, True, (), "inferred AP (trec_eval infAP)"),
    Family("IPrec", "IPrec", 1, True, (), "interpolated precision at a recall level: IPrec@0.5", example="IPrec@0.5"),
    Family("SetP", "SetP", 1, True, (), "precision of the whole ranked set"),
    Family("SetR", "SetR", 1, True, (), "recall of the whole ranked set"),
    Family("SetF", "SetF", 1, True, (), "F-measure of the whole ranked set"),
    Family("SetAP", "SetAP", 1, True, (), "unranked AP of the whole ranked set"),
    Family("ERR", "ERR", 1, True, (5, 10, 20), "expected reciprocal rank (gdeval: grades on its 0-4 scale)"),
    Family(
        "RBP",
        "RBP",
        1,
        True,
        (),
        "rank-biased precision (cwl_eval), persistence p (default 0.8), relevant from grade rel (bare RBP: rel=1): RBP(p=0.9)",
    ),
    Family("Accuracy", "Accuracy", 1, True, (), "pairwise accuracy of relevant over non-relevant"),
    Family("Compat", "Compat", 1, True, (), "compatibility with an ideal ranking (Clarke et al.)"),
    Family(
        "Judged",
        "Judged",
        0,
        True,
        (5, 10),
        "fraction of the top k that is judged (in the qrels): how far pooled labels cover a run",
    ),
    Family("NumQ", "NumQ", 0, False, (), "topics evaluated (trec_eval num_q)"),
    Family("NumRet", "NumRet", 0, False, (), "sentences retrieved (NumRet(rel=1): relevant ones retrieved)"),
    Family("NumRel", "NumRel", 0, False, (), "relevant sentences in the qrels (trec_eval num_rel)"),
    *(
        Family(name, name, 1, name != "alpha_DCG", (), "intent-aware measure", _IA)
        for name in ("AP_IA", "P_IA", "ERR_IA", "nERR_IA", "alpha_DCG", "alpha_nDCG", "NRBP", "nNRBP", "StRecall")
    ),
    *(
        Family(
            name,
            name,
            1,
            name.startswith(("NERR", "SDCG")),
            (),
            "C/W/L measure (cwl_eval), with its parameters: SDCG(max_rel=2)@5",
            example=f"{name}(max_rel=2)" + ("@5" if name in ("BPM", "NERR8", "NERR9", "SDCG") else ""),
        )
        for name in ("BPM", "INSQ", "INST", "NERR8", "NERR9", "NERR10", "NERR11", "SDCG")
    ),
)

# the registry's measures (kind ``measure``): these families, then other packages' (a family an
# installed ir_measures provider computes, declared by the entry points ``dsr.measures``)
for _family in FAMILIES:
    core_registry.register("measure", _family.name, _family)


def families() -> list[Family]:
    """Every registered family: dsr's declarations above, then other packages'."""
    return [family for _, family in core_registry.items("measure")]


#: what ``dsr evaluate`` measures when nobody says otherwise
DEFAULT_MEASURES = ("RR", "nDCG@1", "nDCG@3", "nDCG@5", "nDCG@10", "P@1", "P@5", "AP", "R@10")
#: the measure systems are compared on when nobody says otherwise (tables, legends, figures)
DEFAULT_PRIMARY = "nDCG@5"


def lookup(measure: Any) -> Family | None:
    """The family of an ir_measures measure object (or of a family name); None when dsr
    does not declare it (a family ir_measures added later)."""
    name = measure if isinstance(measure, str) else getattr(measure, "NAME", None)
    found: Family | None = core_registry.find("measure", name) if isinstance(name, str) else None
    return found


def display_name(measure: Any) -> str:
    """How a table prints a measure: its string with the family's display name
    (``Rprec`` -> ``R-prec``; ``nDCG@5`` stays ``nDCG@5``)."""
    text = str(measure)
    family = lookup(measure)
    if family is None or family.display == family.name or not text.startswith(family.name):
        return text
    return family.display + text[len(family.name) :]


def direction(measure: Any) -> int:
    """+1 higher is better, -1 lower is better, 0 descriptive; +1 for an undeclared family."""
    family = lookup(measure)
    return 1 if family is None else family.direction


def bounded(measure: Any) -> bool:
    """Whether the measure's values lie in [0, 1] (False for an undeclared family)."""
    family = lookup(measure)
    return family is not None and family.bounded


def refusal(measure: Any) -> str | None:
    """None when dsr computes ``measure``; else the sentence that says why not."""
    family = lookup(measure)
    if family is None:
        return (
            f"{getattr(measure, 'NAME', measure)} is parsed by ir_measures but not declared in "
            "dsr's measure registry (dsr/evaluation/registry.py, or a package's entry point dsr.measures)"
        )
    if family.refused:
        return f"{family.name} {family.refused}"
    return None


def help_lines() -> list[str]:
    """``--measures`` help: one line per family dsr computes, with its default cutoffs."""
    lines = []
    for f in families():
        if f.refused:
            continue
        at = f"@k (k: {', '.join(map(str, f.cutoffs))}...)" if f.cutoffs else ""
        lines.append(f"  {f.name + at:<28} {f.about}")
    return lines
