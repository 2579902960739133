"""What each row of a table is: a run's ranker and parameters, a tuned family's grid and
choices, the baseline, and rows identical to another (results.md's Systems section,
results.tex, results.json's definitions).
"""

from __future__ import annotations

from dsr.evaluation.results import Results


def system_definitions(results: Results) -> dict[str, str]:
    """``{system: what it is}`` for every row: the ranker, reranker or fusion with its
    parameters (fixed ones and a tuned family's grid, with the configuration chosen most
    often and in how many splits), the baseline said to be the baseline, and a row equal
    to another in every column said to be so."""
    out = {}
    columns = {n: [results.summary(s)[n] for s in results.subsets] for n in results.systems}
    for name in results.systems:
        info = results.run_info.get(name, {})
        text = _what_system(results, name, info)
        twin = next((o for o in columns if o != name and columns[o] == columns[name]), None)
        if twin:
            text += f"; identical to {twin} in every column of every table"
        out[name] = text
    return out


def _what_system(results: Results, name: str, info: dict) -> str:
    config = found if isinstance(found := info.get("config"), dict) else {}
    kind = next(
        (f"{k} {d[k]}" for d in (info, config) for k in ("fusion", "reranker", "ranker") if isinstance(d.get(k), str)), None
    )
    parts = [kind] if kind else []
    fixed = {**(config.get("params") or {}), **(info.get("params") or {}), **(info.get("fixed") or {})}
    fixed = {k: v for k, v in fixed.items() if v is not None}
    if fixed:
        parts.append(", ".join(f"{k}={_value(v)}" for k, v in sorted(fixed.items())))
    if "members" in info:
        parts.append(f"tuned family of {len(info['members'])} runs")
    system = results.systems[name]
    if isinstance(info.get("grid"), dict):
        grid = "; ".join(f"{k} in {{{', '.join(map(_value, v))}}}" for k, v in info["grid"].items())
        parts.append(f"tuned per split on the val half by {results.target} over {grid}")
    if system.kind == "tuned" and system.tuned is not None and results.modal_config(name):
        counts = sorted(system.tuned.choice_counts().items(), key=lambda kv: -kv[1])
        chosen = ", ".join(f"{c} ({k})" for c, k in counts[:3]) + (f", {len(counts) - 3} others" if len(counts) > 3 else "")
        parts.append(f"chosen on val in {sum(k for _, k in counts)} splits: {chosen}")
    if not parts:
        parts.append(f"run {info['tag']}" if info.get("tag") else "a run given in memory")
    return "; ".join(parts)


def _value(v: object) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def _baseline_line(results: Results) -> str:
    note = baseline_note(results)
    return note + "\n" if note else ""


def baseline_note(results: Results) -> str:
    """One line saying what the baseline row is (empty without a baseline)."""
    if results.baseline is None or results.baseline not in results.systems:
        return ""
    return f"{results.baseline} (baseline, every ▲/▼ is against it): {system_definitions(results)[results.baseline]}."
