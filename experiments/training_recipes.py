"""The training recipes study: the named recipes and what builds on them, judged by the project's
rule (``dsr decide``), in one command, on the machinery of experiments/training_levers.py:

    python experiments/training_recipes.py --home /work/train41 --write

Every lever is a model trained by ``dsr train`` into ``HOME/models/NAME`` (the arguments in
:data:`LEVERS`), the zero-shot model, or a cross-encoder reranking another lever's top 20. Each
ranks CMU_DoG valid (silver labels, 502 points) and all 405 points of the judged development set
``cmu_dog_dev`` with the exact backend (torch fp32: ``DSR_BACKEND=torch`` for every ranking,
reranking and mining here), then ``dsr decide`` compares every lever with the quick recipe
trained on ``title: body`` candidates (issue 31's ``chunks``), Holm over the levers present.
With ``--write`` it writes ``experiments/results/training_recipes.json`` and replaces the study's
block in experiments/JOURNAL.md. Levers whose model is missing are listed as not trained.
experiments/train_levers.sh trains them, one at a time under the heavy-run lock.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1])]  # experiments, a package, when run as a script

from experiments.training_levers import JOURNAL, Lever, arguments, block, judge, result_file, table, write  # noqa: E402

MARKS = ("<!-- training-recipes:begin (experiments/training_recipes.py) -->", "<!-- training-recipes:end -->")
TB = '--text "title: body"'
#: the levers, the rule's baseline first
LEVERS = (
    Lever(
        "quick-tb",
        "the quick default recipe (120 steps of 32, one list negative, lr 5e-5) with "
        "candidates as 'title: body': issue 31's `chunks`",
        TB,
    ),
    Lever("zero-shot", "all-MiniLM-L6-v2 untrained, 'title: body'", model="all-MiniLM-L6-v2"),
    Lever(
        "full-e1",
        "the pilot: the full recipe for one pass (every training point once, 4 list negatives per point, batches of 64)",
        "--recipe full --epochs 1",
    ),
    Lever(
        "full",
        "the full recipe: every training point, 3 passes, 4 list negatives per point, batches of 64, lr 5e-5, 'title: body'",
        "--recipe full",
    ),
    Lever(
        "full-round2",
        "a second round: `full` trained one more pass with its list negatives drawn "
        "among the 10 non-relevant candidates `full` ranks highest",
        "--recipe full --epochs 1 --base dsr:full --hard-negatives dsr:full",
    ),
    Lever(
        "ce-hard",
        "a cross-encoder (MiniLM-L6 with a new head, BCE, 1 positive : 3 negatives drawn "
        "among `full`'s top 10 non-relevant) reranking `full`'s top 20",
        '--model-type cross-encoder --text "title: body" --hard-negatives dsr:full --batch-size 32 --max-steps 600',
        rerank=("full", 20),
    ),
    Lever(
        "full-distill",
        "`full` trained one more pass with MNRL plus the KL divergence from "
        "`ce-hard`'s scores of each point's positive and 4 list negatives",
        "--recipe full --epochs 1 --base dsr:full --loss distill --teacher dsr:ce-hard",
    ),
)
NOTE = (
    "Every ranking, reranking and mining with the exact backend (torch fp32); training with "
    "`--precision auto` (bf16 autocast on this CPU)."
)


def main(argv=None) -> int:
    args = arguments(argv, __doc__.splitlines()[0])
    os.environ["DSR_BACKEND"] = "torch"
    result = judge(args, LEVERS)
    (args.out / "levers.json").write_text(json.dumps(result, indent=1) + "\n")
    print(result["text"])
    print("\n".join(table(result, LEVERS)))
    if args.write:
        result_file(result, "training_recipes", "The training recipes, judged by dsr decide", LEVERS, NOTE)
        write(JOURNAL, block(result, True, LEVERS, MARKS, "training_recipes.py", NOTE), "## Issue 41: the training budget", MARKS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
