"""Fine-tune a cross-encoder with sentence-transformers' trainer.

The model starts from a BERT-style checkpoint folder; a sentence-transformers
bi-encoder folder (such as all-MiniLM-L6-v2) is converted by
sentence-transformers, keeping the encoder and adding a one-logit
classification head that starts untrained (random, from the seed). The loss is
``BinaryCrossEntropyLoss`` on (query, sentence, target) pairs.

Precision (``--precision``): ``auto`` (the default) trains under bfloat16
autocast (the trainer's ``bf16``) where the hardware has bf16 units (a CPU with
AMX-BF16 or AVX512-BF16, a CUDA GPU that supports bf16) and in fp32 elsewhere;
``bf16`` insists (an error without such units), ``fp32`` never uses bf16. The
weights stay fp32 (autocast computes in bf16, the optimiser updates fp32
weights), so the saved model is an ordinary fp32 model; the card records what
was used and why.

Determinism: the seed fixes the head's initialisation (``set_seed`` before the
model is built), dropout and the data order (``seed`` and ``data_seed`` of the
training arguments). On CPU the same seed gives the same weights; on a GPU
kernels may still differ in the last bits.

This module imports torch and transformers: import it only where training runs.
"""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm
from transformers.trainer_callback import ProgressCallback

from retrieval.errors import InputError


@dataclass
class FitSettings:
    """Optimisation settings (``dsr train`` flags of the same names)."""

    seed: int = 42
    epochs: float = 1.0
    batch_size: int = 16
    max_length: int = 128
    lr: float = 5e-5
    warmup: float = 0.1  # a fraction of the steps when < 1, else a number of steps
    max_steps: int = -1  # -1: run the epochs to the end
    save_steps: int = 200
    logging_steps: int = 50
    precision: str = "auto"  # auto, bf16 or fp32 (see resolve_precision)

    def as_dict(self) -> dict[str, Any]:
        return dict(vars(self))


PRECISIONS = ("auto", "bf16", "fp32")
#: /proc/cpuinfo flags of CPUs whose bf16 units make bf16 autocast faster than fp32
CPU_BF16_FLAGS = ("amx_bf16", "avx512_bf16")


def cpu_bf16_flags(cpuinfo: str | None = None) -> list[str]:
    """The bf16 flags (``CPU_BF16_FLAGS``) this CPU has, from ``/proc/cpuinfo`` (Linux; none
    elsewhere: those CPUs train in fp32)."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return []
    flags = set()
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            flags.update(line.partition(":")[2].split())
    return [f for f in CPU_BF16_FLAGS if f in flags]


@lru_cache(maxsize=None)
def resolve_precision(requested: str = "auto") -> dict[str, str]:
    """``{"requested", "used", "why"}``: the precision training runs in, for the trainer and the card."""
    import torch

    if requested not in PRECISIONS:
        raise InputError(f"unknown precision {requested!r}; choose from {', '.join(PRECISIONS)}",
                         field="--precision")
    if requested == "fp32":
        return {"requested": requested, "used": "fp32", "why": "asked for"}
    if torch.cuda.is_available():
        units, where = torch.cuda.is_bf16_supported(), f"GPU {torch.cuda.get_device_name()}"
    else:
        flags = cpu_bf16_flags()
        units = bool(flags)
        where = f"CPU flags {', '.join(flags)}" if flags else "CPU without amx_bf16 or avx512_bf16"
    if units:
        return {"requested": requested, "used": "bf16", "why": f"bf16 units: {where}"}
    if requested == "bf16":
        raise InputError(f"--precision bf16 needs bf16 units (a CPU with amx_bf16 or avx512_bf16, or a "
                         f"CUDA GPU with bf16), and this machine has none ({where}): use --precision "
                         "fp32 or auto", field="--precision")
    return {"requested": requested, "used": "fp32", "why": f"no bf16 units: {where}"}


def load_base(path: str | Path, max_length: int, seed: int):
    """A CrossEncoder with one output logit from a local checkpoint folder.

    The seed is set first because the classification head is initialised
    randomly when the checkpoint has none.
    """
    from sentence_transformers import CrossEncoder
    from transformers import set_seed

    set_seed(seed)
    try:
        return CrossEncoder(str(path), num_labels=1, max_length=max_length, local_files_only=True)
    except (OSError, ValueError) as err:
        raise InputError(f"cannot load a BERT-style checkpoint from {path}: {err}",
                         path=path, field="--base") from None


def fine_tune(model, columns: dict[str, list], settings: FitSettings, work_dir: Path,
              resume: bool = False) -> dict[str, Any]:
    """Train ``model`` in place on ``columns`` (query, sentence, label); return trainer figures.

    Checkpoints go to ``work_dir/checkpoints`` every ``save_steps`` steps and
    at each epoch end; ``resume`` continues from the newest one there.
    """
    import datasets
    from sentence_transformers.cross_encoder import (CrossEncoderTrainer,
                                                     CrossEncoderTrainingArguments)
    from sentence_transformers.cross_encoder.losses import BinaryCrossEntropyLoss
    datasets.disable_progress_bars()
    logging.getLogger("sentence_transformers").setLevel(logging.WARNING)
    dataset = datasets.Dataset.from_dict(columns)
    checkpoints = work_dir / "checkpoints"
    args = CrossEncoderTrainingArguments(**training_arguments(settings, checkpoints))
    trainer = CrossEncoderTrainer(model=model, args=args, train_dataset=dataset,
                                  loss=BinaryCrossEntropyLoss(model))
    return run_trainer(trainer, checkpoints, resume, settings)


def training_arguments(settings: FitSettings, checkpoints: Path) -> dict[str, Any]:
    """The trainer arguments both recipes share (sentence-transformers' *TrainingArguments)."""
    import torch

    bf16 = resolve_precision(settings.precision)["used"] == "bf16"
    # bf16 on a CPU: the trainer wants use_cpu said (it checks bf16 against a GPU otherwise)
    on_cpu = bf16 and not torch.cuda.is_available()
    cpu = {"use_cpu": True, "dataloader_pin_memory": False} if on_cpu else {}
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
        disable_tqdm=False,
        dataloader_num_workers=0,
        bf16=bf16,
        **cpu,
    )


def run_trainer(trainer, checkpoints: Path, resume: bool, settings: FitSettings) -> dict[str, Any]:
    """Train (from the newest checkpoint when ``resume``), progress on stderr; the figures
    (with the precision used and why, for the card)."""
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
        "precision": resolve_precision(settings.precision),
    }


def _last_checkpoint(folder: Path) -> Path | None:
    from transformers.trainer_utils import get_last_checkpoint

    return Path(found) if folder.is_dir() and (found := get_last_checkpoint(str(folder))) else None


class StderrProgress(ProgressCallback):
    """The trainer's tqdm bar, with its log lines on stderr (stdout is for results)."""

    def on_log(self, args, state, control, logs=None, **kwargs):
        if state.is_world_process_zero and self.training_bar is not None and logs:
            shown = {k: (round(v, 6) if isinstance(v, float) else v) for k, v in logs.items()
                     if k in ("loss", "learning_rate", "epoch", "train_loss")}
            if shown:
                tqdm.write(str(shown), file=sys.stderr)
