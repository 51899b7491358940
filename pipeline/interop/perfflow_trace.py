"""Hatchet's view of a PerfFlowAspect trace: ``GraphFrame.from_perfflowaspect(filename, scan_cpu_mem=False)``.

Hatchet's reader (llnl-hatchet 2026.2.0, ``readers/perfflowaspect_reader.py``) keeps one node per event -- a
trace view, where perflake's reader (perflake.readers.perfflowaspect, what ``ingest`` stores) merges the calls
of a call path.  For scripts written for Hatchet this module gives Hatchet's view, with its rules:

* the file is parsed as the reader parses it (an array left open is closed); when its first event is a
  ``B``, every ``E`` closes the latest open ``B`` (of any thread, as Hatchet pairs them) into a complete event,
  the events in the order of their ``E``, counters (``C``) kept, everything else dropped;
* each complete event, in file order, is a node with the frame ``{"name", "type": "function", "ts", "dur"}``
  (seconds: the file's microseconds times 1e-6) and adopts as its children the earlier top-level events it
  strictly contains (starts after it and ends before it), most recent first, as Hatchet adds them;
* ``scan_cpu_mem=True``: a counter event's ``memory_usage``/``cpu_usage`` (when either is not 0) go to the
  event starting at the same ``ts`` (``usage_memory``/``usage_cpu`` in its frame and row, 0 without one); a file
  without any counter raises ValueError("No statistics in the provided file!"), as Hatchet;
* one row per node: ``name``, ``ts``, ``dur``, ``pid``, ``tid``, ``ph`` (and the usage columns); metadata =
  the object's ``otherData``.

Differences, on purpose: an event adopts every earlier top-level event it contains (Hatchet pops the most
recent top-level event for each contained one it finds, which is the same one whenever the contained events
are the most recent, as in a trace written at each call's end); ``exc_metrics`` are the numeric columns
(Hatchet lists every column, ``name`` and ``ph`` too) and ``default_metric`` is ``dur`` (Hatchet's is
``time``, which this view has not); a malformed trace is a ReaderError naming the file (Hatchet: ValueError
or KeyError).
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd

from perflake.errors import ReaderError, UsageError
from perflake.readers.perfflowaspect import US, load_trace


class NoStatistics(UsageError, ValueError):
    """``scan_cpu_mem=True`` on a trace without counter events (Hatchet's ValueError)."""


def _hatchet_order(path: str, events: list) -> list[dict]:
    """Hatchet's compaction of a verbose (``B``/``E``) trace; other traces as they are."""
    for e in events:
        if not isinstance(e, dict):
            raise ReaderError(path, f"an event is {e!r:.60}, not an object")
    if not events or events[0].get("ph") != "B":
        return events
    stack, out = [], []
    for e in events:
        ph = e.get("ph")
        if ph == "B":
            stack.append(dict(e))
        elif ph == "E" and stack:
            begun = stack.pop()
            out.append({**begun, "dur": _num(path, e, "ts") - _num(path, begun, "ts"), "ph": "X"})
        elif ph == "C":
            out.append(e)
    return out


def _num(path: str, e: dict, key: str) -> float:
    v = e.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(float(v)):
        raise ReaderError(path, f"event {e.get('name')!r:.60}: {key!r} is {v!r:.60}, not a number")
    return float(v)


def from_perfflowaspect(filename, scan_cpu_mem: bool = False, *, frame_class):
    """The trace as Hatchet's ``from_perfflowaspect`` shows it (module docstring)."""
    from perflake.frame.graph import Frame, Graph, Node

    path = os.fspath(filename)
    trace = load_trace(path)
    events = _hatchet_order(path, trace.events)
    usage = {}
    if scan_cpu_mem:
        counters = [e for e in events if e.get("ph") == "C"]
        if not counters:
            raise NoStatistics("No statistics in the provided file!")
        for e in counters:
            args = e.get("args") if isinstance(e.get("args"), dict) else {}
            memory, cpu = args.get("memory_usage", 0), args.get("cpu_usage", 0.0)
            if memory != 0 or cpu != 0.0:
                usage[_num(path, e, "ts") * US] = (memory, cpu)
    roots, records = [], []
    for e in events:
        if e.get("ph") == "C":
            continue
        name = e.get("name")
        if not isinstance(name, str):
            raise ReaderError(path, f"an event's name is {name!r:.60}, not a string")
        ts, dur = _num(path, e, "ts") * US, _num(path, e, "dur") * US
        attrs = {"name": name, "type": "function", "ts": ts, "dur": dur}
        if scan_cpu_mem:
            attrs["usage_memory"], attrs["usage_cpu"] = usage.get(ts, (0, 0.0))
        node = Node(Frame(attrs))
        inside = [r for r in roots if ts < r.frame["ts"] and ts + dur > r.frame["ts"] + r.frame["dur"]]
        for child in reversed(inside):
            node.add_child(child)
            child.add_parent(node)
        roots = [r for r in roots if not any(r is c for c in inside)] + [node]
        if "pid" not in e or "tid" not in e:
            raise ReaderError(path, f"event {name!r:.60} has no 'pid' or 'tid'")
        records.append({"node": node, "name": name, "ts": ts, "dur": dur, "pid": e["pid"], "tid": e["tid"],
                        "ph": e.get("ph"), **({"usage_memory": attrs["usage_memory"], "usage_cpu": attrs["usage_cpu"]}
                                              if scan_cpu_mem else {})})
    if not records:
        raise ReaderError(path, "no complete events in the trace")
    graph = Graph(roots)
    df = pd.DataFrame(records)
    for c in ("name", "ph"):  # Hatchet's object columns (not pandas 3's string dtype)
        df[c] = df[c].astype(object)
    df = df.set_index("node")
    df = df.iloc[np.argsort([n._hatchet_nid for n in df.index], kind="stable")]
    numeric = [c for c in df.columns if c not in ("name", "ph") and pd.api.types.is_numeric_dtype(df[c])]
    return frame_class(graph, df, exc_metrics=numeric, inc_metrics=[], default_metric="dur",
                       metadata=dict(trace.other))
