"""Judge the second-stage levers (a cross-encoder on the full model's hard negatives, its scores
distilled back, a larger base) against the recommended pipeline by the project's rule
(``dsr decide``), and write the figures as a result file:

    python experiments/second_stage.py --home DSR_HOME [--write]
    python experiments/second_stage.py --home DSR_HOME --first quick-tb --ce ce-quick --ce-steps 150

(``--first``: the first stage the levers build on, default ``full``; ``quick-tb``, the quick
recipe on 'title: body', is a cheaper one, for a second stage trained where ``full`` cannot be:
its file is ``second-stage-levers-quick-tb.json``.)

Every lever is a model trained by ``dsr train`` into ``HOME/models/NAME`` (the arguments in
:data:`LEVERS`), the zero-shot model, the cross-encoder ``ce-hard`` reranking the first stage's
top k, or a fusion. Each ranks CMU_DoG valid (silver labels, 502 points) and every point of the
judged development set ``cmu_dog_dev`` (graded by language-model assessors) with the exact
backend (torch fp32), as experiments/training_levers.py does; a run already there and newer than its
model is reused. The cross-encoder scores each first-stage run's top ``--depth`` once (``dsr
rerank --top-k DEPTH``); the run of each smaller k is that first-stage run with its top k
reordered by those same scores (:func:`dsr.rerankers.base.rerank_top_k`, what ``dsr rerank
--top-k k`` computes). Then ``dsr decide`` compares each lever with the default (``full``, the
recommended recipe), Holm over the levers present, and the result file
``experiments/results/second-stage-levers.json`` gets each lever's mean, its paired difference to the
default with the 95 % t interval on both sets, the Holm-adjusted p-values and whether the gain
is within the sets' noise. ``--write`` renders it (tools/docs_figures.py) into experiments/JOURNAL.md's block
``<!-- figures:second-stage-levers -->``. Levers whose model is missing are listed as not
trained, with the pilot that measured their cost where there is one.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1])]  # experiments, a package, when run as a script

from experiments.training_levers import ROOT, Lever, arguments, card_of, decide, dsr, fresh, fuse, rank, training_row, workspace  # noqa: E402

NAME = "second-stage-levers"
RESULT = ROOT / "experiments" / "results" / f"{NAME}.json"
CE = "ce-hard"
#: the first stages the levers build on: what each is, its `dsr train` arguments
FIRST = {
    "full": (
        "the recommended recipe: every training point, 3 passes, 4 list negatives per point, batches of 64, 'title: body'",
        "--recipe full",
    ),
    "quick-tb": (
        "the quick recipe (120 steps of 32, one list negative) on 'title: body': a cheaper first stage, to see "
        "whether the second stage adds to a trained first stage at all",
        '--text "title: body"',
    ),
}


def levers_for(first: str = "full", ce: str = CE, steps: str = "") -> tuple[Lever, ...]:
    """The levers on the first stage ``first`` (the rule's default, first), its cross-encoder
    named ``ce`` (trained with ``steps``, e.g. ``--max-steps 150``, beside its recipe)."""
    what, args = FIRST[first]
    levers = [
        Lever(first, what, args),
        Lever("zero-shot", "all-MiniLM-L6-v2 untrained, 'title: body'", model="all-MiniLM-L6-v2"),
        Lever(
            f"{ce}@5",
            "the ce-hard cross-encoder (MiniLM-L6 with a new one-logit head, listwise loss over each point's positive "
            f"and 4 negatives drawn among the 10 non-relevant candidates `{first}` ranks highest) reranking "
            f"`{first}`'s top 5",
            f"--recipe ce-hard --hard-negatives dsr:{first}" + (f" {steps}" if steps else ""),
            model=f"dsr:{ce}",
            rerank=(first, 5),
        ),
        Lever(f"{ce}@10", f"the same cross-encoder reranking `{first}`'s top 10", model=f"dsr:{ce}", rerank=(first, 10)),
        Lever(
            f"{first}+{ce}@10",
            f"`{first}` and {ce}@10 fused: min-max interpolation, weight 0.5 (not tuned)",
            fuse=(first, f"{ce}@10"),
        ),
    ]
    if first == "full":
        levers += [
            Lever(
                "full-distill",
                "`full` trained one more pass with MNRL plus the KL divergence from ce-hard's scores of each point's "
                "positive and 4 list negatives",
                "--recipe full --epochs 1 --base dsr:full --loss distill --teacher dsr:ce-hard",
            ),
            Lever(
                "mpnet-full",
                "the full recipe from all-mpnet-base-v2 (110 M parameters, 12 layers; `tools/all_mpnet_base_v2.sh DIR`)",
                "--recipe full --base DIR/all-mpnet-base-v2",
            ),
        ]
    return tuple(levers)


#: the levers on the recommended recipe, the rule's default first
LEVERS = levers_for()
#: the result files of the pilots (bench/bench_train.py --json) that measured a lever's cost
PILOTS = {"full": "train", f"{CE}@5": "train-ce-hard", "mpnet-full": "train-mpnet-pilot"}
COLUMNS = [
    "lever",
    "what (`dsr train` arguments)",
    "training s (steps)",
    "judged dev nDCG@5 [95 % CI]",
    "Δ judged dev [95 % CI] (Holm p t / sign-flip)",
    "silver valid nDCG@5 [95 % CI]",
    "Δ silver valid [95 % CI] (Holm p t / sign-flip)",
    "by the rule",
]


def scored_runs(lever: Lever, runs: Path, paths: dict[str, Path], depth: int) -> bool:
    """The lever's cross-encoder reranking its first stage's top ``depth`` on both label sets
    (False when the cross-encoder or a first-stage run is missing)."""
    assert lever.rerank is not None and lever.model is not None
    first, ce = lever.rerank[0], lever.model.removeprefix("dsr:")
    card = paths["home"] / "models" / ce / "dsr_model.json"
    if not card.is_file():
        return False
    for label_set, target in targets(paths):
        before, out = runs / f"{first}.{label_set}.run", runs / f"{ce}.top{depth}.{label_set}.run"
        if not before.is_file():
            return False
        if not fresh(out, max(before.stat().st_mtime, card.stat().st_mtime)):
            dsr("rerank", *target, "--run", str(before), "--model", lever.model, "--top-k", str(depth), "--out", str(out))
    return True


def targets(paths: dict[str, Path]) -> list[tuple[str, list[str]]]:
    return [
        ("silver", ["cmu_dog", "--source", str(paths["source"]), "--split", "valid"]),
        ("dev", [str(paths["dev_all"])]),
    ]


def derive(lever: Lever, runs: Path, depth: int, collections: dict) -> None:
    """The lever's runs: its first stage's with the top k reordered by the cross-encoder's scores of the
    top ``depth`` (the same order as ``dsr rerank --top-k k``, ties by the collection's order)."""
    from dsr.core.run import Run
    from dsr.rerankers.base import rerank_top_k

    assert lever.rerank is not None and lever.model is not None
    name, k = lever.rerank
    ce = lever.model.removeprefix("dsr:")
    for label_set in ("silver", "dev"):
        first, scored = Run.read(runs / f"{name}.{label_set}.run"), Run.read(runs / f"{ce}.top{depth}.{label_set}.run")
        # the reranked block's scores are the model's (the rest sit below the block's floor)
        scores = {(q, d): s for q, ranked in scored.rankings.items() for d, s in ranked[:depth]}
        run = rerank_top_k(collections[label_set], first, scores, k)
        run.tag = f"{ce}-top{k}"
        run.write(runs / f"{lever.name}.{label_set}.run")


def make_runs(args, runs: Path, paths: dict[str, Path], levers: tuple[Lever, ...]) -> tuple[list[Lever], dict[str, dict]]:
    """Every lever's two runs where its model is there; the levers present and their rows."""
    present, rows = [], {}
    from dsr.collections import load_collection
    from dsr.core.data import read_benchmark

    depth = max(lv.rerank[1] for lv in levers if lv.rerank)
    have_scores = None
    collections: dict[str, object] = {}
    for lever in levers:
        card = card_of(args.home, lever)
        if lever.rerank:
            have_scores = scored_runs(lever, runs, paths, depth) if have_scores is None else have_scores
            ok = have_scores
            if ok:
                collections = collections or {
                    "silver": load_collection("cmu_dog", paths["source"], "valid"),
                    "dev": read_benchmark(paths["dev_all"]),
                }
                derive(lever, runs, depth, collections)
            ce = args.home / "models" / str(lever.model).removeprefix("dsr:") / "dsr_model.json"
            card = json.loads(ce.read_text()) if ok else None
        elif lever.fuse:
            ok = fuse(lever, runs)
        elif lever.model is None and card is None:
            ok = False
        else:
            rank(lever, card, paths, runs)
            ok = True
        rows[lever.name] = {**training_row(args.home, card), "present": ok}
        if ok:
            present.append(lever)
    return present, rows


def judge(args, levers: tuple[Lever, ...] = LEVERS) -> dict:
    """Every lever's runs, then the rule; without the default's model, nothing to judge against."""
    load_before = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    if card_of(args.home, levers[0]) is None:  # every lever not trained
        why = f"not judged: the default {levers[0].name!r} is not trained"
        return {"decision": None, "text": why, "rows": {}, "load_before": load_before}
    runs, paths = workspace(args)
    present, rows = make_runs(args, runs, paths, levers)
    return {**decide(args.source, runs, present, rows), "load_before": load_before}


def p_text(row: dict) -> str:
    values = (row["t_holm"], row["perm_holm"])
    return "/".join("<.001" if v is not None and v < 0.001 else f"{v:.3f}" if v is not None else "n/a" for v in values)


def delta(row: dict | None) -> str:
    if row is None or "diff" not in row:
        return "–"
    worse = row["diff"] < 0 and all(p is not None and p < 0.05 for p in (row["t_holm"], row["perm_holm"]))
    mark = " ▲" if row["better"] else (" ▼" if worse else "")
    return f"{row['diff']:+.4f} [{row['diff_ci_low']:+.3f}, {row['diff_ci_high']:+.3f}] (p {p_text(row)}){mark}"


def mean(row: dict | None) -> str:
    return "–" if row is None else f"{row['mean']:.4f} [{row['ci_low']:.3f}, {row['ci_high']:.3f}]"


def verdict(name: str, d: dict | None) -> str:
    if d is None:
        return "not trained"
    if name == d["default"]:
        return "default"
    if name not in d["rows"]:
        return "not trained"
    if name in d["passed"]:
        return "**passes** (better on both)"
    rows = d["rows"][name]
    noise = [s for s in ("dev", "silver") if rows[s]["diff_ci_low"] <= 0 <= rows[s]["diff_ci_high"]]
    named = {"dev": "judged dev", "silver": "silver valid"}
    return "no" + (f"; within the noise on {' and '.join(named[s] for s in noise)} (interval holds 0)" if noise else "")


def pilot_note(lever: Lever) -> str | None:
    """The pilot's cost of a lever not trained here (from its bench/bench_train.py result file)."""
    path = ROOT / "bench" / "results" / f"{PILOTS.get(lever.name, '-')}.json"
    if not path.is_file():
        return None
    pilot = json.loads(path.read_text())
    row = dict(zip(pilot["columns"], pilot["rows"][0], strict=True))
    return (
        f"{lever.name}: not trained here; its pilot (`{pilot['command']}`, {pilot['date']}): {row['steps']} steps of "
        f"{row['batch']}, {row.get('s/step (steps only)', row.get('s/step'))} s a step, training peak RSS "
        f"{row['training peak RSS MiB']} MiB, "
        f"load average {pilot['load_before']} before (bench/results/{path.name})"
    )


def result_file(result: dict, levers: tuple[Lever, ...] = LEVERS, name: str = NAME, options: str = "") -> dict:
    """The figures in the result-file shape (bench/results/NAME.json)."""
    from benchinfo import cpu_model

    d, rows = result["decision"], []
    for lever in levers:
        row, judged = result["rows"].get(lever.name, {}), d and d["rows"].get(lever.name)
        train = f"{row['train_s']:.0f} ({row['steps']})" if row.get("train_s") else "–"
        if row.get("resumed_from"):
            train += f"; resumed from {row['resumed_from']}: the resumed run's seconds only"
        what = lever.what + (f" (`{lever.args}`)" if lever.args else "")
        rows.append(
            [
                lever.name,
                what,
                train,
                mean(judged and judged["dev"]),
                delta(judged and judged["dev"]),
                mean(judged and judged["silver"]),
                delta(judged and judged["silver"]),
                verdict(lever.name, d),
            ]
        )
    widths = {
        s: sorted((r[s]["diff_ci_high"] - r[s]["diff_ci_low"]) / 2 for r in d["rows"].values() if "diff_ci_low" in r[s])
        for s in ("dev", "silver")
        if d
    }
    noise = ", ".join(f"±{w[len(w) // 2]:.3f} on {s}" for s, w in widths.items() if w)
    cpu, units = cpu_model()
    command = public_command(result["command"], result["runs"]) if d else result["text"]
    topics = d["topics"] if d else {"dev": "graded", "silver": "502"}
    notes = [
        f"Decision: {d['reason']}" if d else f"Decision: none ({result['text']}; no lever is judged).",
        f"judged dev: the {topics['dev']} points of cmu_dog_dev with a relevant sentence (graded by language-model "
        f"assessors); silver valid: CMU_DoG valid's {topics['silver']} points with word-overlap labels.",
        "Δ: the paired difference to the default with its 95 % t interval (not corrected for the levers); p: Holm-adjusted "
        "over the levers present, paired t-test / sign-flip test; ▲ better by both on that set. An interval that holds 0 "
        "is a gain within the set's noise" + (f"; the intervals' median half-width: {noise}." if noise else "."),
        "Every ranking and reranking with the exact backend (torch fp32); training with `--precision auto` (bf16 autocast "
        "here). The cross-encoder's k is chosen on these same sets, so its best k's figure is optimistic.",
        *(note for lv in levers if lv.name not in (d["rows"] if d else {}) and (note := pilot_note(lv))),
        command,
    ]
    return {
        "name": name,
        "title": f"The second stage judged by the rule against `{levers[0].name}` (nDCG@5)",
        "command": "python experiments/second_stage.py --home HOME --write" + (f" {options}" if options else ""),
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": {"cpu": cpu, "cores": os.cpu_count(), "units": units, "python": sys.version.split()[0]},
        "load_before": result["load_before"],
        "load_after": ", ".join(f"{x:.2f}" for x in os.getloadavg()),
        "columns": COLUMNS,
        "rows": rows,
        "notes": notes,
    }


def public_command(command: str, runs: str) -> str:
    """``command`` with no folder of this machine: run files as ``runs/NAME``, a source folder
    as ``DIR``."""
    words = command.replace(runs + "/", "runs/").split(" ")
    return " ".join("DIR" if i and words[i - 1] in ("--silver-source", "--dev-source") else w for i, w in enumerate(words))


def main(argv=None) -> int:
    own = argparse.ArgumentParser(add_help=False)  # beside arguments()'s --home, --source, --out, --write
    own.add_argument("--first", default="full", choices=FIRST, help="the first stage (the rule's default)")
    own.add_argument("--ce", default=CE, help="the cross-encoder trained for it (HOME/models/CE)")
    own.add_argument("--ce-steps", default="", help="the --max-steps it was trained with, for the table")
    mine, rest = own.parse_known_args(argv)
    args = arguments(rest, __doc__.splitlines()[0])
    os.environ["DSR_BACKEND"] = "torch"
    default = (mine.first, mine.ce, mine.ce_steps) == ("full", CE, "")
    levers = LEVERS if default else levers_for(mine.first, mine.ce, f"--max-steps {mine.ce_steps}" if mine.ce_steps else "")
    name = NAME if mine.first == "full" else f"{NAME}-{mine.first}"
    result = judge(args, levers)
    shown = [f"--{k.replace('_', '-')} {v}" for k, v in vars(mine).items() if v != own.get_default(k)]
    figures = result_file(result, levers, name, " ".join(shown))
    path = RESULT.with_name(f"{name}.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(figures, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(result["text"])
    print(f"wrote {path.relative_to(ROOT)}")
    if args.write:
        from tools.docs_figures import main as figures_main

        figures_main(["--write"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
