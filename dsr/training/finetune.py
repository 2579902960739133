"""Fine-tuning with sentence-transformers' trainer, as both recipes run it: the optimisation
settings, the trainer's arguments, checkpoints, resuming and progress on stderr.

Precision (the ``precision`` setting, ``dsr train --precision``): ``auto`` (the default) trains under bfloat16
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

import json
import os
import re
import shutil
import sys
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from tqdm.auto import tqdm
from transformers.trainer_callback import PrinterCallback, ProgressCallback

from dsr.core.errors import InputError
from dsr.core.provenance import cpu_name, peak_rss_mib
from dsr.core.quiet import progress_shown
from dsr.training.settings import LOGGING_STEPS, OptimisationSettings

if TYPE_CHECKING:
    from transformers import Trainer, TrainingArguments
    from transformers.trainer_callback import TrainerControl, TrainerState

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


@cache
def resolve_precision(requested: str = "auto") -> dict[str, str]:
    """``{"requested", "used", "why"}``: the precision training runs in, for the trainer and the card."""
    if requested not in PRECISIONS:
        raise InputError(f"unknown precision {requested!r}; choose from {', '.join(PRECISIONS)}", field="precision")
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
        raise InputError(
            f"`precision` bf16 needs bf16 units (a CPU with amx_bf16 or avx512_bf16, or a "
            f"CUDA GPU with bf16), and this machine has none ({where}): use `precision` "
            "fp32 or auto",
            field="precision",
        )
    return {"requested": requested, "used": "fp32", "why": f"no bf16 units: {where}"}


def training_arguments(settings: OptimisationSettings, checkpoints: Path) -> dict[str, Any]:
    """The trainer arguments both recipes share (sentence-transformers' *TrainingArguments), from
    a resolved record (:func:`dsr.training.settings.resolve_settings`)."""
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
        logging_steps=LOGGING_STEPS,
        report_to="none",
        disable_tqdm=not progress_shown(),  # bars on a terminal only
        dataloader_num_workers=0,
        bf16=bf16,
        **cpu,
    )


def run_trainer(trainer: Trainer, checkpoints: Path, resume: bool, precision: str) -> dict[str, Any]:
    """Train (from the newest checkpoint when ``resume``), progress on stderr; the figures
    (with the precision used and why, for the card)."""
    # The stock callbacks print loss lines to stdout (PrinterCallback, when the bar is off);
    # stdout is for results: dsr's own bar and loss lines go to stderr, on a terminal only.
    trainer.remove_callback(ProgressCallback)
    trainer.remove_callback(PrinterCallback)
    if progress_shown():
        trainer.add_callback(StderrProgress())
    last = _last_checkpoint(checkpoints) if resume else None
    before = peak_rss_mib()
    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
    output = trainer.train(resume_from_checkpoint=str(last) if last else None)
    history = [h for h in trainer.state.log_history if "loss" in h]
    return {
        "hardware": hardware(),
        "memory": {**memory_figures(), "peak_rss_before_training_mib": round(before)},
        "steps": trainer.state.global_step,
        "epochs": round(float(trainer.state.epoch or 0), 4),
        "train_loss": output.training_loss,
        # the trainer's own time: the steps (and checkpoints), not the selection, mining or load before them
        "steps_seconds": round(float(output.metrics.get("train_runtime", 0.0)), 1),
        "loss_history": [{"step": h["step"], "loss": h["loss"]} for h in history],
        "resumed_from": last.name if last else None,
        "precision": resolve_precision(precision),
    }


def hardware() -> dict[str, Any]:
    """Where training runs, for the card: a CUDA GPU when torch sees one (the trainer puts the
    model and the loss there), else the CPU (its model name, cores and torch's threads)."""
    if torch.cuda.is_available():
        return {"device": "cuda", "name": torch.cuda.get_device_name(), "gpus": torch.cuda.device_count()}
    return {"device": "cpu", "name": cpu_name(), "cores": os.cpu_count(), "threads": torch.get_num_threads()}


def memory_figures() -> dict[str, int]:
    """This process's peak resident memory (MiB; the collection, the model, the optimiser and
    the activations of the largest step together) and, on a GPU, torch's peak allocation."""
    figures = {"peak_rss_mib": round(peak_rss_mib())}
    if torch.cuda.is_available():
        figures["cuda_peak_mib"] = round(torch.cuda.max_memory_allocated() / 2**20)
    return figures


def _last_checkpoint(folder: Path) -> Path | None:
    """The newest complete ``checkpoint-N`` in ``folder``, or None.

    The trainer writes ``trainer_state.json`` last in a checkpoint, so a folder
    where it is missing, unreadable or for another step is a save cut short
    (a kill): it is removed, with a notice, and the previous checkpoint (the
    trainer keeps two) is the one resumed from.
    """
    steps = sorted(
        (
            (int(p.name.split("-")[1]), p)
            for p in (folder.iterdir() if folder.is_dir() else ())
            if re.fullmatch(r"checkpoint-\d+", p.name) and p.is_dir()
        ),
        reverse=True,
    )
    for step, path in steps:
        why = _incomplete(path, step)
        if why is None:
            return path
        print(f"dsr: ignoring the incomplete checkpoint {path.name} ({why}: a save was cut short); removed", file=sys.stderr)
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

    def on_log(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        logs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        if state.is_world_process_zero and self.training_bar is not None and logs:
            shown = {
                k: (round(v, 6) if isinstance(v, float) else v)
                for k, v in logs.items()
                if k in ("loss", "learning_rate", "epoch", "train_loss")
            }
            if shown:
                tqdm.write(str(shown), file=sys.stderr)
