"""The files of one TAU metric folder: every ``profile.N.C.T`` parsed into one table of function entries.

Format reference: ``shared/docs/formats.md`` section 5.  :func:`parse_folder` is the whole job: a fast path
feeds the entry lines of all files to pyarrow's CSV parser at once; anything unusual (a truncated file, a
strange line) falls back to the careful line-by-line parser, whose errors name the file and the line.
Line 2 of the first file holds the metadata XML (``<attribute><name>..</name><value>..</value>``), typed.
Building the tree from the entries is :mod:`perflake.readers.tau`'s part.
"""

from __future__ import annotations

import io
import math
import re
from html import unescape

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from perflake.errors import ReaderError
from perflake.readers.base import shown

HEADER_RE = re.compile(rb"^\s*(\d+)\s+templated_functions(?:_MULTI_(\S+))?")
_INT_RE = re.compile(r"^[+-]?\d+$")
_FLOAT_RE = re.compile(r"^[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?$")


def _typed(value: str):
    v = value.strip()
    if _INT_RE.match(v):
        try:
            return int(v)
        except ValueError:  # pragma: no cover - regex guarantees digits
            return v
    if _FLOAT_RE.match(v) and math.isfinite(f := float(v)):  # 1e999 stays text: JSON has no infinity
        return f
    return value


def _metadata(text: str) -> dict:
    """The ``<attribute><name>..</name><value>..</value></attribute>`` pairs of the metadata line, typed.

    Found with ``str.find``, piece by piece (the text between two ``<attribute>``), as the lazy regex
    ``<name>(.*?)</name><value>(.*?)</value></attribute>`` would match them, in linear time: that regex rescans
    the rest of the line from every unclosed tag, quadratic time on a damaged line."""
    out = {}
    for piece in text.split("<attribute>")[1:]:
        if not piece.startswith("<name>"):
            continue
        name_end = piece.find("</name><value>", 6)
        value_end = piece.find("</value></attribute>", name_end + 14) if name_end >= 0 else -1
        if value_end >= 0:
            out[unescape(piece[6:name_end])] = _typed(unescape(piece[name_end + 14 : value_end]))
    return out


class _Entries:
    """Function entry lines of one profile file, as parallel lists."""

    __slots__ = ("names", "calls", "subrs", "excl", "incl", "metadata", "metric")

    def __init__(self):
        self.names: list[str] = []
        self.calls: list[str] = []
        self.subrs: list[str] = []
        self.excl: list[str] = []
        self.incl: list[str] = []


def _parse_file(path: str, want_metadata: bool) -> _Entries:
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise ReaderError(path, f"cannot read: {exc.strerror or exc}") from None
    if not data.strip():
        raise ReaderError(path, "empty file (a TAU profile starts with '<count> templated_functions...')")
    first_nl = data.find(b"\n")
    m = HEADER_RE.match(data[: first_nl if first_nl >= 0 else len(data)])
    if not m:
        raise ReaderError(path, "not a TAU profile: line 1 should be '<count> templated_functions...'")
    count = int(m.group(1))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("latin-1")
    lines = text.split("\n")
    out = _Entries()
    out.metric = m.group(2).decode("latin-1") if m.group(2) else None
    out.metadata = {}
    if len(lines) < 2 or not lines[1].startswith("#"):
        raise ReaderError(path, "line 2 should be the '# Name Calls Subrs Excl Incl ProfileCalls' legend")
    if want_metadata:
        out.metadata = _metadata(lines[1])
        metric_name = out.metadata.get("Metric Name")
        if isinstance(metric_name, str):
            out.metric = metric_name
    body = lines[2 : 2 + count]
    if len(body) < count or (count and not body[-1].startswith('"')):
        n_ok = sum(1 for ln in body if ln.startswith('"'))
        raise ReaderError(path, f"truncated: line 1 announces {count} function entries, found {n_ok}")
    names, calls, subrs, excl, incl = out.names, out.calls, out.subrs, out.excl, out.incl
    for i, ln in enumerate(body):
        head = ln.rpartition(' GROUP="')[0] or ln
        parts = head.rstrip().rsplit(" ", 5)
        if len(parts) != 6 or len(parts[0]) < 2 or parts[0][0] != '"' or parts[0][-1] != '"':
            raise ReaderError(path, f"line {i + 3}: not a function entry: {ln[:80]!r}")
        names.append(parts[0][1:-1])
        calls.append(parts[1])
        subrs.append(parts[2])
        excl.append(parts[3])
        incl.append(parts[4])
    return out


def _floats(path: str, strings: list[str], what: str) -> np.ndarray:
    try:
        return np.array(strings, dtype=np.float64)
    except ValueError:
        bad = next(s for s in strings
                   if not _FLOAT_RE.match(s.strip()) and s.strip().lower() not in ("nan", "inf", "-inf"))
        raise ReaderError(path, f"{what} value {shown(bad)} is not a number") from None


_CSV_NAMES = ["name", "calls", "subrs", "excl", "incl", "profilecalls", "group", "trailing"]
_CSV_TYPES = {"name": pa.string(), "calls": pa.float64(), "subrs": pa.float64(), "excl": pa.float64(),
              "incl": pa.float64()}


def _body(path: str, data: bytes, want_metadata: bool):
    """(metric, metadata, count, entry lines as a memoryview) of one file, or None when it needs the careful parser."""
    end1 = data.find(b"\n")
    end2 = data.find(b"\n", end1 + 1)
    m = HEADER_RE.match(data[: max(end1, 0)])
    if not m or end2 < 0 or data[end1 + 1 : end1 + 2] != b"#":
        return None
    count = int(m.group(1))
    stop = data.find(b"\n0 aggregates", end2)  # the trailing section TAU always writes
    if stop < 0 or count == 0:
        return None
    body = memoryview(data)[end2 + 1 : stop]
    if data.count(b"\n", end2 + 1, stop) + 1 != count:
        return None
    metric = m.group(2).decode("latin-1") if m.group(2) else None
    meta = {}
    if want_metadata:
        text = data[end1 + 1 : end2].decode("utf-8", errors="replace")
        meta = _metadata(text)
        if isinstance(meta.get("Metric Name"), str):
            metric = meta["Metric Name"]
    return metric, meta, count, body


class _Chain(io.RawIOBase):
    """The entry lines of many files as one stream, newline-separated, without concatenating them."""

    def __init__(self, parts):
        self.parts, self.i, self.pos = list(parts), 0, 0

    def readable(self):
        return True

    def readinto(self, buf):
        while self.i < len(self.parts):
            part = self.parts[self.i]
            if self.pos < len(part):
                n = min(len(buf), len(part) - self.pos)
                buf[:n] = part[self.pos : self.pos + n]
                self.pos += n
                return n
            self.i, self.pos = self.i + 1, 0
            if self.i < len(self.parts):
                buf[:1] = b"\n"
                return 1
        return 0


def parse_folder(paths: list[str]):
    """Parse every file of one metric folder: (metric, metadata of the first file, table, entries per file).

    Fast path: all entry lines go through pyarrow's CSV parser at once (quoted names, space-separated).
    Anything unusual falls back to the line-by-line parser, which names the file and line that is wrong.
    """
    bodies, counts, metric, meta = [], [], None, {}
    for i, path in enumerate(paths):
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError as exc:
            raise ReaderError(path, f"cannot read: {exc.strerror or exc}") from None
        parsed = _body(path, data, want_metadata=(i == 0))
        if parsed is None:
            return _parse_folder_slowly(paths)
        if i == 0:
            metric, meta = parsed[0], parsed[1]
        counts.append(parsed[2])
        bodies.append(parsed[3])
    try:
        table = pacsv.read_csv(
            io.BufferedReader(_Chain(bodies), buffer_size=1 << 22),
            read_options=pacsv.ReadOptions(column_names=_CSV_NAMES),
            parse_options=pacsv.ParseOptions(delimiter=" ", quote_char='"', double_quote=False, escape_char=False),
            convert_options=pacsv.ConvertOptions(column_types=_CSV_TYPES, include_columns=list(_CSV_TYPES)),
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return _parse_folder_slowly(paths)
    counts = np.asarray(counts, dtype=np.int64)
    if table.num_rows != counts.sum() or (counts == 0).any():
        return _parse_folder_slowly(paths)
    return metric, meta, table, counts


def _parse_folder_slowly(paths: list[str]):
    names, nums, counts, metric, meta = [], {k: [] for k in ("calls", "subrs", "excl", "incl")}, [], None, {}
    for i, path in enumerate(paths):
        entries = _parse_file(path, want_metadata=(i == 0))
        if not entries.names:
            raise ReaderError(path, "no function entries")
        if i == 0:
            metric, meta = entries.metric, entries.metadata
        names += entries.names
        counts.append(len(entries.names))
        for key, what in (("calls", "Calls"), ("subrs", "Subrs"), ("excl", "Excl"), ("incl", "Incl")):
            nums[key].append(_floats(path, getattr(entries, key), what))
    table = pa.table({"name": names, **{k: np.concatenate(v) for k, v in nums.items()}})
    return metric, meta, table, np.asarray(counts, dtype=np.int64)
