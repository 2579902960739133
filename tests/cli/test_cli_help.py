"""Every command's --help names its defaults and ends with an example that parses."""

from __future__ import annotations

import argparse
import re
import shlex

import pytest

from dsr.cli import build_parser
from dsr.cli.help import EXAMPLES, commands

PARSER = build_parser()
COMMANDS = commands(PARSER)


def test_every_command_has_an_example():
    missing = sorted(set(COMMANDS) - set(EXAMPLES))
    assert not missing, f"add a line for {missing} to dsr.cli.help.EXAMPLES"
    assert {"run", "rerank", "fuse", "evaluate", "validate", "export", "qrels", "data fetch"} <= set(COMMANDS)


@pytest.mark.parametrize("path", sorted(COMMANDS), ids=lambda p: p or "dsr")
def test_help_ends_with_a_parsing_example_and_names_defaults(path):
    command = COMMANDS[path]
    text = command.format_help()
    example = EXAMPLES[path]
    assert text.rstrip().endswith(f"example:\n  {example}")
    # the example parses, and to this command
    words = shlex.split(example)
    assert words[0] == "dsr"
    args = build_parser().parse_args(words[1:])
    assert getattr(args, "func", None) is not None
    if path:
        assert words[1 : 1 + len(path.split())] == path.split()
    # every option with a real default says it
    for action in command._actions:
        if not action.option_strings or action.help == argparse.SUPPRESS:
            continue
        if action.default in (None, False, [], argparse.SUPPRESS):
            continue
        rendered = command._get_formatter()._expand_help(action) if action.help else ""
        assert "default" in rendered.lower(), (path, action.option_strings)


def test_examples_survive_the_help_formatter():
    text = COMMANDS["export"].format_help()
    assert "  trec         topics.tsv" in text  # epilog tables keep their lines
    assert "(default: all)" in COMMANDS["export"].format_help()
    assert "default: 42" in COMMANDS["train"].format_help()  # --seed had no help text


def test_the_command_table_is_what_registers():
    """dsr/cli/commands.py lists every command, in order, with the help its module gives."""
    from dsr.cli.commands import COMMANDS as TABLE

    sub = next(a for a in PARSER._actions if isinstance(a, argparse._SubParsersAction))
    assert [c.dest for c in sub._choices_actions] == list(TABLE)
    assert {c.dest: c.help for c in sub._choices_actions} == {k: v for k, (_, v) in TABLE.items()}


@pytest.mark.parametrize(
    "argv, loaded",
    [(["--help"], set()), (["train", "--help"], {"dsr.cli.training"}), (["board", "list", "--help"], {"dsr.cli.board"})],
)
def test_only_the_running_command_module_is_imported(argv, loaded):
    import subprocess
    import sys

    code = (
        f"import sys\nfrom dsr.cli import main\ntry:\n    main({argv!r})\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('dsr.cli.') and m not in "
        "('dsr.cli.commands', 'dsr.cli.flags', 'dsr.cli.help', 'dsr.cli.console')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    shown = eval(out.stdout.strip().splitlines()[-1])  # the list printed last
    assert {m for m in shown if m != "dsr.cli.common"} == loaded
    assert "usage: dsr" in out.stdout


@pytest.mark.parametrize("path", sorted(COMMANDS), ids=lambda p: p or "dsr")
def test_every_epilog_ends_with_a_newline_before_the_example(path):
    """An epilog's last line never runs into what follows (``dsr data --help`` printed
    "dsr data fetch cmu_dogusage:"): the help text has no word glued to "usage:" or "example:"."""
    text = COMMANDS[path].format_help()
    assert not re.search(r"\S(usage|example):", text), text[-400:]
    epilog = COMMANDS[path].epilog or ""
    assert not epilog or epilog.endswith("\n") or "example:" in epilog, repr(epilog[-80:])


def test_every_command_that_checks_a_runs_collection_offers_the_flag_its_error_names():
    """check_run / check_collection_hash / check_same_collection tell the user to pass
    `allow_mismatch` (shown as --allow-collection-mismatch): every command module calling them
    gives that flag and passes it on (dsr pool said "pass `allow_mismatch`", a Python keyword)."""
    import ast
    from pathlib import Path

    checks = {"check_run": "allow_mismatch", "check_collection_hash": "allow", "check_same_collection": "allow"}
    missing = []
    for path in sorted((Path(__file__).resolve().parents[2] / "dsr" / "cli").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) in checks:
                keyword = checks[node.func.id]
                if not any(k.arg == keyword for k in node.keywords):
                    missing.append(f"{path.name}:{node.lineno}: {node.func.id} without {keyword}=")
    assert not missing, missing
