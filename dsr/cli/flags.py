"""The one place the command line maps the library's parameter names to its flags.

The library's errors name the Python parameter (``InputError(..., field="max_steps")``),
so a script calling :func:`dsr.train` reads ``max_steps``; the command line shows the
same error as ``--max-steps``.
"""

from __future__ import annotations

import argparse

from dsr.core.errors import InputError

#: library parameter names that differ from the flag's dest (``make_ranker(name, **params)``
#: -> ``--param``)
DEST_OF = {"params": "param", "subsets": "subset", "families": "tune"}


def shown_as_flag(err: InputError, parser: argparse.ArgumentParser, args: argparse.Namespace) -> InputError:
    """``err`` with the Python parameter it names shown as the command's flag: the one
    mapping from the library's names (``max_steps``, ``out``) to the command line's
    (``--max-steps``, ``--out``; a positional by its metavar, ``COLLECTION``).

    A field of a file's record is left alone unless the file is the very value of that
    flag (``--out FILE``), so a benchmark's ``target`` field is not shown as ``--target``.
    """
    dest = DEST_OF.get(err.field or "", err.field)
    action = next((a for a in parser._actions if a.dest == dest and dest), None)
    if action is None:
        return err
    if err.path is not None and str(getattr(args, dest, None)) != err.path:
        return err
    if action.option_strings:
        err.field = max(action.option_strings, key=len)
    else:
        err.field = action.metavar if isinstance(action.metavar, str) else dest.upper()
    return err
