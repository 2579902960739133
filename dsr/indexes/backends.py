"""Fast CPU inference: the bi-encoder and the cross-encoder run by OpenVINO, in fp32 or int8.

``backend`` (a parameter of the ``dense`` ranker, the ``bi-encoder`` and
``cross-encoder`` rerankers, and ``dsr reproduce --fast``) is one of:

* ``torch`` (the default): sentence-transformers on torch fp32, the exact path:
  its figures do not depend on the CPU's instruction set (what bf16 and int8
  do: issue 39 saw int8 move cells of the judged table by up to 0.0247 and flip
  two marks on a CPU with AMX), so a reference table is the same on every machine;
* ``auto``: ``openvino-int8`` where the CPU has int8 dot-product
  units (AVX512-VNNI, AVX-VNNI, AMX) and the fast extra is installed, else
  ``torch`` (:func:`fastest_backend`; ``DSR_BACKEND=NAME`` in the environment
  pins what ``auto`` means). Runs and reports record the backend that ran, never ``auto``;
* ``openvino``: the same network converted to OpenVINO IR, run in fp32
  (inference precision pinned to f32, so a CPU with bf16 units does not
  silently run it in bf16): scores equal torch's to about 6 digits;
* ``openvino-bf16``: that IR run with bf16 inference precision, which is what
  OpenVINO picks by itself on CPUs with bf16 units (AMX, AVX512-BF16), and so
  what ``sentence-transformers``' ``backend="openvino"`` measures there; needs
  such a CPU (refused with a clear error elsewhere). Scores move a little;
* ``openvino-int8``: that IR with int8 weights and activations, quantised
  after training by NNCF (static, "mixed" preset, transformer model type),
  calibrated on a small fixed set: the first ``CALIBRATION_SIZE`` (128) of the bundled
  ``sample`` collection's sentences and queries, or (query, sentence) pairs, in a seeded
  order (their sha256 is in the manifest): never a download; the operations left in float
  run in f32. Scores move a little.

A table, report or run sidecar made on any backend but torch carries one line saying
how far its figures were measured to be from torch's on that collection
(:mod:`dsr.indexes.exactness`; ``bench/backend_deltas.py`` measures them).

A model is exported once from its local weights (the whole sentence-transformers
module stack is traced, pooling and normalisation included, so the output is
what ``encode``/``predict`` compute) and kept in
``DSR_HOME/models/fast/MODEL@WEIGHTS16/KIND-BACKEND/`` with ``model.xml`` /
``model.bin``, the tokenizer, ``fast.json`` (how to feed the network) and a
``manifest.json`` (source weights hash, backend, quantisation and calibration
settings, versions of openvino, nncf, torch, transformers and
sentence-transformers). It is reused while the manifest matches and rebuilt
when it does not (retrained ``dsr:NAME`` weights get a new folder, an upgrade
rebuilds). ``check.json`` records how far the export's outputs are from
torch's on 64 calibration items.

A call's texts are tokenised at once and fed longest first in tokens, so a request
holds texts of one length or nearly (less padding, as sentence-transformers does), padded
to its longest rounded up to a multiple of
``PAD_MULTIPLE`` tokens (fewer distinct shapes for the CPU plugin to prepare),
in requests of ``REQUEST_BATCH`` texts with ``IN_FLIGHT`` requests running at
once under OpenVINO's THROUGHPUT hint (one stream per core). On 2 cores this
replaces one request of 64 at a time under the LATENCY hint, which was slower in
scratch comparisons (bench/bench_backends.py ``--settings`` times both). The
caller's ``batch_size`` is the torch path's; the fast path keeps its own.

ONNX Runtime was tried as a second backend (onnxruntime 1.32 installs
beside the pinned torch): the same module stack exported with
``torch.onnx.export``, fp32 with ORT's transformer graph optimisations, and
int8 by ORT's own ``quantize_dynamic`` (int8 weights, activations quantised at
run time: no calibration). In one interleaved run on 600 real CMU_DoG
sentences and 300 (turn, sentence) pairs, against torch fp32: bi-encoder ORT fp32 2.0x, ORT int8 3.9-4.0x, OpenVINO int8
7.7x; cross-encoder ORT fp32 1.9x, ORT int8 3.4-3.8x, OpenVINO int8 7.4x; and
ORT's dynamic int8 strays further from torch (smallest cosine 0.923 against
0.994 for OpenVINO's; Spearman of the cross-encoder's scores 0.95 against
0.99). OpenVINO, statically quantised and calibrated, is both faster and
closer, so it stays the only fast backend and ONNX Runtime is not a dependency.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import json
import os
import random
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal, overload

import numpy as np

from dsr.core.data import Collection, Dialogue, read_benchmark
from dsr.core.errors import InputError
from dsr.core.home import models_dir
from dsr.core.models import ResolvedModel, load_cross_encoder, load_sentence_transformer
from dsr.core.quiet import muted, progress, quiet_loggers
from dsr.indexes.manifest import cached_build, expected_manifest, read_manifest, safe_name

if TYPE_CHECKING:  # torch is imported on first use (_torch)
    from torch import Tensor, nn

BACKENDS = ("torch", "openvino", "openvino-bf16", "openvino-int8")
#: what a dense ranker, reranker or ``dsr reproduce`` runs on unless told: the exact path (issue 39:
#: a reference table must not depend on the reader's CPU); ``auto`` and the fast backends are asked for
DEFAULT_BACKEND = "torch"
#: a stage's ``backend`` choices: ``auto`` and the backends
CHOICES = ("auto", *BACKENDS)
#: environment variable naming the backend ``auto`` stands for (unset: the fastest)
BACKEND_ENV = "DSR_BACKEND"
#: /proc/cpuinfo flags of int8 dot-product units (what makes int8 inference fast)
INT8_UNITS = ("avx512_vnni", "avx_vnni", "amx_int8")
#: what each kind's module stack outputs (sentence-transformers' feature names)
OUTPUTS = {"bi-encoder": "sentence_embedding", "cross-encoder": "scores"}
#: calibration items for int8: the first this many of the bundled sample collection's texts or
#: pairs in a seeded order (of 548 texts, 508 pairs). NNCF's statistics passes cost time per item,
#: most of an export's with all of them; the tables' distance to torch is measured again by
#: bench/backend_deltas.py.
CALIBRATION_SIZE = 128
CALIBRATION_SEED = 0
#: the int8 recipe, recorded in the manifest (a change rebuilds)
QUANTISATION = {
    "library": "nncf",
    "mode": "static post-training",
    "weights": "int8",
    "activations": "int8",
    "preset": "mixed",
    "model_type": "transformer",
}
#: agreement with torch on these many calibration items is written to check.json
CHECK_ITEMS = 64
PACKAGES = ("openvino", "nncf", "torch", "transformers", "sentence-transformers")
#: OpenVINO CPU settings: f32 inference precision (no implicit bf16) except for openvino-bf16;
#: the THROUGHPUT hint (several streams) with IN_FLIGHT requests of REQUEST_BATCH texts
COMPILE_CONFIG = {"INFERENCE_PRECISION_HINT": "f32", "PERFORMANCE_HINT": "THROUGHPUT"}
PRECISION = {"openvino": "f32", "openvino-bf16": "bf16", "openvino-int8": "f32"}
REQUEST_BATCH = 16
IN_FLIGHT = 4
PAD_MULTIPLE = 8


#: the package OpenVINO's converter and NNCF send usage statistics with (to Google Analytics,
#: unless a consent file in ~/intel says no): both fall back to a stub when it cannot be imported
TELEMETRY = "openvino_telemetry"


def _openvino(part: str | None = None) -> ModuleType:
    """openvino (or its submodule ``openvino.PART``), imported on first use, in this one place
    (importing this module does not load it).

    Without telemetry: OpenVINO's converter and NNCF send usage events by default (opt-out), each
    from a process forked off this one (dozens an export, each costing CPU, and a network request a
    default code path must not make); with ``openvino_telemetry`` unimportable they use their own
    stubs and send nothing. Left alone where something imported it before dsr did."""
    sys.modules.setdefault(TELEMETRY, None)  # type: ignore[arg-type]  # None: `import` raises ImportError
    import openvino

    return importlib.import_module(f"openvino.{part}") if part else openvino


def _torch() -> ModuleType:
    """torch, imported on first use, in this one place (importing this module does not load it)."""
    import torch

    return torch


def compile_config(backend: str) -> dict[str, Any]:
    """The OpenVINO CPU compile settings of ``backend``."""
    return {**COMPILE_CONFIG, "INFERENCE_PRECISION_HINT": PRECISION[backend]}


def check_backend(value: Any) -> str:
    """``value`` if it names a backend, else InputError."""
    if value not in BACKENDS:
        raise InputError(f"unknown backend {value!r}; choose from {', '.join(BACKENDS)}", field="backend")
    return value


def require_fast_extra(backend: str) -> None:
    """InputError naming the install command when openvino or nncf is missing."""
    missing = [name for name in ("openvino", "nncf") if importlib.util.find_spec(name) is None]
    if missing:
        raise InputError(
            f"backend {backend} needs {' and '.join(missing)}: install the fast extra "
            "(pip install 'dialogue-sentence-retrieval[fast]', or -e '.[fast]' in a checkout)",
            field="backend",
        )
    if backend == "openvino-bf16" and not cpu_has_bf16():
        raise InputError(
            "backend openvino-bf16 needs a CPU with bf16 units (AMX or AVX512-BF16), and this "
            "one has none: use openvino (fp32) or openvino-int8",
            field="backend",
        )


def fastest_backend() -> str:
    """``openvino-int8`` where the CPU has int8 dot-product units (VNNI, AMX) and the fast extra
    is installed; else ``torch``. What ``auto`` means unless ``DSR_BACKEND`` names a backend."""
    pinned = os.environ.get(BACKEND_ENV, "").strip()
    if pinned and pinned != "auto":
        if pinned not in BACKENDS:
            raise InputError(
                f"{BACKEND_ENV}={pinned!r} in the environment is not a backend; choose from {', '.join(CHOICES)}", field="backend"
            )
        return pinned

    if any(importlib.util.find_spec(name) is None for name in ("openvino", "nncf")):
        return "torch"
    return "openvino-int8" if cpu_int8_units() else "torch"


@lru_cache(maxsize=1)
def cpu_int8_units() -> tuple[str, ...]:
    """Which of :data:`INT8_UNITS` ``/proc/cpuinfo`` lists (none where it cannot be read)."""
    try:
        flags = set()
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("flags"):
                flags.update(line.partition(":")[2].split())
    except OSError:
        return ()
    return tuple(unit for unit in INT8_UNITS if unit in flags)


def resolve_backend(value: Any) -> str:
    """``value`` checked (:func:`check_backend`), ``auto`` replaced by :func:`fastest_backend`."""
    return fastest_backend() if value == "auto" else check_backend(value)


@lru_cache(maxsize=1)
def cpu_has_bf16() -> bool:
    """Whether OpenVINO's CPU plugin lists BF16 among this CPU's capabilities."""
    ov = _openvino()

    return "BF16" in ov.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")


@dataclass(frozen=True)
class FastModel:
    """An exported model on disk: its folder and what ``fast.json`` says about feeding it."""

    folder: Path
    kind: str
    backend: str
    output: str
    inputs: tuple[str, ...]
    max_length: int | None
    do_lower_case: bool


def fast_folder(model: ResolvedModel, kind: str, backend: str) -> Path:
    """Where the export of ``model`` for ``kind`` and ``backend`` lives."""

    return models_dir() / "fast" / safe_name(model.key) / f"{kind}-{backend}"


def expected_export_manifest(model: ResolvedModel, kind: str, backend: str) -> dict[str, Any]:

    described = {k: v for k, v in model.describe().items() if k != "spec"}  # spellings share a folder
    params: dict[str, Any] = {
        "kind": kind,
        "backend": backend,
        "output": OUTPUTS[kind],
        "weights": "fp32",
        "compile": compile_config(backend),
    }
    if backend == "openvino-int8":
        params["quantisation"] = {**QUANTISATION, "subset_size": CALIBRATION_SIZE}
        params["calibration"] = calibration_info(kind)
    return expected_manifest("fast-model", inputs=model.key, model=described, params=params, packages=PACKAGES)


def export_identity(model: ResolvedModel, kind: str, backend: str) -> str:
    """A short sha256 of the export ``backend`` makes of ``model`` (its expected manifest:
    weights, quantisation and calibration settings, versions): what caches of a fast
    backend's outputs (embeddings, cross-encoder scores) record, so that vectors of an
    export made differently (another calibration set) are never mixed with the new ones."""
    manifest = expected_export_manifest(model, kind, backend)
    return hashlib.sha256(json.dumps(manifest, sort_keys=True).encode("utf-8")).hexdigest()[:16]


def export(model: ResolvedModel, kind: str, backend: str) -> FastModel:
    """The OpenVINO export of ``model`` (built now unless a matching one is cached)."""

    check_backend(backend)
    if backend == "torch":
        raise ValueError("export() is for the OpenVINO backends")
    require_fast_extra(backend)
    folder = fast_folder(model, kind, backend)
    expected = expected_export_manifest(model, kind, backend)
    with muted():  # the tracer's and transformers' warnings, NNCF's bars: only with --verbose
        folder, _ = cached_build(
            "fast-model",
            folder.name,
            expected,
            lambda tmp: _build(model, kind, backend, tmp),
            files=("model.xml", "model.bin", "fast.json", "tokenizer.json"),
            folder=folder,
        )
    info = json.loads((folder / "fast.json").read_text(encoding="utf-8"))
    return FastModel(folder, kind, backend, info["output"], tuple(info["inputs"]), info["max_length"], info["do_lower_case"])


def _torch_model(model: ResolvedModel, kind: str) -> Any:
    """The model as sentence-transformers loads it, on the CPU (what the export traces)."""
    return load_sentence_transformer(model, export=True) if kind == "bi-encoder" else load_cross_encoder(model, export=True)


def _build(model: ResolvedModel, kind: str, backend: str, folder: Path) -> None:
    ov = _openvino()
    torch = _torch()

    progress(f"dsr: exporting {model.name} ({kind}) to OpenVINO {backend}")
    module = _torch_model(model, kind)
    if not getattr(module.tokenizer, "is_fast", False):
        raise InputError(f"backend {backend} needs a model with a fast (Rust) tokenizer; {model.name} has none", field="backend")
    # The Rust tokenizer alone: at run time neither transformers nor torch is imported.
    (folder / "tokenizer.json").write_text(module.tokenizer.backend_tokenizer.to_str(), encoding="utf-8")
    pad = {"pad_id": int(module.tokenizer.pad_token_id or 0), "pad_token": str(module.tokenizer.pad_token)}
    tokenizer = _Tokenizer(folder, pad)
    max_length = int(module.max_seq_length or 512)
    do_lower_case = bool(getattr(module[0], "do_lower_case", False))
    fed = FastModel(
        folder, kind, backend, OUTPUTS[kind], ("input_ids", "attention_mask", "token_type_ids"), max_length, do_lower_case
    )
    calibration = calibration_items(kind)
    example = _example(module, tokenizer, fed, calibration)
    inputs = tuple(example)

    module_class: Any = torch.nn.Module

    class Wrapped(module_class):
        """The module stack as a function of tensors (what convert_model traces)."""

        def __init__(self) -> None:
            super().__init__()
            self.inner = module

        def forward(self, *tensors: Tensor) -> Tensor:
            return self.inner(dict(zip(inputs, tensors)))[OUTPUTS[kind]]

    converted = _convert(ov, torch, Wrapped().eval(), tuple(torch.from_numpy(example[k]) for k in inputs))
    for port, name in zip(converted.inputs, inputs):
        port.get_tensor().set_names({name})
    # torch's side of the check, computed beside the quantisation (whose compiles and one-item
    # passes leave a core mostly idle), which shortens the export's wall time
    checked = calibration[:CHECK_ITEMS]
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dsr-export-check")
    reference = pool.submit(_reference, module, model, kind, checked)
    pool.shutdown(wait=False)
    if backend == "openvino-int8":
        converted = _quantised(converted, [_features(tokenizer, fed, [item], None) for item in calibration])
    # compress_to_fp16 would halve the weights' precision: fp32 is fp32
    ov.save_model(converted, str(folder / "model.xml"), compress_to_fp16=False)
    info = {
        "kind": kind,
        "output": OUTPUTS[kind],
        "inputs": list(inputs),
        "max_length": max_length,
        "do_lower_case": do_lower_case,
        **pad,
    }
    (folder / "fast.json").write_text(json.dumps(info, indent=2), encoding="utf-8")
    fed = FastModel(folder, kind, backend, OUTPUTS[kind], inputs, max_length, do_lower_case)
    (folder / "check.json").write_text(json.dumps(_agreement(reference.result(), fed, checked), indent=2), encoding="utf-8")


def _example(module: Any, tokenizer: Any, fed: FastModel, calibration: list[Any]) -> dict[str, Any]:
    """What the export traces: calibration items of different lengths (the traced graph then
    applies the attention mask; with no padding transformers may skip it), as the network's
    own inputs only (some models have no token types)."""
    example = _features(tokenizer, fed, calibration[:4], None)
    taken = set(inspect.signature(getattr(module[0], "auto_model", module[0]).forward).parameters)
    return {k: v for k, v in example.items() if k in taken}


def _quantised(converted: Any, items: list[dict[str, Any]]) -> Any:
    """The OpenVINO model quantised to int8 by NNCF on the calibration ``items``."""
    import nncf

    quiet_loggers("nncf")  # its import set them to INFO
    return nncf.quantize(
        converted,
        nncf.Dataset(items),
        preset=nncf.QuantizationPreset.MIXED,
        model_type=nncf.ModelType.TRANSFORMER,
        subset_size=len(items),
    )


def _convert(ov: ModuleType, torch: ModuleType, module: nn.Module, example: tuple[Tensor, ...]) -> Any:
    """``module`` traced on ``example`` and converted to an OpenVINO model: OpenVINO's own TorchScript
    decoder (what ``convert_model`` makes from a module), told to skip torch's check of the trace
    (a second and third forward pass, compared with the first: 1.9 of the trace's 3.2 CPU seconds, issue
    44; the graph and so the IR are the same without it)."""
    decoders = _openvino("frontend.pytorch.ts_decoder")  # it imports torch: the export's alone
    with torch.no_grad():
        decoder = decoders.TorchScriptPythonDecoder(module, example_input=example, trace_kwargs={"check_trace": False})
        return ov.convert_model(decoder, example_input=example)


#: torch's outputs on the check items, by (model key, kind, the items' sha256): the same for each
#: backend's export of a model, so computed once a process (a cross-encoder's 64 long pairs take
#: a while on a core); the last few models' only
_REFERENCES: dict[tuple[str, str, str], np.ndarray] = {}
REFERENCES_KEPT = 4


def _reference(module: Any, model: ResolvedModel, kind: str, items: list[Any]) -> np.ndarray:
    """torch's output for each of ``items``: embeddings (bi-encoder) or scores (cross-encoder)."""
    digest = hashlib.sha256(json.dumps(items, ensure_ascii=False).encode("utf-8")).hexdigest()
    key = (model.key, kind, digest)
    if model.weights_sha256 and key in _REFERENCES:
        return _REFERENCES[key]
    if kind == "bi-encoder":
        ref = np.asarray(module.encode(items, convert_to_numpy=True, show_progress_bar=False), np.float64)
    else:
        identity = _torch().nn.Identity()
        ref = np.asarray(
            module.predict(items, activation_fn=identity, show_progress_bar=False, convert_to_numpy=True), np.float64
        ).reshape(len(items), -1)[:, 0]
    if model.weights_sha256:  # a model without a weights hash is never taken for another
        while len(_REFERENCES) >= REFERENCES_KEPT:
            del _REFERENCES[next(iter(_REFERENCES))]
        _REFERENCES[key] = ref
    return ref


def _agreement(ref: np.ndarray, fed: FastModel, items: list) -> dict[str, Any]:
    """How far the export is from torch's outputs ``ref`` on ``items``: informative, for check.json."""
    got = _Runner(fed).run(items).astype(np.float64)
    if fed.kind == "bi-encoder":
        cos = (ref * got).sum(1) / (np.linalg.norm(ref, axis=1) * np.linalg.norm(got, axis=1))
        return {"items": len(items), "mean_cosine": float(cos.mean()), "min_cosine": float(cos.min())}
    from scipy.stats import spearmanr  # the cross-encoder's alone (a slow import)

    got = got.reshape(len(items), -1)[:, 0]
    return {"items": len(items), "spearman": float(spearmanr(ref, got).statistic), "max_abs_diff": float(np.abs(ref - got).max())}


@lru_cache(maxsize=1)
def _sample() -> Collection:
    """The bundled ``sample`` collection, read from the package's data file."""
    with resources.as_file(resources.files("dsr.collections") / "data" / "sample.jsonl") as path:
        return read_benchmark(path, "sample")


def calibration_info(kind: str) -> dict[str, Any]:
    """Where the int8 calibration items come from, and the sha256 of the items themselves
    (recorded in the manifest: another set, however derived, is another export)."""
    items = calibration_items(kind)
    return {
        "collection": "sample",
        "content_hash": _sample().content_hash,
        "items": len(items),
        "seed": CALIBRATION_SEED,
        "query": "title and context turns",
        "text": "body",
        "sha256": hashlib.sha256(json.dumps(items, ensure_ascii=False).encode("utf-8")).hexdigest(),
    }


def calibration_items(kind: str) -> list:
    """Local calibration data from the bundled ``sample`` collection: its candidate
    sentences and dialogue queries (title and context turns; the last turn alone),
    or (query, candidate) pairs (cross-encoder); the first ``CALIBRATION_SIZE`` of them
    in a seeded order: a small fixed set, never a download."""
    return list(_calibration(kind, CALIBRATION_SIZE, CALIBRATION_SEED))


@lru_cache(maxsize=8)
def _calibration(kind: str, size: int, seed: int) -> tuple:
    collection = _sample()

    def query(dialogue: Dialogue, last_only: bool = False) -> str:
        turns = [t.body for t in dialogue.context]
        return turns[-1] if last_only and turns else " ".join([dialogue.title, *turns]).strip()

    if kind == "bi-encoder":
        items: list = [c.body for d in collection for c in d.candidates]
        items += [query(d, last) for d in collection for last in (False, True)]
    else:
        items = [(query(d), c.body) for d in collection for c in d.candidates]
    random.Random(seed).shuffle(items)
    return tuple(items[:size])


class _Tokenizer:
    """The export's Rust tokenizer, unpadded (:func:`_padded` pads a batch), and its pad id."""

    def __init__(self, folder: Path, pad: dict[str, Any]) -> None:
        from tokenizers import Tokenizer

        self.rust = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.rust.no_padding()
        self.pad_id = int(pad["pad_id"])


def _features(tokenizer: _Tokenizer, fed: FastModel, items: list, max_length: int | None) -> dict[str, np.ndarray]:
    """Tokenised, padded numpy inputs for texts (bi-encoder) or pairs (cross-encoder), as the
    transformers tokenizer call of sentence-transformers makes them (stripped texts,
    longest-first truncation, padding to the batch's longest)."""
    return _padded(_encodings(tokenizer, fed, items, max_length), fed.inputs, tokenizer.pad_id)


def _encodings(tokenizer: _Tokenizer, fed: FastModel, items: Sequence, max_length: int | None) -> list:
    """``items`` tokenised (stripped, lower-cased where the model is, longest-first
    truncation), unpadded: one ``tokenizers.Encoding`` each."""
    if fed.kind == "bi-encoder":
        batch: list = [str(t).strip() for t in items]
    else:
        batch = [(str(a).strip(), str(b).strip()) for a, b in items]
    if fed.do_lower_case:
        batch = [t.lower() for t in batch] if fed.kind == "bi-encoder" else [(a.lower(), b.lower()) for a, b in batch]
    tokenizer.rust.enable_truncation(int(max_length or fed.max_length or 512), strategy="longest_first")
    return tokenizer.rust.encode_batch(batch)


def _padded(encoded: Sequence, inputs: Sequence[str], pad_id: int) -> dict[str, np.ndarray]:
    """A batch of encodings as the network's int64 inputs, right-padded to the longest rounded up
    to a multiple of ``PAD_MULTIPLE`` (pad id, attention 0, token type 0: masked, so a row's
    outputs do not depend on its padding beyond float noise)."""
    width = -(-max((len(e.ids) for e in encoded), default=0) // PAD_MULTIPLE) * PAD_MULTIPLE
    columns = {
        "input_ids": np.full((len(encoded), width), pad_id, dtype=np.int64),
        "attention_mask": np.zeros((len(encoded), width), dtype=np.int64),
        "token_type_ids": np.zeros((len(encoded), width), dtype=np.int64),
    }
    for row, e in enumerate(encoded):
        n = len(e.ids)
        columns["input_ids"][row, :n] = e.ids
        columns["attention_mask"][row, :n] = e.attention_mask
        columns["token_type_ids"][row, :n] = e.type_ids
    return {k: columns[k] for k in inputs}


def length_order(lengths: Sequence[int]) -> list[int]:
    """Indices of ``lengths``, longest first (ties in input order): a request then holds
    inputs of nearly one length, so little of it is padding."""
    return sorted(range(len(lengths)), key=lambda i: -lengths[i])


#: the last model compiled (key: the sha256 of its files and the settings): the export's check compiles
#: the model it has just written, and the encoder loaded next in the same process (a cold ``dsr
#: reproduce --fast``) takes that one instead of compiling it again
_COMPILED: dict[tuple[str, str], Any] = {}


def _compiled(folder: Path, config: dict[str, Any]) -> Any:
    """``folder``'s model compiled for the CPU with ``config`` (the one compiled last when it is the
    same files and settings)."""
    digest = hashlib.sha256()
    for name in ("model.xml", "model.bin"):
        digest.update((folder / name).read_bytes())
    key = (digest.hexdigest(), json.dumps(config, sort_keys=True, default=str))
    compiled = _COMPILED.get(key)
    if compiled is None:
        compiled = _openvino().Core().compile_model(str(folder / "model.xml"), "CPU", config)
        _COMPILED.clear()  # one at a time: a process rarely holds two exports
        _COMPILED[key] = compiled
    return compiled


class _Runner:
    """A compiled export and its tokenizer; ``run`` tokenises the items, feeds them longest
    first (in tokens), ``in_flight`` requests of ``request_batch`` items at a time, and
    returns their outputs in the order given."""

    def __init__(
        self, fed: FastModel, config: dict[str, Any] | None = None, request_batch: int = REQUEST_BATCH, in_flight: int = IN_FLIGHT
    ) -> None:
        ov = _openvino()

        self.fed = fed
        info = json.loads((fed.folder / "fast.json").read_text(encoding="utf-8"))
        self.tokenizer = _Tokenizer(fed.folder, info)
        self.compiled = _compiled(fed.folder, {**compile_config(fed.backend), **(config or {})})
        self.request_batch = int(request_batch)
        self.queue = ov.AsyncInferQueue(self.compiled, int(in_flight))

    def run(
        self, items: Sequence, max_length: int | None = None, progress: bool = False, desc: str = "", order: bool = True
    ) -> np.ndarray:
        from tqdm import tqdm

        encoded = _encodings(self.tokenizer, self.fed, list(items), max_length)
        ranked = length_order([len(e.ids) for e in encoded]) if order else list(range(len(encoded)))
        batches = [ranked[s : s + self.request_batch] for s in range(0, len(ranked), self.request_batch)]
        results: list = [None] * len(batches)
        with tqdm(total=len(encoded), desc=desc, unit="text", disable=not progress, leave=False, file=sys.stderr) as bar:

            def done(request: Any, index: int) -> None:  # OpenVINO's thread: copy out before the request is reused
                results[index] = request.get_output_tensor(0).data.copy()
                bar.update(len(batches[index]))

            self.queue.set_callback(done)
            for index, batch in enumerate(batches):  # padding the next overlaps running this one
                self.queue.start_async(_padded([encoded[i] for i in batch], self.fed.inputs, self.tokenizer.pad_id), index)
            self.queue.wait_all()
        if not batches:
            return np.zeros((0,), dtype=np.float32)
        out = np.empty((len(encoded), *results[0].shape[1:]), dtype=np.float32)
        for batch, result in zip(batches, results):
            out[batch] = result
        return out


class FastBiEncoder:
    """A bi-encoder on OpenVINO: ``encode(texts)`` like SentenceTransformer.encode."""

    def __init__(self, fed: FastModel, config: dict[str, Any] | None = None, **runner: Any) -> None:
        self.runner = _Runner(fed, config, **runner)

    def encode(
        self, texts: Sequence[str], batch_size: int | None = None, show_progress_bar: bool = False, **_: Any
    ) -> np.ndarray:
        """Embeddings of ``texts`` (``batch_size`` is the torch path's; see ``REQUEST_BATCH``)."""
        return self.runner.run(texts, progress=show_progress_bar, desc="encoding")


class FastCrossEncoder:
    """A cross-encoder on OpenVINO: ``predict(pairs)`` gives raw logits like
    CrossEncoder.predict with an identity activation (what reranking uses)."""

    def __init__(
        self, fed: FastModel, max_length: int | None = None, config: dict[str, Any] | None = None, **runner: Any
    ) -> None:
        self.runner = _Runner(fed, config, **runner)
        self.max_length = max_length

    def predict(
        self, pairs: Sequence[tuple[str, str]], batch_size: int | None = None, show_progress_bar: bool = False, **_: Any
    ) -> np.ndarray:
        """Raw scores of ``pairs`` (``batch_size`` is the torch path's; see ``REQUEST_BATCH``)."""
        return self.runner.run(pairs, self.max_length, show_progress_bar, "cross-encoder")


@lru_cache(maxsize=4)
def _loaded(
    folder: str, built: str, kind: str, backend: str, max_length: int | None, threads: int | None
) -> FastBiEncoder | FastCrossEncoder:
    # ``built`` (the manifest's time) is in the key so a rebuilt export is loaded again
    info = json.loads((Path(folder) / "fast.json").read_text(encoding="utf-8"))
    fed = FastModel(Path(folder), kind, backend, info["output"], tuple(info["inputs"]), info["max_length"], info["do_lower_case"])
    config = {"INFERENCE_NUM_THREADS": int(threads)} if threads else None
    return FastBiEncoder(fed, config) if kind == "bi-encoder" else FastCrossEncoder(fed, max_length, config)


@overload
def load_fast(
    model: ResolvedModel, kind: Literal["bi-encoder"], backend: str, max_length: int | None = None, threads: int | None = None
) -> FastBiEncoder: ...
@overload
def load_fast(
    model: ResolvedModel, kind: Literal["cross-encoder"], backend: str, max_length: int | None = None, threads: int | None = None
) -> FastCrossEncoder: ...
@overload
def load_fast(
    model: ResolvedModel, kind: str, backend: str, max_length: int | None = None, threads: int | None = None
) -> FastBiEncoder | FastCrossEncoder: ...
def load_fast(
    model: ResolvedModel, kind: str, backend: str, max_length: int | None = None, threads: int | None = None
) -> FastBiEncoder | FastCrossEncoder:
    """A FastBiEncoder or FastCrossEncoder for ``model`` (exported first when needed), once per
    process; ``threads``: OpenVINO's CPU threads (None: every core, one stream each)."""

    fed = export(model, kind, backend)
    built = (read_manifest(fed.folder) or {}).get("built", "")
    return _loaded(str(fed.folder), built, kind, backend, max_length if kind == "cross-encoder" else None, threads)
