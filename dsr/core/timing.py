"""Wall and CPU seconds per stage of a long job, as its manifest records them."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator


class StageTimer:
    """Wall time per stage, for the manifest (and a line on stderr per stage)."""

    def __init__(self, quiet: bool = False):
        self.seconds: dict[str, float] = {}
        self.quiet = quiet

    @contextlib.contextmanager
    def __call__(self, stage: str, what: str = "") -> Iterator[None]:
        if not self.quiet:
            print(f"dsr reproduce: {stage}{': ' + what if what else ''}", file=sys.stderr, flush=True)
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[stage] = round(self.seconds.get(stage, 0.0) + time.perf_counter() - start, 3)
