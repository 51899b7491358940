"""Loading a Caliper json-split document: its keys as JSON, its rows as float64 columns.

Caliper writes one row per line, numbers and ``null`` only.  Those rows are read in blocks of
:data:`BLOCK` bytes and parsed by pyarrow's CSV reader (brackets and blanks removed, one ``a,b,c,`` line
per row) into columns allocated once, so memory holds the columns plus one block, never the file's text.  The
rest of the document (``columns``, ``column_metadata``, ``nodes``, metadata) is small and goes through
``json.loads``.  Any other layout -- rows spanning lines, strings in rows, no newline before the rows' end --
takes the plain ``json.loads`` path of the whole file, which is slower and needs memory for the text, with its
errors.

Limits (:mod:`perflake.readers.limits`): before the rest of the document is parsed it is scanned block by block,
and a run of more than ``MAX_ATTRIBUTE_TEXT`` bytes without a quote (a string longer than the limit: there are
no numbers that long) or more than ``MAX_NODES`` objects (one per node) is refused having read at most one block
past it (the whole-file path has no such scan: its strings are checked once parsed, by the reader).
"""

from __future__ import annotations

import io
import json
import os
import re

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from perflake.errors import ReaderError
from perflake.readers.limits import MAX_ATTRIBUTE_TEXT, MAX_NODES

KEYS = ("data", "columns", "column_metadata", "nodes")
HEAD = 1 << 16
BLOCK = 32 << 20
_DATA_RE = re.compile(rb'"data"\s*:\s*\[')
_DATA_END_RE = re.compile(rb"\]\s*\]")
_DATA_END = b"]\n    ]"  # Caliper ends the rows with this and writes no such text after them
_ROW_START_RE = re.compile(rb"\s*\[")


def _fast_split(raw: bytes):
    """(document text with ``"data": []``, data rows as CSV bytes, row count), or None for the JSON path."""
    m = _DATA_RE.search(raw, 0, HEAD) or _DATA_RE.search(raw)
    if m is None or not _ROW_START_RE.match(raw, m.end()):  # no rows at all: the JSON path is as fast
        return None
    stop = raw.rfind(_DATA_END, m.end())
    found = _DATA_END_RE.search(raw, m.end()) if stop < 0 else None
    if stop < 0 and found is None:
        return None
    stop, end = (found.start(), found.end()) if found else (stop, stop + len(_DATA_END))
    if raw.find(b'"', m.end(), stop) >= 0 or raw.find(b"{", m.end(), stop) >= 0:
        return None  # strings or objects in the rows (or the end was not the rows' end)
    seg = raw[m.end() : stop + 1]  # every row, brackets included
    body = seg.translate(None, b"[] \t\r") + b","  # one "a,b,c," line per row
    return raw[: m.end()] + raw[end - 1 :], body, seg.count(b"[")


def _csv_columns(body: bytes, nrows: int, ncols: int, *, threads: bool = False):
    """``threads``: parse with several threads (faster; for a file of one block, whose memory is small anyway
    -- big files parse single-threaded, which keeps their peak memory low and steady)."""
    names = [f"c{i}" for i in range(ncols + 1)]  # every line ends with a comma: one empty last field
    convert = pacsv.ConvertOptions(column_types={n: pa.float64() for n in names[:ncols]}, null_values=["null"],
                                   include_columns=names[:ncols])
    try:
        table = pacsv.read_csv(io.BytesIO(body),
                               read_options=pacsv.ReadOptions(column_names=names, use_threads=threads),
                               parse_options=pacsv.ParseOptions(quote_char=False), convert_options=convert)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None
    if table.num_rows != nrows:
        return None
    return [table.column(i).to_numpy() for i in range(ncols)]  # nulls become NaN


def _load(path: str):
    """(document dict, column cells): cells are float64 arrays (fast path) or tuples of JSON values."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise ReaderError(path, f"cannot read: {exc.strerror or exc}") from None
    fast = _fast_split(raw)
    if fast is not None:
        try:
            doc = json.loads(fast[0])
        except (ValueError, RecursionError):
            doc = None
        if isinstance(doc, dict) and doc.get("data") == [] and isinstance(doc.get("columns"), list):
            cells = _csv_columns(fast[1], fast[2], len(doc["columns"]))
            if cells is not None:
                _check(path, doc)
                return doc, cells
    try:
        doc = json.loads(raw)
    except json.JSONDecodeError as exc:
        what = exc.msg.removesuffix(" at")  # "Invalid control character at"
        where = f"at line {exc.lineno} column {exc.colno}"
        raise ReaderError(path, f"not valid JSON (truncated?): {what} {where}") from None
    except RecursionError:
        raise ReaderError(path, "not valid JSON for perflake: arrays or objects nested too deeply") from None
    except UnicodeDecodeError as exc:
        raise ReaderError(path, f"not UTF-8 text: byte {exc.object[exc.start]:#04x} at offset {exc.start}") from None
    except ValueError as exc:
        raise ReaderError(path, f"not valid JSON: {exc}") from None
    _check(path, doc)
    return doc, _json_cells(path, doc["data"], len(doc["columns"]))


def _json_cells(path: str, data: list, ncols: int) -> list:
    """The rows of the plain-JSON path as columns: float64 arrays, or tuples when rows hold strings."""
    try:  # numbers and nulls only: one C-level conversion; else (strings in rows) column by column below
        grid = pa.array(data, type=pa.list_(pa.float64()))
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError):
        grid = None
    if ncols and grid is not None and not grid.null_count and (grid.value_lengths().to_numpy() == ncols).all():
        grid = grid.flatten().to_numpy(zero_copy_only=False).reshape(-1, ncols)
        return [np.ascontiguousarray(grid[:, i]) for i in range(ncols)]
    try:
        widths = set(map(len, data))
    except TypeError:
        raise ReaderError(path, "'data' must be a list of rows (lists)") from None
    if widths - {ncols}:
        i = next(i for i, row in enumerate(data) if len(row) != ncols)
        raise ReaderError(path, f"data row {i} has {len(data[i])} cells, expected {ncols} (one per column)")
    return list(zip(*data)) if data else [()] * ncols


def _check(path: str, doc) -> None:
    if not isinstance(doc, dict):
        raise ReaderError(path, f"not a Caliper json-split file: the top level is a JSON {type(doc).__name__}, "
                                "not an object")
    missing = [k for k in KEYS if k not in doc]
    if missing:
        raise ReaderError(path, "not a Caliper json-split file: missing key(s) " + ", ".join(repr(k) for k in missing))
    bad = next((k for k in KEYS if not isinstance(doc[k], list)), None)
    if bad:
        raise ReaderError(path, f"not a Caliper json-split file: {bad!r} is not a list")
    columns, meta = doc["columns"], doc["column_metadata"]
    if (len(meta) != len(columns) or not all(isinstance(c, str) for c in columns)
            or not all(isinstance(m, dict) for m in meta)):
        raise ReaderError(path, "'columns' must be strings and 'column_metadata' one object per column")


def _rfind(fh, size: int, needle: bytes, low: int) -> int:
    """Offset of the last ``needle`` in the file at or after ``low``, or -1 (read backwards in 1 MiB steps)."""
    pos, later, k = size, b"", len(needle) - 1
    while pos > low:
        start = max(low, pos - (1 << 20))
        fh.seek(start)
        chunk = fh.read(pos - start)
        found = (chunk + later[:k]).rfind(needle)
        if found >= 0:
            return start + found
        pos, later = start, chunk
    return -1


def _count_rows(fh, start: int, stop: int) -> int:
    """Opening brackets between ``start`` and ``stop``: one per row when the rows hold only numbers."""
    fh.seek(start)
    pos, n = start, 0
    while pos < stop:
        chunk = fh.read(min(BLOCK, stop - pos))
        if not chunk:
            break
        n += chunk.count(b"[")
        pos += len(chunk)
    return n


def _blocks(fh, start: int, stop: int, ncols: int):
    """The rows between ``start`` and ``stop`` (the last row's closing bracket included) as float64
    columns, parsed block by block into columns allocated once (a first pass counts the rows); None when
    a block is not one row per line of numbers."""
    if stop - start <= BLOCK:  # one block: parse it whole, no counting pass
        fh.seek(start)
        block = fh.read(stop - start)
        if b'"' in block or b"{" in block:
            return None
        body = block.translate(None, b"[] \t\r") + b","
        return _csv_columns(body, block.count(b"["), ncols, threads=True)
    total = _count_rows(fh, start, stop)
    cells = [np.empty(total, np.float64) for _ in range(ncols)]
    fh.seek(start)
    pos, carry, filled = start, b"", 0
    while pos < stop:
        n = min(BLOCK, stop - pos)
        block = carry + fh.read(n)
        pos += n
        carry = b""
        if pos < stop:  # cut after the last complete line; the rest starts the next block
            cut = block.rfind(b"\n") + 1
            if cut == 0:
                return None
            block, carry = block[:cut], block[cut:]
        if b'"' in block or b"{" in block:
            return None  # strings or objects in the rows
        rows = block.count(b"[")
        body = block.translate(None, b"[] \t\r") + (b"," if pos >= stop else b"")
        del block
        columns = _csv_columns(body, rows, ncols) if filled + rows <= total else None
        if columns is None:
            return None
        for cell, column in zip(cells, columns):
            cell[filled : filled + rows] = column
        filled += rows
    return cells if filled == total else None


def _scan_rest(path: str, fh, start: int, size: int) -> None:
    """Refuse the document after the rows (``columns``, ``nodes``, metadata: from ``start`` on) when it holds a
    string longer than MAX_ATTRIBUTE_TEXT bytes or more than MAX_NODES objects, reading it in blocks of at most
    the attribute limit (so a gap between quotes inside one block is short enough)."""
    fh.seek(start)
    run, objects, step = 0, 0, min(BLOCK, MAX_ATTRIBUTE_TEXT)
    while chunk := fh.read(step):
        objects += chunk.count(b"{")
        first = chunk.find(b'"')
        if first < 0:
            run += len(chunk)
        elif run + first <= MAX_ATTRIBUTE_TEXT:
            run = len(chunk) - chunk.rfind(b'"') - 1
        else:
            run = MAX_ATTRIBUTE_TEXT + 1
        if run > MAX_ATTRIBUTE_TEXT:
            raise ReaderError(path, f"a string of more than {MAX_ATTRIBUTE_TEXT} bytes ending after byte "
                                    f"{fh.tell() - len(chunk)} (limit)")
        if objects > MAX_NODES + 1:
            raise ReaderError(path, f"more than {MAX_NODES} nodes (limit)")


def _streamed(path: str):
    """(document, cells) read block by block, or None for the whole-file path."""
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        head = fh.read(HEAD)
        m = _DATA_RE.search(head)
        if m is None or not _ROW_START_RE.match(head, m.end()) or len(head) <= m.end():
            return None
        start = m.end()
        stop = _rfind(fh, size, _DATA_END, start)
        if stop < 0:
            return None
        _scan_rest(path, fh, stop + len(_DATA_END) - 1, size)
        fh.seek(stop + len(_DATA_END) - 1)
        try:
            doc = json.loads(head[:start] + fh.read())
        except (ValueError, RecursionError):
            return None
        if not isinstance(doc, dict) or doc.get("data") != [] or not isinstance(doc.get("columns"), list):
            return None
        _check(path, doc)
        cells = _blocks(fh, start, stop + 1, len(doc["columns"]))
    return None if cells is None else (doc, cells)


def load(path: str):
    """(document dict, column cells): cells are float64 arrays (fast paths) or tuples of JSON values."""
    try:
        found = _streamed(path)
    except OSError as exc:
        raise ReaderError(path, f"cannot read: {exc.strerror or exc}") from None
    return found if found is not None else _load(path)
