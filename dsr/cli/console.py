"""What the command line does before a command runs: multi-value options that stop where
the positionals begin, and progress bars only on a terminal.

**Multi-value options.** argparse lets ``--measures RR a.run b.run`` swallow the run
files (``nargs="+"`` takes every word up to the next option). :func:`end_multi_values`
ends such an option where a positional begins: a word that is an existing file or
folder, looks like one (a ``/`` or a run, qrels or data suffix), or is a registered
collection name; a ``NAME=VALUE`` option (``--param``) also ends at a word without
``=``. The positionals found there are moved in front of the option, so argparse reads
them in the order given. Every multi-value option also takes a comma list.

**Progress bars.** tqdm bars and the Hugging Face bars ("Loading weights") are for a
person watching a terminal; in a log or CI output they are hundreds of carriage
returns. :func:`progress_only_on_a_terminal` turns them all off when stderr is not a
terminal: ``TQDM_DISABLE`` for tqdm (callers pass ``disable=None`` or leave it
unset), ``HF_HUB_DISABLE_PROGRESS_BARS`` and the transformers/huggingface_hub
switches for libraries already imported.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from dsr.collections import REGISTERED

#: suffixes of the files commands take as positionals (runs, qrels, benchmarks, tables)
FILE_SUFFIXES = (".run", ".trec", ".txt", ".tsv", ".gz", ".jsonl", ".json", ".csv", ".parquet", ".qrels")


def _multi_value_options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {opt: a for a in parser._actions if a.option_strings and a.nargs in ("+", "*") for opt in a.option_strings}


def starts_positional(word: str, action: argparse.Action) -> bool:
    """Whether ``word``, met while ``action`` (a multi-value option) reads values, is a positional.
    An option whose values are files (``takes_files`` set on the action, as ``dsr pool --runs``)
    keeps every word up to the next option but a collection: a registered name or a
    benchmark ``.jsonl`` file. For an option whose values are names (``takes_names``, as ``dsr
    judge assign --assessors``), a word naming a file or folder of the working directory is
    still a name."""
    if getattr(action, "takes_files", False):
        return word in REGISTERED or word.lower().endswith((".jsonl", ".jsonl.gz"))
    if "=" in str(action.metavar or "") and "=" not in word:
        return True  # --param NAME=VALUE: a word without "=" is not a value
    if "=" in word and not Path(word).exists():
        return False
    exists = Path(word).exists() and not getattr(action, "takes_names", False)
    return exists or "/" in word or word.lower().endswith(FILE_SUFFIXES) or word in REGISTERED


def end_multi_values(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """``argv`` with the positionals a multi-value option would swallow moved in front of it."""
    multi = _multi_value_options(parser)
    if not multi or not any(not a.option_strings for a in parser._actions):
        return list(argv)
    out: list[str] = []
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--":
            return out + list(argv[i:])
        action = multi.get(word)
        if action is None:
            out.append(word)
            i += 1
            continue
        values: list[str] = []
        moved: list[str] = []
        i += 1
        while i < len(argv) and not (argv[i].startswith("-") and argv[i] != "-"):
            if moved or (values and starts_positional(argv[i], action)):
                moved.append(argv[i])
            else:
                values.append(argv[i])
            i += 1
        out += moved + [word] + values
    return out


def progress_only_on_a_terminal() -> None:
    """Progress bars off when stderr is not a terminal (a log, a pipe, CI)."""
    if sys.stderr.isatty():
        return
    os.environ["TQDM_DISABLE"] = "1"
    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
    if "huggingface_hub" in sys.modules:
        from huggingface_hub.utils import disable_progress_bars

        disable_progress_bars()
    if "transformers" in sys.modules:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
