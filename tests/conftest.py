"""Shared test set-up: an isolated DSR_HOME, no network for models, the suite's tiers, and the
check that a run leaves no process behind.

Helpers live in the ``tests.support`` package (imported as ``tests.support.NAME``; the few that
the benchmarks share are in ``tools/``, imported as ``tools.NAME``). Its fixtures are registered
here once for the whole suite (``pytest_plugins``): a test takes them by name.

**Tiers** (docs/contributing.md): ``make test-fast`` runs ``-m "not slow"``, ``make test``
runs everything. A test is ``slow`` when it starts a server, a database, a browser, a Ray
cluster or a helper process, exports an OpenVINO model, trains a model, reads the real data in
../shared/data, or is slow by the durations report. Most are marked here by the fixtures they take (``tests.support.tiers``), the rest
with ``@pytest.mark.slow`` or a module's ``pytestmark``; a test that starts one of those things
without the mark fails and says so (``tiers.require_slow``; tests/test_tiers.py).

**Nothing left running**: at the end of a run, every process it started and that still runs is
reported, killed and fails the run (``tests.support.processes``); a run interrupted before its
end (SIGINT, SIGTERM, SIGKILL) runs no fixture's teardown, so the fixtures whose servers leave
the run's process group (PostgreSQL, Chromium) leave their stop to a watcher
(``processes.stop_with_me``; tests/board/test_board_interrupted.py).
"""

from __future__ import annotations

import functools
import gc
import multiprocessing.util
import os
import shutil
import sys
import tempfile

import pytest
from hypothesis import settings

from tests.support import order, processes, tiers

pytest_plugins = [
    "tests.support.data",
    "tests.support.board",
    "tests.support.tool_runs",
    "tests.support.exports",
    "tests.support.disk",
    "tests.support.judging",
]

# No time limit per example: hypothesis' default deadline fails an example that a loaded
# machine or a parallel run slows down, and speed targets live in the benchmarks (bench/), never
# in timed tests.
settings.register_profile("dsr", deadline=None)
settings.load_profile("dsr")

# Never let a test reach the Hugging Face hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if tiers.is_slow_by_rule(item):
            item.add_marker(pytest.mark.slow)
    # the costliest modules first (tests/support/order.py), so the long tests start early
    order.check_groups(items)
    cache = getattr(config, "cache", None)
    order.by_cost(items, cache.get(order.KEY, {}) if cache is not None else {})


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config):
    """``-n auto``: for the whole suite, one worker more than the cores this process may run on
    (where PYTEST_XDIST_AUTO_NUM_WORKERS is set, xdist's own hook reads it). Part of a 2-core
    run's CPU stood idle while workers waited on their servers, browsers, clusters and
    subprocesses; a third worker fills it (the suite was quickest so). The fast tier
    (``-m "not slow"``) starts none of those, so a worker more only adds its own collection and
    imports: one worker per core."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # the next implementation (xdist's) answers
    return tiers.auto_workers(config, len(os.sched_getaffinity(0)))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadgroup`` with the xdist groups of tests/support/order.py (pytest 9 ignores the marks)."""
    return order.make_scheduler(config, log)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """While a test is set up, run and torn down, what starts a server, an export, ... knows
    which test it is in (:func:`tests.support.tiers.require_slow`)."""
    tiers.running(item)
    # What earlier tests and imports left on the heap is frozen while this one runs: a full
    # collection (accelerate's Trainer makes one at every training start; Python's own, as objects
    # pile up) scans only what this test made. In a worker that has run hundreds of tests those
    # scans took a large share of a run. Unfrozen after it (splicing a list: free), so what became garbage
    # is collected as before.
    gc.freeze()
    try:
        return (yield)
    finally:
        gc.unfreeze()
        tiers.running(None)


def pytest_configure(config):
    # an xdist worker shares the cores with the others: torch's and BLAS's thread pools sized to
    # its share, not to the machine (N workers of N threads each only fight over the cores)
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1)
    if workers > 1:
        share = str(max(1, len(os.sched_getaffinity(0)) // workers))
        for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
            os.environ.setdefault(name, share)
    processes.mark_this_run()
    tiers.install_guards()
    share_tls_contexts()
    session_temp_folder(config)
    if not hasattr(config, "workerinput"):  # where the reports arrive: keep the modules' costs
        config.pluginmanager.register(order.Timings(config), "dsr-module-timings")
    # what module- and session-scoped fixtures see too (the per-test dsr_home below sets both
    # again): never the user's own ~/.cache/dsr, and the exact backend; in the run's temporary
    # folder, which goes at the run's end (session_temp_folder)
    os.environ["DSR_HOME"] = tempfile.mkdtemp(prefix="dsr-test-home-")
    os.environ["DSR_BACKEND"] = "torch"


def share_tls_contexts() -> None:
    """One TLS context per setting in each process of the run. httpx makes one for every client
    (loading the CA bundle), and every ``httpx.get``/``post`` is a client of its own: the tests'
    clients to their loopback servers (plain http) spent a noticeable share of a run there. A
    context is safe to share between clients and threads; where httpx's layout differs this
    does nothing."""
    try:
        from httpx._transports import default
    except ImportError:
        return
    made = getattr(default, "create_ssl_context", None)
    if made is not None and not hasattr(made, "cache_info"):
        default.create_ssl_context = functools.lru_cache(maxsize=16)(made)


#: the environment variable naming the run's temporary folder (set by the process that starts the run)
TEMP_MARK = "DSR_TEST_TMPDIR"


def session_temp_folder(config) -> None:
    """One temporary folder for the run, in the system's (TMPDIR, for this process and every
    process it starts: xdist's workers, servers, their scoring workers' forkserver), removed at
    the end of the run by the process that made it. What a process leaves in TMPDIR when it is
    killed, or when it ends without Python's exit handlers (``os._exit`` in a forked server),
    goes with it: multiprocessing's ``pymp-*`` folders (a forkserver's listener socket) were
    ~250 a run left in /tmp. Readable by others (0755): the throwaway PostgreSQL runs as
    postgres in a folder made here."""
    if os.environ.get(TEMP_MARK):  # an xdist worker: its controller's folder
        return
    # pytest's basetemp (tmp_path: kept for the last three runs) stays where it was
    os.environ.setdefault("PYTEST_DEBUG_TEMPROOT", tempfile.gettempdir())
    folder = tempfile.mkdtemp(prefix="dsr-test-tmp-")
    os.chmod(folder, 0o755)
    os.environ[TEMP_MARK] = os.environ["TMPDIR"] = folder
    tempfile.tempdir = None  # gettempdir() reads TMPDIR again
    # removed at this process's exit, after multiprocessing's own exit handlers (which remove
    # this process's pymp-* folder in it, at exitpriority -100, and printed a traceback when the
    # folder had gone at pytest's cleanup before them); never in a forked child (the finalizer
    # keeps its process id)
    multiprocessing.util.Finalize(None, shutil.rmtree, args=(folder,), kwargs={"ignore_errors": True}, exitpriority=-200)


@pytest.hookimpl(tryfirst=True)
def pytest_unconfigure(config):
    """The heap frozen before pytest's last collections (five full ones, for unraisable
    exceptions): in a worker that has run a few hundred tests they took longer than the time
    xdist's gateway gives a worker to end, and it then sent the worker a SIGINT, whose
    KeyboardInterrupt printed a warning under the run's last line."""
    gc.freeze()


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session, exitstatus):
    """Fail the run when a process started during it is still running at its end (in the
    xdist controller, after its workers are gone; a worker does not check)."""
    if hasattr(session.config, "workerinput"):
        return
    left = processes.strays(os.environ[processes.MARK])
    if not left:
        return
    lines = [processes.describe(p) for p in left]
    processes.kill_all(left)
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    message = (
        "the test run left these processes running (killed now; a test or fixture "
        "must stop what it starts):\n  " + "\n  ".join(lines)
    )
    if reporter is not None:
        reporter.ensure_newline()
        reporter.write_sep("=", "processes left behind", red=True)
        reporter.write_line(message)
    else:
        print(message, file=sys.stderr)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(autouse=True)
def dsr_home(tmp_path_factory, monkeypatch):
    """Every test gets its own empty DSR_HOME, and ``backend=auto`` means torch (the exact path:
    an int8 export per test's fresh home would be slow; tests of auto unset DSR_BACKEND)."""
    home = tmp_path_factory.mktemp("dsr_home")
    monkeypatch.setenv("DSR_HOME", str(home))
    monkeypatch.setenv("DSR_BACKEND", "torch")
    return home


@pytest.fixture(autouse=True)
def library_log_handlers_write_to_this_tests_stderr():
    """Libraries (transformers, huggingface_hub, ...) keep StreamHandlers bound to the
    sys.stderr of the test that first configured them; pytest closes that stream after the
    test, and a later log line would print a "Logging error" traceback into another test's
    captured output. Rebind every handler whose stream is closed."""
    import logging

    loggers = [logging.getLogger()] + [lg for lg in logging.Logger.manager.loggerDict.values() if isinstance(lg, logging.Logger)]
    for logger in loggers:
        for handler in logger.handlers:
            stream = getattr(handler, "stream", None)
            if isinstance(handler, logging.StreamHandler) and getattr(stream, "closed", False):
                handler.stream = sys.stderr  # not setStream: it flushes the closed stream
    yield
