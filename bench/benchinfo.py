"""What every benchmark prints first and last: date, machine (CPU model, cores, the CPU's
bf16/int8 units), load average; a process's peak resident memory; and the result file the
docs show (:func:`write_result`).

The development machine is shared: a figure means little without the load it was taken
under, so the benches print ``uptime``'s load average before and after, and prefer ratios
measured within one run (interleaved rounds) to absolute rates. A bench's figures reach the
docs only through its result file, ``bench/results/NAME.json``: a page shows it in a
``<!-- figures:NAME -->`` block that ``tools/docs_figures.py --write`` fills.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from pathlib import Path

from dsr.core.provenance import peak_rss_mib  # noqa: F401  (the benches' import of it)

#: /proc/cpuinfo flags that decide what the fast backends and bf16 training can use
UNIT_FLAGS = ("avx512_vnni", "avx512_bf16", "amx_tile", "amx_int8", "amx_bf16")


def cpu_model() -> tuple[str, list[str]]:
    """The CPU's model name and which of ``UNIT_FLAGS`` it has (Linux; else platform's words)."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return platform.processor() or platform.machine(), []
    name, flags = platform.machine(), set()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model name":
            name = value.strip()
        elif key.strip() == "flags":
            flags.update(value.split())
    return name, [f for f in UNIT_FLAGS if f in flags]


def load() -> str:
    """The 1, 5 and 15 minute load averages, as ``uptime`` prints them."""
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def header(title: str) -> dict[str, object]:
    """Print and return the bench's first lines: title, date, machine, load."""
    model, units = cpu_model()
    info = {
        "bench": title,
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "date_utc": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "cpu": model,
        "cores": os.cpu_count(),
        "units": units,
        "load_before": load(),
        "python": platform.python_version(),
    }
    print(f"# {title} - {info['date']}")
    print(f"machine: {model}, {info['cores']} cores, units: {', '.join(units) or 'none of ' + ', '.join(UNIT_FLAGS)}")
    print(f"load average before: {info['load_before']} (on {info['cores']} cores; the machine may be shared)")
    sys.stdout.flush()
    return info


def footer(info: dict[str, object]) -> None:
    info["load_after"] = load()
    print(f"load average after: {info['load_after']}")


def goal(figure: str, value: str, target: str, met: bool | None) -> str:
    """Print and return one ``GOAL`` line: the figure, its value, the goal beside it and whether
    this run meets it (``None``: not judged by this run, e.g. skipped). Every bench ends with
    these lines, so a run on an idle machine can be read against its goals at a glance."""
    verdict = "n/a" if met is None else ("met" if met else "NOT met")
    line = f"GOAL {figure}: {value} (goal {target}: {verdict}; load average {load()})"
    print(line)
    sys.stdout.flush()
    return line


#: where the benches' result files go (committed; the docs' figure blocks read them)
RESULTS = Path(__file__).resolve().parent / "results"


def write_result(
    name: str,
    info: dict[str, object],
    columns: list[str],
    rows: list[list[object]],
    *,
    title: str | None = None,
    command: str | None = None,
    notes: list[str] | None = None,
    folder: Path | None = None,
    path: Path | None = None,
) -> Path:
    """Write ``FOLDER/NAME.json`` (default ``bench/results``; or ``path``, a bench's --out): the
    figures of one run with the date, machine and load of :func:`header` (and :func:`footer`,
    called here if it was not), in the shape ``tools/docs_figures.py`` renders. ``command``
    defaults to this process's command line. Returns the path."""
    if "load_after" not in info:
        footer(info)
    if command is None:
        command = " ".join(["python", *[_relative(arg) for arg in sys.argv]])
    data = {
        "name": name,
        "title": title or str(info["bench"]),
        "command": command,
        "date": info.get("date_utc") or info["date"],
        "machine": {"cpu": info["cpu"], "cores": info["cores"], "units": info["units"], "python": info["python"]},
        "load_before": info["load_before"],
        "load_after": info["load_after"],
        "columns": list(columns),
        "rows": [[_plain(cell) for cell in row] for row in rows],
        "notes": list(notes or []),
    }
    path = Path(path) if path is not None else (folder or RESULTS) / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"figures written to {_relative(str(path))} (python tools/docs_figures.py --write shows them in the docs)")
    return path


def _relative(arg: str) -> str:
    """An argument as the repository root sees it (a result file names no home folder)."""
    root = Path(__file__).resolve().parents[1]
    try:
        return Path(arg).resolve().relative_to(root).as_posix() if Path(arg).exists() else arg
    except ValueError:
        return arg


def _plain(cell: object) -> object:
    return cell if isinstance(cell, (str, int, float, bool)) or cell is None else str(cell)
