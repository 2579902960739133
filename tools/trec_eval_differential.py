"""``dsr trec_eval`` and ``dsr evaluate --qrels`` against the real trec_eval binaries.

    python tools/trec_eval_differential.py --te-9 BIN --te-10 BIN [--cases N] [--seed S] [QRELS RUN]
    python tools/trec_eval_differential.py --te-9 BIN --te-10 BIN --write-fixtures

BIN: trec_eval 9.0.8 and 10.0 built from usnistgov/trec_eval at the commits
tests/fixtures/trec_eval/README.md names (``make`` in each checkout). Four checks, each
printing its count of cases and of differences (exit 1 when any differs); ``dsr trec_eval``
is run through both of its engines (the arrays where they cover the input, and the
reference), each held to the binary:

1. **the fixtures**: every case of tests/fixtures/trec_eval/cases.tsv: the binary's output
   and exit status (4 where it stops in its loop over topics, after its ``-q`` lines);
2. **every -m form** on QRELS RUN (default: tests/fixtures/trec_eval's): each measure of
   each release with default parameters, one cutoff, two cutoffs (or a parameter), with and
   without ``-q``, and combinations of nicknames, repeats and bad parameters: dsr's output
   byte for byte, or dsr's error where the binary stops;
3. **random files** (``--cases``): qrels and runs with scores that tie as float32 and as
   doubles, ``nan`` and ``inf`` scores, scores beyond float32, negative grades, unjudged and
   missing documents, documents listed or judged twice, topics judged only negatively, random
   ``-q -c -J -M -l -n`` (levels from -2 to 3) and measures (gains less than 1 apart
   included), under both releases: output and exit status;
4. **dsr evaluate --qrels** (ir_measures) on the same kind of files: each topic's value of 12
   measures against the binary's ``-q -c`` line, to its printed precision (5e-5).

``--write-fixtures`` writes each case's expected files instead: ``expected-RELEASE/NAME`` (what
the binary printed) and, where it exited other than 0, ``NAME.exit`` (its status and stderr).

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
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dsr.cli import main as dsr_main  # noqa: E402
from dsr.evaluation.trec_eval_measures import measures  # noqa: E402

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
    ["ndcg.1=0.5,3=7", "Rndcg.2=1.4,0=0.3", "G.1=2.5,2=0.2"],  # gains less than 1 apart: C's int compare
    ["ndcg_rel.-1=2,1=0.6", "G.-2=1", "relstring"],  # a gain for unpooled and unjudged documents
]
#: dsr evaluate's measure -> the trec_eval value it is compared with
EVALUATE = {
    "nDCG@5": ("ndcg_cut.5", "ndcg_cut_5"), "P@3": ("P.3", "P_3"), "AP": ("map", "map"),
    "RR": ("recip_rank", "recip_rank"), "R@5": ("recall.5", "recall_5"), "Rprec": ("Rprec", "Rprec"),
    "Bpref": ("bpref", "bpref"), "nDCG": ("ndcg", "ndcg"), "NumRel": ("num_rel", "num_rel"),
    "NumRet": ("num_ret", "num_ret"), "AP@5": ("map_cut.5", "map_cut_5"), "Success@1": ("success.1", "success_1"),
}  # fmt: skip


ENGINES = ("auto", "reference")


@dataclass(frozen=True)
class Outcome:
    """What a command printed on stdout and its exit status (0; 4: stopped in the loop over
    topics; anything else: refused)."""

    stdout: str
    status: int
    stderr: str = ""

    def same(self, other: Outcome) -> bool:
        """(``self``: the binary's.) A crash (a signal) is matched by any stop or refusal."""
        if self.status < 0 or self.status > 128:
            return other.status not in (0, 1)
        if self.status in (0, 4) or other.status in (0, 4):
            return self.status == other.status and self.stdout == other.stdout
        return True  # both refuse the input (trec_eval's 1, 2, 7...; dsr's 2)


def binary(bins: dict[str, str], release: str, options: list[str], qrels: str, run: str) -> Outcome:
    """What the release prints and its status (a 0 with a ``trec_eval:`` message is a refusal)."""
    done = subprocess.run([bins[release], *options, qrels, run], capture_output=True, text=True)
    status = 2 if done.returncode == 0 and "trec_eval:" in done.stderr else done.returncode
    return Outcome(done.stdout, status, done.stderr)


def ours(release: str, flags: list[str], qrels: str, run: str, engine: str) -> Outcome:
    """What ``dsr trec_eval`` prints and its status; an internal error is status 1 (which
    never equals a binary's output)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = dsr_main(["trec_eval", "--release", release, "--engine", engine, *flags, qrels, run])
    if status == 1:
        return Outcome(f"<internal error: {err.getvalue()[-400:]}>", 1)
    return Outcome(out.getvalue(), status, err.getvalue())


def compared(bins, release: str, flags: list[str], qrels: str, run: str) -> list[str]:
    """The engines whose outcome differs from the binary's."""
    want = binary(bins, release, flags, qrels, run)
    return [e for e in ENGINES if not want.same(ours(release, flags, qrels, run, e))]


def fixture_cases() -> list[tuple[str, str, list[str], str]]:
    """(name, run, options, qrels) of tests/fixtures/trec_eval/cases.tsv."""
    out = []
    for line in (FIXTURE / "cases.tsv").read_text().splitlines():
        name, run, options, *qrels = line.split("\t")
        out.append((name, run, options.split(), qrels[0] if qrels else "qrels"))
    return out


def fixtures(bins: dict[str, str]) -> tuple[int, int]:
    cases = differ = 0
    for name, run, flags, qrels in fixture_cases():
        for release in RELEASES:
            cases += 1
            bad = compared(bins, release, flags, str(FIXTURE / qrels), str(FIXTURE / run))
            if bad:
                differ += 1
                print(f"  differs ({', '.join(bad)}): {release} {name}")
    return cases, differ


def write_fixtures(bins: dict[str, str]) -> None:
    """Each case's expected files, from the binaries: stdout; NAME.exit where the status is not 0."""
    for name, run, flags, qrels in fixture_cases():
        for release in RELEASES:
            done = binary(bins, release, flags, str(FIXTURE / qrels), str(FIXTURE / run))
            folder = FIXTURE / f"expected-{release}"
            (folder / name).write_text(done.stdout)
            exit_file = folder / f"{name}.exit"
            if done.status:
                exit_file.write_text(f"{done.status}\n{done.stderr}")
            elif exit_file.exists():
                exit_file.unlink()
            print(f"{release} {name}: status {done.status}, {len(done.stdout.splitlines())} lines")


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
                bad = compared(bins, release, flags, qrels, run)
                if bad:
                    differ += 1
                    print(f"  differs ({', '.join(bad)}): {release} {' '.join(flags)}")
    return cases, differ


#: scores of the random runs: ties as float32 and as doubles, C's non-finite forms, beyond float32
SCORES = (0.5, 0.30000001, 0.3, "nan", "inf", "-inf", "NaN", "Infinity", "1e39", "3e38", "-0")


def random_files(rng: random.Random, folder: Path, graded_run: bool) -> tuple[str, str] | None:
    """A random qrels and run (``graded_run``: the gentler kind ``dsr evaluate`` reads)."""
    topics = [f"q{i}" for i in range(rng.randint(1, 6))]
    qrels, run = [], []
    for t in topics:
        docs = [f"d{j}" for j in range(rng.randint(2, 12))]
        # only the first topic: after another, trec_eval reads stale memory there (or crashes)
        negative_only = not graded_run and t == "q0" and rng.random() < 0.2
        for doc in rng.sample(docs, rng.randint(1, len(docs))):
            grades = [-1, -2] if negative_only else [0, 0, 1, 1, 2, 3] if graded_run else [-1, 0, 0, 1, 1, 2, 3]
            qrels.append(f"{t} 0 {doc} {rng.choice(grades)}")
            if not graded_run and rng.random() < 0.02:
                qrels.append(f"{t} 0 {doc} {rng.choice(grades)}")  # judged twice
        if rng.random() < 0.9:
            for k, doc in enumerate(rng.sample(docs, rng.randint(1, len(docs)))):
                run.append(f"{t} Q0 {doc} {k} {_score(rng, graded_run)} tag")
                if not graded_run and rng.random() < 0.02:
                    run.append(f"{t} Q0 {doc} {k} {_score(rng, graded_run)} tag")  # listed twice
    if not run or not any(int(line.split()[3]) > 0 for line in qrels):
        return None
    (folder / "qrels").write_text("\n".join(qrels) + "\n")
    (folder / "run").write_text("\n".join(run) + "\n")
    return str(folder / "qrels"), str(folder / "run")


def _score(rng: random.Random, finite: bool) -> object:
    if finite or rng.random() < 0.85:
        return rng.choice([round(rng.random(), rng.choice([1, 2, 7])), 0.5, 0.30000001, 0.3, float(rng.randint(-2, 3))])
    return rng.choice(SCORES)


def random_pairs(rng: random.Random, n: int, folder: Path, graded_run: bool) -> Iterator[tuple[str, str]]:
    """Up to ``n`` random (qrels, run) pairs, written to ``folder`` one after the other."""
    for _ in range(n):
        files = random_files(rng, folder, graded_run)
        if files is not None:
            yield files


def random_flags(rng: random.Random) -> list[str]:
    flags = [flag for flag, chance in (("-q", 0.5), ("-c", 0.3), ("-J", 0.3), ("-n", 0.2)) if rng.random() < chance]
    if rng.random() < 0.3:
        flags += ["-M", str(rng.randint(0, 6))]
    if rng.random() < 0.4:
        flags += ["-l", str(rng.choice([2, 0, -1, -2, 3]))]
    return flags + [a for m in rng.choice(RANDOM_MEASURES) for a in ("-m", m)]


def random_cases(bins: dict[str, str], rng: random.Random, n: int, folder: Path) -> tuple[int, int]:
    cases = differ = 0
    for files in random_pairs(rng, n, folder, graded_run=False):
        flags = random_flags(rng)
        for release in RELEASES:
            cases += 1
            bad = compared(bins, release, flags, *files)
            if bad:
                differ += 1
                shown = f"{Path(files[0]).read_text()}--\n{Path(files[1]).read_text()}"
                print(f"  differs ({', '.join(bad)}): {release} {' '.join(flags)}\n{shown}")
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
        done = binary(bins, release, flags, *files)
        printed = done.stdout if done.status == 0 else None
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
    parser.add_argument("--write-fixtures", action="store_true", help="write tests/fixtures/trec_eval's expected files")
    parser.add_argument("files", nargs="*", default=[str(FIXTURE / "qrels"), str(FIXTURE / "run")], metavar="QRELS RUN")
    args = parser.parse_args()
    bins = {"9.0.8": args.te_9, "10.0": args.te_10}
    if args.write_fixtures:
        write_fixtures(bins)
        return 0
    rng = random.Random(args.seed)
    total = 0
    with tempfile.TemporaryDirectory() as tmp:
        for what, (cases, differ) in (
            ("the fixtures (tests/fixtures/trec_eval/cases.tsv)", fixtures(bins)),
            (f"every -m form on {' '.join(Path(f).name for f in args.files)}", every_form(bins, *args.files)),
            ("random files, dsr trec_eval", random_cases(bins, rng, args.cases, Path(tmp))),
            ("random files, dsr evaluate --qrels per topic", evaluate_cases(bins, rng, args.cases, Path(tmp))),
        ):
            print(f"{what}: {cases} cases, {differ} differ")
            total += differ
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(run())
