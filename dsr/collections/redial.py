"""ReDial (conversational movie recommendation) as next-mention retrieval.

Source: github.com/ReDialData/website, branch ``data``, commit
849e9eb1bb60e312f8bf4daa82fc10a285e9318b (Li et al., NeurIPS 2018), CC BY 4.0.
Files: ``test_data.jsonl`` (one dialogue per line; the split read by default)
and ``movies_with_mentions.csv`` (``movieId,movieName,nbMentions``). Two
crowd workers chat: the seeker (``initiatorWorkerId``, per the datasheet) asks
for movies, the recommender (``respondentWorkerId``) suggests them; every
movie is tagged ``@<movieId>``.

How it becomes the task:

- **Turns.** Consecutive messages by the same worker are merged into one turn
  (joined with a newline): workers often send a sentence in two or three
  messages ("yes @101794" ... "and also @91481"), and splitting them would make
  the second half a query point whose context already contains the answer's
  own first half. ``@<id>`` is replaced by the movie's name from
  ``movies_with_mentions.csv`` (whitespace collapsed; the name usually ends
  with the year), else by the dialogue's ``movieMentions`` name.
- **Query points.** Each recommender turn that mentions a movie not mentioned
  earlier in the dialogue (by either worker), with at least ``min_context``
  (default 1) turns before it. Context = the earlier turns; target = that turn
  (titles substituted). Dialogue id = ``<conversationId>-<turn index>``.
- **Relevance.** The movies the target mentions for the first time. Grade 2
  where both workers' forms (``initiatorQuestions`` and
  ``respondentQuestions``) say ``liked`` = 1, else grade 1.
- **Candidates.** ``pool_size`` (default 50) movies from an initial ranker that
  never sees the target, over every movie of the catalogue except those
  already mentioned in the context::

      score = cooc_weight  * ln(1 + co-mentions with the context's movies)
            + prior_weight * ln(1 + nbMentions)
            + bm25_weight  * BM25(context, movie name)

  co-mentions of a movie = over the movies named in the context, the number
  of OTHER dialogues of the split that name both (leave-one-dialogue-out, so
  the dialogue itself never votes for its own answer). BM25 is the rank_bm25
  BM25Okapi formula over stemmed, stopword-free tokens. Defaults 4 / 1 / 0,
  measured on test_data.jsonl (3,372 recommender turns naming a new movie;
  share whose pool holds one): popularity alone 25.6%, + co-mentions 42.0%;
  BM25 of the context against titles lowers it (popularity + BM25 9.1% at
  weights 1/1, 33.5% at 4/4/1), because context words ("good", "funny",
  "love") match titles, not tastes. Ties: higher nbMentions, then lower movie
  id. Candidate id = movie id, title = name without the year, body = name
  with the year, score = the initial score. ``nbMentions`` counts mentions
  over the whole ReDial release, this split included: a small popularity leak
  from the test dialogues into the prior, stated here rather than hidden. As
  in the SIGIR 2022 set, only query points whose pool holds a relevant movie
  are kept; ``Collection.meta`` records how many were considered and kept.
- **Subset.** ``seeker_named`` when the seeker had mentioned a movie before the
  target turn (the recommender can build on a named example), otherwise
  ``seeker_unnamed`` (only genres, moods or nothing to go on).
"""

from __future__ import annotations

import csv
import io
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import permutations
from pathlib import Path
from typing import Any

import numpy as np

from dsr.collections import SourceInfo
from dsr.collections.common import cached_build, check_params, params_note, resolve_source
from dsr.core.data import Candidate, Collection, Dialogue, Turn
from dsr.core.errors import InputError
from dsr.core.jsonio import iter_json_lines, read_text
from dsr.core.params import Param, defaults
from dsr.indexes.bm25 import BM25Index

NAME = "redial"
REPOSITORY = "ReDialData/website"
COMMIT = "849e9eb1bb60e312f8bf4daa82fc10a285e9318b"
MOVIES_FILE = "movies_with_mentions.csv"
SPLIT_FILES = {"test": "test_data.jsonl", "train": "train_data.jsonl"}
#: bump when the conversion changes, so cached builds are rebuilt
BUILDER_VERSION = 1

#: ``build``'s parameters (the weights: the initial ranker's, see the module docstring)
PARAMS = (
    Param("pool_size", 50, "int", "movies per query point", low=1),
    Param("cooc_weight", 4.0, "float", "weight of co-mentions with the context's movies", low=0),
    Param("prior_weight", 1.0, "float", "weight of the popularity prior", low=0),
    Param("bm25_weight", 0.0, "float", "weight of BM25 over the movie titles", low=0),
    Param("min_context", 1, "int", "turns required before the target", low=0),
)

SOURCE = SourceInfo(
    name=NAME,
    description="ReDial movie-recommendation chats as next-mention retrieval: rank 50 movies "
    "(co-mentions with the context's movies + a popularity prior) for a "
    "recommender turn that names a new movie; relevant = the movies it names",
    licence="CC BY 4.0",
    repository=REPOSITORY,
    commit=COMMIT,
    splits=("test", "train"),
    default_split="test",
    has_candidates=True,
    notes=(
        "grade 2 = both workers' forms say the seeker liked the movie; grade 1 otherwise",
        "subsets: seeker_named / seeker_unnamed (whether the seeker had named a movie before)",
        "nbMentions (the popularity prior) counts the whole release, test split included",
        params_note(PARAMS),
    ),
)

_MENTION = re.compile(r"@(\d+)")
_SPACES = re.compile(r"\s+")
_YEAR = re.compile(r"\s*\(\d{4}\)\s*$")


def manifest_files(copy: Path) -> dict[str, Path | str]:
    """What this source's manifest lists (``tools/make_manifests.py``): each repository path ->
    its unchanged upstream copy in ``copy`` (the tool hashes it), or a published git blob id."""
    # test_data.jsonl: the member of redial_dataset.zip, copied out unchanged
    return {name: copy / name for name in (MOVIES_FILE, SPLIT_FILES["test"])}


def load(source: Path | None = None, split: str | None = None) -> Collection:
    """The collection for ``split`` (default ``test``), built once and cached.

    ``source``: a folder with ``movies_with_mentions.csv`` and
    ``<split>_data.jsonl``; default ``$DSR_HOME/data/redial``.
    """
    folder = resolve_source(NAME, source)
    split = SOURCE.split_or_default(split)
    dialogues_path, movies_path = _paths(folder, split)
    return cached_build(
        NAME, split, folder, [dialogues_path, movies_path], defaults(PARAMS), BUILDER_VERSION, lambda: build(folder, split)
    )


def _query_point(
    conv: Any, i: int, lineno: int, turn: Any, context: list[Any], candidates: list[Candidate], new: list[str], named: bool
) -> Dialogue:
    """The query point of a recommender turn ``i`` that names the ``new`` movies."""
    return Dialogue(
        id=f"{conv.id}-{i}",
        title="",
        context=context,
        target=turn.as_turn(),
        candidates=candidates,
        subset="seeker_named" if named else "seeker_unnamed",
        source=NAME,
        meta={
            "conversationId": conv.id,
            "turn": i,
            "messageIds": turn.message_ids,
            "line": lineno,
            "relevant_movies": new,
            "relevant_in_pool": sum(c.label > 0 for c in candidates),
        },
    )


def build(source: Path, split: str | None = None, **params: Any) -> Collection:
    """Convert ``<split>_data.jsonl`` (default ``test``) to a Collection.

    ``params``: ``pool_size`` (movies per query point), ``cooc_weight``,
    ``prior_weight`` and ``bm25_weight`` (the initial ranker's weights, see
    the module docstring), ``min_context`` (turns required before the target).
    """
    options = check_params(params, PARAMS, NAME)
    pool_size, min_context = options["pool_size"], options["min_context"]
    weights = {k: float(options[k]) for k in ("cooc_weight", "prior_weight", "bm25_weight")}
    folder = Path(source)
    split = SOURCE.split_or_default(split)
    dialogues_path, movies_path = _paths(folder, split)
    movies = read_movies(movies_path)
    convs = [(lineno, parse_dialogue(raw, dialogues_path, lineno, movies)) for lineno, raw in read_dialogues(dialogues_path)]
    ranker = MovieRanker(movies, [c.movie_set for _, c in convs], **weights)

    out: list[Dialogue] = []
    considered = 0
    for lineno, conv in convs:
        mentioned: set[str] = set()
        seeker_named = False
        for i, turn in enumerate(conv.turns):
            new = [m for m in dict.fromkeys(turn.movies) if m not in mentioned]
            if turn.role == "recommender" and new and i >= min_context:
                considered += 1
                context = [t.as_turn() for t in conv.turns[:i]]
                pool = ranker.top(" ".join(t.body for t in context), mentioned, conv.movie_set, pool_size)
                grades = {m: 2 if conv.liked_by_both(m) else 1 for m in new}
                candidates = [
                    Candidate(movies[m].id, movies[m].title, movies[m].name, score, grades.get(m, 0)) for m, score in pool
                ]
                if any(c.label for c in candidates):
                    out.append(_query_point(conv, i, lineno, turn, context, candidates, new, seeker_named))
            mentioned.update(turn.movies)
            seeker_named = seeker_named or (turn.role == "seeker" and bool(turn.movies))
    if not out:
        raise InputError("no query point: no recommender turn names a new movie", path=dialogues_path)
    return Collection(
        f"{NAME}-{split}",
        out,
        meta={
            "source": str(folder),
            "split": split,
            "params": options,
            "query_points_considered": considered,
            "query_points_kept": len(out),
            "pool_recall": round(len(out) / considered, 4) if considered else None,
            "movies": len(movies),
            "builder_version": BUILDER_VERSION,
        },
    )


# --- movies and the initial ranker ---------------------------------------------------


@dataclass(frozen=True)
class Movie:
    id: str
    name: str  # with the year when the catalogue has one
    title: str  # without the year
    mentions: int


def read_movies(path: Path) -> dict[str, Movie]:
    """``movies_with_mentions.csv``: movie id -> Movie, checked line by line."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise InputError(f"not UTF-8 text ({err.reason} at byte {err.start})", path=path) from None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    missing = {"movieId", "movieName", "nbMentions"} - set(reader.fieldnames or ())
    if missing:
        raise InputError(f"missing column(s) {', '.join(sorted(missing))}", path=path, line=1)
    movies: dict[str, Movie] = {}
    for row in reader:
        line = reader.line_num
        mid = (row["movieId"] or "").strip()
        if not mid.isdigit():
            raise InputError(f"expected a numeric movie id, got {row['movieId']!r}", path=path, line=line, field="movieId")
        if mid in movies:
            raise InputError(f"duplicate movie id {mid}", path=path, line=line, field="movieId")
        name = _SPACES.sub(" ", row["movieName"] or "").strip()
        if not name:
            raise InputError("empty movie name", path=path, line=line, record=mid, field="movieName")
        count = (row["nbMentions"] or "").strip()
        if not count.isdigit():
            raise InputError(
                f"expected a whole number, got {row['nbMentions']!r}", path=path, line=line, record=mid, field="nbMentions"
            )
        movies[mid] = Movie(mid, name, _YEAR.sub("", name) or name, int(count))
    if not movies:
        raise InputError("no movies", path=path)
    return movies


class MovieRanker:
    """The initial ranker: co-mentions + popularity prior + BM25 against movie names."""

    def __init__(
        self,
        movies: dict[str, Movie],
        dialogue_movies: list[set[str]],
        cooc_weight: float = 4.0,
        prior_weight: float = 1.0,
        bm25_weight: float = 0.0,
    ) -> None:
        self.ids = list(movies)
        self.position = {m: n for n, m in enumerate(self.ids)}
        self.cooc_weight, self.bm25_weight = cooc_weight, bm25_weight
        # rank_bm25's BM25Okapi defaults (k1=1.5, b=0.75) over the titles
        self.bm25 = (
            BM25Index(self.ids, [m.name for m in movies.values()], k1=1.5, b=0.75, stopwords=True, stem=True)
            if bm25_weight
            else None
        )
        mentions = np.array([movies[m].mentions for m in self.ids], dtype=float)
        self.prior = prior_weight * np.log1p(mentions)
        #: movie -> movie -> number of dialogues naming both
        self.cooc: dict[str, Counter] = {}
        for names in dialogue_movies:
            for a, b in permutations(names & movies.keys(), 2):
                self.cooc.setdefault(a, Counter())[b] += 1
        # tie order: more mentions first, then the lower id
        numeric = np.array([int(m) for m in self.ids])
        self.tie_rank = np.empty(len(self.ids), dtype=int)
        self.tie_rank[np.lexsort((numeric, -mentions))] = np.arange(len(self.ids))

    def scores(self, context: str, context_movies: set[str], own: set[str]) -> np.ndarray:
        """Initial score of every movie; ``own`` = the movies of the dialogue being ranked,
        whose co-mention with each other is not counted (leave-one-dialogue-out)."""
        scores = self.prior.copy()
        if self.cooc_weight:
            counts = np.zeros(len(self.ids))
            for a in context_movies:
                for b, n in self.cooc.get(a, {}).items():
                    # a is in `own` (it was mentioned in this dialogue); drop this
                    # dialogue's own vote when b is in it too
                    counts[self.position[b]] += n - (b in own)
            scores += self.cooc_weight * np.log1p(counts)
        if self.bm25 is not None:
            scores += self.bm25_weight * self.bm25.all_scores(self.bm25.query_tokens(context))
        return scores

    def top(self, context: str, mentioned: set[str], own: set[str], k: int) -> list[tuple[str, float]]:
        """The ``k`` best (movie id, score), skipping ``mentioned``; score desc, then tie order."""
        # rounded before ordering, so equal scores tie the same way in any summation order
        scores = np.round(self.scores(context, mentioned, own), 6)
        keep = np.ones(len(self.ids), dtype=bool)
        for m in mentioned:
            if m in self.position:
                keep[self.position[m]] = False
        idx = np.flatnonzero(keep)
        order = idx[np.lexsort((self.tie_rank[idx], -scores[idx]))][:k]
        return [(self.ids[j], float(scores[j])) for j in order]


# --- dialogues -------------------------------------------------------------------


@dataclass
class MergedTurn:
    role: str  # "seeker" or "recommender"
    worker: str
    body: str  # titles substituted
    movies: list[str]  # movie ids in order of mention
    message_ids: list[Any]

    def as_turn(self) -> Turn:
        return Turn(self.worker, self.role, self.body)


@dataclass
class Conversation:
    id: str
    turns: list[MergedTurn]
    forms: dict[str, dict]  # "initiator"/"respondent" -> movie id -> answers

    @property
    def movie_set(self) -> set[str]:
        return {m for t in self.turns for m in t.movies}

    def liked_by_both(self, movie: str) -> bool:
        return all(_liked(self.forms[who].get(movie)) for who in ("initiator", "respondent"))


def _liked(answers: Any) -> bool:
    if not isinstance(answers, dict):
        return False
    value = answers.get("liked")
    return value is not None and not isinstance(value, bool) and str(value) == "1"


def read_dialogues(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, object) for each non-empty line of a JSON Lines file."""
    return iter_json_lines(read_text(path), path)


def parse_dialogue(raw: Any, path: Path, lineno: int, movies: dict[str, Movie]) -> Conversation:
    """One ReDial dialogue, checked, with consecutive same-sender messages merged."""

    def error(message: str, field: str | None = None, record: str | None = None) -> InputError:
        return InputError(message, path=path, line=lineno, record=record, field=field)

    if not isinstance(raw, dict):
        raise error(f"expected a JSON object, got {type(raw).__name__}")
    cid = raw.get("conversationId")
    if cid in (None, "") or isinstance(cid, (bool, dict, list)):
        raise error("missing", "conversationId")
    cid = str(cid)
    roles = {}
    for key, role in (("initiatorWorkerId", "seeker"), ("respondentWorkerId", "recommender")):
        value = raw.get(key)
        if value in (None, "") or isinstance(value, (bool, dict, list)):
            raise error("missing worker id", key, cid)
        roles[str(value)] = role
    if len(roles) != 2:
        raise error("initiator and respondent are the same worker", "respondentWorkerId", cid)
    names = raw.get("movieMentions") or {}
    if not isinstance(names, dict):
        # upstream writes an empty list when a dialogue has no mention
        if names != []:
            raise error("expected an object", "movieMentions", cid)
        names = {}
    forms = {}
    for key, who in (("initiatorQuestions", "initiator"), ("respondentQuestions", "respondent")):
        value = raw.get(key)
        if value in (None, []):
            value = {}
        if not isinstance(value, dict):
            raise error("expected an object", key, cid)
        forms[who] = {str(k): v for k, v in value.items()}
    messages = raw.get("messages")
    if not isinstance(messages, list) or not messages:
        raise error("missing or empty", "messages", cid)
    return Conversation(
        cid, _merged_turns(messages, roles, names, movies, lambda message, field: error(message, field, cid)), forms
    )


def _merged_turns(
    messages: list[Any],
    roles: dict[str, str],
    names: dict[str, Any],
    movies: dict[str, Movie],
    error: Callable[[str, str], InputError],
) -> list[MergedTurn]:
    """The messages as turns (``@ID`` mentions replaced by titles), consecutive messages of one
    sender merged into one turn; ``error(message, field)`` makes the InputError."""
    turns: list[MergedTurn] = []
    for n, msg in enumerate(messages):
        field = f"messages[{n}]"
        if not isinstance(msg, dict):
            raise error("expected an object", field)
        text = msg.get("text")
        if not isinstance(text, str):
            raise error("missing message text", f"{field}.text")
        worker = str(msg.get("senderWorkerId"))
        if worker not in roles:
            raise error(
                f"sender {msg.get('senderWorkerId')!r} is neither the initiator nor the respondent", f"{field}.senderWorkerId"
            )
        ids = _MENTION.findall(text)
        for mid in ids:
            if mid not in movies and not isinstance(names.get(mid), str):
                raise error(f"@{mid} is in neither {MOVIES_FILE} nor movieMentions", f"{field}.text")

        def title(match: re.Match) -> str:
            mid = match.group(1)
            return movies[mid].name if mid in movies else _SPACES.sub(" ", names[mid]).strip()

        body = _MENTION.sub(title, text)
        if turns and turns[-1].worker == worker:
            last = turns[-1]
            last.body = f"{last.body}\n{body}"
            last.movies.extend(ids)
            last.message_ids.append(msg.get("messageId"))
        else:
            turns.append(MergedTurn(roles[worker], worker, body, list(ids), [msg.get("messageId")]))
    return turns


def _paths(folder: Path, split: str) -> tuple[Path, Path]:
    if split not in SPLIT_FILES:
        raise InputError(f"unknown split {split!r} for redial; use {' or '.join(SPLIT_FILES)}", field="split")
    dialogues, movies = folder / SPLIT_FILES[split], folder / MOVIES_FILE
    for path in (dialogues, movies):
        if not path.is_file():
            raise InputError(
                f"missing {path.name}; `dsr data fetch redial` downloads the "
                "ReDial files, or pass a folder that holds them as `source`",
                path=path,
            )
    return dialogues, movies
