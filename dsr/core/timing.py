"""Wall and CPU seconds per stage of a long job, as its manifest records them."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

from dsr.core.quiet import progress


class StageTimer:
    """Wall time per stage, for the manifest (and a line on stderr per stage, on a terminal:
    :func:`dsr.core.quiet.progress`)."""

    def __init__(self, quiet: bool = False) -> None:
        self.seconds: dict[str, float] = {}
        self.quiet = quiet

    @contextlib.contextmanager
    def __call__(self, stage: str, what: str = "") -> Iterator[None]:
        if not self.quiet:
            progress(f"dsr reproduce: {stage}{': ' + what if what else ''}")
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[stage] = round(self.seconds.get(stage, 0.0) + time.perf_counter() - start, 3)
