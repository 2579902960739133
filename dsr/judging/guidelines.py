"""The grading scale and the guidelines of a campaign: data the organiser edits (YAML).

The default (``guidelines.yaml`` beside this module, written out by ``dsr judge
guidelines --out FILE``) is the 0/1/2 scale of the judged CMU_DoG set: what
"useful for the next turn" means, with examples. A campaign keeps its own copy
in the database, so editing the file later changes nothing until it is loaded
again (``dsr judge guidelines CAMPAIGN FILE``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dsr.core.errors import InputError
from dsr.core.jsonio import read_text

DEFAULT_FILE = Path(__file__).with_name("guidelines.yaml")
#: keys the judging page keeps for itself (navigation, unsure, the guidelines)
RESERVED_KEYS = frozenset("jknbug?")
MATCH_RULES = ("binary", "exact")


@dataclass(frozen=True)
class Grade:
    grade: int
    key: str
    name: str
    help: str = ""


@dataclass
class Guidelines:
    """A scale (grades with their keys), the relevance threshold, the text and examples."""

    question: str
    scale: list[Grade]
    guidelines: str
    examples: list[dict[str, Any]] = field(default_factory=list)
    relevant_from: int = 1
    honeypot_match: str = "binary"

    @property
    def grades(self) -> list[int]:
        return [g.grade for g in self.scale]

    def relevant(self, grade: int) -> bool:
        return grade >= self.relevant_from

    def passes(self, grade: int, gold: int) -> bool:
        """Whether ``grade`` answers a honeypot whose known grade is ``gold``."""
        if self.honeypot_match == "exact":
            return grade == gold
        return self.relevant(grade) == self.relevant(gold)

    def to_json(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "scale": [{"grade": g.grade, "key": g.key, "name": g.name, "help": g.help} for g in self.scale],
            "relevant_from": self.relevant_from,
            "honeypot_match": self.honeypot_match,
            "guidelines": self.guidelines,
            "examples": self.examples,
        }

    @property
    def paragraphs(self) -> list[str]:
        return [p.strip() for p in self.guidelines.split("\n\n") if p.strip()]


def default_text() -> str:
    return DEFAULT_FILE.read_text(encoding="utf-8")


def load(path: str | Path | None = None) -> Guidelines:
    """The guidelines in ``path`` (YAML), or the default ones; InputError names the field."""
    import yaml

    source = Path(path) if path is not None else DEFAULT_FILE
    text = read_text(source)
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        raise InputError(
            f"not valid YAML ({getattr(err, 'problem', None) or err})",
            path=source,
            line=mark.line + 1 if mark is not None else None,
        ) from None
    return from_json(raw, source)


def from_json(raw: Any, source: str | Path | None = None) -> Guidelines:
    """Check and build guidelines from their JSON/YAML form."""

    def fail(message: str, name: str) -> InputError:
        return InputError(message, path=source, field=name)

    if not isinstance(raw, dict):
        raise fail("expected a mapping with question, scale and guidelines", "(top level)")
    scale = raw.get("scale")
    if not isinstance(scale, list) or len(scale) < 2:
        raise fail("a list of at least two grades", "scale")
    grades = [_grade(entry, i, fail) for i, entry in enumerate(scale)]
    values = [g.grade for g in grades]
    if values != sorted(set(values)):
        raise fail(f"grades must be distinct and listed lowest first, got {values}", "scale")
    keys = [g.key for g in grades]
    if len(set(keys)) != len(keys):
        raise fail(f"two grades share a key: {keys}", "scale")
    relevant_from = raw.get("relevant_from", 1)
    if not isinstance(relevant_from, int) or isinstance(relevant_from, bool) or not values[0] < relevant_from <= values[-1]:
        raise fail(f"a grade above the lowest ({values[0]}) and at most the highest ({values[-1]})", "relevant_from")
    match = raw.get("honeypot_match", "binary")
    if match not in MATCH_RULES:
        raise fail(f"one of {', '.join(MATCH_RULES)}", "honeypot_match")
    text = raw.get("guidelines")
    if not isinstance(text, str) or not text.strip():
        raise fail("the guidelines text is missing", "guidelines")
    question = raw.get("question") or "Would this sentence help write the next turn?"
    examples = raw.get("examples") or []
    if not isinstance(examples, list) or not all(isinstance(e, dict) for e in examples):
        raise fail("a list of mappings", "examples")
    for i, example in enumerate(examples):
        if example.get("grade") not in values:
            raise fail(f"grade must be one of {values}", f"examples[{i}].grade")
    return Guidelines(str(question), grades, text, examples, relevant_from, match)


def _grade(entry: Any, i: int, fail: Callable[[str, str], InputError]) -> Grade:
    name = f"scale[{i}]"
    if not isinstance(entry, dict):
        raise fail("expected a mapping with grade, key and name", name)
    grade = entry.get("grade")
    if not isinstance(grade, int) or isinstance(grade, bool) or grade < 0:
        raise fail("a whole number >= 0", f"{name}.grade")
    key = str(entry.get("key", grade))
    if len(key) != 1 or key.isspace():
        raise fail(f"one character, got {key!r}", f"{name}.key")
    if key in RESERVED_KEYS:
        raise fail(f"{key!r} is kept for navigation (reserved: {' '.join(sorted(RESERVED_KEYS))})", f"{name}.key")
    label = entry.get("name")
    if not isinstance(label, str) or not label.strip():
        raise fail("missing", f"{name}.name")
    return Grade(grade, key, label.strip(), str(entry.get("help") or "").strip())
