"""What every benchmark prints first and last: date, machine (CPU model, cores, the CPU's
bf16/int8 units), load average; and a process's peak resident memory.

The development machine is shared: a figure means little without the load it was taken
under, so the benches print ``uptime``'s load average before and after, and prefer ratios
measured within one run (interleaved rounds) to absolute rates.
"""

from __future__ import annotations

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
    these lines, so a run on an idle machine can be read against issue 34's goals at a glance."""
    verdict = "n/a" if met is None else ("met" if met else "NOT met")
    line = f"GOAL {figure}: {value} (goal {target}: {verdict}; load average {load()})"
    print(line)
    sys.stdout.flush()
    return line
