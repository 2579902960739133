"""Large qrels and run files read as arrays, for ``dsr trec_eval``'s fast path
(:mod:`dsr.evaluation.trec_eval_arrays`) and ``dsr evaluate --qrels``.

The reference readers are :func:`dsr.evaluation.qrels.read_qrels` and
:func:`dsr.core.run.read_trec_run` (and :func:`dsr.evaluation.trec_eval_tool.read_run_as_trec_eval`):
a Python object per line, which makes a file of millions of lines slow to read and large
to hold. Here pyarrow's CSV reader (multithreaded) splits the columns, and every line
becomes numbers: its topic's index, its document id as big-endian 64-bit words (zero-padded,
so comparing the words compares the ids as C's ``strcmp`` does, which is how trec_eval orders
ties), its score or grade. No Python object is made per line.

What this reader covers, and why it can be byte-equal to the reference: a plain (not gzip)
file of printable ASCII whose columns are separated by one space (or one tab, not both), no
line starting with ``#`` (a run may start with ``#`` header lines), no blank-only line,
exactly the reference's column count on every line. Such a file splits the same way under
pyarrow as under Python's ``str.split``; the scores pyarrow reads are C's ``strtod``'s (both
round correctly; ``nan`` and ``inf`` forms as C reads them), and a grade is the whole number
the reference accepts. Anything else (a gzip file, a UTF-8 id, a tab among spaces, a seventh
column, a bad score) returns None and the caller reads the file with the reference, which
gives the same result or the error naming the line.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from dsr.core.textfiles import GZIP_MAGIC
from dsr.evaluation.qrels import GRADE_RANGE

if TYPE_CHECKING:  # pyarrow itself is imported on first use (_pyarrow)
    import pyarrow as pa

#: the bytes a covered file holds: printable ASCII, the newline, the tab
_PLAIN = bytes(range(0x20, 0x7F)) + b"\n\t"
#: bytes read at a time when the file is checked
_CHUNK = 1 << 24
#: keeps the top ``r`` bytes of a big-endian word (r = 0..8)
_MASKS = np.array([0] + [((1 << 64) - 1) ^ ((1 << (8 * (8 - r))) - 1) for r in range(1, 9)], dtype=np.uint64)


@dataclass
class Columns:
    """A run or qrels file, one entry per line in file order."""

    #: the distinct topic ids, by first appearance
    topics: list[str]
    #: int32: each line's index into ``topics``
    topic: np.ndarray
    #: uint64 (lines, words): each line's document id, 8 bytes a word, big-endian, zero-padded
    words: np.ndarray
    #: float64 scores (a run) or int64 grades (qrels)
    values: np.ndarray
    #: a run's tag: that of its last line
    tag: str | None = None

    def __len__(self) -> int:
        return len(self.topic)

    def doc(self, line: int) -> str:
        """Line ``line``'s document id, as text (for messages)."""
        return self.words[line].astype(">u8").tobytes().rstrip(b"\0").decode("ascii")


def widen(columns: Columns, width: int) -> None:
    """Pad ``columns.words`` with zero words to ``width`` words (ids of two files compared)."""
    have = columns.words.shape[1]
    if have < width:
        columns.words = np.concatenate([columns.words, np.zeros((len(columns.words), width - have), np.uint64)], axis=1)


def read_run_columns(path: str | Path) -> Columns | None:
    """A TREC run (``qid Q0 docid rank score tag``) as :class:`Columns`, or None when the file
    is not of the kind covered (see the module docstring)."""
    shape = _shape(Path(path), header=True)
    if shape is None:
        return None
    delimiter, skip = shape
    columns = _read(Path(path), delimiter, skip, ["qid", "q0", "doc", "rank", "score", "tag"], "score", np.float64)
    if columns is not None:
        columns.tag = _last_tag(Path(path), delimiter)
    return columns


def read_qrels_columns(path: str | Path) -> Columns | None:
    """A TREC qrels file (``qid iteration docid grade``) as :class:`Columns` (grades as int64),
    or None when not covered (a ``#`` comment line, a grade outside a C int, ...)."""
    shape = _shape(Path(path), header=False)
    if shape is None:
        return None
    columns = _read(Path(path), shape[0], 0, ["qid", "iteration", "doc", "grade"], "grade", np.int64)
    if columns is None or columns.values.min() < GRADE_RANGE[0] or columns.values.max() > GRADE_RANGE[1]:
        return None  # the reference names the line
    return columns


def _shape(path: Path, header: bool) -> tuple[str, int] | None:
    """(the delimiter, the number of ``#`` lines at the top: a run's header) for a file the
    reader covers, else None. One pass over the bytes, a chunk at a time."""
    try:
        handle = path.open("rb")
    except OSError:
        return None
    with handle:
        chunk = handle.read(_CHUNK)
        if not chunk or chunk.startswith(GZIP_MAGIC):
            return None
        skip, start = 0, 0
        while header and chunk.startswith(b"#", start):
            end = chunk.find(b"\n", start)
            if end < 0:
                return None
            skip, start = skip + 1, end + 1
        tabs = spaces = False
        previous = b"\n" if start == 0 else b""
        while chunk:
            if chunk.translate(None, _PLAIN):
                return None  # a byte Python's split reads as a space, or not ASCII
            tabs, spaces = tabs or chunk.find(b"\t", start) >= 0, spaces or chunk.find(b" ", start) >= 0
            if tabs and spaces:
                return None
            if b"#" in chunk and (chunk.find(b"\n#", start) >= 0 or (previous == b"\n" and chunk.startswith(b"#", start))):
                return None  # a comment line below the header: the reference skips it
            previous, start = chunk[-1:], 0
            chunk = handle.read(_CHUNK)
    return ("\t" if tabs else " "), skip


def _read(path: Path, delimiter: str, skip: int, names: list[str], value: str, dtype: Any) -> Columns | None:
    """The file's topics, ids and ``value`` column, read by pyarrow a block at a time (the
    other columns unconverted), or None where pyarrow refuses a line (the reference then
    names it)."""
    pa, _ = _pyarrow()
    try:
        reader = _reader(path, delimiter, skip, names, value)
        held = _Held(estimate=path.stat().st_size // 12 + 1024, dtype=dtype)
        for batch in reader:
            if not held.add(batch, value):
                return None
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, pa.ArrowKeyError):
        return None
    return held.columns()


def _reader(path: Path, delimiter: str, skip: int, names: list[str], value: str) -> Any:
    """pyarrow's streaming CSV reader of the columns needed (qid dictionary-encoded; a run's
    second column as a boolean that is true for ``Q0`` and ``0``, so any other value is an
    error, as the reference makes it)."""
    pa, csv = _pyarrow()
    types: dict[str, Any] = {
        "qid": pa.dictionary(pa.int32(), pa.string()),
        "doc": pa.string(),
        value: pa.float64() if value == "score" else pa.int64(),
    }
    if "q0" in names:
        types["q0"] = pa.bool_()
    return csv.open_csv(
        pa.OSFile(str(path)),
        read_options=csv.ReadOptions(column_names=names, skip_rows=skip, block_size=1 << 20),
        parse_options=csv.ParseOptions(delimiter=delimiter, quote_char=False, escape_char=False),
        convert_options=csv.ConvertOptions(
            column_types=types,
            include_columns=list(types),
            true_values=["Q0", "0"],
            false_values=[],
            null_values=[],
            strings_can_be_null=False,
            quoted_strings_can_be_null=False,
        ),
        memory_pool=pa.system_memory_pool(),  # freed blocks go back to the system
    )


def _pyarrow() -> tuple[Any, Any]:
    """pyarrow and its CSV reader, imported on first use in this one place."""
    import pyarrow
    import pyarrow.csv

    return pyarrow, pyarrow.csv


class _Held:
    """The arrays filled batch by batch (grown when the estimate of lines was short)."""

    def __init__(self, estimate: int, dtype: Any):
        self.n = 0
        self.topic = np.empty(estimate, np.int32)
        self.values = np.empty(estimate, dtype)
        self.words = np.empty((estimate, 1), np.uint64)
        self.index: dict[str, int] = {}

    def add(self, batch: pa.RecordBatch, value: str) -> bool:
        rows = batch.num_rows
        qid = batch.column("qid")
        names = qid.dictionary.to_pylist()
        if not all(names):
            return False
        codes = np.fromiter((self.index.setdefault(n, len(self.index)) for n in names), np.int32, len(names))
        words = _words(batch.column("doc"))
        if words is None:
            return False
        self._room(rows, words.shape[1])
        end = self.n + rows
        self.topic[self.n : end] = codes[_numpy(qid.indices, np.int32)] if rows else 0
        self.values[self.n : end] = _numpy(batch.column(value), self.values.dtype)
        self.words[self.n : end, : words.shape[1]] = words
        self.words[self.n : end, words.shape[1] :] = 0
        self.n = end
        return True

    def _room(self, rows: int, width: int) -> None:
        need = self.n + rows
        if need > len(self.topic):
            size = max(need, 2 * len(self.topic))
            self.topic = np.resize(self.topic, size)
            self.values = np.resize(self.values, size)
            self.words = np.resize(self.words, (size, self.words.shape[1]))
        if width > self.words.shape[1]:
            wider = np.zeros((len(self.words), width), np.uint64)
            wider[: self.n, : self.words.shape[1]] = self.words[: self.n]
            self.words = wider

    def columns(self) -> Columns | None:
        if not self.n:
            return None
        n = self.n
        # views: the pages past n were never written, so they hold no memory
        return Columns(list(self.index), self.topic[:n], self.words[:n], self.values[:n])


def _numpy(array: pa.Array, dtype: Any) -> np.ndarray:
    """A numeric pyarrow array without nulls as numpy, zero-copy (``to_numpy`` would import
    pandas, a second's start-up)."""
    dtype = np.dtype(dtype)
    return np.frombuffer(array.buffers()[1], dtype=dtype, count=len(array), offset=array.offset * dtype.itemsize)


def _last_tag(path: Path, delimiter: str) -> str:
    """The sixth column of the file's last line (the reference's tag: the last line's)."""
    with path.open("rb") as handle:
        size = handle.seek(0, 2)
        back = min(size, 1 << 16)
        handle.seek(size - back)
        tail = handle.read().rstrip(b"\n").split(b"\n")[-1]
    return tail.split(delimiter.encode())[5].decode("ascii")


def _words(column: pa.StringArray) -> np.ndarray | None:
    """Each id of a string array as zero-padded big-endian 64-bit words (lines, words); None
    for an empty id."""
    chunks = []
    longest = 0
    for chunk in [column]:
        offsets = np.frombuffer(chunk.buffers()[1], dtype=np.int32)[chunk.offset : chunk.offset + len(chunk) + 1]
        lengths = np.diff(offsets)
        if len(lengths) and lengths.min() < 1:
            return None
        longest = max(longest, int(lengths.max(initial=0)))
        chunks.append((chunk, offsets, lengths))
    width = max(1, -(-longest // 8))
    out = np.empty((sum(len(c) for c, _, _ in chunks), width), dtype=np.uint64)
    row = 0
    for chunk, offsets, lengths in chunks:
        data = np.frombuffer(chunk.buffers()[2], dtype=np.uint8)
        padded = np.concatenate([data[: offsets[-1]], np.zeros(8 * width + 8, np.uint8)])
        # a big-endian 64-bit word starting at every byte: one unaligned load per id and word
        at = np.ndarray(shape=(len(padded) - 7,), dtype=">u8", buffer=padded, strides=(1,))
        starts = offsets[:-1].astype(np.int64)
        for k in range(width):
            left = np.clip(lengths - 8 * k, 0, 8)
            out[row : row + len(chunk), k] = at[starts + 8 * k].astype(np.uint64) & _MASKS[left]
        row += len(chunk)
    return out
