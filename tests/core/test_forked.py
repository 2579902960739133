"""dsr.core.forked: pieces of one computation in forked workers, in order, errors as raised serially."""

from __future__ import annotations

import os

import numpy as np
import pytest

from dsr.core import forked
from dsr.core.errors import InputError


def test_answers_come_back_in_order_from_other_processes():
    table = np.arange(40.0).reshape(20, 2)      # a closure over memory: inherited, never pickled

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
        assert inner_pids == {pid}          # serial inside a worker


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
