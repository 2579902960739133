"""What a notebook shows for a collection, a dialogue and a run: one short line each, whatever
the size (``repr(Collection)`` said nothing useful; a Dialogue's and a Run's dumped every turn,
candidate and score, 28,000 characters for the sample's BM25 run)."""

from __future__ import annotations

import dsr


def test_a_collection_a_dialogue_and_a_run_print_as_one_short_line():
    sample = dsr.load_collection("sample")
    run = dsr.ranker("bm25")(sample)
    dialogue = sample.dialogues[0]
    for obj in (sample, dialogue, run):
        text = repr(obj)
        assert "\n" not in text and len(text) < 200, text
    assert repr(sample) == (
        f"Collection('sample': {len(sample)} dialogues, "
        f"{sum(len(d.candidates) for d in sample)} candidates, subsets "
        f"{', '.join(sample.subsets)}, hash {sample.content_hash[:12]})"
    )
    assert repr(dialogue).startswith(f"Dialogue({dialogue.id!r}, ")
    assert f"{len(dialogue.candidates)} candidates, {len(dialogue.relevant)} relevant" in repr(dialogue)
    lines = sum(len(r) for r in run.rankings.values())
    assert repr(run) == f"Run({run.tag!r}: {len(run.rankings)} topics, {lines} lines, ranker 'bm25')"
