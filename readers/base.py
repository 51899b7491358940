"""The contract between readers and the rest of perflake.

A reader parses one input (a file or a directory) and returns :class:`ProfileRows`: plain columns, no
DuckDB, no GraphFrame.  Identity (the call-path id) is *not* computed here: readers give each node a local
integer id and its parent's local id, and ``perflake.identity`` derives the stable id from the frames
on the path, once, for every reader.

The words the contract is written in (:class:`ProfileRows`, :class:`Metric`, the roles ``EXCLUSIVE``/``INCLUSIVE``/
``OTHER``, :data:`FRAME_SCHEMA` and the columns of ``frames`` and ``values``) are shared with the frame side:
they live in :mod:`perflake.vocabulary` and are re-exported here, so ``from perflake.readers.base import
Metric`` keeps working.

Bad input (tests/test_fuzz.py runs every reader over thousands of damaged copies of real profiles): a reader
raises one ReaderError whose message is one line naming the file and what is wrong (values quoted with
:func:`shown`, cut short), never another exception.  What it returns holds no infinity (an infinite value is
no measurement: NaN), ranks and threads that fit int32, lines that fit int64 (else null), frame text of at
most :data:`MAX_FRAME_TEXT` bytes (:func:`check_frames`), and metadata that is strict JSON (no NaN/Infinity).
"""

from __future__ import annotations

from typing import Protocol

import pyarrow as pa
import pyarrow.compute as pc

from perflake.errors import ReaderError
from perflake.readers.limits import MAX_FRAME_TEXT  # noqa: F401  (re-exported)
from perflake.vocabulary import (  # noqa: F401  (re-exported: readers and users import them from here)
    EXCLUSIVE,
    FRAME_ATTRS,
    FRAME_SCHEMA,
    INCLUSIVE,
    LOCATION_COLUMNS,
    OTHER,
    Metric,
    ProfileRows,
)

INT32_MAX = 2**31 - 1  # ranks and threads are int32
INT64_MAX = 2**63 - 1  # lines are int64

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
