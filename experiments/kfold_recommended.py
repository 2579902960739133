"""Unseen documents: ``dsr kfold`` with the recommended recipe, and its per-fold table as a
result file:

    python experiments/kfold_recommended.py --home DSR_HOME [--write]

Runs ``dsr kfold cmu_dog --split train --eval cmu_dog_dev --folds 3 --recipe recommended``
(the judged development set ``cmu_dog_dev``, graded by language-model assessors, is what the
fold models are evaluated on; none is trained on it) into a fresh folder under
``HOME/kfold-recommended``. Fold models already in ``HOME/models`` (``rec-kf-foldI``, trained by
an earlier run of the same command) are reused, as ``dsr kfold`` reuses them; their training
seconds come from their cards. Writes ``experiments/results/kfold-recommended.json``: per fold,
the paired gain of the fold model over the zero-shot model on the dialogues of the documents
it left out, with its 95 % interval (``OUT/folds.json``); ``--write`` renders it into
experiments/JOURNAL.md's block ``<!-- figures:kfold-recommended -->``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench")]

from benchinfo import header, write_result  # noqa: E402

NAME = "kfold-recommended"
PREFIX = "rec-kf"
FOLDS = 3


def command(source: Path, out: Path) -> list[str]:
    """The ``dsr kfold`` command line this study runs."""
    return [
        sys.executable, "-m", "dsr.cli", "kfold", "cmu_dog", "--source", str(source), "--split", "train",
        "--eval", "cmu_dog_dev", "--eval-source", str(source), "--folds", str(FOLDS), "--name", PREFIX,
        "--recipe", "recommended", "--out", str(out),
    ]  # fmt: skip


def training_seconds(home: Path, fold: str) -> str:
    """The fold model's training seconds and steps, from its card ("–" for the pooled row)."""
    card = home / "models" / f"{PREFIX}-fold{fold}" / "dsr_model.json"
    if not card.is_file():
        return "–"
    t = json.loads(card.read_text(encoding="utf-8"))["training"]
    return f"{t['wall_seconds']:.0f} ({t['steps']})"


def rows(gains: list[dict], home: Path) -> list[list[object]]:
    """The table's rows from ``folds.json``."""
    p = lambda v: "<.001" if v < 0.001 else f"{v:.3f}"  # noqa: E731
    return [
        [
            g["fold"],
            g["dialogues"],
            training_seconds(home, g["fold"]),
            f"{g['zero_shot']:.4f}",
            f"{g['kfold']:.4f}",
            f"{g['diff']:+.4f} [{g['ci_low']:+.4f}, {g['ci_high']:+.4f}]",
            f"{p(g['t'])} / {p(g['perm'])}",
        ]
        for g in gains
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, required=True, help="DSR_HOME: collections, fold models")
    parser.add_argument("--source", type=Path, default=ROOT.parent / "shared" / "data" / "cmu_dog")
    parser.add_argument("--write", action="store_true", help="render the result into experiments/JOURNAL.md")
    args = parser.parse_args()
    out = args.home / "kfold-recommended"
    shutil.rmtree(out, ignore_errors=True)
    info = header("dsr kfold with the recommended recipe: the gain on documents no fold model saw")
    env = {**os.environ, "DSR_HOME": str(args.home), "DSR_BACKEND": "torch"}
    subprocess.run(command(args.source, out), check=True, env=env)
    gains = json.loads((out / "folds.json").read_text(encoding="utf-8"))
    measure = gains[0]["measure"] if gains else "nDCG@5"
    columns = ["fold", "dialogues", "fold model's training s (steps)", f"zero-shot {measure}",
               f"fold model {measure}", "gain [95 % CI]", "p (t / sign-flip)"]  # fmt: skip
    notes = [
        "dsr kfold cmu_dog --split train --eval cmu_dog_dev --folds 3 --name rec-kf --recipe recommended: "
        "each fold model is the recommended recipe trained without one third of the films; each "
        "evaluated dialogue is ranked by the fold model that never saw its film",
        "the judged development set cmu_dog_dev: its points graded by language-model assessors; "
        "gain: the fold model minus the zero-shot all-MiniLM-L6-v2, paired, 95 % t interval, p uncorrected; "
        "'all': every fold's dialogues pooled",
    ]
    path = write_result(
        NAME, info, columns, rows(gains, args.home), title="Unseen documents: dsr kfold with the recommended recipe",
        command="python experiments/kfold_recommended.py --home HOME --write", notes=notes,
        folder=ROOT / "experiments" / "results",
    )  # fmt: skip
    print(f"wrote {path.relative_to(ROOT)}")
    if args.write:
        subprocess.run([sys.executable, str(ROOT / "tools" / "docs_figures.py"), "--write"], check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
