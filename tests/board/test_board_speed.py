"""The board's one parse of a run (dsr/board/runcheck.py), its scoring workers and its upload
limit that follows the collection. Speed itself is measured by bench/bench_board.py."""

from __future__ import annotations

import numpy as np
import pytest

from dsr.board import runcheck, scoring, service
from dsr.board.intake import ranking_digest
from dsr.board.service import MAX_UPLOAD, Metadata, Refused
from dsr.board.workers import ScoringPool, WorkerGone
from dsr.collections.synthetic import make_collection, make_run
from dsr.core.data import write_benchmark
from dsr.core.run import read_trec_run
from dsr.evaluation.validate import validate_run
from tests.support.board import make_board, read


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    folder = tmp_path_factory.mktemp("synthetic")
    collection = make_collection(n=40, seed=3)
    write_benchmark(collection, folder / "c.jsonl")
    return collection, folder


def _variants(collection, folder):
    """Runs the fast path must read exactly as the line-by-line readers do."""
    plain = folder / "plain.run"
    make_run(collection, seed=1, quality=0.5).write(plain, sidecar=False)
    ties = folder / "ties.run"
    make_run(collection, seed=2, ties=True).write(ties, sidecar=False)
    text = ties.read_bytes()
    lines = text.splitlines()
    yield "plain", plain.read_bytes()
    yield "ties", text
    yield (
        "crlf, blank lines, tabs, 0 for Q0, no final newline",
        (b"\r\n".join(line.replace(b" Q0 ", b"\t0  ") for line in lines[::-1]) + b"\n\n  \n" + lines[0][:0]),
    )
    yield (
        "scores written otherwise",
        b"\n".join(
            line.rsplit(b" ", 2)[0] + b" " + format(float(line.split()[4]) * 10, ".9f").encode() + b"e-1 tag2" for line in lines
        ),
    )
    yield (
        "two tags (one not ASCII), no final newline",
        b"\n".join(line if k % 2 else line.rsplit(b" ", 1)[0] + ' t"x\\é'.encode() for k, line in enumerate(lines)),
    )


def test_the_one_parse_reads_valid_runs_as_the_validator_reader_and_digest_do(synthetic, tmp_path):
    collection, folder = synthetic
    index = runcheck.PairIndex.of(collection)
    for name, data in _variants(collection, folder):
        path = tmp_path / "run.run"
        path.write_bytes(data)
        parsed = runcheck.parse(index, data)
        assert parsed is not None, name
        validation = validate_run(collection, path)
        assert validation.valid, (name, validation.problems[:2])
        assert parsed.lines == validation.lines, name
        assert sorted(parsed.tied_topics) == sorted(validation.tied_topics), name
        assert set(parsed.tags) == set(validation.tags), name
        assert parsed.ranking_sha256 == ranking_digest(data), name
        expected = read_trec_run(path).as_dict()
        assert list(parsed.scores) == collection.ids
        for qid, ranked in expected.items():  # the same docs, order and (tie rule) scores
            assert list(parsed.scores[qid].items()) == list(ranked.items()), (name, qid)
    assert runcheck.parse(index, next(_variants(collection, folder))[1]).tied_topics == []


def _edit(data: bytes, line: int, old: bytes, new: bytes) -> bytes:
    lines = data.split(b"\n")
    assert old in lines[line]
    lines[line] = lines[line].replace(old, new, 1)
    return b"\n".join(lines)


def test_anything_but_a_plain_valid_run_goes_to_the_line_by_line_validator(synthetic):
    collection, folder = synthetic
    index = runcheck.PairIndex.of(collection)
    data = next(_variants(collection, folder))[1]
    first = data.split(b"\n")[0]
    qid, _, doc, rank, score, tag = first.decode().split()
    cases = {
        "comment": b"# ir_metadata\n" + data,
        "five columns": _edit(data, 3, b" Q0 ", b" "),
        "seven and five columns": _edit(_edit(data, 3, b" Q0 ", b" "), 4, b" Q0 ", b" Q0 x "),
        "Q1": _edit(data, 0, b" Q0 ", b" Q1 "),
        "score 1_0": _edit(data, 0, f" {score} ".encode(), b" 1_0 "),
        "score inf": _edit(data, 0, f" {score} ".encode(), b" inf "),
        "score 1e39": _edit(data, 0, f" {score} ".encode(), b" 1e39 "),
        "score 1e": _edit(data, 0, f" {score} ".encode(), b" 1e "),
        "unknown doc": _edit(data, 0, f" {doc} ".encode(), b" nowhere "),
        "unknown topic": _edit(data, 0, f"{qid} ".encode(), b"elsewhere "),
        "duplicate": data + first + b"\n",
        "missing topic": b"\n".join(line for line in data.split(b"\n") if not line.startswith(qid.encode())),
        "not UTF-8": _edit(data, 0, f" {tag}".encode(), b" t\xe1g"),
        "U+FFFD": _edit(data, 0, f" {tag}".encode(), " t\ufffdg".encode()),
        "no-break space": _edit(data, 0, f" {tag}".encode(), " t\u00a0g".encode()),
        "ideographic space": _edit(data, 0, f" {tag}".encode(), " t\u3000g x".encode()),
        "empty": b" \n\n",
    }
    for name, bad in cases.items():
        assert runcheck.parse(index, bad) is None, name


def test_a_phase_upload_limit_follows_its_collection(tmp_path, synthetic):
    collection, folder = synthetic
    board = make_board(f"sqlite:///{tmp_path / 'b.sqlite'}", tmp_path)
    phase = board.phases.add_phase(str(folder / "c.jsonl"), "dev")
    assert board.upload_limit(phase) == MAX_UPLOAD  # a small collection: the floor
    pairs = board.phase_data(phase).pairs()
    assert pairs.id_chars == sum(len(d.id) + len(c.id) for d in collection.dialogues for c in d.candidates)
    board.close()
    fixed = make_board(f"sqlite:///{tmp_path / 'b.sqlite'}", tmp_path, max_upload_mb=0.001)
    assert fixed.upload_limit(phase) == fixed.upload_limit() == int(0.001 * 2**20) == 1048
    with pytest.raises(Refused) as refused:
        fixed.submit(fixed.members.add_team("t") and _team(fixed, "t"), phase, b"x" * 1049, "r.run", Metadata("s"))
    assert refused.value.status == 413
    fixed.close()


@pytest.mark.slow
def test_the_limit_grows_past_the_floor_with_a_large_collection(tmp_path):
    big = make_collection(n=3000, candidates=50, seed=0)  # 150k pairs: a full-depth run ~9 MB
    write_benchmark(big, tmp_path / "big.jsonl")
    run = tmp_path / "full.run"
    make_run(big, seed=0).write(run, sidecar=False)
    board = make_board(f"sqlite:///{tmp_path / 'b.sqlite'}", tmp_path)
    phase = board.phases.add_phase(str(tmp_path / "big.jsonl"), "dev")
    limit = board.upload_limit(phase)
    assert limit > MAX_UPLOAD and limit >= 2 * run.stat().st_size
    assert board.upload_limit() == limit  # the request body's cap: the largest
    board.close()


def _team(board, name):
    from sqlalchemy import select

    from dsr.board.models import Team
    from dsr.db.engine import read_session

    with read_session(board.engine) as s:
        return s.scalar(select(Team).where(Team.name == name))


def test_scoring_workers_give_the_answers_scoring_in_the_request_thread_gives(tmp_path, runs, monkeypatch):
    """The same runs on two boards, one scoring in worker processes: the same means and
    per-topic values, the same refusals (invalid: the validator's problems; duplicate: 409)."""
    monkeypatch.setattr(service, "POOL_MIN_BYTES", 0)  # the sample's runs go to the workers too
    calls = []
    monkeypatch.setattr(ScoringPool, "score", lambda self, *a, _score=ScoringPool.score: calls.append(1) or _score(self, *a))
    answers = {}
    for workers in (0, 2):
        folder = tmp_path / f"w{workers}"
        board = make_board(f"sqlite:///{folder / 'b.sqlite'}", folder, workers=workers)
        phase = board.phases.add_phase("sample", "dev")
        board.members.add_team("t")
        team = _team(board, "t")
        pairs = board.phase_data(phase).pairs()
        assert not read(runs / "bm25.run").isascii()  # ids such as Hägar_the_Horrible_...
        assert runcheck.parse(pairs, read(runs / "bm25.run")).ranking_sha256 == ranking_digest(read(runs / "bm25.run"))
        out = []
        for name in ("bm25", "random0", "random1"):
            accepted = board.submit(team, phase, read(runs / f"{name}.run"), f"{name}.run", Metadata(name))
            out.append((accepted.answer["means"], board.matrix(accepted.row, len(board.phase_data(phase).measures))))
        text = read(runs / "bm25.run")
        doc = text.split()[2]
        bad = text.replace(b" " + doc + b" ", b" nowhere ", 1)
        for data in (bad, read(runs / "bm25.run").replace(b"\n", b"\r\n")):
            with pytest.raises(Refused) as refused:
                board.submit(team, phase, data, "bad.run", Metadata("bad"))
            out.append((refused.value.status, refused.value.problems))
        answers[workers] = out
        assert (board.pool is not None) == bool(workers)
        # a refused (quota) run's duplicate check: the same digest from a worker
        assert board._ranking(read(runs / "bm25.run")) == ranking_digest(read(runs / "bm25.run"))
        board.close()
    for a, b in zip(answers[0], answers[2]):
        if isinstance(a[1], np.ndarray):
            assert a[0] == b[0] and np.array_equal(a[1], b[1])
        else:
            assert a == b
    assert answers[0][3][0] == 422 and "nowhere" in answers[0][3][1][0]["message"]
    assert answers[0][4][0] == 409
    assert len(calls) == 5  # every run of the second board


@pytest.mark.slow
def test_a_ladder_phase_imports_scipy_before_the_write_lock_and_serve_at_start(tmp_path, runs, monkeypatch):
    """A hidden phase's answer runs the ladder's t-test, which needs scipy.stats (a slow
    import). Imported under the write lock, it held every other writer back: the p95's
    tail. A submission to a ladder phase imports it before its transaction; ``dsr serve``'s
    ``Board.warm_up`` at start (checked in a fresh interpreter: nothing had imported it)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from dsr.board import release
    from tests.support.board import setup_phases

    board = make_board(f"sqlite:///{tmp_path / 'b.sqlite'}", tmp_path)
    public, hidden = setup_phases(board, runs, daily_quota=3)
    token = board.members.add_team("t")
    team = board.members.team_for_token(token)
    calls = []
    monkeypatch.setattr(release, "warm", lambda: calls.append("warm"))
    record = service.Board._record
    monkeypatch.setattr(service.Board, "_record", lambda self, *a: calls.append("record") or record(self, *a))
    board.submit(team, public, read(runs / "random0.run"), "r0.run", Metadata("r0"))
    board.submit(team, hidden, read(runs / "random1.run"), "r1.run", Metadata("r1"))
    board.submit(team, hidden, read(runs / "random2.run"), "r2.run", Metadata("r2"))
    assert calls == ["record", "warm", "record", "warm", "record"]
    board.close()

    db, store = f"sqlite:///{tmp_path / 'b.sqlite'}", str(tmp_path / "store")
    script = (
        "import sys; from dsr.board.service import Board, BoardConfig; "
        f"b = Board(BoardConfig(db={db!r}, store={store!r})); "
        "before = 'scipy.stats' in sys.modules; b.warm_up(); "
        "print(before, 'scipy.stats' in sys.modules, b.cache.held()['phases']); b.close()"
    )
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, "-c", script],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(root)},
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["False", "True", "2"]


@pytest.mark.slow
def test_a_scoring_worker_that_dies_is_replaced_and_phases_reach_new_workers(tmp_path, runs):
    """A worker killed between calls fails the one call that meets it (``WorkerGone``) and is
    replaced: the calls after it are answered (``ProcessPoolExecutor``'s pool stayed broken for
    every later run). A phase added after the pool started reaches each worker once, whole,
    the first time it scores that phase's run; the answers are the request thread's."""
    board = make_board(f"sqlite:///{tmp_path / 'b.sqlite'}", tmp_path, workers=1)
    try:
        phase = board.phases.add_phase("sample", "dev")  # after the pool's start: no worker has it
        spec, text = board.phase_spec(phase), read(runs / "bm25.run")
        here = scoring.score_text(board.phase_data(phase), text, False, board.store.scratch)
        pool = board.pool
        first = pool._all[0].process
        for _ in range(2):  # the spec sent once, then named by its key
            checked = pool.score(spec, "sample/dev", text, False)
            assert checked.ranking == here.ranking and np.array_equal(checked.scored.values.values, here.scored.values.values)
        first.kill()
        first.join(10)
        with pytest.raises(WorkerGone):
            pool.digest(text)
        assert len(pool._all) == 1 and pool._all[0].process is not first and pool._all[0].process.is_alive()
        assert pool.digest(text) == ranking_digest(text)
        assert pool.score(spec, "sample/dev", text, False).ranking == here.ranking  # the new worker: sent again
        fresh = pool._all[0].process
    finally:
        board.close()
    assert not fresh.is_alive()


@pytest.mark.slow
def test_a_phase_s_spec_reaches_each_scoring_worker_once(tmp_path, runs, monkeypatch):
    """A worker that has not seen a phase gets its spec on the same call, so each worker is
    sent it once, however the calls are spread over the workers (the spec sent to whichever
    worker was idle next left the first one without it, paying two round trips a run)."""
    board = make_board(f"sqlite:///{tmp_path / 'b.sqlite'}", tmp_path, workers=2)
    try:
        phase = board.phases.add_phase("sample", "dev")  # after the pool's start: no worker has it
        spec, text = board.phase_spec(phase), read(runs / "bm25.run")
        here = scoring.score_text(board.phase_data(phase), text, False, board.store.scratch)
        pool, sent = board.pool, []
        real_ask = pool._ask

        def ask(worker, function, *args):
            sent.append((worker.process.pid, args[1] is not None))
            return real_ask(worker, function, *args)

        monkeypatch.setattr(pool, "_ask", ask)
        for _ in range(6):
            assert pool.score(spec, "sample/dev", text, False).ranking == here.ranking
        with_spec = [pid for pid, whole in sent if whole]
        assert sorted(with_spec) == sorted({pid for pid, _ in sent}) and len(with_spec) == 2, sent
        assert len(sent) == 6 + 2  # one call a run, and one more the first time a worker meets the phase
    finally:
        board.close()
