"""Benchmark: the leaderboard server under concurrent submissions, on SQLite and PostgreSQL,
and a SIGIR-sized run's cost (issue 34's board goals, each printed as a GOAL line).

1. Load: ``dsr serve`` runs in a subprocess on 127.0.0.1; 20 clients (one team each, one
   HTTP connection each) send 200 submissions of runs made by dsr's rankers on the bundled
   ``sample`` collection, alternating a hidden phase (daily quota 3 per team) and a public
   one (no quota), each with an Idempotency-Key (as ``dsr submit`` sends). Every submission is
   validated, scored (by the server's scoring workers) and stored before its answer. Run on
   SQLite (one process) and PostgreSQL with 1, 2 and 4 server processes (``--processes``;
   ``dsr serve --processes N``), and with ``--compare REF`` another commit's server beside
   each one-process configuration in the same run. Printed per configuration: p50/p95
   latency, submissions per second (responses, accepted or refused, over the wall time), the
   server's CPU time a submission (all its processes) and the checks the load test makes
   (stored runs == accepted responses, quotas exact, and every fifth request sent again with
   its key afterwards: the same answer, nothing stored twice).
2. SIGIR size (``--sigir``): a synthetic SIGIR-shaped collection (846 dialogues x 50
   candidates, ``dsr.collections.synthetic``) and full-depth runs: the time to parse one
   (``dsr.core.run.read_trec_run``) against the time ``Board.submit`` takes to check, score
   on every subset and store it, in this process (best of 3 each, interleaved).
3. Workers (``--sigir``): 16 such runs sent by 4 clients (the first 4 to warm up) to ``dsr serve --workers 1`` and
   ``--workers 2``: runs per second.
4. 10x (``--sigir``): a collection of 8,460 dialogues x 50 candidates; a full-depth run of
   it is submitted to a board with the default upload limit (which follows the collection).

    python bench/bench_board.py [--submissions 200] [--clients 20] [--db sqlite,postgresql]
                                [--processes 1,2,4] [--compare main] [--rounds 1]
                                [--sigir | --no-load]

PostgreSQL is a throwaway server from Debian's package (as in the tests);
without its binaries that database is skipped.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from benchinfo import footer, goal, header, load  # noqa: E402
from sqlalchemy import select, text  # noqa: E402

from dsr.core.provenance import package_versions  # noqa: E402
from dsr.db.engine import make_engine  # noqa: E402
from tools import board_harness as bh  # noqa: E402  (the servers and runs the tests use too)

QUOTA = 3
#: uvicorn's optional speed-ups (its "standard" extra's C HTTP parser and event loop)
OPTIONAL_SPEEDUPS = ("httptools", "uvloop")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


@dataclass
class Config:
    """One configuration of the load bench: a database, a number of server processes, the code."""

    db: str
    processes: int = 1
    code: str = "this"  # "this", or the ref given to --compare
    root: Path | None = None  # the checkout of ``code`` (None: this one)

    @property
    def label(self) -> str:
        return f"{self.db}, {self.processes} process{'es' if self.processes > 1 else ''}"


def bench(
    config: Config,
    db_url: str,
    folder: Path,
    runs: Path,
    submissions: int,
    clients: int,
    postgres=None,
    rate_limit: float = 0,
    lean: bool = False,
) -> dict:
    """The load on a fresh board: ``submissions`` from ``clients`` concurrent clients (one team
    each, each request with its own Idempotency-Key as ``dsr submit`` sends), timed; then every
    fifth request sent again with its key (a client whose answer was lost), untimed: it must get
    the same answer and store nothing. ``lean``: ``board_harness.hammer``'s lean clients (the standard
    library's HTTP client, forms encoded before the timed requests)."""
    tokens = setup_board(config, db_url, folder, runs, clients)
    engine = make_engine(db_url)  # no Board here: the schema is the compared code's
    jobs = bh.load_jobs(runs, tokens, per_team=submissions // clients, keys=True)
    extra = ["--processes", str(config.processes)] if config.processes > 1 else []
    with bh.ServerProcess(db_url, folder / "store", "--rate-limit", str(rate_limit), *extra, root=config.root) as server:
        server.settle()  # every process started and warmed up
        cpu, db_cpu, own = server.cpu_seconds(), postgres.cpu_seconds() if postgres else 0.0, os.times()
        start = time.perf_counter()
        results = bh.hammer(server.url, jobs, clients=clients, lean=lean)
        wall = time.perf_counter() - start
        cpu, after = server.cpu_seconds() - cpu, os.times()
        db_cpu = (postgres.cpu_seconds() - db_cpu) if postgres else 0.0
        client_cpu = after.user + after.system - own.user - own.system
        with engine.connect() as conn:
            stored = conn.scalar(text("select count(*) from submissions where not baseline"))
        retried = bh.hammer(server.url, jobs[::5], clients=clients, lean=lean)
    with engine.connect() as conn:
        after_retries = conn.scalar(text("select count(*) from submissions where not baseline"))
        keys = conn.execute(
            text(
                "select idempotency_key, count(*) from submissions where not baseline "
                "group by idempotency_key having count(*) > 1"
            )
        ).all()
    engine.dispose()
    statuses = Counter(r["status"] for r in results)
    accepted = [r for r in results if r["status"] == 201]
    per_team_hidden = Counter(r["team"] for r in accepted if r["phase"] == "test")
    first = {r["key"]: r for r in results}
    same = all(
        r["status"] == first[r["key"]]["status"]
        and (r["status"] != 201 or (r["replayed"] and r["body"]["id"] == first[r["key"]]["body"]["id"]))
        for r in retried
    )
    latencies = [r["seconds"] for r in results]
    return {
        "n": len(results),
        "statuses": dict(statuses),
        "wall": wall,
        "p50": statistics.median(latencies),
        "p95": percentile(latencies, 0.95),
        "rate": len(results) / wall,
        "cpu_ms": cpu * 1000 / len(results),
        "db_cpu_ms": db_cpu * 1000 / len(results),
        "client_cpu_ms": client_cpu * 1000 / len(results),
        "stored_equals_accepted": stored == len(accepted),
        "quota_exact": all(per_team_hidden[t] == min(QUOTA, (submissions // clients + 1) // 2) for t in range(clients)),
        "retries": len(retried),
        "no_duplicates": after_retries == stored and not keys and same,
    }


SETUP = """
import json, sys
from pathlib import Path
root, url, folder, runs, clients, quota = sys.argv[1:]
sys.path[:0] = [root + "/tools", root]
import board_harness as bh
board = bh.make_board(url, Path(folder))
bh.setup_phases(board, Path(runs), daily_quota=int(quota))
print(json.dumps([board.members.add_team(f"team{t}") for t in range(int(clients))]))
board.close()
"""


def setup_board(config: Config, db_url: str, folder: Path, runs: Path, clients: int) -> list[str]:
    """The board (``board_harness.setup_phases``) and a team per client, made by the code under
    test (its own migrations): their tokens."""
    import json
    import subprocess

    root = str(config.root or ROOT)
    made = subprocess.run(
        [sys.executable, "-c", SETUP, root, db_url, str(folder), str(runs), str(clients), str(QUOTA)],
        cwd=root,
        env={**os.environ, "PYTHONPATH": root},
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(made.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--submissions", type=int, default=200)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--db", default="sqlite,postgresql")
    parser.add_argument("--processes", default="1,2,4", help="server processes on PostgreSQL (SQLite: always 1)")
    parser.add_argument(
        "--compare",
        metavar="REF",
        help="also run another commit's server (git archive REF; 1 process) beside each 1-process configuration, in the same run",
    )
    parser.add_argument(
        "--clients-kind",
        choices=["httpx", "lean"],
        default="httpx",
        help="the load generator: httpx (default, as before) or lean (http.client, forms encoded before timing: "
        "less of the 2 cores taken from the server by the clients that share them)",
    )
    parser.add_argument("--rounds", type=int, default=1, help="configurations run this many times, interleaved")
    parser.add_argument(
        "--rate-limit",
        type=float,
        default=0,
        help="the servers' --rate-limit (default 0: none; 30, dsr serve's default, refuses nothing here: a team sends 10)",
    )
    parser.add_argument("--sigir", action="store_true", help="also the SIGIR-sized benches (2-4)")
    parser.add_argument("--no-load", action="store_true", help="skip the load bench (1)")
    args = parser.parse_args()
    info = header("bench_board")
    versions = package_versions(("fastapi", "uvicorn", "httptools", "uvloop", "sqlalchemy", "psycopg"))
    print("versions: " + ", ".join(f"{k} {v}" for k, v in versions.items()))
    print(
        f"load: {args.submissions} submissions from {args.clients} concurrent clients, sample "
        f"collection (20 dialogues), half to a hidden phase with a daily quota of {QUOTA}; each "
        "request with an Idempotency-Key, and every fifth sent again after the timed run; clients: "
        + ("http.client, forms encoded before timing (--clients-kind lean)" if args.clients_kind == "lean" else "httpx")
    )
    with tempfile.TemporaryDirectory(prefix="bench-board-") as tmp:
        tmp = Path(tmp)
        os.environ["DSR_HOME"] = str(tmp / "home")
        # the servers' temporary folder: each stop of `dsr serve` leaves its scoring pool's
        # forkserver folder (pymp-*; docs/board.md), ~30 a run in /tmp before; they go with tmp
        os.environ["TMPDIR"] = str(tmp)
        if not args.no_load:
            load_benches(args, tmp)
        if args.sigir:
            sigir_benches(tmp / "sigir")
    footer(info)


def checkout(ref: str, folder: Path) -> Path:
    """Commit ``ref`` of this repository, exported (``git archive``) into ``folder``."""
    import subprocess

    folder.mkdir(parents=True)
    commit = subprocess.run(
        ["git", "rev-parse", "--short", ref], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.strip()
    archive = subprocess.run(["git", "archive", ref], cwd=ROOT, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    # the commit runs with the dependencies it declares: uvicorn's optional C parser and event
    # loop, installed here, are hidden from a commit whose pyproject does not list them
    declared = (folder / "pyproject.toml").read_text()
    hidden = [name for name in OPTIONAL_SPEEDUPS if f'"{name}' not in declared]
    for name in hidden:
        (folder / f"{name}.py").write_text(f"raise ImportError('{name} is not a dependency of {ref}')\n")
    print(
        f"compared with {ref} ({commit}), exported to a temporary folder"
        + (f"; {', '.join(hidden)} hidden from it (not among its dependencies)" if hidden else "")
    )
    return folder


def configurations(args, tmp: Path) -> list[Config]:
    other = checkout(args.compare, tmp / "compare") if args.compare else None
    out = []
    for db in args.db.split(","):
        for processes in [1] if db == "sqlite" else [int(p) for p in args.processes.split(",")]:
            if other is not None and processes == 1:
                out.append(Config(db, 1, args.compare, other))
            out.append(Config(db, processes))
    return out


def load_benches(args, tmp: Path) -> None:
    (tmp / "runs").mkdir()
    runs = bh.sample_runs(tmp / "runs")
    results: list[tuple[Config, dict]] = []
    with contextlib.ExitStack() as stack:
        postgres = None
        for round_ in range(args.rounds):
            for k, config in enumerate(configurations(args, tmp / f"code{round_}")):
                folder = tmp / f"r{round_}-{k}"
                folder.mkdir()
                if config.db == "sqlite":
                    url = f"sqlite:///{folder / 'board.sqlite'}"
                else:
                    if postgres is None:
                        if bh.pg_bin() is None:
                            print("postgresql: skipped (PostgreSQL binaries not found)")
                            continue
                        postgres = bh.Postgres(bh.pg_bin())
                        stack.callback(postgres.stop)
                        postgres.start()
                    url = postgres.new_database()
                r = bench(
                    config,
                    url,
                    folder,
                    runs,
                    args.submissions,
                    args.clients,
                    postgres if config.db == "postgresql" else None,
                    args.rate_limit,
                    args.clients_kind == "lean",
                )
                results.append((config, r))
                print(
                    f"{config.label:25s} {config.code:8s}: {r['n']} responses {r['statuses']} in {r['wall']:.1f} s "
                    f"= {r['rate']:.1f}/s; p50 {r['p50'] * 1000:.0f} ms, p95 {r['p95'] * 1000:.0f} ms; CPU a "
                    f"submission: server {r['cpu_ms']:.1f} ms, database {r['db_cpu_ms']:.1f}, clients "
                    f"{r['client_cpu_ms']:.1f}; stored == accepted: {r['stored_equals_accepted']}; "
                    f"quotas exact: {r['quota_exact']}; {r['retries']} retries, 0 duplicates: {r['no_duplicates']}; "
                    f"load {load()}",
                    flush=True,
                )
    for config, r in results:
        if config.code == "this":
            goal(
                f"{config.label}: board p95 at {args.clients} clients",
                f"{r['p95'] * 1000:.0f} ms, {r['rate']:.1f}/s",
                "p95 < 200 ms, nothing lost, quotas exact, no duplicate on retry (issues 34, 44)",
                r["p95"] < 0.2 and r["stored_equals_accepted"] and r["quota_exact"] and r["no_duplicates"],
            )


# --- SIGIR size: parse vs score, 1 vs 2 workers, 10x accepted by default -------------------


def sigir_files(folder: Path, dialogues: int, runs: int) -> tuple[Path, list[bytes]]:
    """A SIGIR-shaped benchmark file of ``dialogues`` x 50 candidates and ``runs`` full-depth
    runs of it (distinct scores: no duplicate)."""
    from dsr.collections.synthetic import make_collection, make_run
    from dsr.core.data import write_benchmark

    folder.mkdir(parents=True, exist_ok=True)
    collection = make_collection(n=dialogues, seed=0, grades=(0,) * 9 + (1,), name=f"sigir{dialogues}")
    write_benchmark(collection, folder / f"sigir{dialogues}.jsonl")
    out = []
    for k in range(runs):
        make_run(collection, seed=k, quality=0.2).write(folder / f"run{k}.run", sidecar=False)
        out.append((folder / f"run{k}.run").read_bytes())
    return folder / f"sigir{dialogues}.jsonl", out


def sigir_board(folder: Path, collection: Path, clients: int = 1):
    """An SQLite board with one public phase on ``collection`` and ``clients`` teams."""
    board = bh.make_board(f"sqlite:///{folder / 'board.sqlite'}", folder)
    board.phases.add_phase(str(collection), "dev")
    tokens = [board.members.add_team(f"team{t}") for t in range(clients)]
    return board, board.phases.all()[0], tokens


def team_row(board, name: str):
    from dsr.board.models import Team
    from dsr.db.engine import read_session

    with read_session(board.engine) as s:
        return s.scalar(select(Team).where(Team.name == name))


def parse_vs_score(folder: Path) -> None:
    """Goal: a SIGIR-sized submission scored (checked, measured, stored) in <= 2x its parse."""
    from dsr.board.service import Metadata
    from dsr.core.run import read_trec_run

    collection, runs = sigir_files(folder, 846, 4)
    board, phase, _ = sigir_board(folder / "board", collection)
    team = team_row(board, "team0")
    board.submit(team, phase, runs[0], "warm.run", Metadata(system="warm"))  # phase data built
    parse, submit = [], []
    for k in (1, 2, 3):
        start = time.perf_counter()
        read_trec_run(folder / f"run{k}.run")
        parse.append(time.perf_counter() - start)
        start = time.perf_counter()
        board.submit(team, phase, runs[k], f"run{k}.run", Metadata(system=f"run{k}"))
        submit.append(time.perf_counter() - start)
    board.close()
    ratio = min(submit) / min(parse)
    print(
        f"sigir size : {len(runs[0]) / 1e6:.1f} MB run of 846 x 50 lines: parse (read_trec_run) best "
        f"{min(parse):.3f} s, Board.submit (check, score, store) best {min(submit):.3f} s"
    )
    goal(
        "SIGIR-sized submission scored / parsed",
        f"{ratio:.2f}x ({min(submit):.3f} s / {min(parse):.3f} s)",
        "<= 2x (issue 34)",
        ratio <= 2,
    )


def post_all(url: str, runs: list[bytes], tokens: list[str], clients: int) -> float:
    """``runs`` sent by ``clients`` concurrent clients (team = client); wall seconds."""
    from concurrent.futures import ThreadPoolExecutor

    import httpx

    def client(c: int) -> list[int]:
        with httpx.Client(base_url=url, timeout=300) as http:
            return [
                http.post(
                    "/api/submissions",
                    data={"collection": "sigir846", "phase": "dev", "system": f"s{k}"},
                    files={"run": ("run.run", runs[k])},
                    headers={"Authorization": f"Bearer {tokens[c]}"},
                ).status_code
                for k in range(c, len(runs), clients)
            ]

    start = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        statuses = [s for part in pool.map(client, range(clients)) for s in part]
    wall = time.perf_counter() - start
    if set(statuses) != {201}:
        raise RuntimeError(f"not all accepted: {Counter(statuses)}")
    return wall


def workers_scaling(folder: Path, n_runs: int = 16, clients: int = 4) -> None:
    """Goal: scoring throughput grows with the workers (1 vs 2)."""
    collection, runs = sigir_files(folder, 846, n_runs)
    rates = {}
    for workers in (1, 2):
        sub = folder / f"w{workers}"
        board, _, tokens = sigir_board(sub, collection, clients)
        board.close()
        with bh.ServerProcess(
            f"sqlite:///{sub / 'board.sqlite'}", sub / "store", "--rate-limit", "0", "--workers", str(workers)
        ) as server:
            post_all(server.url, runs[:clients], tokens, clients)  # warm: each worker's phase
            rates[workers] = (n_runs - clients) / post_all(server.url, runs[clients:], tokens, clients)
    print(
        f"workers    : SIGIR-sized runs accepted per second with {clients} clients: 1 worker "
        f"{rates[1]:.2f}/s, 2 workers {rates[2]:.2f}/s (the machine has {os.cpu_count()} cores, "
        "shared with the server process and the clients)"
    )
    goal("scoring throughput 2 workers / 1", f"{rates[2] / rates[1]:.2f}x", "> 1 (grows with the workers)", rates[2] > rates[1])


def ten_x(folder: Path) -> None:
    """Goal: a full-depth run of a 10x SIGIR-sized collection is accepted by default."""
    from dsr.board.service import Metadata

    collection, runs = sigir_files(folder, 8460, 1)
    board, phase, _ = sigir_board(folder / "board", collection)
    start = time.perf_counter()
    accepted = board.submit(team_row(board, "team0"), phase, runs[0], "full.run", Metadata(system="full"))
    seconds = time.perf_counter() - start
    limit = board.upload_limit(phase)
    board.close()
    print(
        f"10x        : full-depth run of 8,460 x 50 = {len(runs[0]) / 1e6:.1f} MB; upload limit "
        f"{limit / 1e6:.1f} MB; accepted as /runs/{accepted.row.id} in {seconds:.2f} s (first "
        "submission: the phase's data built too)"
    )
    goal(
        "10x SIGIR full-depth run accepted by default",
        f"{len(runs[0]) / 1e6:.1f} MB under a {limit / 1e6:.1f} MB limit",
        "accepted (issue 34)",
        len(runs[0]) <= limit,
    )


def sigir_benches(folder: Path) -> None:
    parse_vs_score(folder / "parse")
    workers_scaling(folder / "workers")
    ten_x(folder / "tenx")


if __name__ == "__main__":
    main()
