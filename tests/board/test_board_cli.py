"""The README's leaderboard quickstart through the command line: add-phase, add-baseline,
add-team, ``dsr serve`` (a subprocess), ``dsr submit`` accepted and refused, export, rebuild."""

from __future__ import annotations

import csv
import io
import tempfile

import numpy as np
import pytest

from dsr.cli import main
from dsr.collections import load_collection
from tests.support.board import ServerProcess, plain_rr


@pytest.mark.slow
def test_quickstart_commands(tmp_path, runs, capsys, dsr_home):
    assert main(["board", "add-phase", "sample", "--phase", "public"]) == 0
    assert main(["board", "add-baseline", "sample", str(runs / "initial.run")]) == 0
    capsys.readouterr()
    assert main(["board", "add-team", "my-lab"]) == 0
    out = capsys.readouterr()
    token = out.out.strip()
    assert token.startswith("dsr_") and "shown once" in out.err
    assert main(["board", "add-team", "my-lab"]) == 2  # a team name once
    db = f"sqlite:///{dsr_home / 'board' / 'board.sqlite'}"
    assert (dsr_home / "board" / "board.sqlite").is_file()  # the embedded default
    assert token.encode() not in (dsr_home / "board" / "board.sqlite").read_bytes()

    bad = tmp_path / "bad.run"
    lines = (runs / "bm25.run").read_text().splitlines(keepends=True)
    bad.write_text("".join(lines[:3] + ["x Q0 y 1 2.0 t\n"] + lines[3:]))
    with ServerProcess(db, dsr_home / "board" / "runs") as server:
        capsys.readouterr()
        assert (
            main(["submit", "sample", str(runs / "bm25.run"), "--server", server.url, "--token", token, "--system", "BM25"]) == 0
        )
        out = capsys.readouterr().out.splitlines()
        assert out[0].startswith('published metadata: {"collection": {"hash": ') and '"ranker": "bm25"' in out[0]
        assert str(runs) not in out[0]  # the sidecar's paths stay home
        assert out[1].startswith("accepted: run #2 ") and "RR 0.7136" in out[2]
        assert main(["submit", "sample", str(bad), "--server", server.url, "--token", token]) == 2
        err = capsys.readouterr().err
        assert "bad.run:4: topic 'x' is not a dialogue of sample" in err and "refused (422)" in err
        assert main(["submit", "sample", str(runs / "bm25.run"), "--server", server.url, "--token", "nope"]) == 2
        assert "refused (401)" in capsys.readouterr().err
    assert main(["submit", "sample", str(runs / "bm25.run"), "--server", server.url, "--token", token]) == 2
    assert "cannot reach the server" in capsys.readouterr().err

    assert main(["board", "export", "sample", "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    rr = {r["run"]: float(r["mean"]) for r in rows if r["measure"] == "RR" and r["subset"] == "all"}
    collection = load_collection("sample")
    labels = {d.id: {c.id: c.label for c in d.candidates} for d in collection.dialogues}
    expected = {
        name: np.mean(list(plain_rr(runs / f"{run}.run", labels).values()))
        for name, run in (("baselines / initial #1", "initial"), ("my-lab / BM25 #2", "bm25"))
    }
    assert rr == pytest.approx(expected, abs=1e-12)
    assert main(["board", "export", "sample", "--format", "latex", "--out", str(tmp_path / "b.tex")]) == 0
    assert r"\begin{tabular}" in (tmp_path / "b.tex").read_text()
    assert main(["board", "rebuild"]) == 0
    assert "rescored 2 run(s), 0 changed" in capsys.readouterr().out
    assert main(["board", "add-phase", "sample", "--phase", "x", "--qrels", str(runs / "hidden.qrels")]) == 2


def test_season_and_members_from_the_command_line(tmp_path, runs, capsys, dsr_home):
    """add-phase with dates and a final switch, set-phase, freeze (submissions refused after it,
    the export names the collection hash and the freeze), add-member and remove-member."""
    from dsr.board.service import Board, BoardConfig, Metadata, Refused

    season = ["--final", "--primary", "RR", "--opens", "2020-01-01", "--closes", "2020-01-02T00:00+02:00"]
    assert main(["board", "add-phase", "sample", "--phase", "test", *season]) == 0
    out = capsys.readouterr().out
    assert (
        "season sample/test: primary measure RR, opens 2020-01-01 00:00 UTC, closes 2020-01-01 22:00 UTC, "
        "final phase; this phase closed on 2020-01-01 22:00 UTC"
    ) in out
    assert main(["board", "set-phase", "sample", "--closes", "someday"]) == 2
    assert "field '--closes': 'someday' is not an ISO date" in capsys.readouterr().err
    assert main(["board", "set-phase", "sample", "--closes", "2019-12-01"]) == 2  # before it opens
    assert main(["board", "set-phase", "sample", "--closes", "2999-01-01", "--primary", "nDCG@10"]) == 0
    assert "primary measure nDCG@10" in capsys.readouterr().out
    assert main(["board", "add-team", "lab"]) == 0
    token = capsys.readouterr().out.strip()
    assert main(["board", "add-member", "lab", "Ada", "--email", "ada@example.org"]) == 0
    assert main(["board", "add-member", "lab", "Ben"]) == 0
    assert main(["board", "add-member", "lab", "Ben"]) == 2  # once
    assert main(["board", "remove-member", "lab", "Ada"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "team lab: Ben, lead"
    assert main(["board", "remove-member", "nobody", "Ada"]) == 2
    assert "no team 'nobody'" in capsys.readouterr().err
    assert main(["board", "list"]) == 0
    listed = capsys.readouterr().out
    assert "None" not in listed and "quota: none" in listed
    assert [line.split()[:2] + line.split()[-2:-1] for line in listed.splitlines() if line.startswith("lab ")] == [
        ["lab", "Ada", "removed"],
        ["lab", "Ben", "0"],
        ["lab", "lead", "0"],
    ]

    board = Board(BoardConfig())
    phase = board.phases.get_phase("sample", "test")
    team = board.members.team_for_token(token)
    meta = Metadata("r", "", "", "automatic", False)
    accepted = board.submit(team, phase, (runs / "bm25.run").read_bytes(), "bm25.run", meta)
    assert accepted.answer["means"] is None  # a final phase: no score before the freeze
    assert main(["board", "freeze", "sample"]) == 0
    assert "the final results of sample/test are published" in capsys.readouterr().out
    with pytest.raises(Refused) as refused:
        board.submit(team, board.phases.get_phase("sample", "test"), (runs / "random0.run").read_bytes(), "r.run", meta)
    assert refused.value.status == 403 and "frozen on" in refused.value.message
    assert main(["board", "set-phase", "sample", "--closes", "2999-02-01"]) == 2  # the season is over
    assert main(["board", "export", "sample", "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert {r["collection_hash"] for r in rows} == {phase.collection_hash}
    assert {r["frozen"][:4] for r in rows} == {str(board.phases.get_phase("sample", "test").frozen_at.year)}
    assert {r["dsr_version"] for r in rows} == {__import__("dsr").__version__}
    board.close()


@pytest.mark.slow
def test_names_the_databases_cannot_hold_or_urls_cannot_carry_are_refused_up_front(db_url, tmp_path, capsys):
    """Issue 40: an e-mail over 300 characters or a phase name over 100 was a traceback on
    PostgreSQL only (its columns have lengths; SQLite's do not), and a phase name with ``/``
    was taken and then 404'd. Both databases now refuse them before anything is written,
    exit 2 naming the flag."""
    db, store = ["--db", db_url], ["--store", str(tmp_path / "store")]
    cases = [
        (["board", "add-phase", "sample", "--phase", "x" * 101], "--phase"),
        (["board", "add-phase", "sample", "--phase", "a/b"], "--phase"),
        (["board", "add-phase", "sample", "--phase", "a?b"], "--phase"),
        (["board", "add-phase", "sample", "--phase", ".."], "--phase"),
        (["board", "add-phase", "sample", "--phase", "ok", "--name", "n" * 101], "--name"),
        (["board", "add-phase", "sample", "--phase", "ok", "--name", "my%board"], "--name"),
        (["board", "add-member", "lab", "ada", "--email", "a" * 290 + "@example.org"], "--email"),
    ]
    assert main(["board", "add-team", "lab", *db, *store]) == 0
    for argv, flag in cases:
        capsys.readouterr()
        assert main([*argv, *db, *store]) == 2, argv
        err = capsys.readouterr().err
        assert flag in err and "Traceback" not in err, (argv, err)
    from tests.support.board import make_board

    board = make_board(db_url, tmp_path)
    assert board.phases.all() == [] and [m.name for m in board.members.of_team(board.members.team("lab"))] == ["lead"]
    board.phases.add_phase("sample", "x" * 100)  # the longest name is taken
    assert board.members.add_member("lab", "ada", "a" * 288 + "@example.org")
    board.close()


@pytest.mark.parametrize("server", ["http://[::1", "ftp://127.0.0.1:8000", "127.0.0.1:8000", "http://"])
def test_submit_to_a_server_that_is_no_url_is_exit_2(tmp_path, runs, capsys, server):
    code = main(["submit", "sample", str(runs / "bm25.run"), "--server", server, "--token", "dsr_x"])
    err = capsys.readouterr().err
    assert code == 2 and "--server" in err and "Traceback" not in err, err


@pytest.mark.parametrize("processes", ["1", "2"])
def test_serve_refuses_a_temporary_folder_too_long_for_its_workers_socket(tmp_path, monkeypatch, capsys, processes):
    """The scoring pool's forkserver binds a Unix socket at TMPDIR/pymp-*/listener-* (at most
    107 bytes): a longer TMPDIR is refused up front, named, before the board is opened (it
    failed in multiprocessing with an internal error), and --workers 0 needs no socket."""
    from dsr.board.workers import SOCKET_PATH_MAX

    deep = tmp_path / ("t" * max(1, SOCKET_PATH_MAX - 20 - len(str(tmp_path))))
    deep.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(deep))
    db = tmp_path / "board.sqlite"
    args = ["serve", "--db", f"sqlite:///{db}", "--store", str(tmp_path / "store"), "--processes", processes, "--workers", "1"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "TMPDIR" in err and "107 bytes" in err and "--workers to 0" in err and "Traceback" not in err
    assert not db.exists() and not (tmp_path / "store").exists()  # nothing opened, nothing written
