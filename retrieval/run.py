"""The one shape for rankings: a run maps a topic (dialogue) id to a ranked list
of (sentence id, score). Every ranker, reranker and fusion returns one; the
evaluator takes them.

On disk a run is a TREC run file (``qid Q0 docid rank score tag``) plus a JSON
sidecar ``RUN.json`` with the full configuration and the collection's hash.

Tie rule
--------
trec_eval-style tools sort by score and break ties by document id, which would
silently change the metric of a run with tied scores. So a Run never holds
ties: when scores tie, the order is decided by the topic's *initial rank* (the
candidate's position in the collection's candidate list) and then by sentence
id, and each tied score is lowered to the next representable float below its
predecessor (``numpy.nextafter``). Scores are then strictly decreasing, the
change is the smallest possible, and files are written with ``repr`` so a run
read back is identical to the one written.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np

from retrieval.atomic import atomic_write, write_json
from retrieval.errors import InputError


@dataclass
class Run:
    """topic id -> [(doc id, score)], strictly decreasing scores per topic."""

    rankings: dict[str, list[tuple[str, float]]]
    tag: str = "dsr"
    config: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_scores(cls, scores: Mapping[str, Mapping[str, float]], tag: str = "dsr",
                    config: dict[str, Any] | None = None,
                    initial_order: Mapping[str, list[str]] | None = None) -> "Run":
        """Build a run from unordered scores, applying the tie rule.

        ``initial_order`` gives each topic's candidate ids in initial-rank
        order (usually ``collection.candidate_ids(topic)``); ids not in it
        come after those that are, then by id.
        """
        rankings = {}
        for qid, doc_scores in scores.items():
            order = {d: i for i, d in enumerate((initial_order or {}).get(qid, ()))}
            ranked = sorted(doc_scores.items(),
                            key=lambda ds: (-float(ds[1]), order.get(ds[0], len(order)), ds[0]))
            rankings[qid] = strictly_decreasing(ranked)
        return cls(rankings, tag, dict(config or {}))

    def __len__(self) -> int:
        return len(self.rankings)

    def topics(self) -> list[str]:
        return list(self.rankings)

    def scores(self, qid: str) -> dict[str, float]:
        return dict(self.rankings.get(qid, ()))

    def top(self, qid: str, k: int | None = None) -> list[str]:
        ranked = self.rankings.get(qid, [])
        return [d for d, _ in (ranked if k is None else ranked[:k])]

    def as_dict(self) -> dict[str, dict[str, float]]:
        """The ir_measures / pytrec_eval shape: {qid: {docid: score}}."""
        return {q: dict(r) for q, r in self.rankings.items()}

    def write(self, path: str | Path, sidecar: bool = True) -> None:
        """Write the TREC file and (by default) its JSON sidecar, both atomically."""
        write_trec_run(self, path)
        if sidecar:
            write_json(sidecar_path(path), {"tag": self.tag, **self.config})

    @classmethod
    def read(cls, path: str | Path) -> "Run":
        run = read_trec_run(path)
        side = sidecar_path(path)
        if side.exists():
            from retrieval.jsonio import load_json

            config = load_json(side)
            if not isinstance(config, dict):
                raise InputError("a run sidecar must be a JSON object", path=side)
            config.pop("tag", None)
            run.config = config
        else:
            from retrieval.ir_metadata import config_from_header, read_header

            header = read_header(path)  # a run from elsewhere may carry an ir_metadata header
            if header:
                run.config = config_from_header(header)
        return run


def strictly_decreasing(ranked: Iterable[tuple[str, float]]) -> list[tuple[str, float]]:
    """Lower each score that is not below its predecessor to the next float below it."""
    out: list[tuple[str, float]] = []
    prev = math.inf
    for doc, score in ranked:
        score = float(score)
        if not math.isfinite(score):
            raise ValueError(f"score of {doc!r} is not finite: {score!r}")
        if score >= prev:
            score = float(np.nextafter(prev, -math.inf))
        out.append((doc, score))
        prev = score
    return out


def sidecar_path(path: str | Path) -> Path:
    path = Path(path)
    return path.with_name(path.name + ".json")


def write_trec_run(run: Run, path: str | Path) -> None:
    tag = run.tag.replace(" ", "_") or "dsr"
    with atomic_write(path) as handle:
        for qid, ranked in run.rankings.items():
            for rank, (doc, score) in enumerate(ranked, start=1):
                handle.write(f"{qid} Q0 {doc} {rank} {score!r} {tag}\n")


def read_trec_run(path: str | Path) -> Run:
    """Read a TREC run strictly; the first problem raises an InputError with its line.

    ``dsr validate`` reports every problem of a file at once; this reader is
    for files that should already be valid.
    """
    path = Path(path)
    if not path.exists():
        raise InputError("no such run file", path=path)
    rankings: dict[str, list[tuple[str, float]]] = {}
    seen: set[tuple[str, str]] = set()
    tag = None
    with open(path, encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, start=1):
            if not line.strip() or line.startswith("#"):
                continue  # comments: ir_metadata headers (retrieval.ir_metadata)
            parts = line.split()
            if len(parts) != 6:
                raise InputError(f"expected 6 columns (qid Q0 docid rank score tag), got {len(parts)}",
                                 path=path, line=lineno)
            qid, _, doc, rank, score_text, tag = parts
            try:
                score = float(score_text)
            except ValueError:
                raise InputError(f"score is not a number: {score_text!r}", path=path, line=lineno,
                                 field="score") from None
            if not math.isfinite(score):
                raise InputError(f"score is not finite: {score_text!r}", path=path, line=lineno,
                                 field="score")
            if (qid, doc) in seen:
                raise InputError(f"duplicate line for topic {qid!r} and doc {doc!r}", path=path,
                                 line=lineno, field="docid")
            seen.add((qid, doc))
            rankings.setdefault(qid, []).append((doc, score))
    if not rankings:
        raise InputError("the run file is empty", path=path)
    # Order by score (as trec_eval would, ties by doc id descending is trec_eval's
    # rule; ours has no ties when written by dsr).
    for qid, ranked in rankings.items():
        ranked.sort(key=lambda ds: -ds[1])
    return Run(rankings, tag or "dsr")
