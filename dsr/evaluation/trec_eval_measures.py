"""trec_eval's measures as its releases 9.0.8 and 10.0 name, order, parse and print them,
for ``dsr trec_eval`` (:mod:`dsr.evaluation.trec_eval_tool`).

Each measure is declared once in :data:`TABLE`, in trec_eval's own order (``measures.c``:
measures are computed and printed in that order, whatever the order of ``-m``), with its
kind (how its values are named, accumulated over topics and printed), its default
parameters and the releases that have it. Who computes a measure:

* ``pytrec_eval`` (trec_eval 9.0.x's own C code, the backend ir_measures uses for these):
  every measure of ``all_trec`` except those below; the ranking it is given is already in
  the release's order, cut by ``-M`` and ``-J``, so the release's rules are dsr's;
* here, in Python, ported line by line from the C of the release named: ``runid``,
  ``num_q``, ``relstring`` and ``utility`` (which reads ``-N``), 10.0's
  ``iprec_at_recall`` and ``11pt_avg`` (10.0 turns a recall level into a number of
  relevant documents with ``lround``, 9.0.8 adds 0.9 and truncates: 28 values of
  trec_eval's own suite differ), and 10.0's new ``rbp``, ``rbp_resid`` and ``unj``.

What dsr does not compute is declared too (``refused``): the preference measures
(``-R prefs``/``qrels_prefs``), the judgement-group ones (``-R qrels_jg``), ``yaap`` and
10.0's ``dcg``/``ideal_dcg``; asking for one is an error that names it (exit 2), never a
silent difference.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from dsr.core.errors import InputError

_T = TypeVar("_T")

RELEASES = ("9.0.8", "10.0")
#: trec_eval's MIN_GEO_MEAN: a topic's value below it counts as it in a geometric mean
MIN_GEO_MEAN = 0.00001
#: trec_eval's RELVALUE_NONPOOL and RELVALUE_UNJUDGED: a retrieved document not in the
#: qrels, and one in them with a negative grade (in the pool, not judged)
NONPOOL, UNJUDGED = -1, -2

_PREFS = "not computed by dsr: preference measures need trec_eval's -R prefs or qrels_prefs input formats"
_JG = "not computed by dsr: judgement-group measures need trec_eval's -R qrels_jg input format"

#: kinds: how a measure's values are named, summed over topics and printed
#:   runid      the run's tag, on the summary only
#:   num_q      the number of topics, on the summary only
#:   long       a count: printed %ld, summed (num_rel: under -c, over every qrels topic)
#:   float      a value per topic, averaged
#:   gm         a value averaged geometrically, on the summary only
#:   cut_long   one value per whole-number cutoff (P_5, P_10...)
#:   cut_float  one value per fractional cutoff (iprec_at_recall_0.10...)
#:   param      one value, parameters as numbers; the name carries them when given
#:   pair       likewise, parameters as name=value pairs (gains, rbp's p)
#:   relstring  a string per topic, printed with -q only
KINDS = ("runid", "num_q", "long", "float", "gm", "cut_long", "cut_float", "param", "pair", "relstring")

_CUTS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
_RECALLS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


@dataclass(frozen=True)
class TrecMeasure:
    """One trec_eval measure (``TREC_MEAS`` in trec_eval's C)."""

    name: str
    kind: str
    #: default cutoffs or parameters
    default: tuple = ()
    #: the releases that have it
    releases: tuple[str, ...] = RELEASES
    #: None when dsr computes it; else why not
    refused: str | None = None


TABLE: tuple[TrecMeasure, ...] = (
    TrecMeasure("runid", "runid"),
    TrecMeasure("num_q", "num_q"),
    TrecMeasure("num_ret", "long"),
    TrecMeasure("num_rel", "long"),
    TrecMeasure("num_rel_ret", "long"),
    TrecMeasure("map", "float"),
    TrecMeasure("gm_map", "gm"),
    TrecMeasure("Rprec", "float"),
    TrecMeasure("bpref", "float"),
    TrecMeasure("recip_rank", "float"),
    TrecMeasure("iprec_at_recall", "cut_float", _RECALLS),
    TrecMeasure("P", "cut_long", _CUTS),
    TrecMeasure("relstring", "relstring", (10.0,)),
    TrecMeasure("recall", "cut_long", _CUTS),
    TrecMeasure("infAP", "float"),
    TrecMeasure("gm_bpref", "gm"),
    TrecMeasure("Rprec_mult", "cut_float", (0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0)),
    TrecMeasure("utility", "param", (1.0, -1.0, 0.0, 0.0)),
    TrecMeasure("11pt_avg", "param", _RECALLS),
    TrecMeasure("binG", "float"),
    TrecMeasure("G", "pair"),
    TrecMeasure(
        "dcg",
        "pair",
        releases=("10.0",),
        refused="not computed by dsr (10.0's dcg shares ndcg's C routine; no nickname holds it)",
    ),
    TrecMeasure("ideal_dcg", "pair", releases=("10.0",), refused="not computed by dsr (as dcg)"),
    TrecMeasure("ndcg", "pair"),
    TrecMeasure("ndcg_rel", "pair"),
    TrecMeasure("Rndcg", "pair"),
    TrecMeasure("ndcg_cut", "cut_long", _CUTS),
    TrecMeasure("map_cut", "cut_long", _CUTS),
    TrecMeasure("relative_P", "cut_long", _CUTS),
    TrecMeasure("success", "cut_long", (1, 5, 10)),
    TrecMeasure("set_P", "float"),
    TrecMeasure("set_relative_P", "float"),
    TrecMeasure("set_recall", "float"),
    TrecMeasure("set_map", "float"),
    TrecMeasure("set_F", "param", (1.0,)),
    TrecMeasure("num_nonrel_judged_ret", "long"),
    *(
        TrecMeasure(name, kind, refused=_PREFS)
        for name, kind in (
            ("prefs_num_prefs_poss", "long"),
            ("prefs_num_prefs_ful", "long"),
            ("prefs_num_prefs_ful_ret", "long"),
            ("prefs_simp", "float"),
            ("prefs_pair", "float"),
            ("prefs_avgjg", "float"),
            ("prefs_avgjg_Rnonrel", "float"),
            ("prefs_simp_ret", "float"),
            ("prefs_pair_ret", "float"),
            ("prefs_avgjg_ret", "float"),
            ("prefs_avgjg_Rnonrel_ret", "float"),
            ("prefs_simp_imp", "float"),
            ("prefs_pair_imp", "float"),
            ("prefs_avgjg_imp", "float"),
        )
    ),
    TrecMeasure("map_avgjg", "float", refused=_JG),
    TrecMeasure("P_avgjg", "cut_long", _CUTS, refused=_JG),
    TrecMeasure("Rprec_mult_avgjg", "cut_float", (0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0), refused=_JG),
    TrecMeasure("yaap", "float", refused="not computed by dsr (yaap: not in any nickname, no library computes it)"),
    TrecMeasure("rbp", "pair", releases=("10.0",)),
    TrecMeasure("rbp_resid", "pair", releases=("10.0",)),
    TrecMeasure("unj", "cut_long", (5, 10, 20), releases=("10.0",)),
)

_OFFICIAL = (
    "runid",
    "num_q",
    "num_ret",
    "num_rel",
    "num_rel_ret",
    "map",
    "gm_map",
    "Rprec",
    "bpref",
    "recip_rank",
    "iprec_at_recall",
    "P",
)
_SET = (
    "runid",
    "num_q",
    "num_ret",
    "num_rel",
    "num_rel_ret",
    "utility",
    "set_P",
    "set_recall",
    "set_relative_P",
    "set_map",
    "set_F",
)
_TREC_TAIL = (
    "infAP",
    "gm_bpref",
    "utility",
    "11pt_avg",
    "ndcg",
    "relative_P",
    "Rprec_mult",
    "success",
    "map_cut",
    "ndcg_cut",
    "ndcg_rel",
    "Rndcg",
    "binG",
    "G",
    "set_P",
    "set_recall",
    "set_relative_P",
    "set_map",
    "set_F",
    "num_nonrel_judged_ret",
)
_PREFS_ALL = ("runid", "num_q", *(m.name for m in TABLE if m.name.startswith("prefs_")))
#: release -> nickname -> the measures it marks (trec_eval's ``te_trec_measure_nicknames``)
NICKNAMES: dict[str, dict[str, tuple[str, ...]]] = {
    release: {
        "official": _OFFICIAL,
        "set": _SET,
        "all_trec": (*_OFFICIAL, "relstring", "recall", *(("unj", "rbp", "rbp_resid") if release == "10.0" else ()), *_TREC_TAIL),
        "all_prefs": _PREFS_ALL,
        "prefs": _PREFS_ALL[:8],
        "qrels_jg": ("runid", "num_q", "map_avgjg", "P_avgjg", "Rprec_mult_avgjg"),
    }
    for release in RELEASES
}

#: the measures pytrec_eval (trec_eval 9.0.x's C) computes for dsr; the others are ported below
NATIVE = frozenset(
    {
        "num_ret",
        "num_rel",
        "num_rel_ret",
        "map",
        "gm_map",
        "Rprec",
        "bpref",
        "recip_rank",
        "iprec_at_recall",
        "P",
        "recall",
        "infAP",
        "gm_bpref",
        "Rprec_mult",
        "11pt_avg",
        "binG",
        "G",
        "ndcg",
        "ndcg_rel",
        "Rndcg",
        "ndcg_cut",
        "map_cut",
        "relative_P",
        "success",
        "set_P",
        "set_relative_P",
        "set_recall",
        "set_map",
        "set_F",
        "num_nonrel_judged_ret",
    }
)
#: computed here under 10.0 although pytrec_eval has them: 10.0 rounds their recall cutoffs
RELEASE_10_PORTED = frozenset({"iprec_at_recall", "11pt_avg"})


def measures(release: str) -> list[TrecMeasure]:
    """The measures of ``release``, in its order."""
    return [m for m in TABLE if release in m.releases]


def supported(release: str) -> list[str]:
    """The names dsr computes under ``release`` (``--help`` lists them)."""
    return [m.name for m in measures(release) if m.refused is None]


# --- -m: which measures, with which parameters -----------------------------------------


@dataclass(frozen=True)
class Selected:
    """A measure to compute, with its parameters and the names of its values."""

    measure: TrecMeasure
    #: the parameter text given after the measure's ``.`` (None: the defaults)
    text: str | None
    #: cutoffs or numeric parameters, or (name, value) pairs for ``pair`` measures
    params: tuple
    #: the names of its values, in print order (``P_5``, ``P_10``...)
    names: tuple[str, ...]

    @property
    def name(self) -> str:
        return self.measure.name

    def pytrec_name(self) -> str:
        """How pytrec_eval is asked for it (``P.5,10``; trec_eval's own parameter form)."""
        return self.name if self.text is None else f"{self.name}.{self.text}"

    def pytrec_keys(self) -> tuple[str, ...]:
        """The names pytrec_eval answers it under, in :attr:`names`' order: a value per cutoff,
        named as trec_eval prints them (``P_5``, one cutoff too); any other measure's one value
        under the bare measure's name (``ndcg`` for ``ndcg.1=3``, printed ``ndcg_1=3``)."""
        return self.names if self.measure.kind in ("cut_long", "cut_float") else (self.name,)


def select(arguments: Sequence[str] | None, release: str) -> list[Selected]:
    """The measures ``-m`` arguments ask for (``official`` when none), in trec_eval's order,
    each once, with the parameters of the first ``-m NAME.PARAMS`` that names it (trec_eval's
    rule). An unknown name, a measure dsr does not compute or bad parameters: InputError
    naming ``measures``."""
    table = {m.name: m for m in measures(release)}
    nicknames = NICKNAMES[release]
    marked: set[str] = set()
    texts: dict[str, str] = {}
    for argument in arguments or ["official"]:
        name, dot, text = argument.partition(".")
        if dot:
            if not text:
                raise InputError(f"improper measure in parameter {argument!r}: nothing after the '.'", field="measures")
            texts.setdefault(name, text)
        if name in nicknames:
            marked.update(nicknames[name])
        elif name in table:
            marked.add(name)
        else:
            raise InputError(
                f"trec_eval {release} has no measure or nickname {name!r} (nicknames: "
                f"{', '.join(nicknames)}; measures: {', '.join(table)})",
                field="measures",
            )
    refused = [table[n] for n in table if n in marked and table[n].refused]
    if refused:
        raise InputError("not supported: " + "; ".join(f"{m.name} ({m.refused})" for m in refused), field="measures")
    return [_selected(table[n], texts.get(n)) for n in table if n in marked]


def _selected(measure: TrecMeasure, text: str | None) -> Selected:
    kind, name = measure.kind, measure.name
    if kind == "cut_long":
        cuts = measure.default if text is None else _cutoffs(text, _atol, name)
        if cuts[0] <= 0:
            raise InputError(
                f'{name}.{text}: a cutoff must be 1 or more (trec_eval: "Negative cutoff detected")', field="measures"
            )
        return Selected(measure, text, cuts, tuple(f"{name}_{c}" for c in cuts))
    if kind == "cut_float":
        cuts = measure.default if text is None else _cutoffs(text, _atof, name)
        return Selected(measure, text, cuts, tuple(f"{name}_{c:3.2f}" for c in cuts))
    shown = name if text is None else f"{name}_{text}"
    if kind in ("param", "relstring"):
        params = measure.default if text is None else tuple(_atof(t) for t in text.split(","))
        if name == "utility" and len(params) != 4:
            raise InputError(
                f'utility.{text}: utility takes 4 coefficients, got {len(params)} (trec_eval: "improper number of coefficients")',
                field="measures",
            )
        return Selected(measure, text, params, (shown,))
    if kind == "pair":
        return Selected(measure, text, () if text is None else _pairs(text, name), (shown,))
    if text is not None:
        raise InputError(f"{name} takes no parameters, got {name}.{text}", field="measures")
    return Selected(measure, None, (), (name,))


def _cutoffs(text: str, read: Callable[[str], float], name: str) -> tuple[float, ...]:
    """trec_eval's cutoff list: comma separated, read with atol/atof, sorted, no two equal."""
    cuts = sorted(read(t) for t in text.split(","))
    if any(a == b for a, b in zip(cuts, cuts[1:])):
        raise InputError(f'{name}.{text}: a cutoff is given twice (trec_eval: "duplicate cutoffs detected")', field="measures")
    return tuple(cuts)


def _pairs(text: str, name: str) -> tuple[tuple[str, float], ...]:
    """``1=3,2=9``: trec_eval's name=value pairs (each piece must hold one '=')."""
    pieces = text.split(",")
    if not all(p.count("=") == 1 and p.split("=")[0] for p in pieces):
        raise InputError(f"{name}.{text}: malformed pair parameters (each is name=value, e.g. {name}.1=3,2=9)", field="measures")
    return tuple((p.split("=")[0], _atof(p.split("=")[1])) for p in pieces)


_LONG = re.compile(r"\s*([+-]?\d+)")
_FLOAT = re.compile(r"\s*([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)")


def _atol(text: str) -> int:
    """C ``atol``: the whole number the text starts with (``23.4`` -> 23), else 0."""
    match = _LONG.match(text)
    return int(match.group(1)) if match else 0


def _atof(text: str) -> float:
    """C ``atof`` on a decimal: the number the text starts with (``.25`` -> 0.25), else 0."""
    match = _FLOAT.match(text)
    return float(match.group(1)) if match else 0.0


# --- the measures ported from trec_eval's C --------------------------------------------


@dataclass
class Ranked:
    """One topic as trec_eval's ``te_form_res_rels`` sees it: the grade of each retrieved
    document in rank order (NONPOOL, UNJUDGED or the grade), after ``-M`` and ``-J``."""

    rels: list[int]
    #: relevant documents in the qrels (grade >= the level)
    num_rel: int
    #: judged documents per grade 0, 1, ... up to the highest grade judged
    rel_levels: list[int]
    level: int

    @property
    def num_ret(self) -> int:
        return len(self.rels)

    @property
    def num_rel_ret(self) -> int:
        return sum(1 for r in self.rels if r >= self.level)


def c_merge_sort(items: Sequence[_T], compare: Callable[[_T, _T], int]) -> list[_T]:
    """glibc's ``qsort`` (``msort_with_tmp``: the first half is n // 2, the left element taken
    when ``compare(left, right) <= 0``), which gives its order even for a comparison that is
    not a consistent order, as trec_eval's is with a NaN score."""
    if len(items) <= 1:
        return list(items)
    half = len(items) // 2
    left, right = c_merge_sort(items[:half], compare), c_merge_sort(items[half:], compare)
    out, i, j = [], 0, 0
    while i < len(left) and j < len(right):
        if compare(left[i], right[j]) <= 0:
            out.append(left[i])
            i += 1
        else:
            out.append(right[j])
            j += 1
    return out + left[i:] + right[j:]


def c_lround(x: float) -> int:
    """C ``lround``: halves away from zero."""
    return int(math.copysign(math.floor(abs(x) + 0.5), x))


def _interpolated(ranked: Ranked, percents: Sequence[float], release: str) -> list[float]:
    """``te_calc_iprec_at_recall``: interpolated precision at each recall level, the level
    turned into a number of relevant documents with ``lround`` (10.0) or by adding 0.9 and
    truncating (9.0.8)."""
    values = [0.0] * len(percents)
    if release == "9.0.8":
        cutoffs = [int(p * ranked.num_rel + 0.9) for p in percents]
    else:
        cutoffs = [c_lround(p * ranked.num_rel) for p in percents]
    num_ret, num_rel_ret = ranked.num_ret, ranked.num_rel_ret
    current = len(cutoffs) - 1
    while current >= 0 and cutoffs[current] > num_rel_ret:
        current -= 1
    # C divides 0.0 by 0.0 for an empty ranking: a NaN with its sign bit set ("-nan")
    precis = num_rel_ret / num_ret if num_ret else -math.nan
    int_precis, rel_so_far = precis, num_rel_ret
    i = num_ret
    while i > 0 and rel_so_far > 0:
        precis = rel_so_far / i
        if int_precis < precis:
            int_precis = precis
        if ranked.rels[i - 1] >= ranked.level:
            while current >= 0 and rel_so_far == cutoffs[current]:
                values[current] = int_precis
                current -= 1
            rel_so_far -= 1
        i -= 1
    while current >= 0:
        values[current] = int_precis
        current -= 1
    return values


def _gains(ranked: Ranked, pairs: Sequence[tuple[str, float]]) -> dict[int, float]:
    """trec_eval's ``setup_gains``: the gain of each grade (a pair ``grade=gain`` given, else
    the grade itself, for each grade up to the highest judged)."""
    gains = {int(name): value for name, value in pairs if re.fullmatch(r"[+-]?\d+", name)}
    for grade in range(len(ranked.rel_levels)):
        gains.setdefault(grade, float(grade))
    return gains


def _persistence(pairs: Sequence[tuple[str, float]]) -> float:
    return next((value for name, value in pairs if name == "p"), 0.9)


#: why an rbp value may differ from a trec_eval 10.0 binary's (printed once when it applies)
RBP_NOTE = (
    "rbp normalises gains outside [0, 1] here (a grade above 1, or a gain given); trec_eval "
    "10.0 starts the min and max of that step uninitialised (m_rbp.c), so its value depends "
    "on the build; dsr starts them at 0, which reproduces every rbp value of trec_eval's own "
    "test suite"
)


def rbp(ranked: Ranked, pairs: Sequence[tuple[str, float]], notes: set[str] | None = None) -> float:
    """10.0's ``te_calc_rbp``: rank-biased precision, persistence p (default 0.9), gains
    normalised to [0, 1] when one lies outside (then :data:`RBP_NOTE` is added to ``notes``)."""
    gains = _gains(ranked, pairs)
    p = _persistence(pairs)
    low, high = min([0.0, *gains.values()]), max([0.0, *gains.values()])
    if low < 0 or high > 1:
        if notes is not None:
            notes.add(RBP_NOTE)
        gains = {g: (v - low) / (high - low) for g, v in gains.items()}
    total, weight = 0.0, 1.0
    for rel in ranked.rels:
        gain = gains.get(rel, 0.0)
        if gain != 0:
            total += gain * weight
        weight *= p
    return (1.0 - p) * total


def rbp_resid(ranked: Ranked, pairs: Sequence[tuple[str, float]]) -> float:
    """10.0's ``te_calc_rbp_resid``: how far RBP could rise if every unjudged document
    retrieved were relevant (0 when none is)."""
    p = _persistence(pairs)
    total, weight, unjudged = 0.0, 1.0, 0
    for rel in ranked.rels:
        if rel < 0:
            unjudged += 1
            total += weight
        weight *= p
    return weight + (1 - p) * total if unjudged else 0.0


def unj(ranked: Ranked, cutoffs: Sequence[int]) -> list[float]:
    """10.0's ``te_calc_unj``: the unjudged fraction of the top k (k past the ranking's end:
    the missing documents count as judged)."""
    values = []
    for k in cutoffs:
        seen = sum(1 for r in ranked.rels[:k] if r in (NONPOOL, UNJUDGED))
        values.append(seen / k)
    return values


def relstring(ranked: Ranked, params: Sequence[float]) -> str:
    """``te_calc_relstring``: one character per document of the top N (default 10): the grade
    0-9, '>' above 9, '-' not in the pool, '.' in the pool but unjudged, '<' below 0."""
    length = max(0, min(int(params[0]), ranked.num_ret))

    def char(rel: int) -> str:
        if rel > 9:
            return ">"
        if rel >= 0:
            return str(rel)
        return "-" if rel == NONPOOL else "." if rel == UNJUDGED else "<"

    return "".join(char(r) for r in ranked.rels[:length])


def utility(ranked: Ranked, params: Sequence[float], num_docs: int) -> float:
    """``te_calc_utility``: ``a*rel_ret + b*nonrel_ret + c*rel_not_ret + d*nonrel_not_ret``,
    the last over a collection of ``num_docs`` documents (trec_eval ``-N``)."""
    a, b, c, d = params
    rel_ret, ret, rel = ranked.num_rel_ret, ranked.num_ret, ranked.num_rel
    return a * rel_ret + b * (ret - rel_ret) + c * (rel - rel_ret) + d * (num_docs + rel_ret - ret - rel)


def ported_values(selected: Selected, ranked: Ranked, release: str, num_docs: int, notes: set[str] | None = None) -> list:
    """The values of a measure computed here (not by pytrec_eval) for one topic (``notes``
    collects what the user should know about them)."""
    name, params = selected.name, selected.params
    if name == "num_q":
        return [1.0]
    if name == "relstring":
        return [relstring(ranked, params)]
    if name == "utility":
        return [utility(ranked, params, num_docs)]
    if name == "iprec_at_recall":
        return _interpolated(ranked, params, release)
    if name == "11pt_avg":
        if not params:
            raise InputError("11pt_avg needs at least one recall level", field="measures")
        total = 0.0
        for value in reversed(_interpolated(ranked, params, release)):  # C's order: the last cut first
            total += value
        return [total / len(params)]
    if name == "rbp":
        return [rbp(ranked, params, notes)]
    if name == "rbp_resid":
        return [rbp_resid(ranked, params)]
    if name == "unj":
        return unj(ranked, params)
    raise AssertionError(f"{name} is computed by pytrec_eval under {release}")


def ported(selected: Selected, release: str) -> bool:
    """Whether dsr computes this measure itself under ``release`` (else pytrec_eval does)."""
    if selected.name == "runid":
        return False
    return selected.name not in NATIVE or (release == "10.0" and selected.name in RELEASE_10_PORTED)


def empty_values(selected: Selected, ranked: Ranked, release: str) -> list[float]:
    """A pytrec_eval measure's values for a topic with no document left to rank (``-M 0``, or
    ``-J`` with nothing judged), which pytrec_eval gets wrong (it counts no relevant document):
    what trec_eval's C gives, checked against both releases' binaries."""
    if selected.name in RELEASE_10_PORTED:
        return ported_values(selected, ranked, release, 0)
    if selected.name == "num_rel":
        return [float(ranked.num_rel)]
    return [math.log(MIN_GEO_MEAN) if selected.measure.kind == "gm" else 0.0] * len(selected.names)
