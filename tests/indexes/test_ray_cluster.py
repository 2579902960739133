"""`dsr corpus build|index --ray-address` against a real two-node Ray cluster.

The cluster is started on this machine the way a real one is: `ray start --head`,
then a second node joining it with `ray start --address`, one CPU and a 100 MB
object store each, in a private temp folder (so no other Ray on the machine
finds it, and it finds none), with its own authentication token. Everything
stays on this host: the driver is given 127.0.0.1, and Ray advertises the
host's own interface address instead (it refuses loopback for a multi-node
cluster), which the kernel routes locally. The nodes run without this checkout on
their PYTHONPATH: the `retrieval` and `indexes` packages reach the workers the
way they reach a real cluster's, through the job's runtime environment.

Each node is a `ray start --block` in its own process group; teardown stops
those groups (SIGTERM, then SIGKILL), which ends the nodes and every worker
they started and nothing else (`ray stop` would stop every Ray of this user on
the machine, other sessions' included).
"""

from __future__ import annotations

import importlib.util
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

from dsr.cli import main
from dsr.indexes.corpus.bm25 import ShardedBM25
from dsr.indexes.corpus.dense import ShardedDense
from dsr.indexes.corpus.layout import Corpus
from tests.indexes.test_corpus import QUERIES, sample_docs
from tests.support.tiers import slow_fixture
from tests.support.tiny_bert import make_tiny_bert

# one worker sets up the module fixtures (tests/support/order.py GROUPS)
pytestmark = [
    pytest.mark.xdist_group("ray-cluster"),
    pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="ray is not installed (pip install '.[distributed]')"),
]

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT = 40  # seconds for a node to start (a loaded 2-core machine)
#: seconds for the nodes to stop on SIGTERM before SIGKILL: neither node of `ray start --block`
#: had stopped long after it (Ray 2.60), so a longer wait only delays the SIGKILL
STOP_TIMEOUT = 1
RAY = [sys.executable, "-c", "import sys; from ray.scripts.scripts import main; sys.argv[0] = 'ray'; main()"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cluster_env(temp: str) -> dict[str, str]:
    """What the nodes and the driver share: RAY_TMPDIR keeps the cluster's sockets, logs and
    its `ray_current_cluster` file in ``temp``; token authentication with this cluster's own
    token (Ray's default token, ~/.ray/auth_token, is shared with every Ray of this user)."""
    return {
        "RAY_TMPDIR": temp,
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN": secrets.token_hex(32),
        "RAY_USAGE_STATS_ENABLED": "0",
        "RAY_memory_usage_threshold": "0.995",
        # Ray runs its workers at nice 15: in a full run, beside the other xdist workers at
        # nice 0, they got a few % of a core, and these tests waited (see test_corpus's Ray test)
        "RAY_worker_niceness": "0",
    }


def start_node(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    common = [
        "--block",
        "--node-ip-address=127.0.0.1",
        "--num-cpus=1",
        "--num-gpus=0",
        "--object-store-memory=100000000",
        "--disable-usage-stats",
    ]
    with open(log, "wb") as out:
        return subprocess.Popen(
            [*RAY, "start", *args, *common],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=env["RAY_TMPDIR"],
        )


def stop_nodes(processes: list[subprocess.Popen]) -> None:
    """SIGTERM to each node's process group (the node and the workers it forked), SIGKILL to
    what is left after STOP_TIMEOUT seconds: only the processes these nodes started."""

    def signal_groups(sig):
        for process in processes:
            try:
                os.killpg(process.pid, sig)
            except ProcessLookupError:
                pass

    signal_groups(signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT
    for process in processes:
        try:
            process.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
    signal_groups(signal.SIGKILL)
    for process in processes:
        process.wait()


def wait_for_line(log: Path, process: subprocess.Popen, line: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while line not in (log.read_text(errors="replace") if log.exists() else ""):
        if process.poll() is not None or time.monotonic() > deadline:
            pytest.fail(f"a Ray node did not start in {START_TIMEOUT} s: " + log.read_text(errors="replace")[-2000:])
        time.sleep(0.1)


def run_python(code: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *code], env=env, capture_output=True, text=True, timeout=180)


@pytest.fixture(scope="module")
@slow_fixture
def ray_cluster():
    """A two-node Ray cluster on this machine, shared by this module's tests (each leaves it idle:
    its jobs have ended); yields (address, the driver's environment)."""
    temp = tempfile.mkdtemp(prefix="dsr-ray-", dir="/tmp")  # short: Ray's socket paths have a length limit
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "RAY_ADDRESS")}
    env.update(cluster_env(temp))
    port = free_port()
    address = f"127.0.0.1:{port}"  # Ray itself advertises the host's own address; it stays on this host
    logs = [Path(temp) / "head.log", Path(temp) / "node.log"]
    processes = []
    try:
        processes.append(start_node(["--head", f"--port={port}", "--include-dashboard=false"], env, logs[0]))
        wait_for_line(logs[0], processes[0], "Ray runtime started")
        processes.append(start_node([f"--address={address}"], env, logs[1]))
        wait_for_line(logs[1], processes[1], "Ray runtime started")
        # Ray reads its authentication mode when imported, so drivers are processes of their own
        probe = run_python(
            [
                "-c",
                f"import json, ray; ray.init(address={address!r}, logging_level='ERROR'); "
                "print(json.dumps([n['Resources'].get('CPU') for n in ray.nodes() if n['Alive']]))",
            ],
            env,
        )
        assert probe.returncode == 0, probe.stderr[-2000:]
        assert json.loads(probe.stdout.splitlines()[-1]) == [1.0, 1.0]  # two nodes, one CPU each
        yield address, {**env, "PYTHONPATH": str(ROOT)}
    finally:
        stop_nodes(processes[::-1])
        shutil.rmtree(temp, ignore_errors=True)


def test_corpus_build_and_index_on_a_two_node_cluster_equal_the_in_process_build(tmp_path, ray_cluster):
    src = sample_docs(tmp_path / "docs.jsonl", limit=24)
    model = make_tiny_bert(tmp_path / "tiny", [line for line in src.read_text().splitlines()], num_labels=None)
    corpora = {}
    # Encoding runs one actor per node (the smallest node's CPUs each: one here), so with one
    # CPU per node the stage finishes only if both nodes host an encoder. The units' results come
    # back as files the driver reads, so identical files mean the cluster's output is the local one.
    address, env = ray_cluster
    for name, where in (("local", ["--workers", "0"]), ("cluster", ["--ray-address", address])):
        folder = tmp_path / name
        for command in (
            ["build", str(src), "--out", str(folder), "--docs-per-shard", "6"],
            ["index", str(folder), "--bm25", "--dense", "--model", str(model)],
        ):
            if name == "local":  # no Ray: in this process
                assert main(["corpus", *command, *where]) == 0
                continue
            done = run_python(["-m", "dsr.cli", "corpus", *command, *where], env)
            assert done.returncode == 0, done.stderr[-3000:]
        corpora[name] = Corpus(folder)
    local, cluster = corpora["local"], corpora["cluster"]
    assert len(local.names) == 4 and local.manifest["counts"] == cluster.manifest["counts"]
    for rel in [f"shards/{n}.parquet" for n in local.names] + ["bm25/global.parquet"]:
        assert (local.folder / rel).read_bytes() == (cluster.folder / rel).read_bytes(), rel
    assert [ShardedBM25(cluster).search(ShardedBM25(cluster).query_tokens(q), 10) for q in QUERIES] == [
        ShardedBM25(local).search(ShardedBM25(local).query_tokens(q), 10) for q in QUERIES
    ]
    vectors = {
        k: np.concatenate([np.load(p) for p in sorted(c.folder.glob("dense/*/vectors/*.npy"))]) for k, c in corpora.items()
    }
    assert vectors["local"].shape == (len(local), 32)
    assert np.allclose(vectors["local"], vectors["cluster"], atol=1e-5)  # other batches: float rounding
    searches = {
        k: [[row for row, _ in hits] for hits in ShardedDense(c, str(model)).search(QUERIES, 10)] for k, c in corpora.items()
    }
    assert searches["cluster"] == searches["local"]


def test_two_jobs_share_one_corpus_by_part_on_the_cluster_and_a_last_run_finishes_it(tmp_path, ray_cluster, capsys):
    """docs/scale.md's recipe for one corpus over several Ray jobs and nodes: `dsr corpus index
    --dense --part K/N` as N jobs at once against the cluster (each one encoder actor on one
    node's CPU), then one run without --part that finds every shard encoded and writes the
    model file. Vectors and search equal the in-process build's."""
    src = sample_docs(tmp_path / "docs.jsonl", limit=24)
    model = make_tiny_bert(tmp_path / "tiny", [line for line in src.read_text().splitlines()], num_labels=None)
    address, env = ray_cluster
    for name in ("local", "parts"):
        assert main(["corpus", "build", str(src), "--out", str(tmp_path / name), "--docs-per-shard", "6", "--workers", "0"]) == 0
    assert main(["corpus", "index", str(tmp_path / "local"), "--dense", "--model", str(model), "--workers", "0"]) == 0
    folder = tmp_path / "parts"
    jobs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "dsr.cli",
                "corpus",
                "index",
                str(folder),
                "--dense",
                "--model",
                str(model),
                "--ray-address",
                address,
                "--workers",
                "1",
                "--part",
                f"{k}/2",
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for k in (1, 2)
    ]
    outputs = [job.communicate(timeout=240) for job in jobs]
    for job, (_, err) in zip(jobs, outputs):
        assert job.returncode == 0, err[-3000:]
    # each job encoded its own two of the four shards, and neither wrote the model file
    assert ["vectors: built 2, reused 0" in err or "vectors: built 2, reused 2" in err for _, err in outputs] == [True, True]
    assert not list(folder.glob("dense/*/model.json"))
    capsys.readouterr()  # the last run needs no cluster: in this process
    finish = main(["corpus", "index", str(folder), "--dense", "--model", str(model), "--workers", "0"])
    err = capsys.readouterr().err
    assert finish == 0 and "vectors: built 0, reused 4" in err, err[-3000:]
    corpora = {k: Corpus(tmp_path / k) for k in ("local", "parts")}
    vectors = {
        k: np.concatenate([np.load(p) for p in sorted(c.folder.glob("dense/*/vectors/*.npy"))]) for k, c in corpora.items()
    }
    assert vectors["local"].shape == (len(corpora["local"]), 32)
    assert np.allclose(vectors["local"], vectors["parts"], atol=1e-5)
    searches = {
        k: [[row for row, _ in hits] for hits in ShardedDense(c, str(model)).search(QUERIES, 10)] for k, c in corpora.items()
    }
    assert searches["parts"] == searches["local"]
