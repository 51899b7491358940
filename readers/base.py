"""The contract between readers and the rest of perflake.

A reader parses one input (a file or a directory) and returns :class:`ProfileRows`: plain columns, no
DuckDB, no GraphFrame.  Identity (the call-path id) is *not* computed here: readers give each node a local
integer id and its parent's local id, and ``perflake.identity`` derives the stable id from the frames
on the path, once, for every reader.

Columns of ``ProfileRows.frames`` (one row per node of the input's call tree, parents before children, and
siblings in the order the profile lists them: that order becomes the nodes' ``child_order``, the order of
``node.children``, as Hatchet's readers keep it):

============  =========  ==========================================================
local_id      int32      0..n-1, position in the list
parent_local  int32      local id of the parent, -1 for a root
name          string     frame name (never null)
type          string     frame kind: ``function``, ``loop``, ``statement``, ...
file          string     source file, null when unknown
line          int64      first line, null when unknown
end_line      int64      last line, null when unknown
module        string     load module / library, null when unknown
============  =========  ==========================================================

Columns of ``ProfileRows.values`` (one row per node and location that has a measurement):
``local_id`` int32, ``rank`` int32, ``thread`` int32, then one float64 column per metric in
``ProfileRows.metrics`` order.  Absent measurements are absent rows, null or NaN; normalisation stores
them as null (never 0), so that merging identical sibling frames sums only measured values.

Bad input (tests/test_fuzz.py runs every reader over thousands of damaged copies of real profiles): a reader
raises one ReaderError whose message is one line naming the file and what is wrong (values quoted with
:func:`shown`, cut short), never another exception.  What it returns holds no infinity (an infinite value is
no measurement: NaN), ranks and threads that fit int32, lines that fit int64 (else null), frame text of at
most :data:`MAX_FRAME_TEXT` bytes (:func:`check_frames`), and metadata that is strict JSON (no NaN/Infinity).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import pyarrow as pa
import pyarrow.compute as pc

from perflake.errors import ReaderError

FRAME_SCHEMA = pa.schema(
    [
        ("local_id", pa.int32()),
        ("parent_local", pa.int32()),
        ("name", pa.string()),
        ("type", pa.string()),
        ("file", pa.string()),
        ("line", pa.int64()),
        ("end_line", pa.int64()),
        ("module", pa.string()),
    ]
)
FRAME_ATTRS = ("name", "type", "file", "line", "end_line", "module")
LOCATION_COLUMNS = ("rank", "thread")

INT32_MAX = 2**31 - 1  # ranks and threads are int32
INT64_MAX = 2**63 - 1  # lines are int64
# The longest frame name, file or module a reader accepts, in bytes.  Real names (demangled C++ templates
# included) stay far below it; a longer one is a damaged file, and it would cost far more than its size
# downstream (it is hashed into the call-path id of every node below it, perflake/identity.py).
MAX_FRAME_TEXT = 1 << 16

EXCLUSIVE = "exclusive"
INCLUSIVE = "inclusive"
OTHER = "other"  # counts, statistics: neither summed up the tree nor derived


@dataclass(frozen=True)
class Metric:
    """A metric column: its Hatchet-style name, its role and its unit (None when the format does not say).

    ``pair`` names the exclusive/inclusive counterpart (``time`` <-> ``time (inc)``) when there is one.
    """

    name: str
    role: str
    unit: str | None = None
    pair: str | None = None


@dataclass
class ProfileRows:
    """What a reader returns for one run."""

    format: str
    source: str
    frames: pa.Table
    values: pa.Table
    metrics: list[Metric]
    metadata: dict = field(default_factory=dict)
    reader_version: str = "1"

    def metric(self, name: str) -> Metric:
        for m in self.metrics:
            if m.name == name:
                return m
        raise KeyError(name)


class Reader(Protocol):
    """What every reader module's ``Reader`` class provides."""

    kind: str
    version: str

    @staticmethod
    def sniff(path: str) -> bool:
        """True when ``path`` (file or directory) is in this reader's format (cheap test)."""

    @staticmethod
    def files(path: str) -> list[str]:
        """Every input file the run at ``path`` consists of (the run id is the hash of their bytes)."""

    def read(self, path: str) -> ProfileRows:
        """Parse ``path``; raise :class:`perflake.errors.ReaderError` naming the file on bad input."""


def line_number(text: str | None) -> int | None:
    """A source line number written as text: ASCII digits that fit an int64, else None (unknown)."""
    if text and text.isascii() and text.isdigit() and len(text) <= 18:
        return int(text)
    return None


def check_frames(path: str, frames: pa.Table) -> pa.Table:
    """``frames`` itself; a ReaderError naming ``path`` when a name, file or module exceeds MAX_FRAME_TEXT."""
    for col in ("name", "file", "module"):
        longest = pc.max(pc.binary_length(frames.column(col))).as_py() if frames.num_rows else None
        if longest is not None and longest > MAX_FRAME_TEXT:
            raise ReaderError(path, f"a frame {col} of {longest} bytes (more than {MAX_FRAME_TEXT}): a damaged file")
    return frames


def finite(values):
    """A float NumPy array with its infinities as NaN: for a reader an infinity (a broken timer, an overflowing
    number) is no measurement.  A copy only when there is one."""
    import numpy as np

    inf = np.isinf(values)
    return np.where(inf, np.nan, values) if inf.any() else values


def check_text(path: str, value) -> None:
    """A ReaderError naming ``path`` when a string inside ``value`` (JSON-like data) holds an unpaired surrogate
    (``"\\ud800"`` in JSON): no valid text holds one, and Arrow and Parquet refuse it."""
    import json

    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = exc.object[max(exc.start - 20, 0) : exc.end + 20].encode("utf-8", "backslashreplace").decode()
        raise ReaderError(path, f"a string holds an unpaired surrogate, which is not text: {shown(bad)}") from None


def shown(value, limit: int = 60) -> str:
    """``repr(value)`` for an error message, cut to about ``limit`` characters (a damaged file's values can be huge)."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"
