"""Batches of similar length for the bi-encoder recipe (``dsr train --batching by-length``).

A batch is padded to its longest text, per column: with CMU_DoG's queries (median 46 word
pieces, the longest of a random batch of 32 near 140) most of a random batch's computation is
padding. :class:`LengthGroupedBatchSampler` keeps what sentence-transformers'
``NoDuplicatesBatchSampler`` guarantees (no text twice in a batch, so no example's positive is
another's in-batch "negative") and the same examples per epoch, but re-cuts each window of
``WINDOW`` consecutive batches after sorting its examples by length, and shuffles the batches:
each batch then holds examples of similar length, while the epoch's order stays random.

This module imports torch and sentence-transformers: import it only where training runs.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from sentence_transformers.base.sampler import NoDuplicatesBatchSampler

#: batches re-cut together (8 x 32 = 256 examples sorted by length at a time)
WINDOW = 8


class LengthGroupedBatchSampler(NoDuplicatesBatchSampler):
    """No-duplicate batches whose examples are of similar length (see the module)."""

    def _rows(self) -> tuple[list[int], list[set[str]]]:
        columns = {k: v for k, v in self.dataset.to_dict().items()}
        texts = list(zip(*columns.values(), strict=True))
        return [sum(len(str(t)) for t in row) for row in texts], [{str(t) for t in row} for row in texts]

    def __iter__(self) -> Iterator[list[int]]:
        lengths, values = self._rows()
        batches = list(super().__iter__())
        out: list[list[int]] = []
        carry: list[int] = []
        for start in range(0, len(batches), WINDOW):
            pool = carry + [i for b in batches[start:start + WINDOW] for i in b]
            cut = cut_batches(sorted(pool, key=lambda i: (lengths[i], i)), values, self.batch_size)
            last = start + WINDOW >= len(batches)
            carry = cut.pop() if cut and len(cut[-1]) < self.batch_size and not last else []
            out.extend(cut)
        random.Random(f"{self.seed}:{getattr(self, 'epoch', 0)}").shuffle(out)
        yield from out


def cut_batches(order: list[int], values: list[set[str]], size: int) -> list[list[int]]:
    """``order`` cut into batches of ``size`` in that order, an example that shares a text with
    the batch being filled deferred to the next one."""
    batches: list[list[int]] = []
    pending = order
    while pending:
        batch: list[int] = []
        seen: set[str] = set()
        rest: list[int] = []
        for i in pending:
            if len(batch) < size and seen.isdisjoint(values[i]):
                batch.append(i)
                seen |= values[i]
            else:
                rest.append(i)
        batches.append(batch)
        pending = rest
    return batches
