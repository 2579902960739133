"""Fine-tuning with sentence-transformers' trainer, as both recipes run it: the optimisation
settings, the trainer's arguments, checkpoints, resuming and progress on stderr.

Determinism: the seed fixes the head's initialisation (``set_seed`` before the
model is built), dropout and the data order (``seed`` and ``data_seed`` of the
training arguments). On CPU the same seed gives the same weights; on a GPU
kernels may still differ in the last bits.

This module imports torch and transformers: import it only where training runs.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm
from transformers.trainer_callback import ProgressCallback


@dataclass
class FitSettings:
    """Optimisation settings (``dsr train`` settings of the same names)."""

    seed: int = 42
    epochs: float = 1.0
    batch_size: int = 16
    max_length: int = 128
    lr: float = 5e-5
    warmup: float = 0.1  # a fraction of the steps when < 1, else a number of steps
    max_steps: int = -1  # -1: run the epochs to the end
    save_steps: int = 200
    logging_steps: int = 50

    def as_dict(self) -> dict[str, Any]:
        return dict(vars(self))


def fit_settings(settings) -> FitSettings:
    """The optimisation settings of a ``dsr.training.settings.TrainSettings``."""
    return FitSettings(seed=settings.seed, epochs=settings.epochs, batch_size=settings.batch_size,
                       max_length=settings.max_length or 0, lr=settings.lr, warmup=settings.warmup,
                       max_steps=settings.max_steps, save_steps=settings.save_steps)


def training_arguments(settings: FitSettings, checkpoints: Path) -> dict[str, Any]:
    """The trainer arguments both recipes share (sentence-transformers' *TrainingArguments)."""
    return dict(
        output_dir=str(checkpoints),
        num_train_epochs=settings.epochs,
        max_steps=settings.max_steps,
        per_device_train_batch_size=settings.batch_size,
        learning_rate=settings.lr,
        warmup_steps=settings.warmup,
        seed=settings.seed,
        data_seed=settings.seed,
        save_strategy="steps",
        save_steps=settings.save_steps,
        save_total_limit=2,
        logging_strategy="steps",
        logging_steps=settings.logging_steps,
        report_to="none",
        disable_tqdm=not sys.stderr.isatty(),   # bars on a terminal only
        dataloader_num_workers=0,
    )


def run_trainer(trainer, checkpoints: Path, resume: bool) -> dict[str, Any]:
    """Train (from the newest checkpoint when ``resume``), progress on stderr; the figures."""
    # The stock progress callback prints loss lines to stdout; keep stdout for results.
    trainer.remove_callback(ProgressCallback)
    trainer.add_callback(StderrProgress())
    last = _last_checkpoint(checkpoints) if resume else None
    output = trainer.train(resume_from_checkpoint=str(last) if last else None)
    history = [h for h in trainer.state.log_history if "loss" in h]
    return {
        "steps": trainer.state.global_step,
        "epochs": round(float(trainer.state.epoch or 0), 4),
        "train_loss": output.training_loss,
        "loss_history": [{"step": h["step"], "loss": h["loss"]} for h in history],
        "resumed_from": last.name if last else None,
    }


def _last_checkpoint(folder: Path) -> Path | None:
    """The newest complete ``checkpoint-N`` in ``folder``, or None.

    The trainer writes ``trainer_state.json`` last in a checkpoint, so a folder
    where it is missing, unreadable or for another step is a save cut short
    (a kill): it is removed, with a notice, and the previous checkpoint (the
    trainer keeps two) is the one resumed from.
    """
    steps = sorted(((int(p.name.split("-")[1]), p) for p in (folder.iterdir() if folder.is_dir() else ())
                    if re.fullmatch(r"checkpoint-\d+", p.name) and p.is_dir()), reverse=True)
    for step, path in steps:
        why = _incomplete(path, step)
        if why is None:
            return path
        print(f"dsr: ignoring the incomplete checkpoint {path.name} ({why}: a save was cut short); "
              "removed", file=sys.stderr)
        shutil.rmtree(path, ignore_errors=True)
    return None


def _incomplete(path: Path, step: int) -> str | None:
    """Why the checkpoint ``path`` of ``step`` is incomplete, or None when it is complete."""
    state = path / "trainer_state.json"
    try:
        saved = json.loads(state.read_text(encoding="utf-8")).get("global_step")
    except FileNotFoundError:
        return "no trainer_state.json"
    except (OSError, ValueError, AttributeError):
        return "trainer_state.json is unreadable"
    return None if saved == step else f"trainer_state.json is for step {saved}"


class StderrProgress(ProgressCallback):
    """The trainer's tqdm bar, with its log lines on stderr (stdout is for results)."""

    def on_log(self, args, state, control, logs=None, **kwargs):
        if state.is_world_process_zero and self.training_bar is not None and logs:
            shown = {k: (round(v, 6) if isinstance(v, float) else v) for k, v in logs.items()
                     if k in ("loss", "learning_rate", "epoch", "train_loss")}
            if shown:
                tqdm.write(str(shown), file=sys.stderr)
