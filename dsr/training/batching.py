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
        """Each example's sort key (its first column's length in characters: the query, the
        longest text of most examples and unique to it) and its texts."""
        texts = list(zip(*self.dataset.to_dict().values(), strict=True))
        return [len(str(row[0])) for row in texts], [{str(t) for t in row} for row in texts]

    def __iter__(self) -> Iterator[list[int]]:
        lengths, values = self._rows()
        batches = list(super().__iter__())
        out: list[list[int]] = []
        carry: list[int] = []
        for start in range(0, len(batches), WINDOW):
            window = batches[start : start + WINDOW]
            order = carry + sorted((i for b in window for i in b), key=lambda i: (lengths[i], i))
            cut, carry = cut_batches(order, values, self.batch_size, len(window))
            out.extend(cut)
        for i in carry:  # what no batch could take without a duplicate: any batch that can
            home = next((b for b in out if values[i].isdisjoint(t for j in b for t in values[j])), None)
            home.append(i) if home is not None else out.append([i])
        random.Random(f"{self.seed}:{getattr(self, 'epoch', 0)}").shuffle(out)
        yield from out


def cut_batches(order: list[int], values: list[set[str]], size: int, count: int) -> tuple[list[list[int]], list[int]]:
    """``order`` dealt into ``count`` batches of ``size``, in that order: each example goes to
    the first batch with room that shares no text with it. Returns the batches (non-empty ones)
    and the examples left over (no room without a duplicate)."""
    batches: list[list[int]] = [[] for _ in range(count)]
    seen: list[set[str]] = [set() for _ in range(count)]
    left: list[int] = []
    first = 0
    for i in order:
        while first < count and len(batches[first]) == size:
            first += 1
        for b in range(first, count):
            if len(batches[b]) < size and seen[b].isdisjoint(values[i]):
                batches[b].append(i)
                seen[b] |= values[i]
                break
        else:
            left.append(i)
    return [b for b in batches if b], left
