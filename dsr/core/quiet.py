"""Only dsr's own lines on a user's screen and in a log; the libraries' only with ``--verbose``.

The libraries dsr calls print for their developers: transformers' FutureWarnings and
advisory log lines (``loss_type=None ...``), torch's TracerWarnings with the source line
they point at, NNCF's progress bars (on standard output, so into a log too), Hugging
Face's "Loading weights" bars. None of it tells a user of dsr anything, and a first run
buried the table under it (issue 39). So:

* :func:`quiet_libraries` (the command line calls it once, before a command runs):
  warnings raised outside dsr are not shown, the libraries' loggers print errors only,
  the Hugging Face progress bars are off; ``--verbose`` (a command's flag) or
  ``DSR_VERBOSE=1`` keeps everything as the libraries left it.
* :func:`muted` (around the OpenVINO export and a training run, whoever calls them):
  NNCF's and every other rich progress display are off, NNCF logs errors only.
* :func:`progress_shown`: dsr's own progress (a stage line, a notice that an index is
  built, a tqdm bar) goes to stderr, and only when stderr is a terminal. Errors and
  warnings of dsr (a damaged cache rebuilt, a stale sidecar) are printed everywhere.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
import warnings
from collections.abc import Iterator

#: ``DSR_VERBOSE=1``: the libraries' warnings, log lines and bars are shown (what ``--verbose`` sets)
VERBOSE_ENV = "DSR_VERBOSE"
#: the loggers of the libraries dsr calls (their children follow them)
LOGGERS = (
    "transformers",
    "sentence_transformers",
    "nncf",
    "openvino",
    "huggingface_hub",
    "datasets",
    "accelerate",
    "torch",
    "filelock",
    "urllib3",
    "ray",
)
#: read by transformers, datasets and huggingface_hub when they are imported (after this is set)
QUIET_ENVIRONMENT = {
    "TRANSFORMERS_VERBOSITY": "error",
    "DATASETS_VERBOSITY": "error",
    "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
}


def verbose() -> bool:
    """Whether the libraries' own output is wanted (``--verbose``, ``DSR_VERBOSE=1``)."""
    return os.environ.get(VERBOSE_ENV, "").strip() not in ("", "0")


def set_verbose() -> None:
    """Show the libraries' output from now on, in this process and the ones it starts."""
    os.environ[VERBOSE_ENV] = "1"


def progress_shown() -> bool:
    """Whether dsr's own progress is printed: stderr is a terminal (never into a log or a pipe)."""
    return bool(getattr(sys.stderr, "isatty", lambda: False)())


def progress(message: str) -> None:
    """One line of dsr's own progress on stderr, on a terminal only."""
    if progress_shown():
        print(message, file=sys.stderr, flush=True)


def quiet_libraries() -> None:
    """Unless verbose: warnings raised outside dsr ignored, the libraries' loggers at ERROR (also
    those imported later: :data:`QUIET_ENVIRONMENT`), the Hugging Face progress bars off."""
    if verbose():
        return
    warnings.filterwarnings("ignore")
    warnings.filterwarnings("default", module=r"dsr(\.|$)")  # dsr's own stay shown
    for key, value in QUIET_ENVIRONMENT.items():
        os.environ.setdefault(key, value)
    for name in LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR)
    if "transformers" in sys.modules:  # imported already: its own switches
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
    if "huggingface_hub" in sys.modules:
        from huggingface_hub.utils import disable_progress_bars

        disable_progress_bars()


def quiet_loggers(*names: str) -> None:
    """Unless verbose: the loggers ``names`` and their handlers at ERROR (for a library that sets
    its own levels when imported, as NNCF does)."""
    if verbose():
        return
    for name in names:
        logger = logging.getLogger(name)
        logger.setLevel(logging.ERROR)
        for handler in logger.handlers:
            handler.setLevel(logging.ERROR)


@contextlib.contextmanager
def muted() -> Iterator[None]:
    """Inside, unless verbose: no rich progress display (NNCF's bars write to standard output),
    the libraries' loggers at ERROR, and in the main thread no warning at all. rich's console
    is one per process: a display another thread starts meanwhile is muted too (dsr draws
    none). Warnings are filtered per process, so in another thread (``dsr reproduce`` exports
    beside its BM25 stage) the command line's :func:`quiet_libraries` keeps them off."""
    if verbose():
        yield
        return
    quiet_loggers("nncf", "transformers", "sentence_transformers")
    with contextlib.ExitStack() as stack:
        if threading.current_thread() is threading.main_thread():
            stack.enter_context(warnings.catch_warnings())
            warnings.simplefilter("ignore")
        stack.enter_context(_rich_quiet())
        yield


@contextlib.contextmanager
def _rich_quiet() -> Iterator[None]:
    try:
        import rich
    except ImportError:  # no rich, no rich bars
        yield
        return
    console = rich.get_console()
    was = console.quiet
    console.quiet = True
    try:
        yield
    finally:
        console.quiet = was
