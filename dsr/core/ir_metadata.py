"""ir_metadata headers: a run's provenance inside the run file, as ``#`` comment lines.

ir_metadata (Breuer et al., SIGIR 2022; https://www.ir-metadata.org) annotates a
TREC run with YAML in PRIMAD terms (Platform, Research goal, Implementation,
Method, Actor, Data), written as comment lines at the top of the file::

    # ir_metadata.start
    # schema-version: 0.1
    # run-version: 1.0
    # tag: bm25-query=all
    # platform:
    #   hardware: {cpu: {model: ..., architecture: x86_64, number of cores: 2}}
    #   operating system: {kernel: ..., distribution: ...}
    #   software: {libraries: {python: [numpy==2.4.6, ...]}, retrieval toolkit: [dsr==0.1.0]}
    # implementation:
    #   executable: {cmd: dsr run sample --ranker bm25 --out bm25.run}
    #   source: {lang: [python]}
    # method:
    #   automatic: true
    #   score ties: ...
    #   retrieval: [{name: bm25, method: dsr bm25, params: {k1: 1.2, ...}}]
    # data:
    #   test collection: {name: sample, ir_datasets: dsr/sample, hash: ..., dialogues: 20}
    # ir_metadata.end

dsr writes it only when asked (``--ir-metadata`` on ``dsr run``, ``dsr rerank``
and ``dsr fuse``), because ``#`` lines break most other readers: trec_eval
9.0.8 stops on them (10.0 skips them), and the run readers of ir_measures,
ranx and PyTerrier expect six columns on every non-blank line. Strip the header before handing such a file
to them (``grep -v '^#' run > plain.run``). dsr's own reader skips ``#``
lines, and a run without a sidecar gets its configuration from the header
(:func:`config_from_header`: the header under ``ir_metadata``, plus the
collection and command line where the header has them), so the collection
check and reports keep it. The sidecar ``RUN.json`` stays the full record;
the header is the portable part.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from dsr.core.errors import InputError
from dsr.core.textfiles import read_lines

START, END = "ir_metadata.start", "ir_metadata.end"
SCHEMA_VERSION = 0.1
TIES = (
    "scores strictly decreasing: ties broken by the candidate's initial rank, then sentence "
    "id, each tied score lowered to the next float below (dsr.core.run)"
)


def _yaml() -> Any:
    """PyYAML, imported on first use, in this one place."""
    import yaml

    return yaml


def format_header(config: dict[str, Any], tag: str | None = None) -> list[str]:
    """The header lines (each starting with ``#``, no newline) for a run's sidecar ``config``."""
    yaml = _yaml()
    meta = primad(config, tag)
    text = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True, width=10_000, default_flow_style=False)
    return [f"# {START}"] + [f"# {line}" for line in text.splitlines()] + [f"# {END}"]


def primad(config: dict[str, Any], tag: str | None = None) -> dict[str, Any]:
    """The ir_metadata mapping (PRIMAD components that dsr knows) for a sidecar ``config``."""
    versions = dict(config.get("versions") or {})
    toolkit = versions.pop("dialogue-sentence-retrieval", None)
    python = versions.pop("python", None)
    libraries = [f"{name}=={version}" for name, version in sorted(versions.items()) if version]
    meta: dict[str, Any] = {"schema-version": SCHEMA_VERSION, "run-version": 1.0, "tag": tag or config.get("tag") or "dsr"}
    meta["platform"] = {
        "hardware": {
            "cpu": {
                "model": platform.processor() or platform.machine(),
                "architecture": platform.machine(),
                "number of cores": _cores(),
            }
        },
        "operating system": {"kernel": f"{platform.system()} {platform.release()}", "distribution": platform.platform()},
        "software": {"libraries": {"python": libraries}, "retrieval toolkit": [f"dsr=={toolkit}" if toolkit else "dsr"]},
    }
    meta["implementation"] = {"source": {"lang": ["python" + (f" {python}" if python else "")]}}
    if config.get("command_line"):
        meta["implementation"]["executable"] = {"cmd": config["command_line"]}
    # a fused run states its own rule (dsr.core.fusion.TIE_RULE) in its sidecar's "ties"
    ties = TIES if not config.get("fusion") else str(config.get("ties") or TIES)
    meta["method"] = {"automatic": True, "score ties": ties, "retrieval": _stages(config, set())}
    collection = config.get("collection")
    if isinstance(collection, dict) and collection.get("name"):
        name = str(collection["name"])
        test = {"name": name, "hash": collection.get("hash"), "dialogues": collection.get("dialogues")}
        if not name.endswith((".jsonl", ".json")) and "/" not in name:
            test["ir_datasets"] = "dsr/" + name.replace("-", "/", 1)
        meta["data"] = {"test collection": {k: v for k, v in test.items() if v is not None}}
    return meta


def _cores() -> int | None:
    return os.cpu_count()


def _stages(config: dict[str, Any], used: set[str]) -> list[dict[str, Any]]:
    """Ranking stages, inputs first: ir_metadata's ``method.retrieval`` sequence."""
    stages: list[dict[str, Any]] = []
    inputs = []
    for item in config.get("inputs") or []:
        sub = _stages(item.get("config") or {}, used) if isinstance(item, dict) else []
        stages += sub
        if sub:
            inputs.append(sub[-1]["name"])
        elif isinstance(item, dict) and item.get("tag"):
            inputs.append(str(item["tag"]))
    stage: dict[str, Any] = {}
    carried = _get(config, "ir_metadata", "method", "retrieval")
    if not any(config.get(k) for k in ("fusion", "reranker", "ranker")) and isinstance(carried, list):
        # a run known only by its header: its own stages, renamed where a name is taken
        for item in carried:
            if isinstance(item, dict) and item.get("name"):
                item = dict(item)
                base, k = str(item["name"]), 2
                while item["name"] in used:
                    item["name"], k = f"{base} #{k}", k + 1
                used.add(item["name"])
                stages.append(item)
        return stages
    if config.get("fusion"):
        stage = {"name": f"fusion {config['fusion']}", "method": f"dsr fuse --method {config['fusion']}"}
        if inputs:
            stage["interpolates" if config["fusion"] == "interp" else "ensembles"] = inputs
    elif config.get("reranker"):
        stage = {"name": str(config["reranker"]), "method": f"dsr rerank --reranker {config['reranker']}"}
        if inputs:
            stage["reranks"] = inputs[0]
    elif config.get("ranker"):
        stage = {"name": str(config["ranker"]), "method": f"dsr run --ranker {config['ranker']}"}
    if not stage:
        return stages
    if isinstance(config.get("params"), dict):
        stage["params"] = dict(config["params"])
        if config.get("top_k") is not None:  # rerankers record their depth beside the params
            stage["params"].setdefault("top_k", config["top_k"])
    models = [m.get("spec") or m.get("name") for m in config.get("models") or [] if isinstance(m, dict)]
    if any(models):
        stage["models"] = [m for m in models if m]
    base, k = stage["name"], 2
    while stage["name"] in used:
        stage["name"], k = f"{base} #{k}", k + 1
    used.add(stage["name"])
    return stages + [stage]


def _get(mapping: Any, *keys: str) -> Any:
    """``mapping[k1][k2]...``, or None where a level is missing or not a mapping (a header
    from elsewhere may use the schema loosely)."""
    for key in keys:
        if not isinstance(mapping, dict):
            return None
        mapping = mapping.get(key)
    return mapping


def parse_header(lines: Iterable[str], path: str | Path | None = None) -> dict[str, Any]:
    """The ir_metadata mapping of the header in ``lines`` ({} when there is none).

    Reads the ``#`` lines between ``# ir_metadata.start`` and ``#
    ir_metadata.end`` (one leading space after ``#`` removed), as YAML. A
    start without an end, or YAML that does not parse to a mapping, is an
    InputError naming the line.
    """
    yaml = _yaml()
    block: list[str] = []
    start_line = None
    for lineno, raw in enumerate(lines, start=1):
        line = raw.rstrip("\r\n")
        if not line.startswith("#"):
            if start_line is None:
                continue
            break
        body = line[1:]
        body = body[1:] if body.startswith(" ") else body
        if start_line is None:
            if body.strip() == START:
                start_line = lineno
            continue
        if body.strip() == END:
            try:
                meta = yaml.safe_load("\n".join(block))
            except yaml.YAMLError as err:
                mark = getattr(err, "problem_mark", None)
                where = start_line + 1 + mark.line if mark is not None else start_line
                raise InputError(
                    f"ir_metadata header is not valid YAML: {getattr(err, 'problem', err)}", path=path, line=where
                ) from None
            if not isinstance(meta, dict):
                raise InputError("ir_metadata header must be a YAML mapping", path=path, line=start_line)
            header: dict[str, Any] = _jsonable(meta)
            return header
        block.append(body)
    if start_line is not None:
        raise InputError(f"'# {START}' without '# {END}' before the first run line", path=path, line=start_line)
    return {}


def _jsonable(obj: Any) -> Any:
    """YAML values as JSON can hold them (the header goes into sidecars): dates and
    other scalars as text, mapping keys as text."""
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_jsonable(v) for v in obj]
    if obj is None or isinstance(obj, (str, int, float, bool)):
        return obj
    return obj.isoformat() if hasattr(obj, "isoformat") else str(obj)


def read_header(path: str | Path) -> dict[str, Any]:
    """:func:`parse_header` of a run file's leading comment lines."""

    return parse_header(_leading_comments(line + "\n" for line in read_lines(path)), path)


def _leading_comments(handle: Iterable[str]) -> Iterable[str]:
    for line in handle:
        if line.startswith("#") or not line.strip():
            yield line
        else:
            return


def config_from_header(meta: dict[str, Any]) -> dict[str, Any]:
    """A sidecar-shaped configuration from a header: ``ir_metadata`` (the header as
    read), and, where the header has them, ``collection`` (name, hash) and
    ``command_line``, so the collection check works without a sidecar."""
    config: dict[str, Any] = {"ir_metadata": meta}
    test = _get(meta, "data", "test collection")
    if isinstance(test, dict) and test.get("name"):
        config["collection"] = {k: test[k] for k in ("name", "hash", "dialogues") if k in test}
    cmd = _get(meta, "implementation", "executable", "cmd")
    if isinstance(cmd, str):
        config["command_line"] = cmd
    return config
