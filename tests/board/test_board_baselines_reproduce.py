"""``dsr board add-baseline`` on ``dsr reproduce``'s own runs folder: every distinct ranking is
loaded, a run holding a ranking loaded already (``BM25_title+all`` is ``BM25``, the
configuration it was tuned to) is reported as an alias, and nothing is half-loaded; and the
organisers' view of identical rankings submitted by different teams."""

from __future__ import annotations

import gzip
import shutil

import pytest
from sqlalchemy import select

from dsr.board.admin import add_baselines, identical_rankings
from dsr.board.models import Submission
from dsr.board.service import Metadata
from dsr.cli import main
from dsr.core.errors import InputError
from tests.support.board import make_board, read

#: dsr reproduce on the sample, once per module: on one worker (tests/support/order.py GROUPS)
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("board-reproduce")]


@pytest.fixture(scope="module")
def reproduced(tmp_path_factory):
    """dsr reproduce's output on the bundled sample (no dense and cross-encoder rows)."""
    out = tmp_path_factory.mktemp("reproduce") / "sample"
    assert main(["reproduce", "sample", "--out", str(out), "--no-dense", "--no-cross-encoder", "--n-splits", "2"]) == 0
    return out


def order(path) -> str:
    """A run file's lines as (topic, doc, score) sorted: what makes two files one ranking."""
    return "".join(sorted(" ".join(line.split()[i] for i in (0, 2, 4)) + "\n" for line in gzip.open(path, "rt")))


def test_a_reproduce_folder_loads_every_distinct_ranking_and_names_the_aliases(reproduced, tmp_path, capsys):
    files = sorted((reproduced / "runs").glob("*.run.gz"))
    distinct = {order(p) for p in files}
    assert len(distinct) < len(files)  # the case of the issue: reproduce writes a ranking twice
    board = make_board(f"sqlite:///{tmp_path / 'b.sqlite'}", tmp_path)
    phase = board.phases.add_phase("sample", "dev")
    added = add_baselines(board, phase, [str(reproduced)])
    assert len(added) == len(distinct)
    assert len(added) + len(added.aliases) == len(files)
    assert ("BM25_title+all", "BM25") in added.aliases
    # a second time: nothing is loaded, every run is an alias of its row
    again = add_baselines(board, phase, [str(reproduced / "runs")])
    assert list(again) == [] and len(again.aliases) == len(files)
    assert all("on the board already" in same for _, same in again.aliases)
    board.close()


def test_the_command_prints_the_aliases_and_exits_0(reproduced, tmp_path, capsys):
    db = f"sqlite:///{tmp_path / 'c.sqlite'}"
    store = str(tmp_path / "store")
    assert main(["board", "add-phase", "sample", "--phase", "dev", "--db", db, "--store", store]) == 0
    capsys.readouterr()
    assert (
        main(["board", "add-baseline", "sample", str(reproduced / "runs"), "--phase", "dev", "--db", db, "--store", store]) == 0
    )
    out = capsys.readouterr().out
    assert "run(s) not loaded again" in out and "BM25_title+all  BM25" in out


def test_one_bad_run_loads_none(reproduced, tmp_path):
    """All or nothing: a folder with one broken run is refused before any run is loaded."""
    folder = tmp_path / "runs"
    shutil.copytree(reproduced / "runs", folder)
    (folder / "zz_broken.run").write_text("t1 Q0 nope 1 1.0 x\nbroken line\n")
    board = make_board(f"sqlite:///{tmp_path / 'd.sqlite'}", tmp_path)
    phase = board.phases.add_phase("sample", "dev")
    with pytest.raises(InputError, match=r"1 of \d+ run\(s\) would be refused, so none was loaded.*zz_broken"):
        add_baselines(board, phase, [str(folder)])
    assert board.submissions(phase) == []
    assert board.phases.get_phase("sample", "dev").baseline_id is None
    board.close()


def test_organisers_see_identical_rankings_from_different_teams(tmp_path, runs, capsys):
    """Two teams submit one ranking (another tag, the scores scaled: the same order): the
    organisers' list groups them; a third team's other ranking is not listed."""
    db = f"sqlite:///{tmp_path / 'e.sqlite'}"
    board = make_board(db, tmp_path)
    phase = board.phases.add_phase("sample", "dev")
    teams = {name: board.members.add_team(name) and board.members.team(name) for name in ("alpha", "beta", "gamma")}
    text = read(runs / "bm25.run")
    scaled = "".join(
        f"{q} Q0 {d} {r} {float(s) * 10!r} copied\n" for q, _, d, r, s, _ in (line.split() for line in text.decode().splitlines())
    ).encode()
    board.submit(teams["alpha"], phase, text, "bm25.run", Metadata("BM25 tuned", "", "", "automatic", False))
    board.submit(teams["beta"], phase, scaled, "mine.run", Metadata("ours", "", "", "automatic", False))
    board.submit(teams["gamma"], phase, read(runs / "initial.run"), "i.run", Metadata("initial", "", "", "automatic", False))
    groups = identical_rankings(board)
    assert len(groups) == 1 and groups[0]["board"] == "sample/dev"
    assert {(r["team"], r["system"]) for r in groups[0]["runs"]} == {("alpha", "BM25 tuned"), ("beta", "ours")}
    with board.engine.connect() as conn:
        ids = sorted(conn.scalars(select(Submission.id).where(Submission.system.in_(["BM25 tuned", "ours"]))))
    board.close()
    assert main(["board", "list", "--db", db, "--store", str(tmp_path / "store")]) == 0
    out = capsys.readouterr().out
    assert "identical rankings from different teams" in out
    assert f"#{ids[0]} alpha (BM25 tuned) = #{ids[1]} beta (ours)" in out


def test_the_exports_carry_each_rows_rank_and_group(reproduced, tmp_path):
    """LaTeX and CSV exports say what the board page says: each row's rank (a range where rows
    are not significantly different) and letter group, as the API gives them; the LaTeX
    compiles with plain pdflatex (where it is installed)."""
    import csv
    import io
    import shutil as sh
    import subprocess

    from fastapi.testclient import TestClient

    from dsr.board.admin import export
    from dsr.board.app import create_app
    from dsr.evaluation.latex import document

    board = make_board(f"sqlite:///{tmp_path / 'f.sqlite'}", tmp_path)
    phase = board.phases.add_phase("sample", "dev")
    add_baselines(board, phase, [str(reproduced)])
    client = TestClient(create_app(board))
    rows = client.get("/api/boards/sample/dev", params={"baselines": "all"}).json()["rows"]
    client.close()
    expected = {r["system"]: ("-".join(map(str, sorted(set(r["rank"])))), r["group"]) for r in rows}
    tex = export(board, phase, "latex")
    assert "Rank & Group & System & Team" in tex
    for system, (rank, group) in expected.items():
        escaped = system.replace("_", r"\_")
        assert f"{rank.replace('-', '--')} & {group} & {escaped} & baselines &" in tex, system
    table = list(csv.DictReader(io.StringIO(export(board, phase, "csv"))))
    got = {r["run"].split(" / ", 1)[1].rsplit(" #", 1)[0]: (r["rank"], r["group"]) for r in table}
    assert got == expected
    board.close()
    if sh.which("pdflatex"):
        (tmp_path / "board.tex").write_text(document(tex, "the board"))
        done = subprocess.run(
            ["pdflatex", "-interaction=nonstopmode", "board.tex"], cwd=tmp_path, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stdout[-2000:]
