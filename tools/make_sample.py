"""Write the bundled ``sample`` collection: dsr/collections/data/sample.jsonl.

The dialogues, the candidate sentences and their labels (``tools/sample_source.jsonl``)
were written by hand by the dsr authors (MIT, like the project) in the SIGIR 2022 benchmark
schema: 20 Reddit-style dialogues, 10 ``plain`` and 10 ``grounded`` (the
target turn cites Wikipedia with a link), each with 10 to 50 Wikipedia-style
candidate sentences. Nothing is copied from Reddit or Wikipedia; user names,
dialogue ids and document ids are made up.

Labels: 1 when the sentence would genuinely help write the target turn, else
0. Each dialogue mixes relevant sentences (some sharing few words with the
conversation, so word overlap alone does not find them), near misses that
share many words but do not help (``Minnesota Vikings`` helmets, ``Volleyball``
invented at another YMCA), and off-topic fillers.

Fillers: each dialogue is padded to its listed size with sentences written for
dialogues of *other* topic groups (drawn with a fixed seed), labelled 0 and
keeping their ids, so, as in the SIGIR set, the same sentence appears in
several dialogues under the same id. Groups keep related topics apart (space,
science and health are one group) so a filler is never secretly relevant.

Initial scores (``candidates[].score``) come from a documented initial ranker,
so they are honest rather than invented: BM25 (``rank_bm25.BM25Okapi`` with its
defaults k1=1.5, b=0.75, epsilon=0.25) over the dialogue's own candidate
sentences (body only), query = title + every context turn, tokens from
``dsr.core.text.tokenize(stopwords=True, stem=True)``. Candidates are listed
in that ranker's order (score descending, ties by id), scores rounded to 4
decimals.

Usage::

    python tools/make_sample.py            # rewrite the packaged file
    python tools/make_sample.py --check    # exit 1 when the file is not what this script writes
    python tools/make_sample.py --out FILE
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
from pathlib import Path

from dsr.core.text import tokenize

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "dsr" / "collections" / "data" / "sample.jsonl"

INITIAL_RANKER = (
    "BM25Okapi (rank_bm25; k1=1.5, b=0.75, epsilon=0.25) over the dialogue's "
    "candidates; query = title + context turns; "
    "dsr.core.text.tokenize(stopwords=True, stem=True)"
)

#: topic group of each dialogue key; fillers only come from other groups
GROUPS = {
    "science": ("s01", "s09", "s10", "g11", "g19", "g20"),
    "history": ("s02", "g12"),
    "food": ("s03", "g13"),
    "sports": ("s04", "g14"),
    "arts": ("s05", "s06", "g15", "g16"),
    "travel": ("s07", "g17"),
    "computing": ("s08", "g18"),
}

#: the hand-written dialogues, one JSON object per line: key, subset, subreddit,
#: title, users (role -> [author_id, author_name]), context [[role, body, score]],
#: target [role, body, score], size (candidates after padding with fillers) and
#: candidates [[label, document title, "section.passage.sentence", text]]
SOURCE = ROOT / "tools" / "sample_source.jsonl"


def load_dialogues(path: Path = SOURCE) -> list[dict]:
    """The hand-written dialogues of ``path``, with tuples where the script expects them."""
    dialogues = []
    for line in path.read_text(encoding="utf-8").split("\n"):
        if line.strip():
            d = json.loads(line)
            d["users"] = {role: tuple(who) for role, who in d["users"].items()}
            d["context"] = [tuple(t) for t in d["context"]]
            d["target"] = tuple(d["target"])
            d["candidates"] = [tuple(c) for c in d["candidates"]]
            dialogues.append(d)
    return dialogues


def doc_id(title: str) -> int:
    """A made-up, stable Wikipedia-style page id for a document title."""
    return int(hashlib.sha1(title.encode("utf-8")).hexdigest()[:8], 16) % 9_000_000 + 100_000


def sentence_id(title: str, position: str) -> str:
    """``<Doc_title>_<docid>_<section>_<passage>_<sentence>``, the SIGIR 2022 id shape."""
    section, passage, sentence = position.split(".")
    return f"{title.replace(' ', '_')}_{doc_id(title)}_{section}_{passage}_{sentence}"


def _group(key: str) -> str:
    return next(name for name, keys in GROUPS.items() if key in keys)


def build_records() -> list[dict]:
    """The benchmark-file records, in order; raises ValueError on inconsistent content."""
    dialogues = load_dialogues()
    own = own_sentences(dialogues)
    return [record(d, own) for d in dialogues]


def own_sentences(dialogues: list[dict]) -> dict[str, list[dict]]:
    """Each dialogue's own candidate sentences: one sentence per id across the whole collection,
    one id per sentence."""
    by_id: dict[str, tuple[str, str]] = {}
    by_text: dict[str, str] = {}
    own: dict[str, list[dict]] = {}
    for d in dialogues:
        own[d["key"]] = []
        for label, title, position, text in d["candidates"]:
            cid = sentence_id(title, position)
            if by_id.setdefault(cid, (title, text)) != (title, text):
                raise ValueError(f"{d['key']}: id {cid} is used for two different sentences")
            if by_text.setdefault(text, cid) != cid:
                raise ValueError(f"{d['key']}: sentence {text!r} has two ids")
            own[d["key"]].append({"id": cid, "title": title, "body": text, "label": label})
    return own


def record(d: dict, own: dict[str, list[dict]]) -> dict:
    """One dialogue's record: its own sentences, topped up to its size with other groups'
    sentences (seeded), scored by BM25 against the title and context and sorted."""
    from rank_bm25 import BM25Okapi

    key, group = d["key"], _group(d["key"])
    cands = list(own[key])
    if not 10 <= d["size"] <= 50 or d["size"] < len(cands):
        raise ValueError(f"{key}: size {d['size']} outside 10..50 or below its own sentences")
    pool = sorted((c for k, cs in own.items() if _group(k) != group for c in cs), key=lambda c: c["id"])
    rng = random.Random(f"dsr-sample-{key}")
    taken = {c["id"] for c in cands}
    for c in rng.sample(pool, len(pool)):
        if len(cands) == d["size"]:
            break
        if c["id"] not in taken:
            taken.add(c["id"])
            cands.append({**c, "label": 0})
    users = d["users"]

    def turn(role: str, body: str, score: int) -> dict:
        author_id, author_name = users[role]
        return {"author_id": author_id, "author_name": author_name, "body": body, "score": score}

    context = [turn(*t) for t in d["context"]]
    query = " ".join([d["title"], *(t["body"] for t in context)])
    bm25 = BM25Okapi([tokenize(c["body"], stopwords=True, stem=True) for c in cands])
    scores = bm25.get_scores(tokenize(query, stopwords=True, stem=True))
    for c, s in zip(cands, scores):
        c["score"] = round(float(s), 4)
    cands.sort(key=lambda c: (-c["score"], c["id"]))
    return {
        "id": f"sample_{d['subreddit'].lower()}.{key}.0.{len(context)}",
        "subreddit": d["subreddit"],
        "title": d["title"],
        "context": context,
        "target": turn(*d["target"]),
        "candidates": [
            {"id": c["id"], "title": c["title"], "body": c["body"], "score": c["score"], "label": c["label"]} for c in cands
        ],
        "subset": d["subset"],
        "source": "sample",
    }


def render(records: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"default: {DEFAULT_OUT}")
    parser.add_argument("--check", action="store_true", help="compare with --out instead of writing; exit 1 when they differ")
    args = parser.parse_args(argv)
    text = render(build_records())
    if args.check:
        current = args.out.read_text(encoding="utf-8") if args.out.exists() else None
        if current != text:
            print(f"{args.out} is out of date: run python tools/make_sample.py", file=sys.stderr)
            return 1
        print(f"{args.out} is up to date")
        return 0
    from dsr.core.atomic import atomic_write

    with atomic_write(args.out) as handle:
        handle.write(text)
    print(f"wrote {args.out} ({text.count(chr(10))} dialogues)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
