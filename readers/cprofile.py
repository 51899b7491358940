"""cProfile / profile statistics (``pstats``: what ``Profile.dump_stats`` and ``python -m cProfile -o`` write),
as Hatchet's ``GraphFrame.from_cprofile`` reads them.

The file is the marshal of one dict (decoded by :mod:`perflake.readers.pstats_marshal`, Python 2 and 3 files
alike): ``(file, line, function) -> (cc, nc, tt, ct, callers)`` with ``cc`` the primitive (non-recursive)
calls, ``nc`` all calls, ``tt`` the time in the function itself, ``ct`` the time including its callees, and
``callers`` ``(file, line, function) -> (nc, cc, tt, ct)`` of the calls from that caller (cProfile) or a call
count (the pure-Python ``profile`` module).  Built-ins have file ``~`` and line 0.

What this reader does (Hatchet's result for the same file, node by node; deviations marked *):

* one node per function, type ``function``, name = the function name, ``file`` and ``line`` (*``~`` and line 0
  of a built-in are no file and no line: Hatchet keeps ``~``/0); metrics ``time`` (tt, exclusive) and
  ``time (inc)`` (ct), in seconds, and Hatchet's ``numcalls`` (= cc, the *primitive* calls) and
  ``nativecalls`` (= nc, all calls, recursive ones included);
* *a function is identified by its whole ``(file, line, function)`` key: Hatchet keys it by the file's base
  name, so two functions of one name and line in two ``__init__.py`` files become one node there;
* the call graph (callers -> function) becomes a tree as :mod:`perflake.readers.call_graph` describes: one
  node per function with its totals, under its heaviest caller (by the time spent on behalf of that caller),
  recursive calls and second callers listed in the metadata (*Hatchet keeps a node per function with every
  caller as a parent, a self-loop for recursion, and a cycle that no root reaches left out of its graph);
* *a caller that has no entry of its own (a merged or edited file) is a node without values (Hatchet fails);
* *a file written by another major Python version is read (Hatchet prints "Incompatible pstats file").
"""

from __future__ import annotations

import math
import os

import numpy as np
import pyarrow as pa

from perflake.errors import ReaderError
from perflake.readers import call_graph
from perflake.readers.base import INT64_MAX, check_frames, finite, shown
from perflake.readers.pstats_marshal import LimitError, MarshalError, head_key, load
from perflake.readers.single_file import SingleFileReader, file_head
from perflake.vocabulary import EXCLUSIVE, FRAME_SCHEMA, INCLUSIVE, OTHER, Metric, ProfileRows

METRICS = [Metric("time", EXCLUSIVE, "s", "time (inc)"), Metric("time (inc)", INCLUSIVE, "s", "time"),
           Metric("numcalls", OTHER, "count"), Metric("nativecalls", OTHER, "count")]
_HEAD = 1 << 12


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _is_func(key) -> bool:
    return (isinstance(key, tuple) and len(key) == 3 and isinstance(key[0], str) and isinstance(key[2], str)
            and isinstance(key[1], int) and not isinstance(key[1], bool))


class Reader(SingleFileReader):
    kind = "cprofile"
    version = "1"

    @staticmethod
    def sniff(path: str) -> bool:
        """A file holding a marshalled dict whose first key is a ``(file, line, function)`` tuple."""
        data = file_head(path, _HEAD)
        return data is not None and _is_func(head_key(data))

    def read(self, path: str) -> ProfileRows:
        path = os.fspath(path)
        try:
            with open(path, "rb") as fh:
                if not os.fstat(fh.fileno()).st_size:
                    raise ReaderError(path, "an empty file")
                stats = load(fh)
        except OSError as exc:
            raise ReaderError(path, exc.strerror or str(exc)) from None
        except LimitError as exc:
            raise ReaderError(path, str(exc)) from None
        except MarshalError as exc:
            raise ReaderError(path, f"not a pstats file: {exc}") from None
        if not isinstance(stats, dict):
            raise ReaderError(path, f"not a pstats file: it holds a {type(stats).__name__}, not a dict")
        if not stats:
            raise ReaderError(path, "the pstats file holds no functions")
        return _rows(stats, path, self)


def _check(stats: dict, path: str) -> None:
    for func, entry in stats.items():
        if not _is_func(func):
            raise ReaderError(path, f"a key {shown(func)} is not a (file, line, function) tuple")
        if not (isinstance(entry, tuple) and len(entry) == 5 and all(_is_number(v) for v in entry[:4])
                and isinstance(entry[4], dict)):
            raise ReaderError(path, f"{shown(func)}: {shown(entry)} is not (cc, nc, tt, ct, callers)")
        for caller, call in entry[4].items():
            if not _is_func(caller):
                raise ReaderError(path, f"{shown(func)}: a caller {shown(caller)} is not a "
                                        "(file, line, function) tuple")
            if not (_is_number(call) or (isinstance(call, tuple) and len(call) == 4 and all(map(_is_number, call)))):
                raise ReaderError(path, f"{shown(func)}: the calls from {shown(caller)} are {shown(call)}, "
                                        "not (nc, cc, tt, ct) or a count")


def _frame(func: tuple) -> tuple[str, str | None, int | None]:
    file, line, name = func
    if file == "~":  # a built-in: pstats' placeholder for "no file"
        return name, None, None
    return name, file, line if 0 <= line <= INT64_MAX else None


def _rows(stats: dict, path: str, reader: Reader) -> ProfileRows:
    _check(stats, path)
    funcs = list(stats)
    index = {f: i for i, f in enumerate(funcs)}
    edges = []
    for func, entry in stats.items():
        for caller, call in entry[4].items():
            if caller not in index:
                index[caller] = len(funcs)
                funcs.append(caller)
            edges.append((index[caller], index[func], call[3] if isinstance(call, tuple) else call))
    n, measured = len(funcs), len(stats)
    cols = np.full((n, 4), np.nan)
    # ints of at most 120 bits (pstats_marshal.MAX_LONG_DIGITS) always fit a float
    cols[:measured] = np.array([(e[2], e[3], e[0], e[1]) for e in stats.values()], np.float64)
    tree = call_graph.spanning_tree(n, edges, cols[:, 1].tolist())
    call_graph.check_depth(tree, path)
    frames = [_frame(funcs[i]) for i in tree.order]
    table = pa.table({
        "local_id": pa.array(np.arange(n, dtype=np.int32)),
        "parent_local": pa.array(np.asarray(tree.parent_local, dtype=np.int32)),
        "name": [f[0] for f in frames],
        "type": ["function"] * n,
        "file": [f[1] for f in frames],
        "line": pa.array([f[2] for f in frames], pa.int64()),
        "end_line": pa.array([None] * n, pa.int64()),
        "module": pa.array([None] * n, pa.string()),
    }, schema=FRAME_SCHEMA)
    local = call_graph.local_ids(tree)[:measured]
    values = {"local_id": pa.array(local), "rank": pa.array(np.zeros(measured, np.int32)),
              "thread": pa.array(np.zeros(measured, np.int32))}
    for k, m in enumerate(METRICS):
        values[m.name] = pa.array(finite(cols[:measured, k]), pa.float64())
    labels = [f"{f[2]} ({f[0]}:{f[1]})" for f in funcs]
    meta = call_graph.metadata(tree, labels)
    totals = np.nansum(np.where(np.isinf(cols[:measured]), np.nan, cols[:measured]), axis=0)
    meta["pstats"] = {"functions": measured, "total_time": _json_number(totals[0]),
                      "primitive_calls": _json_number(totals[2]), "total_calls": _json_number(totals[3])}
    return ProfileRows(format=reader.kind, source=path, frames=check_frames(path, table), values=pa.table(values),
                       metrics=list(METRICS), metadata=meta, reader_version=reader.version)


def _json_number(x: float):
    """``x`` for strict JSON metadata: an integral count as int, a non-finite value as None."""
    if not math.isfinite(x):
        return None
    return int(x) if float(x).is_integer() and abs(x) < 2**53 else float(x)
