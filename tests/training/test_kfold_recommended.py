"""experiments/kfold_recommended.py: the per-fold table of ``dsr kfold --recipe recommended``
as a result file, its cells those of ``dsr kfold``'s own folds.md, the training seconds from
each fold model's card."""

from __future__ import annotations

import json
import shlex

from dsr.training.kfold import folds_markdown
from experiments import kfold_recommended as study


def _gains() -> list[dict]:
    rows = []
    for fold, n, z, k, t in (("0", 120, 0.61, 0.69, 0.0004), ("1", 131, 0.64, 0.66, 0.21), ("all", 251, 0.625, 0.675, 0.002)):
        d = k - z
        rows.append(
            {"fold": fold, "model": f"rec-kf-fold{fold}" if fold != "all" else "pooled", "dialogues": n, "measure": "nDCG@5",
             "zero_shot": z, "kfold": k, "diff": d, "ci_low": d - 0.03, "ci_high": d + 0.03, "t": t, "perm": t * 1.1}
        )  # fmt: skip
    return rows


def test_the_rows_are_dsr_kfolds_own_cells_with_each_fold_models_training(tmp_path):
    card = tmp_path / "models" / "rec-kf-fold0" / "dsr_model.json"
    card.parent.mkdir(parents=True)
    card.write_text(json.dumps({"training": {"wall_seconds": 812.4, "steps": 225}}), encoding="utf-8")
    gains = _gains()
    rows = study.rows(gains, tmp_path)
    theirs = [line.strip("|").split(" | ") for line in folds_markdown(gains).splitlines()[2:]]
    for mine, md in zip(rows, theirs, strict=True):
        assert [mine[0], str(mine[1]), *mine[3:]] == [md[0].strip(), md[2], *(c.strip() for c in md[3:])]
    assert [r[2] for r in rows] == ["812 (225)", "–", "–"]  # fold 1's model is not in HOME


def test_the_command_is_the_one_the_journal_documents(tmp_path):
    argv = study.command(tmp_path / "cmu_dog", tmp_path / "out")
    assert argv[1:4] == ["-m", "dsr.cli", "kfold"]
    words = " ".join(argv[4:])
    journal = (study.ROOT / "experiments" / "JOURNAL.md").read_text(encoding="utf-8")
    for flag in ("--eval cmu_dog_dev", "--folds 3", "--name rec-kf", "--recipe recommended"):
        assert flag in words and flag in journal
    assert shlex.split(words)[0] == "cmu_dog"
