"""The training levers study: every lever judged by the project's rule (``dsr decide``), in one command.

    python experiments/training_levers.py --home /work/train-out --out /work/train-out/levers --write

For each lever (:data:`LEVERS`: a model trained by ``dsr train`` into ``HOME/models/NAME``,
a zero-shot model, or a fusion of two levers' runs) it writes two run files under
``OUT/runs``: CMU_DoG valid (silver labels, 502 points: ``dsr run cmu_dog --split valid``) and
all 405 points of the judged development set (``dsr data build cmu_dog_dev --param points=all``
then ``dsr run`` over that file), each ranked with the query strategy and candidate text of the
model's card. A run already there and newer than its model is reused, so a re-run after new
grades land costs only ``dsr decide`` (seconds): the dev runs rank every point, graded or not,
and ``dsr decide cmu_dog cmu_dog_dev`` measures the graded ones with the grades of the day.

Then it runs ``dsr decide`` (the default lever against every other one present, Holm over
them) and prints the table and the decision with the date, the machine and the load. With
``--write`` it writes the study's result file, ``experiments/results/training_levers.json`` (the
shape tools/docs_figures.py renders), and replaces the study's block in experiments/JOURNAL.md.
Levers whose model is missing are listed as not trained.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench"), str(ROOT)]

from benchinfo import cpu_model  # noqa: E402

BEGIN, END = "<!-- training-levers:begin (experiments/training_levers.py) -->", "<!-- training-levers:end -->"
ZERO_SHOT = {"query": "title+recent", "text": "title: body"}


@dataclass(frozen=True)
class Lever:
    """One pipeline the rule judges: a trained model (``dsr:NAME``), a model name, a fusion, or
    a cross-encoder (``model``) reranking another lever's top k (``rerank``: its name, k)."""

    name: str
    what: str
    args: str = ""  # the `dsr train` arguments beyond the default recipe
    model: str | None = None  # default: dsr:NAME
    fuse: tuple[str, ...] = field(default=())
    rerank: tuple[str, int] | None = None

    @property
    def spec(self) -> str:
        return self.model or f"dsr:{self.name}"


FAST = "--max-length 128 --max-steps 56 --lr 1e-4 --batching by-length"
#: every lever, the rule's baseline first (the default recipe as trained before issue 34); all
#: trained with `--text "title: body"`. `fast` is issue 34's faster recipe: it did not pass the rule
#: against the default once all 405 development points were graded, so the default stayed;
#: `chunks` is the same default recipe computed without most of its padding (`--padding chunks`).
LEVERS = (
    Lever(
        "default",
        "the default recipe as trained before issue 34: MNRL, one pool negative, 120 steps "
        "of 32, lr 5e-5, the model's 256 word pieces, random batches, each column padded to its "
        "longest text; trained again alone on the machine for issue 34 (`default-column`): "
        "the same weights, bit for bit, in 308 s (load 2.45–1.90)",
        "--max-steps 120 --lr 5e-5 --max-length 256 --batching random --padding column",
    ),
    Lever(
        "chunks",
        "the same recipe, its texts encoded in chunks of 16 of similar length (the same "
        "batches, embeddings and loss; only dropout's draws differ): the default since issue 34",
        "--max-steps 120 --lr 5e-5 --max-length 256 --batching random --padding chunks",
    ),
    Lever(
        "chunks180",
        "chunks for 180 steps of 32 (5,760 of the 7,046 training points), still inside five minutes",
        "--max-steps 180 --lr 5e-5 --padding chunks",
    ),
    Lever(
        "fast",
        "issue 34's faster recipe, shorter and fewer: batches of similar length "
        "(less padding), max length 128 (the 1–2 % of queries longer are cut to their recent "
        "turns), 56 steps of 32 at lr 1e-4",
        FAST,
    ),
    Lever("zero-shot", "all-MiniLM-L6-v2 untrained", model="all-MiniLM-L6-v2"),
    Lever(
        "fast120",
        "the earlier default's 120 steps of 32 and learning rate, with fast's batches of similar length and max length 128",
        "--max-steps 120 --lr 5e-5 --max-length 128 --batching by-length",
    ),
    Lever(
        "fast-hardneg",
        "fast, the pool negative mined by `default` (its top 10 non-relevant): a second round",
        FAST + " --hard-negatives dsr:default --hard-depth 10",
    ),
    Lever("fast-gist", "fast with GISTEmbedLoss, the zero-shot model as guide", FAST + " --loss gist"),
    Lever("fast-seed7", "fast, seed 7", FAST + " --seed 7"),
    Lever("fast-ens2", "seed ensemble: fast + fast-seed7 fused (interp 0.5, min-max)", fuse=("fast", "fast-seed7")),
    Lever(
        "fast-epoch",
        "all turns: fast for one whole epoch of CMU_DoG train (7,046 points) instead of 1,792 of them",
        "--max-length 128 --lr 1e-4 --batching by-length --max-steps -1 --epochs 1",
    ),
    Lever(
        "mpnet",
        "all-mpnet-base-v2 base (a named, non-default recipe; `tools/all_mpnet_base_v2.sh "
        "DIR` fetches it): 4 steps measured at ~16 s a step: ~15 min for 56 steps, ~32 min for 120",
        "--base DIR/all-mpnet-base-v2",
    ),
)


def dsr(*args: str, json_out: bool = False):
    """Run the `dsr` command beside this interpreter; its stdout (parsed with ``json_out``)."""
    exe = str(Path(sys.executable).with_name("dsr"))
    done = subprocess.run([exe, *args], text=True, capture_output=True)
    if done.returncode != 0:
        raise SystemExit(f"dsr {' '.join(args)} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout) if json_out else done.stdout


def card_of(home: Path, lever: Lever) -> dict | None:
    path = home / "models" / lever.name / "dsr_model.json"
    return json.loads(path.read_text()) if lever.model is None and path.is_file() else None


def fresh(run: Path, since: float) -> bool:
    return run.is_file() and run.stat().st_mtime >= since


def rank(lever: Lever, card: dict | None, paths: dict[str, Path], runs: Path) -> dict[str, float]:
    """The lever's two runs (silver valid, all dev points), made where missing or stale;
    seconds each ranking took (0 when reused)."""
    params = ZERO_SHOT if card is None else {"query": card.get("query") or "title+recent", "text": card.get("text") or "body"}
    since = 0.0 if card is None else (paths["home"] / "models" / lever.name / "dsr_model.json").stat().st_mtime
    took = {}
    for label_set, target in (
        ("silver", ["cmu_dog", "--source", str(paths["source"]), "--split", "valid"]),
        ("dev", [str(paths["dev_all"])]),
    ):
        out = runs / f"{lever.name}.{label_set}.run"
        started, took[label_set] = time.monotonic(), 0.0
        if not fresh(out, since):
            dsr(
                "run",
                *target,
                "--ranker",
                "dense",
                "--query",
                params["query"],
                "--param",
                f"model={lever.spec}",
                f"text={params['text']}",
                "--out",
                str(out),
            )
            took[label_set] = round(time.monotonic() - started, 1)
    return took


def fuse(lever: Lever, runs: Path) -> bool:
    """The fusion lever's runs from its parts' (False when a part is missing)."""
    for label_set in ("silver", "dev"):
        parts = [runs / f"{p}.{label_set}.run" for p in lever.fuse]
        if not all(p.is_file() for p in parts):
            return False
        out = runs / f"{lever.name}.{label_set}.run"
        if not fresh(out, max(p.stat().st_mtime for p in parts)):
            dsr("fuse", *map(str, parts), "--method", "interp", "--param", "weight=0.5", "--out", str(out))
    return True


def training_row(home: Path, card: dict | None) -> dict:
    """What the card says of the training: seconds, steps, precision and the load logged."""
    if card is None:
        return {}
    t = card["training"]
    log = home / "logs" / f"{card['name']}.log"
    loads = re.findall(r"load average: ([\d.]+)", log.read_text()) if log.is_file() else []
    return {
        "train_s": t["wall_seconds"],
        "steps": t["steps"],
        # a resumed training's card times the resumed run only: the steps before it are not in it
        "resumed_from": t.get("resumed_from"),
        "loss": t.get("train_loss"),
        "precision": (t.get("precision") or {}).get("used", "fp32"),
        "batch": card["parameters"]["batch_size"],
        "max_length": card["max_length"],
        "load": "–".join(loads[:2]) if loads else None,
        "dropped": (card["training_data"]["selection"].get("evaluation_overlap") or {}).get("dropped_dialogues"),
    }


def reranked(lever: Lever, home: Path, paths: dict[str, Path], runs: Path) -> bool:
    """The reranking lever's runs: its cross-encoder over its first stage's top k (False when
    the model or a first-stage run is missing)."""
    first, k = lever.rerank
    folder = home / "models" / lever.spec.removeprefix("dsr:")
    if lever.spec.startswith("dsr:") and not (folder / "dsr_model.json").is_file():
        return False
    for label_set, target in (
        ("silver", ["cmu_dog", "--source", str(paths["source"]), "--split", "valid"]),
        ("dev", [str(paths["dev_all"])]),
    ):
        before, out = runs / f"{first}.{label_set}.run", runs / f"{lever.name}.{label_set}.run"
        if not before.is_file():
            return False
        if not fresh(out, max(before.stat().st_mtime, (folder / "dsr_model.json").stat().st_mtime if folder.is_dir() else 0)):
            dsr("rerank", *target, "--run", str(before), "--model", lever.spec, "--top-k", str(k), "--out", str(out))
    return True


def workspace(args) -> tuple[Path, dict[str, Path]]:
    """The runs folder under --out, and the paths the levers read: the home, the CMU_DoG source
    and the judged development set with all its points (built once)."""
    runs = args.out / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    paths = {"home": args.home, "source": args.source, "dev_all": args.out / "dev-all.jsonl"}
    if not paths["dev_all"].is_file():
        dsr("data", "build", "cmu_dog_dev", "--source", str(args.source), "--param", "points=all", "--out", str(paths["dev_all"]))
    return runs, paths


def decide(source: Path, runs: Path, present: list[Lever], rows: dict) -> dict:
    """``dsr decide`` on the levers ``present`` (the default first), their runs in ``runs``: the
    decision (JSON and text), the levers' ``rows`` and the command line."""
    specs = [f"{lv.name}={runs / (lv.name + '.silver.run')},{runs / (lv.name + '.dev.run')}" for lv in present]
    command = ["decide", "cmu_dog", "cmu_dog_dev", "--silver-source", str(source), "--silver-split", "valid"]
    command += ["--dev-source", str(source), "--default", specs[0], *specs[1:]]
    return {
        "decision": dsr(*command, "--json", json_out=True),
        "text": dsr(*command),
        "rows": rows,
        "command": "dsr " + " ".join(command),
        "runs": str(runs),
    }


def judge(args, levers=LEVERS) -> dict:
    """Make the runs, run `dsr decide`; everything the report needs."""
    runs, paths = workspace(args)
    present, rows = [], {}
    for lever in levers:
        card = card_of(args.home, lever)
        if lever.fuse:
            ok = fuse(lever, runs)
        elif lever.rerank:
            ok = reranked(lever, args.home, paths, runs)
        elif lever.model is None and card is None:
            ok = False
        else:
            rows.setdefault(lever.name, {})["rank_s"] = rank(lever, card, paths, runs)
            ok = True
        rows.setdefault(lever.name, {}).update(training_row(args.home, card), present=ok)
        if ok:
            present.append(lever)
    return {
        **decide(args.source, runs, present, rows),
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine(),
        "load": ", ".join(f"{x:.2f}" for x in os.getloadavg()),
    }


def machine() -> str:
    name, units = cpu_model()
    return f"{name} ({', '.join(units) or 'no VNNI/AMX/bf16 flags'}), {os.cpu_count()} vCPUs, {platform.system()}"


def cell(row: dict | None) -> str:
    if row is None:
        return "–"
    text = f"{row['mean']:.4f} [{row['ci_low']:.3f}, {row['ci_high']:.3f}]"
    if "diff" in row:
        p = "/".join(
            "<.001" if v is not None and v < 0.001 else f"{v:.3f}" if v is not None else "n/a"
            for v in (row["t_holm"], row["perm_holm"])
        )
        text += f" {row['diff']:+.4f} (p {p}){' ▲' if row['better'] else ''}"
    return text


def table(result: dict, levers=LEVERS) -> list[str]:
    """The levers' markdown table: every lever, judged or not trained."""
    d = result["decision"]
    lines = [
        f"| lever | what (`dsr train` arguments) | training s (steps, load) | judged dev nDCG@5 "
        f"({d['topics']['dev']}) | silver valid nDCG@5 ({d['topics']['silver']}) | helped by the rule |",
        "|---|---|---:|---|---|---|",
    ]
    for lever in levers:
        row = result["rows"].get(lever.name, {})
        judged = d["rows"].get(lever.name)
        train = f"{row['train_s']:.0f} ({row['steps']}, load {row['load'] or '?'})" if row.get("train_s") else "–"
        helped = (
            "default"
            if lever.name == d["default"]
            else "**yes**"
            if lever.name in d["passed"]
            else "no"
            if judged
            else "not trained"
        )
        what = lever.what + (f" (`{lever.args}`)" if lever.args else "")
        lines.append(
            f"| {lever.name} | {what} | {train} | {cell(judged and judged['dev'])} | "
            f"{cell(judged and judged['silver'])} | {helped} |"
        )
    return lines


def block(result: dict, with_rule: bool, levers=LEVERS, marks=(BEGIN, END), tool="training_levers.py", note: str = "") -> str:
    d = result["decision"]
    head = [
        marks[0],
        "",
        f"Generated by `python experiments/{tool} --write` on {result['date']}; machine: "
        f"{result['machine']}; load average at the end {result['load']}. nDCG@5, mean [95 % bootstrap "
        "CI]; Δ to the default and Holm-adjusted p (t / sign-flip); ▲ better by both tests on that "
        "label set. Silver valid: no conversation of it was trained on (training drops them)." + (f" {note}" if note else ""),
        "",
    ]
    body = table(result, levers) + ["", f"**Decision:** {d['reason']}", ""]
    if with_rule:
        body += [
            "```",
            result["command"].replace(result["runs"] + "/", "runs/").replace(str(ROOT.parent), ".."),
            "```",
            "",
            "```",
            result["text"].rstrip(),
            "```",
            "",
        ]
    return "\n".join(head + body + [marks[1]])


def write(doc: Path, text: str, after: str, marks=(BEGIN, END)) -> None:
    """Replace the generated block of ``doc`` (or put it after the heading ``after``)."""
    old = doc.read_text(encoding="utf-8")
    begin, end = marks
    if begin in old:
        start, stop = old.index(begin), old.index(end) + len(end)
        new = old[:start] + text + old[stop:]
    else:
        at = old.index(after) + len(after)
        nl = old.index("\n", at) + 1
        new = old[:nl] + "\n" + text + "\n" + old[nl:]
    doc.write_text(new, encoding="utf-8")


JOURNAL = ROOT / "experiments" / "JOURNAL.md"
RESULTS = ROOT / "experiments" / "results"


def result_file(result: dict, name: str, title: str, levers=LEVERS, note: str = "") -> Path:
    """Write ``experiments/results/NAME.json``: the levers' table with the date, machine and load
    of the run, in the shape of ``bench/benchinfo.py``'s result files."""
    lines = table(result, levers)
    split = [[cell.strip() for cell in line.strip().strip("|").split(" | ")] for line in lines]
    data = {
        "name": name,
        "title": title,
        "command": f"python experiments/{name}.py --write",
        "date": result["date"],
        "machine": {"cpu": result["machine"], "cores": os.cpu_count(), "units": None, "python": platform.python_version()},
        "load_before": "",
        "load_after": result["load"],
        "columns": split[0],
        "rows": split[2:],
        "notes": [f"Decision: {result['decision']['reason']}"] + ([note] if note else []),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def arguments(argv, description: str):
    """The command line both lever tools take (``--home``, ``--source``, ``--out``, ``--write``)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--home",
        type=Path,
        default=Path("/work/train-out"),
        help="the DSR_HOME the levers were trained in (models/NAME, logs/NAME.log)",
    )
    parser.add_argument("--source", type=Path, default=ROOT.parent / "shared" / "data" / "cmu_dog")
    parser.add_argument("--out", type=Path, default=None, help="runs and results (default HOME/levers)")
    parser.add_argument("--write", action="store_true", help="write the result file and the journal's block")
    args = parser.parse_args(argv)
    args.home, args.source = args.home.resolve(), args.source.resolve()
    args.out = (args.out or args.home / "levers").resolve()
    os.environ["DSR_HOME"] = str(args.home)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    return args


def main(argv=None) -> int:
    args = arguments(argv, __doc__.splitlines()[0])
    result = judge(args)
    (args.out / "levers.json").write_text(json.dumps(result, indent=1) + "\n")
    print(result["text"])
    print("\n".join(table(result)))
    if args.write:
        result_file(result, "training_levers", "The training levers, judged by dsr decide")
        write(JOURNAL, block(result, True), "## Issue 31: the training levers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
