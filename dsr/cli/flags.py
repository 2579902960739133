"""The one place the command line maps the library's parameter names to its flags.

The library's errors name the Python parameter (``InputError(..., field="max_steps")``),
so a script calling :func:`dsr.train` reads ``max_steps``; the command line shows the
same error as ``--max-steps``.
"""

from __future__ import annotations

import argparse
import re

from dsr.core.errors import InputError

#: library parameter names that differ from the flag's dest (``make_ranker(name, **params)``
#: -> ``--param``)
DEST_OF = {
    "params": "param",
    "subsets": "subset",
    "families": "tune",
    "url": "db",
    "labels": "qrels",
    "phase_name": "phase",
    "display": "name",
    "directory": "report",
    "collection_ref": "collection",
    "allow_mismatch": "allow_collection_mismatch",
    "paths": "runs",
    "fmt": "format",
}


def shown_as_flag(err: InputError, parser: argparse.ArgumentParser, args: argparse.Namespace) -> InputError:
    """``err`` with the Python parameters it names shown as the command's flags: the one
    mapping from the library's names (``max_steps``, ``out``) to the command line's
    (``--max-steps``, ``--out``; a positional by its metavar, ``COLLECTION``).

    Its field is mapped, and so is a parameter its message names in backticks (the library
    writes "lower `min_dialogues`"; the command line shows "lower --min-dialogues"). A field
    of a file's record is left alone unless the file is the very value of that flag
    (``--out FILE``), so a benchmark's ``target`` field is not shown as ``--target``.
    """
    err.message = re.sub(r"`([a-z][a-z0-9_]*)`", lambda m: _flag(parser, m.group(1)) or m.group(0), err.message)
    dest = _dest(parser, err.field)
    action = _action(parser, dest)
    if action is None or dest is None:  # (an action is found only for a dest)
        return err
    if err.path is not None and str(getattr(args, dest, None)) != err.path:
        return err
    if action.option_strings:
        err.field = max(action.option_strings, key=len)
    else:
        err.field = action.metavar if isinstance(action.metavar, str) else dest.upper()
    return err


def _dest(parser: argparse.ArgumentParser, name: str | None) -> str | None:
    """The dest of parameter ``name`` in this command: its own name when a flag has it as its
    dest (a Param's flag: ``fmt`` is ``--run-format``), else :data:`DEST_OF`'s."""
    return name if _action(parser, name) is not None else DEST_OF.get(name or "", name)


def _action(parser: argparse.ArgumentParser, dest: str | None) -> argparse.Action | None:
    return next((a for a in parser._actions if a.dest == dest and dest), None)


def _flag(parser: argparse.ArgumentParser, name: str) -> str | None:
    """The flag of parameter ``name`` in this command (None when it has none)."""
    action = _action(parser, _dest(parser, name))
    return max(action.option_strings, key=len) if action is not None and action.option_strings else None
