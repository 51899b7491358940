"""pyinstrument's JSON (``pyinstrument -r json``, ``Profiler.output(JSONRenderer())``), as Hatchet's
``GraphFrame.from_pyinstrument`` reads it.

The file is one object: ``start_time``, ``duration``, ``sample_count``, ``target_description`` (``program`` in
older versions), ``cpu_time`` and ``root_frame``, a tree of frames ``{"function", "file_path_short",
"file_path", "line_no", "time", "await_time", "is_application_code", "children": [...], "group_id"?,
"class_name"?}`` whose ``time`` is inclusive (seconds).  ``root_frame`` is ``null`` when nothing was sampled.

What this reader does (Hatchet's result for the same file, node by node; deviations marked *):

* one node per frame, type ``function``, name = ``function``, file = ``file_path_short``, line = ``line_no``
  (*``file_path`` when the short path is empty, no file when both are; line 0 of a frame without a file is no line);
* ``time (inc)`` = ``time``; ``time`` = ``time`` minus the children's ``time``, subtracted one child after the
  other as Hatchet does (so the values are the same to the last bit);
* *``is_application_code`` is not kept (a boolean column: perflake's Hatchet interop drops those too);
  ``await_time`` is not read (Hatchet neither); the top-level fields become run metadata;
* *``root_frame: null`` (no samples) is a ReaderError saying so (Hatchet fails with a TypeError);
* *frames nested deeper than Python's JSON parser allows are read (pyinstrument writes such files for deep
  recursion; Hatchet fails with a RecursionError), up to MAX_CALL_DEPTH frames; at most MAX_NODES frames
  (readers/limits.py).  The file is read whole (JSON), but a file that cannot be JSON is refused at its start.
"""

from __future__ import annotations

import json
import math
import os
import re

import numpy as np
import pyarrow as pa

from perflake.errors import ReaderError
from perflake.readers.base import INT64_MAX, check_frames, check_text, finite, shown
from perflake.readers.limits import MAX_CALL_DEPTH, MAX_NODES
from perflake.readers.single_file import SingleFileReader, file_head, file_text
from perflake.vocabulary import EXCLUSIVE, FRAME_SCHEMA, INCLUSIVE, Metric, ProfileRows

_HEAD = 1 << 16
_ROOT = re.compile(rb'"root_frame"\s*:\s*(?:\{|null)')
METRICS = [Metric("time", EXCLUSIVE, "s", "time (inc)"), Metric("time (inc)", INCLUSIVE, "s", "time")]


class Reader(SingleFileReader):
    kind = "pyinstrument"
    version = "1"

    @staticmethod
    def sniff(path: str) -> bool:
        """A ``.json`` file holding an object with pyinstrument's ``root_frame`` (in its first 64 KiB: the other
        top-level fields come first)."""
        data = file_head(path, _HEAD) if os.fspath(path).lower().endswith(".json") else None
        return data is not None and data.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{") and bool(_ROOT.search(data))

    def read(self, path: str) -> ProfileRows:
        path = os.fspath(path)
        doc = _load(path)
        if not isinstance(doc, dict) or "root_frame" not in doc:
            raise ReaderError(path, "not pyinstrument JSON: no top-level 'root_frame'")
        if doc["root_frame"] is None:
            raise ReaderError(path, "pyinstrument recorded no samples (root_frame is null)")
        meta = {k: v for k, v in doc.items() if k != "root_frame" and _scalar(v)}
        check_text(path, meta)
        frames, values = _tree(doc["root_frame"], path)
        return ProfileRows(format=self.kind, source=path, frames=check_frames(path, frames), values=values,
                           metrics=list(METRICS), metadata=meta, reader_version=self.version)


def _scalar(v) -> bool:
    return isinstance(v, (str, bool, int)) or (isinstance(v, float) and math.isfinite(v))


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _tree(root, path: str) -> tuple[pa.Table, pa.Table]:
    """Frames (pre-order) and values of the frame tree at ``root``."""
    names, files, lines, parents, inc, exc = [], [], [], [], [], []
    stack = [(root, -1, 1)]
    while stack:
        frame, parent, depth = stack.pop()
        if depth > MAX_CALL_DEPTH or len(names) >= MAX_NODES:
            raise ReaderError(path, f"a frame {depth} deep (more than {MAX_CALL_DEPTH}, readers/limits.py: "
                                    "MAX_CALL_DEPTH)" if depth > MAX_CALL_DEPTH else
                              f"more than {MAX_NODES} frames (readers/limits.py: MAX_NODES)")
        if not isinstance(frame, dict) or not isinstance(frame.get("function"), str) or not _number(frame.get("time")):
            raise ReaderError(path, f"a frame {shown(frame)} has no 'function' text and 'time' number")
        children = frame.get("children") or []
        if not isinstance(children, list) or not all(isinstance(c, dict) and _number(c.get("time")) for c in children):
            raise ReaderError(path, f"frame {shown(frame['function'])}: 'children' is not a list of frames "
                                    "with a 'time'")
        me = len(names)
        short, full, line = frame.get("file_path_short"), frame.get("file_path"), frame.get("line_no")
        file = short if isinstance(short, str) and short else full if isinstance(full, str) and full else None
        names.append(frame["function"])
        files.append(file)
        lines.append(line if isinstance(line, int) and not isinstance(line, bool) and 0 <= line <= INT64_MAX
                     and (file is not None or line) else None)
        parents.append(parent)
        self_time = float(frame["time"])
        for child in children:  # Hatchet's order of subtraction: the same float result
            self_time -= float(child["time"])
        inc.append(float(frame["time"]))
        exc.append(self_time)
        stack.extend((c, me, depth + 1) for c in reversed(children))
    # text that is not text (a lone surrogate), checked in what is kept: the document may nest deeper than
    # json.dumps (which check_text uses) goes
    check_text(path, [names, files])
    n = len(names)
    frames = pa.table({
        "local_id": pa.array(np.arange(n, dtype=np.int32)),
        "parent_local": pa.array(np.asarray(parents, dtype=np.int32)),
        "name": names, "type": ["function"] * n, "file": pa.array(files, pa.string()),
        "line": pa.array(lines, pa.int64()), "end_line": pa.array([None] * n, pa.int64()),
        "module": pa.array([None] * n, pa.string()),
    }, schema=FRAME_SCHEMA)
    values = pa.table({"local_id": pa.array(np.arange(n, dtype=np.int32)), "rank": pa.array(np.zeros(n, np.int32)),
                       "thread": pa.array(np.zeros(n, np.int32)),
                       "time": pa.array(finite(np.asarray(exc, np.float64))),
                       "time (inc)": pa.array(finite(np.asarray(inc, np.float64)))})
    return frames, values


def _load(path: str):
    head = (file_head(path, 4096) or b"").lstrip(b"\xef\xbb\xbf \t\r\n")
    if head and head[:1] not in b'{["-0123456789tfnNI':  # not JSON (2 GB of NULs): refused before reading it
        raise ReaderError(path, f"not JSON: it starts with {shown(head[:20])}")
    text = file_text(path)
    if not text.strip():
        raise ReaderError(path, "an empty file")
    try:
        return json.loads(text)
    except RecursionError:  # deep but valid: pyinstrument itself writes it without recursion
        pass
    except ValueError as exc:
        raise ReaderError(path, f"not JSON: {str(exc)[:120]}") from None
    try:
        return loads_deep(text)
    except LimitError as exc:
        raise ReaderError(path, str(exc)) from None
    except ValueError as exc:
        raise ReaderError(path, f"not JSON: {str(exc)[:120]}") from None


class LimitError(ValueError):
    """A document beyond a limit of readers/limits.py."""


_MAX_NESTING = 2 * MAX_CALL_DEPTH + 8  # a frame nests 2 deep (its object, its "children" list) below the top


_JSON_TOKEN = re.compile(r'\s*(?:("(?:[^"\\\x00-\x1f]|\\.)*")|(-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)'
                         r'|([{}\[\]:,])|(true|false|null|NaN|-?Infinity))', re.S)
_WORDS = {"true": True, "false": False, "null": None, "NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def loads_deep(text: str):
    """JSON ``text`` parsed without recursion (any nesting depth); ValueError when it is not JSON.

    ``want`` is what may come next: a value ("v"), a value or "]" right after "[" ("v]"), a key or "}" right after
    "{" ("k}"), a key ("k"), ":" (":"), or "," / the closing bracket (",")."""
    stack: list = []  # open containers: [container, pending key]
    pos, want, value = 0, "v", None
    while True:
        m = _JSON_TOKEN.match(text, pos)
        if m is None:
            if want == "end" and not text[pos:].strip():
                return value
            raise ValueError(f"unexpected text at character {pos}")
        pos = m.end()
        s, num, punct, word = m.groups()
        token = punct or ("s" if s else "v")
        if want == "end":
            raise ValueError(f"extra data at character {pos}")
        if token in "]}" and (want == "," or (want, token) in (("v]", "]"), ("k}", "}"))):
            if (token == "]") != isinstance(stack[-1][0], list):
                raise ValueError(f"unbalanced {token!r} at character {pos}")
            value = stack.pop()[0]
        elif token == ",":
            if want != ",":
                raise ValueError(f"unexpected ',' at character {pos}")
            want = "v" if isinstance(stack[-1][0], list) else "k"
            continue
        elif token == ":":
            if want != ":":
                raise ValueError(f"unexpected ':' at character {pos}")
            want = "v"
            continue
        elif want in ("k", "k}"):
            if token != "s":
                raise ValueError(f"an object key that is not a string at character {pos}")
            stack[-1][1] = json.loads(s)
            want = ":"
            continue
        elif want in ("v", "v]") and token in "[{":
            if len(stack) > _MAX_NESTING:
                raise LimitError(f"JSON nested more than {_MAX_NESTING} deep: frames deeper than {MAX_CALL_DEPTH} "
                                 "(readers/limits.py: MAX_CALL_DEPTH)")
            stack.append([[] if token == "[" else {}, None])
            want = "v]" if token == "[" else "k}"
            continue
        elif want in ("v", "v]") and token in ("s", "v"):
            value = json.loads(s) if s else _WORDS[word] if word else json.loads(num)
        else:
            raise ValueError(f"unexpected {m.group().strip()[:20]!r} at character {pos}")
        if not stack:
            want = "end"
        elif isinstance(stack[-1][0], list):
            stack[-1][0].append(value)
            want = ","
        else:
            stack[-1][0][stack[-1][1]] = value
            want = ","
