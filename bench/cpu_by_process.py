"""Where a command's CPU goes, by kind of process (run on demand, not a test).

    python bench/cpu_by_process.py [--interval 0.25] [-- COMMAND ...]   (default: make test)

Runs COMMAND and reads every process's CPU time in ``/proc`` (Linux) every ``--interval``
seconds while it runs: a process that lives through one reading is counted with the CPU it
used since the command started (what it had at the first reading is subtracted), grouped by
what it is: pytest's xdist workers and the processes they fork (servers, scoring workers),
Ray, Chromium, PostgreSQL, ``dsr`` subprocesses and other helpers, and the rest of the
machine. A process shorter than one interval is missed (a few per run; the command's own
total, from ``getrusage`` of its waited-for descendants, is printed beside the sum). Issue
39's question: is a run's CPU the tests' own work, or do servers, clusters or browsers burn it
idling? The sampler itself costs about 1 % of a core at the default interval.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench"), str(ROOT)]

from benchinfo import footer, header  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def readings() -> dict[tuple[str, str], tuple[str, str, float]]:
    """(pid, start time) -> (name, command line, CPU seconds) of every process now."""
    out = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # ended between the listing and the read
            continue
        close = stat.rfind(")")
        name, fields = stat[stat.find("(") + 1 : close], stat[close + 2 :].split()
        out[(pid, fields[19])] = (name, cmd, (int(fields[11]) + int(fields[12])) / TICK)
    return out


def kind(name: str, cmd: str) -> str:
    if "exec(eval(sys.stdin" in cmd:
        return "xdist workers and their forks"
    if " -m pytest" in cmd:  # not a helper whose arguments name pytest's temporary folders
        return "pytest (controller)"
    if "postgres" in name or "postgres" in cmd:
        return "PostgreSQL"
    if "chrom" in name.lower() or "chrom" in cmd:
        return "Chromium"
    if "ray" in cmd.lower() or name in ("raylet", "gcs_server") or name.startswith("ray::"):
        return "Ray"
    if "python" in name or "python" in cmd or "/bin/dsr" in cmd:
        return "dsr subprocesses and other helpers"
    return "the rest of the machine"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--interval", type=float, default=0.25)
    parser.add_argument("command", nargs="*", default=["make", "test"])
    args = parser.parse_args()
    info = header("cpu_by_process: " + " ".join(args.command))
    me = str(os.getpid())
    first = readings()
    seen: dict[tuple[str, str], tuple[str, str, float, float]] = {
        key: (name, cmd, used, used) for key, (name, cmd, used) in first.items()
    }
    start = time.monotonic()
    proc = subprocess.Popen(args.command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while proc.poll() is None:
        for key, (name, cmd, used) in readings().items():
            if key[0] == me:
                continue
            known = seen.get(key)
            seen[key] = (name, known[1] or cmd if known else cmd, known[2] if known else 0.0, used)
        time.sleep(args.interval)
    wall = time.monotonic() - start
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    by_kind: dict[str, float] = {}
    for name, cmd, at_start, last in seen.values():
        what = kind(name, cmd)
        by_kind[what] = by_kind.get(what, 0.0) + last - at_start
    print(f"exit {proc.returncode}, {wall:.0f} s wall")
    print(f"the command's waited-for processes: {children.ru_utime:.0f} s user + {children.ru_stime:.0f} s system")
    print(f"every process read (interval {args.interval} s): {sum(by_kind.values()):.0f} core-seconds")
    for what, seconds in sorted(by_kind.items(), key=lambda kv: -kv[1]):
        print(f"{seconds:9.1f}  {what}")
    footer(info)
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
