"""redial: the build recomputed independently, on the fixture (tests/fixtures/redial: invented
dialogues and catalogue in ReDial's schema) and on the real test file when ../shared/data/redial
is beside the checkout; hand-checked points; errors."""

from __future__ import annotations

import csv
import json
import re
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

from dsr.collections import redial
from dsr.core.data import read_benchmark, write_benchmark
from dsr.core.errors import InputError
from tests.support.data import FIXTURES, data_sources, no_shared_data_reason

#: query points considered and kept, as built (the real counts are reported in the README)
COUNTS = {"fixture": (10, 10), "shared": (3372, 1417)}


@lru_cache(maxsize=2)
def _build(folder: Path):
    return redial.build(folder, "test")


@pytest.fixture(scope="module", params=data_sources("redial"))
def source(request):
    return request.param


@pytest.fixture(scope="module")
def built(source):
    return _build(source.path)


@pytest.fixture(scope="module")
def real():
    """The build of the real test file (the same object as ``built``'s)."""
    reason = no_shared_data_reason("redial")
    if reason:
        pytest.skip(reason)
    return _build(data_sources("redial")[1].values[0].path)


def plain_rebuild(folder: Path):
    """A plain re-implementation of the documented rules: id -> (labels, candidate ids, subset)."""
    movies = {r["movieId"]: r for r in csv.DictReader(open(folder / "movies_with_mentions.csv", newline="", encoding="utf-8"))}
    ids = list(movies)
    where = {m: n for n, m in enumerate(ids)}
    prior = np.log1p([int(movies[m]["nbMentions"]) for m in ids])
    dialogues = [json.loads(line) for line in open(folder / "test_data.jsonl", encoding="utf-8")]

    def turns_of(d):
        out = []  # [role, [movie ids]]
        for msg in d["messages"]:
            role = "R" if msg["senderWorkerId"] == d["respondentWorkerId"] else "S"
            found = re.findall(r"@(\d+)", msg["text"])
            if out and out[-1][0] == role:
                out[-1][1].extend(found)
            else:
                out.append([role, list(found)])
        return out

    sets = [{m for _, ms in turns_of(d) for m in ms} for d in dialogues]
    pairs = {}
    for s in sets:
        for a in s:
            for b in s:
                if a != b:
                    pairs[(a, b)] = pairs.get((a, b), 0) + 1
    neighbours = {}
    for (a, b), n in pairs.items():
        neighbours.setdefault(a, []).append((b, n))
    # tie order: more mentions first, then lower id
    tie = sorted(ids, key=lambda m: (-int(movies[m]["nbMentions"]), int(m)))
    tie_rank = np.empty(len(ids))
    tie_rank[[where[m] for m in tie]] = np.arange(len(ids))

    considered, expected = 0, {}
    for d, own in zip(dialogues, sets):
        forms = [d["initiatorQuestions"] or {}, d["respondentQuestions"] or {}]
        seen, seeker_named = [], False
        for i, (role, ms) in enumerate(turns_of(d)):
            new = [m for m in dict.fromkeys(ms) if m not in seen]
            if role == "R" and new and i >= 1:
                considered += 1
                co = np.zeros(len(ids))
                for a in set(seen):
                    for b, n in neighbours.get(a, []):
                        co[where[b]] += n - (1 if b in own else 0)
                score = np.round(4 * np.log1p(co) + prior, 6)
                for m in seen:
                    score[where[m]] = -np.inf
                order = np.lexsort((tie_rank, -score))
                pool = [ids[j] for j in order[np.isfinite(score[order])][:50]]
                labels = {m: 2 if all(f.get(m, {}).get("liked") == 1 for f in forms) else 1 for m in new}
                if set(pool) & set(labels):
                    expected[f"{d['conversationId']}-{i}"] = (labels, pool, "seeker_named" if seeker_named else "seeker_unnamed")
            seen.extend(ms)
            seeker_named |= role == "S" and bool(ms)
    return considered, expected


def test_counts_recomputed_independently(source, built):
    considered, expected = plain_rebuild(source.path)
    assert (built.meta["query_points_considered"], len(built)) == (considered, len(expected)) == COUNTS[source.kind]
    assert set(built.ids) == set(expected)
    for d in built:
        labels, pool, subset = expected[d.id]
        assert [c.id for c in d.candidates] == pool
        assert {c.id: c.label for c in d.relevant} == {m: g for m, g in labels.items() if m in pool}
        assert d.subset == subset


def test_hand_checked_query_point_of_the_fixture(source, built):
    if source.real:
        pytest.skip("the real file's hand-checked point is test_hand_checked_query_point's")
    # conversation 30005: the recommender's two messages (4 and 5) become one turn; the seeker
    # had named Salt and Thunder; Midnight Ferry is liked (1) in both forms -> grade 2, Tin
    # Crown in one only -> grade 1; the catalogue's double space before the year is collapsed
    d = built["30005-3"]
    assert [t.body for t in d.context] == [
        "Hello",
        "Hello! Which movies do you like?",
        "Old adventure movies like Salt and Thunder (1987)",
    ]
    assert [t.author_id for t in d.context] == ["309", "310", "309"]
    assert [t.author_name for t in d.context] == ["seeker", "recommender", "seeker"]
    assert d.target.body == "Oh then Tin Crown (1979) is a classic\nand Midnight Ferry is a small gem"
    assert {c.id: c.label for c in d.relevant} == {"80008": 1, "80007": 2}
    assert {c.id: (c.title, c.body) for c in d.relevant} == {
        "80008": ("Tin Crown", "Tin Crown (1979)"),
        "80007": ("Midnight Ferry", "Midnight Ferry"),
    }
    ids = [c.id for c in d.candidates]
    # every movie of the catalogue but the one named before (16 - 1), none twice
    assert len(ids) == len(set(ids)) == 15 and "80005" not in ids
    assert d.subset == "seeker_named" and built["30003-2"].subset == "seeker_unnamed"
    # a form given as [] (upstream writes it so when empty): no movie is liked by both
    assert {c.id: c.label for c in built["30002-3"].relevant} == {"80004": 1}


def test_hand_checked_query_point(real):
    built = real
    # conversation 20041 (line 2): the seeker (959) likes horror; the recommender (958)
    # names A Quiet Place, whose forms both say liked = 2 ("did not say") -> grade 1.
    # Messages 4 and 5 are both the recommender's and become one turn.
    d = built["20041-8"]
    assert [t.body for t in d.context] == [
        "Hello!",
        "Hello!",
        "What kind of movies do you like?",
        "I am looking for a movie recommendation.   When I was younger I really enjoyed the A Nightmare on Elm Street (1984)",
        "Oh, you like scary movies?\nI recently watched Happy Death Day (2017)",
        "I also enjoyed watching The Last House on the Left (1972)",
        "It was really good for a new &quot;scary movie&quot;",
        "I do enjoy some of the newer horror movies that I have seen as well.",
    ]
    assert [t.author_id for t in d.context] == ["958", "959", "958", "959", "958", "959", "958", "959"]
    assert d.context[0].author_name == "recommender" and d.context[1].author_name == "seeker"
    assert d.target.body == "I heard that A Quiet Place (2018) is good. It is still in theaters though."
    assert {c.id: c.label for c in d.relevant} == {"205430": 1}
    assert d.relevant[0].body == "A Quiet Place (2018)" and d.relevant[0].title == "A Quiet Place"
    ids = [c.id for c in d.candidates]
    assert len(ids) == 50 and len(set(ids)) == 50
    # movies already named in the context are never candidates
    assert not {"77161", "204334", "132562"} & set(ids)
    assert d.subset == "seeker_named"
    scores = [c.score for c in d.candidates]
    assert scores == sorted(scores, reverse=True)
    # a liked-by-both movie gets grade 2 (conversation 20047, Avengers: Infinity War)
    assert {c.id: c.label for c in built["20047-2"].relevant} == {"205163": 2}


def test_round_trip(built, tmp_path):
    path = tmp_path / "redial.jsonl"
    write_benchmark(built, path)
    again = read_benchmark(path)
    assert again.content_hash == built.content_hash and again.ids == built.ids


def test_initial_ranker_weights_are_parameters(source, built):
    popularity = redial.build(source.path, "test", cooc_weight=0.0, pool_size=10)
    assert popularity.meta["pool_recall"] < built.meta["pool_recall"]
    assert all(len(d.candidates) == 10 for d in popularity)
    with pytest.raises(InputError) as err:
        redial.build(source.path, "test", pool=10)
    assert err.value.field == "params"
    with pytest.raises(InputError) as err:
        redial.build(source.path, "dev")
    assert err.value.field == "split"


def _write(folder: Path, dialogues: list, movies: str | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "movies_with_mentions.csv").write_text(
        movies or ("movieId,movieName,nbMentions\n1,Jaws (1975),10\n2,Jaws 2 (1978),3\n3,Heat  (1995),5\n")
    )
    (folder / "test_data.jsonl").write_text("".join(json.dumps(d) + "\n" for d in dialogues))
    return folder


def _dialogue(messages, **extra):
    d = {
        "conversationId": "7",
        "initiatorWorkerId": 1,
        "respondentWorkerId": 2,
        "movieMentions": {"1": "Jaws (1975)", "2": "Jaws 2 (1978)", "3": "Heat (1995)"},
        "initiatorQuestions": {"2": {"suggested": 1, "seen": 0, "liked": 1}},
        "respondentQuestions": {"2": {"suggested": 1, "seen": 0, "liked": 1}},
        "messages": [{"messageId": n, "text": t, "senderWorkerId": s, "timeOffset": n} for n, (s, t) in enumerate(messages)],
    }
    d.update(extra)
    return d


def test_small_file_merging_and_errors(tmp_path):
    ok = _write(tmp_path / "ok", [_dialogue([(1, "I loved @1"), (1, "so scary"), (2, "then try @2"), (2, "or @3")])])
    built = redial.build(ok, "test", pool_size=2)
    (d,) = built.dialogues
    assert d.id == "7-1" and d.context[0].body == "I loved Jaws (1975)\nso scary"
    assert d.target.body == "then try Jaws 2 (1978)\nor Heat (1995)"
    assert {c.id: c.label for c in d.candidates} == {"3": 1, "2": 2}

    bad_sender = _write(tmp_path / "sender", [_dialogue([(1, "hi @1"), (9, "try @2")])])
    with pytest.raises(InputError) as err:
        redial.build(bad_sender, "test")
    assert err.value.line == 1 and err.value.record == "7"
    assert err.value.field == "messages[1].senderWorkerId"
    unknown = _write(tmp_path / "unknown", [_dialogue([(1, "hi @1"), (2, "try @42")])])
    with pytest.raises(InputError) as err:
        redial.build(unknown, "test")
    assert err.value.field == "messages[1].text" and "@42" in str(err.value)
    bad_csv = _write(
        tmp_path / "csv",
        [_dialogue([(1, "hi @1"), (2, "try @2")])],
        "movieId,movieName,nbMentions\n1,Jaws (1975),10\n2,Jaws 2,many\n",
    )
    with pytest.raises(InputError) as err:
        redial.build(bad_csv, "test")
    assert err.value.line == 3 and err.value.field == "nbMentions"
    (tmp_path / "json").mkdir()
    broken = _write(tmp_path / "json", [])
    (broken / "test_data.jsonl").write_text(json.dumps(_dialogue([(1, "hi")])) + "\n{oops\n")
    with pytest.raises(InputError) as err:
        redial.build(broken, "test")
    assert err.value.line == 2


def test_load_caches(tmp_path, dsr_home):
    folder = _write(tmp_path / "src", [_dialogue([(1, "I loved @1"), (2, "then try @2")])])
    first = redial.load(folder, None)
    assert Path(first.meta["cache"]).is_relative_to(dsr_home / "collections")
    assert redial.load(folder, "test").content_hash == first.content_hash
    with pytest.raises(InputError) as err:
        redial.load(None, None)
    assert "dsr data fetch redial" in str(err.value)


def test_it_keeps_the_collection_contract_on_its_fixture():
    """dsr.testing's check, the one a plug-in's collection runs: it builds, loads, hashes the
    same twice and through its benchmark file, and exports."""
    from dsr import testing
    from dsr.collections import source_module

    testing.check_collection(source_module("redial"), FIXTURES / "redial", None, name="redial")
