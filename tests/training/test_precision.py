"""``dsr train --precision auto|bf16|fp32``: bf16 autocast where the CPU has bf16 units, fp32
elsewhere, chosen automatically and recorded in the card."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dsr.cli import main
from dsr.core.errors import InputError
from dsr.training import finetune
from dsr.training.finetune import cpu_bf16_flags, resolve_precision
from tests.training.test_biencoder_train import TRAIN_FLAGS, data, tiny  # noqa: F401 (fixtures)

# /proc/cpuinfo lines as Linux writes them (flags abridged): an AMD EPYC with AVX512-BF16, a
# Sapphire Rapids Xeon with AMX, and an older Xeon with neither
EPYC = "processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu sse2 avx2 avx512f avx512_bf16 avx512_vnni\n"
XEON_AMX = "flags\t\t: fpu avx512f avx512_bf16 amx_bf16 amx_tile amx_int8\nbugs\t\t: spectre_v1\n"
SKYLAKE = "flags\t\t: fpu sse2 avx2 avx512f avx512bw avx512_vnni\nbogomips\t: 4000.00\n"


@pytest.fixture
def cpu(monkeypatch):
    """Pretend this machine's CPU has the given bf16 flags (and no CUDA GPU)."""

    def pretend(flags: list[str]):
        resolve_precision.cache_clear()
        monkeypatch.setattr(finetune, "cpu_bf16_flags", lambda: list(flags))
        monkeypatch.setattr("torch.cuda.is_available", lambda: False)

    yield pretend
    resolve_precision.cache_clear()


def test_bf16_flags_are_read_from_cpuinfo():
    assert cpu_bf16_flags(EPYC) == ["avx512_bf16"]
    assert cpu_bf16_flags(XEON_AMX) == ["amx_bf16", "avx512_bf16"]
    assert cpu_bf16_flags(SKYLAKE) == []  # avx512bw and avx512_vnni are no bf16 units
    assert cpu_bf16_flags("") == []


def test_auto_picks_bf16_only_with_bf16_units(cpu):
    cpu(["avx512_bf16"])
    assert resolve_precision("auto") == {"requested": "auto", "used": "bf16", "why": "bf16 units: CPU flags avx512_bf16"}
    assert resolve_precision("fp32")["used"] == "fp32"
    cpu([])
    assert resolve_precision("auto") == {
        "requested": "auto",
        "used": "fp32",
        "why": "no bf16 units: CPU without amx_bf16 or avx512_bf16",
    }
    with pytest.raises(InputError, match="needs bf16 units"):
        resolve_precision("bf16")


def test_bf16_without_units_is_refused_before_any_work(cpu, data, tiny, dsr_home, capsys):
    cpu([])
    code = main(["train", str(data["train"]), "--name", "m", "--base", str(tiny), "--precision", "bf16", *TRAIN_FLAGS])
    assert code == 2 and "--precision bf16 needs bf16 units" in capsys.readouterr().err
    assert not (dsr_home / "models").exists() or not any((dsr_home / "models").iterdir())


@pytest.mark.slow
@pytest.mark.skipif(not cpu_bf16_flags(), reason="this CPU has no bf16 units (amx_bf16, avx512_bf16)")
def test_bf16_training_is_recorded_and_changes_the_arithmetic(data, tiny, dsr_home):
    from safetensors.torch import load_file

    cards, weights = {}, {}
    for precision in ("auto", "fp32"):
        assert (
            main(["train", str(data["train"]), "--name", precision, "--base", str(tiny), "--precision", precision, *TRAIN_FLAGS])
            == 0
        )
        folder = dsr_home / "models" / precision
        cards[precision] = json.loads((folder / "dsr_model.json").read_text())
        weights[precision] = load_file(str(next(folder.rglob("model.safetensors"))))
        assert f"- precision {cards[precision]['training']['precision']['used']}" in (folder / "README.md").read_text()
    assert cards["auto"]["training"]["precision"]["used"] == "bf16"
    assert cards["auto"]["training"]["precision"]["why"].startswith("bf16 units: CPU flags ")
    assert cards["fp32"]["training"]["precision"] == {"requested": "fp32", "used": "fp32", "why": "asked for"}
    assert cards["auto"]["parameters"]["precision"] == "auto"
    key = "embeddings.word_embeddings.weight"
    # the weights are saved in fp32 either way; bf16 autocast moved them differently
    assert str(weights["auto"][key].dtype) == str(weights["fp32"][key].dtype) == "torch.float32"
    assert not np.allclose(weights["auto"][key].numpy(), weights["fp32"][key].numpy(), atol=0, rtol=0)
