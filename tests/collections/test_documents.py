"""The context text form: a candidate between its neighbours in its CMU_DoG document.

On the real CMU_DoG documents (../shared/data/cmu_dog) and a small real
collection cut from the built valid split; models are tiny random BERTs
(tests/support/tiny_bert.py) whose vocabulary covers every sentence of the documents.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dsr.cli import main
from dsr.core.candidate_text import CONTEXT_FORM, context_text
from dsr.core.data import Candidate, Collection, read_benchmark
from dsr.core.errors import InputError
from tests.collections.test_cmu_dog import SHARED, plain_sentences
from tests.support.data import needs_shared
from tests.support.tiers import slow_fixture
from tests.support.tiny_bert import collection_texts, make_tiny_bert

#: the real files: the slow tier (skipped, saying so, where they are absent)
needs_data = needs_shared("cmu_dog")


def words(text: str) -> int:
    return len(text.split())


def test_context_text_keeps_title_and_body_and_adds_the_nearest_neighbours_that_fit():
    c = Candidate("Doc/scene1/5", "Jaws", "the shark attacks", 1.0, 0)
    before, after = ["one two", "three four five"], ["six seven", "eight nine ten eleven"]
    assert (
        context_text(c, before, after)
        == "Jaws: one two three four five [SEP] the shark attacks [SEP] six seven eight nine ten eleven"
    )
    # core = "Jaws: [SEP] the shark attacks [SEP]" = 6 words; room 5: the nearest on both sides
    assert (
        context_text(c, before, after, budget=11, count=words) == "Jaws: three four five [SEP] the shark attacks [SEP] six seven"
    )
    # room 4: previous (3) fits whole, next is cut to its first word
    assert context_text(c, before, after, budget=10, count=words) == "Jaws: three four five [SEP] the shark attacks [SEP] six"
    # room 2: the nearest previous keeps its last two words; nothing left for next
    assert context_text(c, before, after, budget=8, count=words) == "Jaws: four five [SEP] the shark attacks [SEP]"
    # no room: title and body stay even beyond the budget
    assert context_text(c, before, after, budget=3, count=words) == "Jaws: [SEP] the shark attacks [SEP]"
    # a farther sentence never comes without the nearer one on its side
    assert (
        context_text(c, ["a b c d e f g h", "x"], ["y z"], budget=9, count=words) == "Jaws: x [SEP] the shark attacks [SEP] y z"
    )


@pytest.fixture(scope="module")
@slow_fixture
def small(tmp_path_factory) -> Path:
    """The first 12 query points of the built CMU_DoG valid split (real ids and sentences)."""
    if not SHARED.is_dir():
        pytest.skip("../shared/data/cmu_dog absent")
    folder = tmp_path_factory.mktemp("cmu")
    built = folder / "valid.jsonl"
    assert main(["data", "build", "cmu_dog", "--source", str(SHARED), "--split", "valid", "--out", str(built)]) == 0
    lines = built.read_text(encoding="utf-8").splitlines()[:12]
    small = folder / "cmu-valid-12.jsonl"
    small.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return small


@pytest.fixture(scope="module")
def tiny(tmp_path_factory, small) -> Path:
    sentences = [t for _, sents in plain_sentences(SHARED).values() for _, t in sents]
    texts = [*collection_texts(read_benchmark(small)), *sentences, "[SEP]"]
    return make_tiny_bert(tmp_path_factory.mktemp("tiny"), texts, num_labels=None, max_position_embeddings=64)


@needs_data
def test_neighbours_are_the_sentences_around_it_in_its_section(small):
    from dsr.collections.documents import neighbours

    collection = read_benchmark(small)
    plain = {sid: text for _, sents in plain_sentences(SHARED).values() for sid, text in sents}
    around = neighbours(collection, SHARED, window=2)
    checked = 0
    for d in collection:
        for c in d.candidates:
            doc_section, index = c.id.rsplit("/", 1)
            index = int(index)
            expected_before = [plain[f"{doc_section}/{i}"] for i in (index - 2, index - 1) if f"{doc_section}/{i}" in plain]
            expected_after = [plain[f"{doc_section}/{i}"] for i in (index + 1, index + 2) if f"{doc_section}/{i}" in plain]
            assert around[c.id] == (expected_before, expected_after), c.id
            assert plain[c.id] == c.body
            checked += 1
    assert checked == sum(len(d.candidates) for d in collection) > 500
    # sections are not crossed: the first sentence of a scene has nothing before it
    firsts = [sid for sid in around if sid.endswith("/scene2/0")]
    assert firsts and all(around[sid][0] == [] for sid in firsts)


@needs_data
def test_the_fitted_text_never_passes_the_models_length(small, tiny):
    from dsr.collections.documents import candidate_renderer
    from dsr.core.queries import model_query_budget

    collection = read_benchmark(small)
    budget, count = model_query_budget(str(tiny), 40)
    render = candidate_renderer(collection, CONTEXT_FORM, documents=SHARED, window=3, model_path=tiny, max_length=40)
    longer = 0
    for d in collection:
        for c in d.candidates:
            text = render(c)
            assert f"[SEP] {c.body} [SEP]" in text and text.startswith(f"{c.title}:")
            core = count(f"{c.title}: [SEP] {c.body} [SEP]")
            assert count(text) <= max(budget, core), c.id
            longer += count(text) > 20
    assert longer > 100  # the budget, not the window, is what limits most texts


@needs_data
def test_dense_ranker_reads_the_context_form(small, tiny):
    from sentence_transformers import SentenceTransformer

    from dsr.collections.documents import candidate_renderer
    from dsr.rankers import make_ranker

    collection = read_benchmark(small)
    part = Collection("two", collection.dialogues[:2])
    ranker = make_ranker("dense", model=str(tiny), query="last", text=CONTEXT_FORM, documents=str(SHARED), context=2)
    assert "documents" not in ranker.tag and "context=2" in ranker.tag
    run = ranker.rank(part)
    model = SentenceTransformer(str(tiny), device="cpu")
    render = candidate_renderer(part, CONTEXT_FORM, documents=SHARED, window=2, model_path=tiny)
    d = part.dialogues[0]
    vectors = model.encode([render(c) for c in d.candidates], normalize_embeddings=True)
    query = model.encode([d.context[-1].body], normalize_embeddings=True)[0]
    got = dict(run.rankings[d.id])
    for c, v in zip(d.candidates, vectors):
        assert got[c.id] == pytest.approx(float(v @ query), abs=1e-5)
    body = make_ranker("dense", model=str(tiny), query="last").rank(part)
    assert dict(body.rankings[d.id]) != got


@needs_data
def test_sentences_from_elsewhere_are_bad_input(tmp_path, capsys):
    code = main(
        [
            "run",
            "sample",
            "--ranker",
            "dense",
            "--param",
            f"text={CONTEXT_FORM}",
            "--param",
            f"documents={SHARED}",
            "--out",
            str(tmp_path / "x.run"),
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and "candidates[].id" in err and "no neighbours" in err
    assert not (tmp_path / "x.run").exists() and "Traceback" not in err
    with pytest.raises(InputError, match="WikiData"):
        from dsr.collections.documents import documents_folder

        documents_folder(Collection("x", []), tmp_path)


@needs_data
@pytest.mark.slow
def test_train_with_the_context_form_records_it_and_ranks_alike(small, tiny, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DSR_HOME", str(tmp_path))
    assert (
        main(
            [
                "train",
                str(small),
                "--name",
                "ctx",
                "--base",
                str(tiny),
                "--text",
                CONTEXT_FORM,
                "--context",
                "2",
                "--documents",
                str(SHARED),
                "--max-steps",
                "2",
                "--batch-size",
                "4",
                "--holdout",
                "0.2",
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "--param context=2" in printed
    card = json.loads((tmp_path / "models" / "ctx" / "dsr_model.json").read_text())
    assert card["text"] == CONTEXT_FORM and card["context"] == 2
    readme = (tmp_path / "models" / "ctx" / "README.md").read_text()
    assert f"--param 'text={CONTEXT_FORM}' --param context=2" in readme
    assert "2 neighbouring sentence(s) on each side" in readme
    assert main(["train", str(small), "--name", "bad", "--base", str(tiny), "--context", "2"]) == 2
    assert "--context" in capsys.readouterr().err


def test_triplets_use_the_renderer():
    from dsr.core.data import Dialogue, Turn
    from dsr.training.biencoder import make_triplets

    cands = [Candidate("D/s/0", "T", "good", 1.0, 2), Candidate("D/s/1", "T", "bad", 0.5, 0)]
    dialogue = Dialogue("q", "T", [Turn("u", "u", "hi")], Turn("v", "v", "x"), cands)
    triplets, _ = make_triplets([dialogue], lambda d: d.title, text=lambda c: f"<{c.body}>")
    assert (triplets[0].positive, triplets[0].negative) == ("<good>", "<bad>")
    with pytest.raises(ValueError, match="neighbours"):
        make_triplets([dialogue], lambda d: d.title, text=CONTEXT_FORM)


@needs_data
def test_bi_encoder_reranker_reads_the_context_form_as_the_dense_ranker(small, tiny):
    from dsr.rankers import make_ranker
    from dsr.rerankers import make_reranker

    part = Collection("two", read_benchmark(small).dialogues[:2])
    params = {"model": str(tiny), "query": "last", "text": CONTEXT_FORM, "documents": str(SHARED)}
    dense = make_ranker("dense", **params).rank(part)
    first = make_ranker("initial").rank(part)
    reranked = make_reranker("bi-encoder", **params).rerank(part, first, 10)
    for d in part:
        scores = dict(dense.rankings[d.id])
        head = first.top(d.id, 10)
        assert [doc for doc, _ in reranked.rankings[d.id][:10]] == sorted(head, key=lambda x: -scores[x])
        for doc, score in reranked.rankings[d.id][:10]:
            assert score == pytest.approx(scores[doc], abs=1e-6)
