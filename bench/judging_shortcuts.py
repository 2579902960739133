"""Experiment: which shortcut scripts pass a campaign's honeypots, with automatic checks and with
gold items. The figures of docs/judging.md ("Tried by scripts").

A campaign on the first 30 dialogues of the judged CMU_DoG valid set (graded by language-model
assessors; ../shared/data/judged, never committed), labels hidden, default quality settings:
every task graded by a careful assessor (the true grades with 10 % noise) and by each script of
``tools/judging_harness.py`` (title match, word overlap, own title plus a shared word, position,
task size, random, all 0), once with ``--auto-honeypots`` and once with the judged grades as
gold items. Written: each assessor's balanced honeypot accuracy, checks answered and whether
their grades count, to bench/results/judging_shortcuts.json.

    python bench/judging_shortcuts.py [--out bench/results/judging_shortcuts.json]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from benchinfo import header, write_result  # noqa: E402

from dsr.judging.campaign_report import outcome  # noqa: E402
from tools.judging_harness import SCRIPTS, shortcut_campaign  # noqa: E402

JUDGED = ROOT.parent / "shared" / "data" / "judged" / "cmu_dog-valid-judged.jsonl"
NAMES = {
    "careful": "careful (10 % noise)",
    "titles": "title-matcher",
    "overlap": "word-overlap",
    "both": "own title and a shared word",
    "position": "position",
    "size": "task size",
    "random": "random",
    "zeros": "all 0",
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "judging_shortcuts.json"))
    args = parser.parse_args()
    if not JUDGED.is_file():
        print(f"{JUDGED} is not here", file=sys.stderr)
        return 2
    info = header("judging shortcuts")
    checks = {}
    for known in ("auto", "gold"):
        with tempfile.TemporaryDirectory() as folder:
            judging, *_ = shortcut_campaign(Path(folder) / "qc.sqlite", JUDGED, known)
            checks[known] = outcome(judging, "qc", "mv").checks
            judging.engine.dispose()
    rows = []
    for who in ("careful", *SCRIPTS):
        auto, gold = checks["auto"][who], checks["gold"][who]
        rows.append(
            [
                NAMES[who],
                round(auto.accuracy, 3),
                auto.checks,
                round(gold.accuracy, 3),
                gold.checks,
                "yes" if auto.counted else "no",
                "yes" if gold.counted else "no",
            ]
        )
        print(" | ".join(map(str, rows[-1])))
    write_result(
        "judging_shortcuts",
        info,
        ["assessor", "auto checks", "answered", "gold items", "answered", "counted (auto)", "counted (gold)"],
        rows,
        title="Balanced honeypot accuracy of a careful assessor and of scripts that grade without reading (threshold 0.7)",
        command="python bench/judging_shortcuts.py",
        notes=[
            "the first 30 dialogues of the judged CMU_DoG valid set (graded by language-model assessors), labels hidden; "
            "default settings: 10 % honeypots, threshold 0.7, at least 3 checks",
        ],
        path=Path(args.out),
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
