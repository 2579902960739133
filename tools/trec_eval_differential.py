"""``dsr trec_eval`` and ``dsr evaluate --qrels`` against the real trec_eval binaries.

    python tools/trec_eval_differential.py --te-9 BIN --te-10 BIN [--cases N] [--seed S] [QRELS RUN]

BIN: trec_eval 9.0.8 and 10.0 built from usnistgov/trec_eval at the commits
tests/fixtures/trec_eval/README.md names (``make`` in each checkout). Three checks, each
printing its count of cases and of differences (exit 1 when any differs):

1. **every -m form** on QRELS RUN (default: tests/fixtures/trec_eval's): each measure of
   each release with default parameters, one cutoff, two cutoffs (or a parameter), with and
   without ``-q``, and combinations of nicknames, repeats and bad parameters: dsr's output
   byte for byte, or dsr's error where the binary stops;
2. **random files** (``--cases``): qrels and runs with scores that tie as float32 and as
   doubles, negative grades, unjudged and missing documents, random ``-q -c -J -M -l -n`` and
   measures, under both releases, byte for byte;
3. **dsr evaluate --qrels** (ir_measures) on the same kind of files: each topic's value of 12
   measures against the binary's ``-q -c`` line, to its printed precision (5e-5).

The binaries are not part of the test suite (nothing here builds C); their outputs on the
corners that matter are kept as fixtures (tests/fixtures/trec_eval).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import random
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dsr.cli import main as dsr_main  # noqa: E402
from dsr.core.errors import InputError  # noqa: E402
from dsr.evaluation.trec_eval_measures import measures  # noqa: E402
from dsr.evaluation.trec_eval_tool import Options, trec_eval  # noqa: E402

FIXTURE = ROOT / "tests" / "fixtures" / "trec_eval"
RELEASES = ("9.0.8", "10.0")
COMBOS = [
    ["official", "P.5"], ["all_trec", "ndcg_cut.5"], ["P.5", "P.10"], ["P", "P.5"], ["P.5", "P"],
    ["official", "all_trec", "recall.3"], ["set_F.0.5", "set_F.2"], ["ndcg.1=3", "ndcg_cut.3"],
    ["relstring.3"], ["iprec_at_recall.0.5", "11pt_avg"], ["utility.1,-1,0,0"], ["map_cut.3", "official"],
    ["P.0"], ["P.abc"], ["P.5,5"], ["ndcg_cut.5.5"], ["recall.2,1"], ["success.10,1,5"], ["gm_map"],
    ["runid", "num_q"], ["ndcg_rel"], ["Rndcg"], ["infAP"],
]  # fmt: skip
#: the -m sets of the random cases
RANDOM_MEASURES = [
    ["all_trec"],
    ["official"],
    ["P.1,3", "ndcg_cut.3", "map"],
    ["P.2"],
    ["ndcg.1=2,2=5", "bpref"],
    ["success.1", "recall.3"],
]
#: dsr evaluate's measure -> the trec_eval value it is compared with
EVALUATE = {
    "nDCG@5": ("ndcg_cut.5", "ndcg_cut_5"), "P@3": ("P.3", "P_3"), "AP": ("map", "map"),
    "RR": ("recip_rank", "recip_rank"), "R@5": ("recall.5", "recall_5"), "Rprec": ("Rprec", "Rprec"),
    "Bpref": ("bpref", "bpref"), "nDCG": ("ndcg", "ndcg"), "NumRel": ("num_rel", "num_rel"),
    "NumRet": ("num_ret", "num_ret"), "AP@5": ("map_cut.5", "map_cut_5"), "Success@1": ("success.1", "success_1"),
}  # fmt: skip


def binary(bins: dict[str, str], release: str, options: list[str], qrels: str, run: str) -> str | None:
    """What the release prints, or None where it stops or prints an error."""
    done = subprocess.run([bins[release], *options, qrels, run], capture_output=True, text=True)
    return None if done.returncode or "trec_eval:" in done.stderr else done.stdout


def ours(release: str, ms: list[str], qrels: str, run: str, **options) -> str | None:
    """What dsr trec_eval prints, None where it refuses the input (an InputError), or what it
    raised otherwise (an internal error, which never equals a binary's output)."""
    try:
        return trec_eval(qrels, run, Options(release=release, measures=ms, **options)).text
    except InputError:
        return None
    except Exception as err:  # reported as a difference, not raised
        return f"<internal error {type(err).__name__}: {err}>"


def forms(release: str) -> list[list[str]]:
    out = []
    for m in measures(release):
        if m.refused:
            continue
        if m.kind == "cut_long":
            params = [None, "5", "1", "5,10", "3,1"]
        elif m.kind == "cut_float":
            params = [None, "0.5", ".1", "0.2,0.4"]
        elif m.name == "utility":
            params = ["1,-1,0,0"]
        elif m.kind == "param":
            params = [None, "0.5", "2"]
        elif m.kind == "pair":
            params = [None, "1=3", "1=2,2=5"]
        else:
            params = [None]
        out += [[m.name if p is None else f"{m.name}.{p}"] for p in params]
    return out + COMBOS


def every_form(bins: dict[str, str], qrels: str, run: str) -> tuple[int, int]:
    cases = differ = 0
    for release in RELEASES:
        for ms in forms(release):
            for per_topic in (False, True):
                cases += 1
                flags = (["-q"] if per_topic else []) + [a for m in ms for a in ("-m", m)]
                want, got = binary(bins, release, flags, qrels, run), ours(release, ms, qrels, run, per_topic=per_topic)
                if (want or None) != (got or None):
                    differ += 1
                    print(f"  differs: {release} {' '.join(flags)}")
    return cases, differ


def random_files(rng: random.Random, folder: Path, graded_run: bool) -> tuple[str, str] | None:
    topics = [f"q{i}" for i in range(rng.randint(1, 6))]
    qrels, run = [], []
    for t in topics:
        docs = [f"d{j}" for j in range(rng.randint(2, 12))]
        for doc in rng.sample(docs, rng.randint(1, len(docs))):
            qrels.append(f"{t} 0 {doc} {rng.choice([0, 0, 1, 1, 2, 3] if graded_run else [-1, 0, 0, 1, 1, 2, 3])}")
        if rng.random() < 0.9:
            for k, doc in enumerate(rng.sample(docs, rng.randint(1, len(docs)))):
                score = rng.choice([round(rng.random(), rng.choice([1, 2, 7])), 0.5, 0.30000001, 0.3, float(rng.randint(-2, 3))])
                run.append(f"{t} Q0 {doc} {k} {score} tag")
    if not run or not any(int(line.split()[3]) > 0 for line in qrels):
        return None
    (folder / "qrels").write_text("\n".join(qrels) + "\n")
    (folder / "run").write_text("\n".join(run) + "\n")
    return str(folder / "qrels"), str(folder / "run")


def random_pairs(rng: random.Random, n: int, folder: Path, graded_run: bool) -> Iterator[tuple[str, str]]:
    """Up to ``n`` random (qrels, run) pairs, written to ``folder`` one after the other."""
    for _ in range(n):
        files = random_files(rng, folder, graded_run)
        if files is not None:
            yield files


def random_cases(bins: dict[str, str], rng: random.Random, n: int, folder: Path) -> tuple[int, int]:
    cases = differ = 0
    for files in random_pairs(rng, n, folder, graded_run=False):
        flags: list[str] = []
        options: dict[str, Any] = {}
        for flag, name, chance in (("-q", "per_topic", 0.5), ("-c", "complete", 0.3), ("-J", "judged_only", 0.3)):
            if rng.random() < chance:
                flags.append(flag)
                options[name] = True
        if rng.random() < 0.3:
            options["max_docs"] = rng.randint(0, 6)
            flags += ["-M", str(options["max_docs"])]
        if rng.random() < 0.3:
            options["level"] = 2
            flags += ["-l", "2"]
        if rng.random() < 0.2:
            options["summary"] = False
            flags.append("-n")
        ms = rng.choice(RANDOM_MEASURES)
        flags += [a for m in ms for a in ("-m", m)]
        for release in RELEASES:
            cases += 1
            if binary(bins, release, flags, *files) != ours(release, ms, *files, **options):
                differ += 1
                print(f"  differs: {release} {' '.join(flags)}\n{Path(files[0]).read_text()}--\n{Path(files[1]).read_text()}")
    return cases, differ


def evaluate_cases(bins: dict[str, str], rng: random.Random, n: int, folder: Path) -> tuple[int, int]:
    cases = differ = 0
    for files in random_pairs(rng, n, folder, graded_run=True):
        release = rng.choice(RELEASES)
        extra = (["-M", str(rng.randint(1, 6))] if rng.random() < 0.3 else []) + (["-l", "2"] if rng.random() < 0.3 else [])
        table = folder / "per_topic.tsv"
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            argv = ["evaluate", "--qrels", *files, "--measures", *EVALUATE, "--trec-eval", release, "--per-topic", str(table)]
            code = dsr_main(argv + extra)
        flags = ["-q", "-c", *[a for te, _ in EVALUATE.values() for a in ("-m", te)], *extra]
        printed = binary(bins, release, flags, *files)
        cases += 1
        if code != 0 or printed is None:
            differ += (code != 0) != (printed is None)
            continue
        want = {tuple(p.strip() for p in line.split("\t")[:2]): float(line.split("\t")[2]) for line in printed.splitlines()}
        for row in csv.DictReader(table.open(), delimiter="\t"):
            row = {k.replace("(rel=2)", ""): v for k, v in row.items()}
            for measure, (_, name) in EVALUATE.items():
                value = want.get((name, row["topic"]))  # 9.0.8's -q leaves out a topic the run lacks
                if value is not None and abs(float(row[measure]) - value) > 5.01e-5:
                    differ += 1
                    print(f"  differs: {release} {extra} topic {row['topic']} {measure}: dsr {row[measure]}, trec_eval {value}")
    return cases, differ


def run() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--te-9", required=True, help="trec_eval 9.0.8's binary")
    parser.add_argument("--te-10", required=True, help="trec_eval 10.0's binary")
    parser.add_argument("--cases", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("files", nargs="*", default=[str(FIXTURE / "qrels"), str(FIXTURE / "run")], metavar="QRELS RUN")
    args = parser.parse_args()
    bins = {"9.0.8": args.te_9, "10.0": args.te_10}
    rng = random.Random(args.seed)
    total = 0
    with tempfile.TemporaryDirectory() as tmp:
        for what, (cases, differ) in (
            (f"every -m form on {' '.join(Path(f).name for f in args.files)}", every_form(bins, *args.files)),
            ("random files, dsr trec_eval", random_cases(bins, rng, args.cases, Path(tmp))),
            ("random files, dsr evaluate --qrels per topic", evaluate_cases(bins, rng, args.cases, Path(tmp))),
        ):
            print(f"{what}: {cases} cases, {differ} differ")
            total += differ
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(run())
