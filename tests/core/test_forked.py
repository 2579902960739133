"""dsr.core.forked: pieces of one computation in forked workers, in order, errors as raised serially."""

from __future__ import annotations

import os

import numpy as np
import pytest

from dsr.core import forked
from dsr.core.errors import InputError


def test_answers_come_back_in_order_from_other_processes():
    table = np.arange(40.0).reshape(20, 2)  # a closure over memory: inherited, never pickled

    def work(i):
        return i, os.getpid(), table[i].sum()

    got = list(forked.forked_map(work, 20, workers=2))
    assert [i for i, _, _ in got] == list(range(20))
    assert [s for _, _, s in got] == [float(table[i].sum()) for i in range(20)]
    assert os.getpid() not in {pid for _, pid, _ in got}
    assert {pid for _, pid, _ in forked.forked_map(work, 20, workers=1)} == {os.getpid()}


def test_an_error_in_a_piece_is_raised_here_with_its_fields():
    def work(i):
        if i == 7:
            raise InputError("piece 7 is wrong", field="k", record="r7")
        return i

    with pytest.raises(InputError, match="piece 7 is wrong") as caught:
        list(forked.forked_map(work, 12, workers=2))
    assert (caught.value.field, caught.value.record) == ("k", "r7")


def test_a_worker_does_not_fork_again():
    def inner(i):
        return os.getpid()

    def outer(i):
        return os.getpid(), set(forked.forked_map(inner, 4, workers=2))

    for pid, inner_pids in forked.forked_map(outer, 2, workers=2):
        assert inner_pids == {pid}  # serial inside a worker


def test_dsr_workers_sets_the_default(monkeypatch):
    monkeypatch.setenv("DSR_WORKERS", "1")
    assert forked.default_workers() == 1
    assert {p for p in forked.forked_map(lambda i: os.getpid(), 5)} == {os.getpid()}
    monkeypatch.setenv("DSR_WORKERS", "3")
    assert forked.default_workers() == 3
    monkeypatch.delenv("DSR_WORKERS")
    assert 1 <= forked.default_workers() <= forked.MAX_WORKERS


def test_nothing_is_forked_while_a_thread_is_in_no_fork():
    import threading

    inside, leave = threading.Event(), threading.Event()

    def busy():
        with forked.no_fork():
            inside.set()
            leave.wait(30)

    thread = threading.Thread(target=busy)
    thread.start()
    try:
        assert inside.wait(30)
        assert not forked.can_fork()
        assert set(forked.forked_map(lambda i: os.getpid(), 6, workers=2)) == {os.getpid()}
    finally:
        leave.set()
        thread.join()
    assert forked.can_fork()
    assert os.getpid() not in set(forked.forked_map(lambda i: os.getpid(), 6, workers=2))


@pytest.mark.parametrize("pool", ["forked_map", "drawing"])
def test_workers_end_with_the_process_that_forked_them_even_when_it_is_killed(pool, tmp_path):
    """A SIGKILLed command leaves no worker waiting on its queue (two orphaned workers of a
    killed ``dsr reproduce`` once long outlived it): every worker ends with it."""
    import signal
    import time

    from dsr.evaluation import drawing

    pids = tmp_path / "pids"
    command = os.fork()
    if command == 0:  # the "command": starts a pool whose workers write their pids, then hangs
        try:
            if pool == "forked_map":
                list(forked.forked_map(lambda i: _write_pid_and_wait(pids), 2, workers=2))
            else:
                started = drawing.start_workers(2)
                for _ in range(2):
                    started.pool.submit(_write_pid_and_wait, pids)
                time.sleep(60)
        finally:
            os._exit(0)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and len(_lines(pids)) < 2:
        time.sleep(0.05)
    workers = [int(pid) for pid in _lines(pids)]
    assert len(workers) == 2 and command not in workers
    os.kill(command, signal.SIGKILL)
    os.waitpid(command, 0)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_running(pid) for pid in workers):
        time.sleep(0.05)
    assert not any(_running(pid) for pid in workers), "a worker outlived the killed command"


def _write_pid_and_wait(path) -> None:
    import time

    with open(path, "a") as out:
        out.write(f"{os.getpid()}\n")
    time.sleep(60)


def _lines(path) -> list[str]:
    return path.read_text().split() if path.exists() else []


def _running(pid: int) -> bool:
    """Alive and not a zombie (an orphan's zombie is reaped by init)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
