"""Every route of the leaderboard app is walked, as anonymous, API token and browser session:
no hidden label and no hidden per-topic value comes back from any of them (pages, JSON API,
CSV/LaTeX exports, run files, static files), on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from fastapi.testclient import TestClient

from dsr.board import leaderboard
from dsr.board.app import create_app
from dsr.board.routes.pages import run_view
from dsr.collections import load_collection
from dsr.evaluation.qrels import read_qrels
from tests.support.board import make_board, read, setup_phases, walk_every_route

QUERIES = {
    "/board/{collection}/{phase}": ["", "?select=best", "?select=latest&subset=grounded&order=asc", "?sort=nDCG@5&subset=plain"],
    "/runs/{submission_id}": ["", "?measure=nDCG@5", "?measure=AP&submitted=1"],
    "/api/boards/{collection}/{phase}": ["", "?select=best&sort=AP"],
    "/board/{collection}/{phase}/export.csv": ["", "?select=best"],
    "/board/{collection}/{phase}/export.tex": ["", "?select=latest"],
}


def strings(value: float) -> set[str]:
    return {repr(float(value)), f"{value:.4f}", f"{value:.3f}", json.dumps(float(value))}


def numbers_in(value) -> list[float]:
    """Every float inside nested dicts and lists."""
    if isinstance(value, float):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    return [v for item in value for v in numbers_in(item)] if isinstance(value, list) else []


class LeakCheck:
    """What must never appear: hidden labels (and any candidate id) and hidden per-topic values."""

    def __init__(self, board, runs):
        collection = load_collection("sample")
        self.doc_ids = {c.id for d in collection.dialogues for c in d.candidates}
        self.qrels_lines = [f"{t} 0 {d} {g}" for t, docs in read_qrels(runs / "hidden.qrels").items() for d, g in docs.items()]
        served: set[str] = set()  # numbers that are fine to serve: means, public per-topic values
        hidden_values: set[float] = set()
        for phase in board.phases.all():
            n_measures = len(json.loads(phase.measures_json))
            for sub in board.submissions(phase):
                for means in json.loads(sub.means_json).values():
                    for v in means.values():
                        served |= strings(v)
                matrix = board.matrix(sub, n_measures)
                if phase.hidden:
                    hidden_values |= set(np.unique(matrix).tolist())
                else:
                    for v in np.unique(matrix):
                        served |= strings(v)
                    for v in numbers_in(run_view(board, sub.id)["versus"]):  # public differences
                        served |= strings(v)
            for select in ("all", "best", "latest"):  # p-values are served (aggregates)
                for entry in leaderboard.build(board, phase, select=select, baselines="all").entries:
                    for means in entry.means.values():  # a hidden phase's ladder values
                        for v in means.values():
                            served |= strings(v) if v is not None else set()
                    for by_measure in entry.p.values():
                        for v in by_measure.values():
                            if v is not None:
                                served |= strings(v)
                    for bounds in entry.ci.values():  # the primary measure's intervals (aggregates)
                        for v in bounds:
                            served |= strings(v) if v is not None else set()
        self.secret = {s for v in hidden_values if v not in (0.0, 1.0) for s in strings(v)} - served
        assert len(self.secret) >= 40, "too few distinctive hidden values for the check to mean much"

    def leaks(self, body: str) -> list[str]:
        numbers = set(re.findall(r"-?\d+\.\d+(?:[eE][-+]?\d+)?", body))
        found = sorted(self.secret & numbers)
        found += [d for d in self.doc_ids if d in body]
        found += [q for q in self.qrels_lines[:50] if q in body]
        return found


@pytest.fixture
def walked(db_url, tmp_path, runs):
    board = make_board(db_url, tmp_path)
    public, hidden = setup_phases(board, runs, daily_quota=5)
    token = board.members.add_team("alpha")
    client = TestClient(create_app(board))
    posted = []
    for name in ("bm25", "random0", "random1"):
        for phase in ("public", "test"):
            answer = client.post(
                "/api/submissions",
                data={"collection": "sample", "phase": phase, "system": name},
                files={"run": (f"{name}.run", read(runs / f"{name}.run"))},
                headers={"Authorization": f"Bearer {token}"},
            )
            assert answer.status_code == 201, answer.text
            posted.append(answer.text)
    yield board, client, token, posted
    client.close()
    board.close()


@pytest.mark.slow
def test_no_route_serves_hidden_labels_or_hidden_per_topic_values(walked, runs):
    board, client, token, posted = walked
    check = LeakCheck(board, runs)
    ids = [s.id for p in board.phases.all() for s in board.submissions(p)]
    values = {
        "collection": ["sample"],
        "phase": ["public", "test"],
        "submission_id": ids,
        "name": ["nope"],
        "seq": [1],
    }  # the judging pages (no campaign here)
    bodies, seen_routes = walk_every_route(client, token, values, QUERIES)
    bodies.update({f"POST /api/submissions #{i}": t for i, t in enumerate(posted)})
    assert {
        "/",
        "/board/{collection}/{phase}",
        "/runs/{submission_id}",
        "/api/boards/{collection}/{phase}",
        "/api/runs/{submission_id}",
        "/api/runs/{submission_id}/file",
    } <= seen_routes
    leaks = {
        where: found[:3]
        for where, body in bodies.items()
        if (
            found := [
                x
                for x in check.leaks(body)
                # run files are the team's own upload (doc ids): not labels
                if not (where.endswith("/file") and x in check.doc_ids)
            ]
        )
    }
    assert not leaks
    assert len(bodies) > 100

    # The check is not vacuous: hidden per-topic values or labels, if served, would be caught...
    hidden = next(p for p in board.phases.all() if p.hidden)
    sub = next(s for s in board.submissions(hidden) if not s.baseline)
    assert check.leaks(json.dumps(board.matrix(sub, len(json.loads(hidden.measures_json))).tolist()))
    assert check.leaks((runs / "hidden.qrels").read_text()[:400])
    # ...while a public phase's per-topic values are served (allowed)
    public = next(p for p in board.phases.all() if not p.hidden)
    pub = next(s for s in board.submissions(public) if not s.baseline)
    assert "per_topic" in client.get(f"/api/runs/{pub.id}").json()
