"""The console: options anywhere (a multi-value option ends where a positional file or
collection begins, for every command that has one), short output by default, and
progress bars only on a terminal."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dsr.cli import build_parser, main, parse_arguments
from dsr.cli.console import end_multi_values
from dsr.collections.synthetic import make_collection, make_run
from dsr.core.data import write_benchmark

ROOT = Path(__file__).resolve().parents[2]


def leaf_parsers(parser=None, path=()):
    """(command words, parser) of every command."""
    parser = parser or build_parser()
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield path, parser
        return
    for name, sub in subs[0].choices.items():
        yield from leaf_parsers(sub, (*path, name))


def multi_value_cases():
    for path, parser in leaf_parsers():
        for action in parser._actions:
            if action.option_strings and action.nargs in ("+", "*"):
                yield pytest.param(path, action.option_strings[0], id=f"{' '.join(path)} {action.option_strings[0]}")


def _value(option: str, metavar: str | None = None) -> str:
    """One value of the option, neither a file nor a collection name."""
    if "=" in str(metavar or ""):
        return "k=60"
    return {"--measures": "RR", "--queries": "last"}.get(option, "value1")


def _argv(parser, option: str, files: list[str]) -> tuple[list[str], dict[str, object]]:
    """The option and one value, then every positional (files for file lists, a registered
    collection or an existing file otherwise), then the required options."""
    tail, expected = [], {}
    for action in parser._actions:
        if action.option_strings:
            continue
        if action.nargs in ("+", "*"):
            tail += files
            expected[action.dest] = files
        else:
            value = "sample" if "collection" in action.dest else files[0]
            tail.append(value)
            expected[action.dest] = value
    required = [
        w
        for a in parser._actions
        if a.option_strings and a.required
        for w in (a.option_strings[0], list(a.choices)[0] if a.choices else "x.out")
    ]
    metavar = next(a.metavar for a in parser._actions if option in a.option_strings)
    return [option, _value(option, metavar), *tail, *required], expected


def test_every_multi_value_option_is_covered():
    found = {(" ".join(p.values[0]), p.values[1]) for p in multi_value_cases()}
    assert {
        ("evaluate", "--measures"),
        ("reproduce", "--measures"),
        ("reproduce", "--queries"),
        ("fuse", "--param"),
        ("run", "--param"),
        ("kfold", "--measures"),
    } <= found


@pytest.mark.parametrize("path, option", list(multi_value_cases()))
def test_a_multi_value_option_ends_where_the_positionals_begin(path, option, tmp_path):
    files = [str(tmp_path / "a.run"), str(tmp_path / "b.run")]
    for f in files:
        Path(f).write_text("")
    parser = dict(leaf_parsers())[path]
    argv, expected = _argv(parser, option, files)
    args = parser.parse_intermixed_args(end_multi_values(parser, argv))
    action = next(a for a in parser._actions if option in a.option_strings)
    assert getattr(args, action.dest) == [_value(option, action.metavar)]
    for name, value in expected.items():
        assert getattr(args, name) == value, (path, name)


def test_the_readme_example_parses_and_comma_lists_work(tmp_path, capsys):
    collection = make_collection(n=30, seed=1)
    write_benchmark(collection, tmp_path / "c.jsonl")
    for name, seed in (("a", 1), ("b", 2)):
        make_run(collection, seed=seed, quality=seed).write(tmp_path / f"{name}.run")
    runs = [str(tmp_path / "a.run"), str(tmp_path / "b.run")]
    assert main(["evaluate", str(tmp_path / "c.jsonl"), "--measures", "RR", *runs, "--quiet"]) == 0
    spaced = capsys.readouterr().out
    assert main(["evaluate", str(tmp_path / "c.jsonl"), *runs, "--measures", "RR,nDCG@5", "--quiet"]) == 0
    commas = capsys.readouterr().out
    assert "a " in spaced and "b " in spaced and "RR" in spaced
    assert "RR" in commas and "nDCG@5" in commas
    args = parse_arguments(build_parser(), ["reproduce", "--measures", "RR", "nDCG@5", "sample", "--queries", "last,all"])
    assert args.collection == "sample" and args.measures == ["RR", "nDCG@5"] and args.queries == ["last,all"]


def test_evaluate_prints_a_short_summary_and_verbose_everything(tmp_path, capsys):
    collection = make_collection(n=60, seed=4)
    write_benchmark(collection, tmp_path / "c.jsonl")
    runs = []
    for k in range(6):
        run = make_run(collection, seed=k, quality=0.3 * k)
        run.write(tmp_path / f"r{k}.run")
        runs.append(str(tmp_path / f"r{k}.run"))
    argv = ["evaluate", str(tmp_path / "c.jsonl"), *runs, "--baseline", "r0", "--quiet"]
    assert main(argv) == 0
    short = capsys.readouterr().out.splitlines()
    assert main([*argv, "--verbose"]) == 0
    full = capsys.readouterr().out.splitlines()
    assert len(short) <= 20 < len(full)
    assert short[0].startswith("nDCG@5 (primary measure) by subset")
    assert "r0 (baseline)" in "\n".join(short) and "--verbose" in short[-1]
    legend = next(line for line in short if line.startswith("▲/▼"))
    assert "no mark: not significantly different" in legend and "Primary measure: nDCG@5" in legend
    for text in (short, full):
        assert not any("≈" in line or "tied" in line for line in text)


def _stderr_of(argv: list[str], tmp_path: Path) -> str:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "DSR_HOME": str(tmp_path / "home"),
    }  # empty: indexes built, candidates encoded
    env.pop("TQDM_DISABLE", None)
    env.pop("HF_HUB_DISABLE_PROGRESS_BARS", None)
    done = subprocess.run(
        [sys.executable, "-m", "dsr.cli", *argv], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stderr


@pytest.mark.slow
def test_no_progress_bar_reaches_a_log(tmp_path):
    """bm25 (a bar from 200 dialogues), the dense ranker (the Hugging Face "Loading weights"
    bar, and the encoding bar, which dsr shows on a terminal from 256 texts to encode: 1,560
    here; its model a tiny BERT, loaded and encoding through the same code as MiniLM) and the
    evaluator, with stderr a pipe as in CI."""
    from dsr.collections import load_collection
    from tests.support.tiny_bert import collection_texts, make_tiny_bert

    collection = make_collection(n=260, candidates=5, seed=2)
    write_benchmark(collection, tmp_path / "c.jsonl")
    model = make_tiny_bert(tmp_path / "tiny", collection_texts(load_collection("sample")), num_labels=None)
    err = _stderr_of(["run", "c.jsonl", "--ranker", "bm25", "--out", "bm25.run"], tmp_path)
    err += _stderr_of(["run", "c.jsonl", "--ranker", "dense", "--out", "dense.run", "--param", f"model={model}"], tmp_path)
    err += _stderr_of(["evaluate", "c.jsonl", "bm25.run"], tmp_path)
    assert "\r" not in err and "it/s" not in err and "Loading weights" not in err, err[-2000:]
    assert "%|" not in err
