"""The files of one TAU metric folder, read one ``profile.N.C.T`` at a time, in bounded memory.

Format reference: ``shared/docs/formats.md`` section 5.  :func:`open_profile` reads lines 1 and 2 (the header
and the legend with the metadata XML ``<attribute><name>..</name><value>..</value>``); :func:`fast_batches`
then feeds the function entries to pyarrow's CSV parser, a block of whole lines at a time; a file it cannot take
whole (a strange line, a truncated file, a line longer than a block) is read again by :func:`slow_batches`,
the careful line-by-line parser, whose errors name the file and the line.  Building the tree from the
entries is :mod:`perflake.readers.tau`'s part.

Nothing holds a whole file: a file that is not TAU text (2 GB of NULs) is refused after its first line,
and every line is refused as soon as it exceeds a limit of readers/limits.py: line 1 (MAX_FRAME_TEXT for the
metric name), one ``<attribute>`` of line 2 (MAX_ATTRIBUTE_TEXT for the value, MAX_FRAME_TEXT for the name),
the entries a file announces (2 x MAX_NODES + 1: a flat and a callpath entry per node), and an entry's timer
names (MAX_CALL_DEPTH frames of at most 2 x MAX_FRAME_TEXT + 64 bytes: tau_frames.TIMER_TEXT).
"""

from __future__ import annotations

import codecs
import io
import math
import os
import re
from dataclasses import dataclass
from html import unescape

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from perflake.errors import ReaderError
from perflake.readers.base import shown
from perflake.readers.limits import MAX_ATTRIBUTE_TEXT, MAX_CALL_DEPTH, MAX_FRAME_TEXT, MAX_NODES
from perflake.readers.tau_frames import TIMER_TEXT

HEADER_RE = re.compile(rb"^\s*(\d+)\s+templated_functions(?:_MULTI_(\S+))?")
_INT_RE = re.compile(r"^[+-]?\d+$")
_FLOAT_RE = re.compile(r"^[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?$")
_CHUNK = 1 << 20  # bytes read at a time; also the CSV block (a longer line goes to the careful parser)
_LINE1 = MAX_FRAME_TEXT + 256
_ATTRIBUTE = b"<attribute>"
_PIECE = MAX_ATTRIBUTE_TEXT + MAX_FRAME_TEXT + 64  # one attribute of line 2: name, value and tags
MAX_ENTRIES = 2 * MAX_NODES + 1
_BATCH = 1 << 16  # lines per batch of the careful parser
_SEP = b" => "


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


@dataclass
class Profile:
    """Lines 1 and 2 of one file, and the file positioned at its first function entry."""

    path: str
    fh: io.BufferedReader
    count: int  # function entries announced by line 1
    metric: str | None  # from line 1
    legend: bytes | None  # line 2 (the metadata XML), when asked for


def open_profile(path: str, want_metadata: bool) -> Profile:
    try:
        fh = open(path, "rb")
    except OSError as exc:
        raise ReaderError(path, f"cannot read: {exc.strerror or exc}") from None
    try:
        line1 = fh.readline(_LINE1 + 1)
        if not line1.strip() and os.fstat(fh.fileno()).st_size <= _CHUNK and not fh.read().strip():
            raise ReaderError(path, "empty file (a TAU profile starts with '<count> templated_functions...')")
        m = HEADER_RE.match(line1.rstrip(b"\n"))
        if not m:
            raise ReaderError(path, "not a TAU profile: line 1 should be '<count> templated_functions...'")
        if not line1.endswith(b"\n") and len(line1) > _LINE1:
            raise ReaderError(path, f"line 1 is longer than {_LINE1} bytes (readers/limits.py: MAX_FRAME_TEXT)")
        if len(m.group(1)) > 12 or int(m.group(1)) > MAX_ENTRIES:
            digits = m.group(1).decode()
            raise ReaderError(path, f"line 1 announces {digits if len(digits) <= 20 else digits[:20] + '...'} "
                                    f"function entries, more than "
                                    f"{MAX_ENTRIES} (readers/limits.py: 2 x MAX_NODES + 1)")
        legend = _line2(path, fh, want_metadata)
        metric = m.group(2).decode("latin-1") if m.group(2) else None
        return Profile(path, fh, int(m.group(1)), metric, legend)
    except BaseException:
        fh.close()
        raise


def _line2(path: str, fh, keep: bool) -> bytes | None:
    """Line 2 (without its newline) when ``keep``, read a block at a time; each ``<attribute>`` of it at most
    _PIECE bytes."""
    parts, since, tail, first = [], 0, b"", True
    while True:
        chunk = fh.readline(_CHUNK)
        if first and not chunk.startswith(b"#"):
            raise ReaderError(path, "line 2 should be the '# Name Calls Subrs Excl Incl ProfileCalls' legend")
        first = False
        pieces = (tail + chunk).split(_ATTRIBUTE)
        since += len(pieces[0]) - len(tail)
        for piece_len in [since, *map(len, pieces[1:-1])] + ([len(pieces[-1])] if len(pieces) > 1 else []):
            if piece_len > _PIECE:
                raise ReaderError(path, f"line 2: a metadata attribute of more than {_PIECE} bytes "
                                        "(readers/limits.py: MAX_ATTRIBUTE_TEXT)")
        if len(pieces) > 1:
            since = len(pieces[-1])
        tail = chunk[-(len(_ATTRIBUTE) - 1):]
        if keep:
            parts.append(chunk)
        if len(chunk) < _CHUNK or chunk.endswith(b"\n"):
            break
    if not keep:
        return None
    line = b"".join(parts)
    return line[:-1] if line.endswith(b"\n") else line


def metadata(profile_legend: bytes | None, decoding: str) -> dict:
    """The typed metadata of line 2; ``decoding``: "replace" (UTF-8, bad bytes replaced), "utf-8" or "latin-1"."""
    if profile_legend is None:
        return {}
    text = (profile_legend.decode("utf-8", errors="replace") if decoding == "replace"
            else profile_legend.decode(decoding))
    return _metadata(text)


def is_utf8(path: str) -> bool:
    """Whether the whole file is UTF-8 (read a block at a time)."""
    dec = codecs.getincrementaldecoder("utf-8")()
    try:
        with open(path, "rb") as fh:
            while chunk := fh.read(_CHUNK):
                dec.decode(chunk)
            dec.decode(b"", final=True)
    except UnicodeDecodeError:
        return False
    except OSError as exc:
        raise ReaderError(path, f"cannot read: {exc.strerror or exc}") from None
    return True


class NeedSlow(Exception):
    """The fast parser cannot take this file: read it with :func:`slow_batches`."""


_CSV_NAMES = ["name", "calls", "subrs", "excl", "incl", "profilecalls", "group", "trailing"]
_CSV_TYPES = {"name": pa.string(), "calls": pa.float64(), "subrs": pa.float64(), "excl": pa.float64(),
              "incl": pa.float64()}
_READ = pacsv.ReadOptions(column_names=_CSV_NAMES, block_size=4 * _CHUNK, use_threads=False)
_PARSE = pacsv.ParseOptions(delimiter=" ", quote_char='"', double_quote=False, escape_char=False)
_CONVERT = pacsv.ConvertOptions(column_types=_CSV_TYPES, include_columns=list(_CSV_TYPES))


def fast_batches(profile: Profile):
    """(names, [calls, subrs, excl, incl]) of the next ``count`` lines, a block of whole lines at a time through
    pyarrow's CSV parser; NeedSlow (possibly after some batches) when they are not ``count`` well-formed lines,
    or a line is longer than a block."""
    left, carry, fh = profile.count, b"", profile.fh
    while left > 0:
        data = fh.read(_CHUNK)
        buf = carry + data
        if not data:  # the end of the file: the text after the last newline is the last line
            if not buf or left > 1:
                raise NeedSlow
            chunk, lines, left = buf, 1, 0
        else:
            ends = np.flatnonzero(np.frombuffer(buf, np.uint8) == 10)
            if not len(ends):
                if len(buf) > _CHUNK:
                    raise NeedSlow
                carry = buf
                continue
            lines = min(len(ends), left)
            cut = int(ends[lines - 1])
            chunk, carry, left = buf[:cut], buf[cut + 1:], left - lines
        try:
            table = pacsv.read_csv(pa.py_buffer(chunk), read_options=_READ, parse_options=_PARSE,
                                   convert_options=_CONVERT)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            raise NeedSlow from None
        if table.num_rows != lines:  # an empty line (skipped), a line break inside quotes
            raise NeedSlow
        yield table.column(0).combine_chunks(), [table.column(k).to_numpy() for k in range(1, 5)]


def _floats(path: str, strings: list[str], what: str) -> np.ndarray:
    try:
        return np.array(strings, dtype=np.float64)
    except ValueError:
        bad = next(s for s in strings
                   if not _FLOAT_RE.match(s.strip()) and s.strip().lower() not in ("nan", "inf", "-inf"))
        raise ReaderError(path, f"{what} value {shown(bad)} is not a number") from None


def _lines(path: str, fh, number: int):
    """The lines of ``fh`` from where it stands (line ``number``), as ``str.split("\\n")`` gives them (the text
    after the last newline is a line too, empty or not); a line is refused as soon as it exceeds a limit."""
    while True:
        line = fh.readline(_CHUNK)
        if len(line) == _CHUNK and not line.endswith(b"\n"):
            line = _long_line(path, fh, line, number)
        yield line[:-1] if line.endswith(b"\n") else line
        if not line.endswith(b"\n"):
            return
        number += 1


def _long_line(path: str, fh, start: bytes, number: int) -> bytes:
    """The rest of a line longer than a block: read a block at a time, refused at its first timer name longer
    than TIMER_TEXT (a callpath entry's frames are separated by " => ") or its frame beyond MAX_CALL_DEPTH."""
    parts, frames, since = [], 1, 0
    chunk, tail = start, b""
    while True:
        pieces = (tail + chunk).split(_SEP)
        since += len(pieces[0]) - len(tail)
        frames += len(pieces) - 1
        longest = max([since, *map(len, pieces[1:])]) if len(pieces) > 1 else since
        if longest > TIMER_TEXT + MAX_FRAME_TEXT:  # the last frame also holds the values and the GROUP
            raise ReaderError(path, f"line {number}: a timer name of more than {TIMER_TEXT} bytes "
                                    "(readers/limits.py: MAX_FRAME_TEXT)")
        if frames > MAX_CALL_DEPTH:
            raise ReaderError(path, f"line {number}: a call path of more than {MAX_CALL_DEPTH} frames "
                                    "(readers/limits.py: MAX_CALL_DEPTH)")
        if len(pieces) > 1:
            since = len(pieces[-1])
        parts.append(chunk)
        if len(chunk) < _CHUNK or chunk.endswith(b"\n"):
            return b"".join(parts)
        tail = chunk[-(len(_SEP) - 1):]
        chunk = fh.readline(_CHUNK)


def slow_batches(profile: Profile, utf8: bool):
    """(names, [calls, subrs, excl, incl]) of the entries of ``profile``, a batch of lines at a time, parsed one
    by one; errors name the line.  ``utf8``: the whole file is UTF-8 (else it is read as Latin-1)."""
    path, count, fh = profile.path, profile.count, profile.fh
    fh.seek(0)
    fh.readline(_LINE1 + 1)
    _line2(path, fh, False)
    encoding = "utf-8" if utf8 else "latin-1"
    lines = _lines(path, fh, 3)
    batch: list[list[str]] = [[] for _ in range(5)]
    seen = ok = 0
    error = None  # the first bad line: reported unless the file is truncated (that is said first)
    last = ""
    for raw in lines:
        ln = last = raw.decode(encoding)
        seen += 1
        ok += ln.startswith('"')
        if error is None:
            head = ln.rpartition(' GROUP="')[0] or ln
            parts = head.rstrip().rsplit(" ", 5)
            if len(parts) != 6 or len(parts[0]) < 2 or parts[0][0] != '"' or parts[0][-1] != '"':
                error = f"line {seen + 2}: not a function entry: {ln[:80]!r}"
            else:
                batch[0].append(parts[0][1:-1])
                for k in range(1, 5):
                    batch[k].append(parts[k])
                if len(batch[0]) == _BATCH and seen < count:
                    yield _slow_batch(path, batch)
                    batch = [[] for _ in range(5)]
        if seen == count:
            break
    if seen < count or not last.startswith('"'):
        raise ReaderError(path, f"truncated: line 1 announces {count} function entries, found {ok}")
    if error is not None:
        raise ReaderError(path, error)
    yield _slow_batch(path, batch)


def _slow_batch(path: str, batch: list[list[str]]):
    nums = [_floats(path, batch[k], what) for k, what in enumerate(("Calls", "Subrs", "Excl", "Incl"), 1)]
    return pa.array(batch[0], pa.string()), nums
