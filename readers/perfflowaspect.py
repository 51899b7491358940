"""PerfFlowAspect traces (``perfflow.<host>.<pid>.pfw``): the Chrome Trace Event format PerfFlowAspect writes.

The file is a JSON array of events, or an object whose ``traceEvents`` holds them (with ``displayTimeUnit`` and
``otherData``).  PerfFlowAspect appends one event per line, each followed by a comma, and never closes the
array: a file that is not valid JSON is read again with its trailing comma dropped and the closing ``]`` (and
``}``) added, as Hatchet does.  Events used (Chrome's meanings; ``ts`` and ``dur`` in microseconds):

* ``"ph": "X"``: a complete event (``name``, ``ts``, ``dur``, ``pid``, ``tid``, ``cat``);
* ``"B"`` / ``"E"``: the begin and end of an event (PerfFlowAspect's verbose format); an ``E`` ends the latest
  open ``B`` of its ``pid``/``tid`` (Chrome's rule); a ``B`` never ended is dropped and counted in the metadata
  (``perfflowaspect.unclosed``), an ``E`` without a ``B`` is ignored;
* ``"C"`` (counters: PerfFlowAspect's ``cpu_usage``/``memory_usage``) and every other phase (instant, async,
  metadata) make no node; ``GraphFrame.from_perfflowaspect`` (perflake.interop.perfflow_trace) shows counters.

The profile: per location, events nest by time -- an event is the child of the innermost open event that
contains it (``ts`` to ``ts + dur``; sorted by start, longer first) -- and the call paths of names are the
frames (type ``function``, module = the event's ``cat`` when it has one).  Metrics: ``time (inc)`` (seconds: the
durations of a call path's events summed; ``time`` is derived by normalisation) and ``count`` (its number of
events).  Locations: each ``pid`` is a rank and each ``tid`` of it a thread, numbered from 0 in sorted order
(the pairs are in ``perfflowaspect.locations``).  ``otherData`` (JSON scalars) and ``displayTimeUnit`` are run
metadata.  Hatchet's own reader keeps one node per event (its ``ts``/``dur`` in the frame):
``GraphFrame.from_perfflowaspect`` gives that view.
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from perflake.errors import ReaderError
from perflake.readers.base import (
    FRAME_SCHEMA,
    INCLUSIVE,
    INT32_MAX,
    OTHER,
    Metric,
    ProfileRows,
    check_frames,
    check_text,
    shown,
)

_HEAD = 1 << 16
_EVENT_KEYS = re.compile(rb'"ph"\s*:')
METRICS = [Metric("time (inc)", INCLUSIVE, "s", "time"), Metric("count", OTHER, "count")]
US = 1e-6  # Chrome trace timestamps and durations are microseconds


@dataclass
class Trace:
    """A parsed trace file: its events (dicts, in file order), ``displayTimeUnit`` and ``otherData``."""

    events: list
    unit: str | None = None
    other: dict = field(default_factory=dict)


def _repaired(text: str) -> str:
    """PerfFlowAspect's unterminated array (or object): trailing commas dropped, ``]`` / ``}`` added."""
    text = re.sub(r"[\s,]+\Z", "", text)
    if text.lstrip().startswith("{"):
        return text + ("" if text.endswith("]") else "]") + "}"
    return ("" if text.lstrip().startswith("[") else "[") + text + "]"


def load_trace(path: str) -> Trace:
    """The file's events; ReaderError when it is not a (repairable) trace."""
    try:
        with open(path, "rb") as fh:
            text = fh.read().decode("utf-8-sig")
    except OSError as exc:
        raise ReaderError(path, exc.strerror or str(exc)) from None
    except UnicodeDecodeError as exc:
        raise ReaderError(path, f"not UTF-8 text (byte {exc.start})") from None
    if not text.strip():
        raise ReaderError(path, "an empty file")
    doc = None
    for attempt in (text, _repaired(text)):
        try:
            doc = json.loads(attempt)
            break
        except RecursionError:
            raise ReaderError(path, "JSON nested too deeply for a trace") from None
        except ValueError as exc:
            problem = str(exc)[:120]
    if doc is None:
        raise ReaderError(path, f"not JSON, nor a PerfFlowAspect array left open: {problem}")
    if isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list):
        other = doc.get("otherData")
        unit = doc.get("displayTimeUnit")
        return Trace(doc["traceEvents"], unit if isinstance(unit, str) else None,
                     other if isinstance(other, dict) else {})
    if isinstance(doc, list):
        return Trace(doc)
    raise ReaderError(path, "a trace is a JSON array of events or an object with a 'traceEvents' array")


def _number(path: str, event: dict, key: str) -> float:
    v = event.get(key)
    try:
        x = float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else math.nan
    except OverflowError:  # an integer beyond any float
        x = math.nan
    if not math.isfinite(x):
        raise ReaderError(path, f"event {shown(event.get('name'))}: {key!r} is {shown(v)}, not a finite number")
    return x


def _thread_key(path: str, event: dict, key: str):
    v = event.get(key, 0)
    if isinstance(v, bool) or not isinstance(v, (int, str)):
        raise ReaderError(path, f"event {shown(event.get('name'))}: {key!r} is {shown(v)}, not an integer or a name")
    return v


def complete_events(path: str, trace: Trace) -> tuple[list[tuple], int]:
    """((name, cat, pid, tid, ts, dur) of every complete event in file order -- an ``X``, or a ``B`` with its
    ``E`` at the ``E``'s position -- , number of ``B`` never ended)."""
    out, open_at = [], {}
    for event in trace.events:
        if not isinstance(event, dict):
            raise ReaderError(path, f"an event is {shown(event)}, not an object")
        ph = event.get("ph")
        if ph not in ("X", "B", "E"):
            continue
        where = (_thread_key(path, event, "pid"), _thread_key(path, event, "tid"))
        ts = _number(path, event, "ts")
        if ph == "E":
            stack = open_at.get(where)
            if stack:
                name, cat, start = stack.pop()
                if ts < start:
                    raise ReaderError(path, f"event {shown(name)} ends at {ts} before it begins ({start})")
                out.append((name, cat, *where, start, ts - start))
            continue
        name = event.get("name")
        if not isinstance(name, str):
            raise ReaderError(path, f"an event's name is {shown(name)}, not a string")
        cat = event.get("cat") if isinstance(event.get("cat"), str) and event.get("cat") else None
        if ph == "B":
            open_at.setdefault(where, []).append((name, cat, ts))
            continue
        dur = _number(path, event, "dur")
        if dur < 0:
            raise ReaderError(path, f"event {shown(name)} has a negative duration {dur}")
        out.append((name, cat, *where, ts, dur))
    return out, sum(len(s) for s in open_at.values())


def _sort_key(v):
    return (isinstance(v, str), v)


class Reader:
    kind = "perfflowaspect"
    version = "1"

    @staticmethod
    def sniff(path: str) -> bool:
        """A ``.pfw`` file, or a ``.json`` file, holding a JSON array of events with a ``ph`` key (in its first
        64 KiB) or an object with ``traceEvents``."""
        name = os.fspath(path).lower()
        if not name.endswith((".pfw", ".json")) or not os.path.isfile(path):
            return False
        try:
            with open(path, "rb") as fh:
                head = fh.read(_HEAD).lstrip(b"\xef\xbb\xbf \t\r\n")
        except OSError:
            return False
        if head.startswith(b"["):
            return head[1:].lstrip().startswith(b"{") and bool(_EVENT_KEYS.search(head))
        return head.startswith(b"{") and b'"traceEvents"' in head and bool(_EVENT_KEYS.search(head))

    @staticmethod
    def files(path: str) -> list[str]:
        return [os.fspath(path)]

    def read(self, path: str) -> ProfileRows:
        path = os.fspath(path)
        trace = load_trace(path)
        events, unclosed = complete_events(path, trace)
        if not events:
            raise ReaderError(path, "no complete events ('X', or 'B' with its 'E') in the trace")
        pids = sorted({e[2] for e in events}, key=_sort_key)
        if len(pids) > INT32_MAX:
            raise ReaderError(path, "too many processes")
        rank_of = {p: i for i, p in enumerate(pids)}
        tids = sorted({(e[2], e[3]) for e in events}, key=lambda pt: (_sort_key(pt[0]), _sort_key(pt[1])))
        thread_of, seen = {}, {}
        for pid, tid in tids:
            thread_of[(pid, tid)] = seen[pid] = seen.get(pid, -1) + 1
        frames, local, rank, thread, inc, count = _nest(events, rank_of, thread_of)
        metadata = {k: v for k, v in trace.other.items() if isinstance(k, str) and _scalar(v)}
        if trace.unit:
            metadata["displayTimeUnit"] = trace.unit
        metadata["perfflowaspect.locations"] = [{"pid": p, "tid": t, "rank": rank_of[p], "thread": thread_of[(p, t)]}
                                                for p, t in tids]
        if unclosed:
            metadata["perfflowaspect.unclosed"] = unclosed
        check_text(path, metadata)
        n = len(frames)
        table = pa.table({"local_id": pa.array(np.arange(n, dtype=np.int32)),
                          "parent_local": pa.array(np.asarray([f[0] for f in frames], np.int32)),
                          "name": [f[1] for f in frames], "type": ["function"] * n,
                          "file": pa.nulls(n, pa.string()), "line": pa.nulls(n, pa.int64()),
                          "end_line": pa.nulls(n, pa.int64()), "module": [f[2] for f in frames]}, schema=FRAME_SCHEMA)
        values = pa.table({"local_id": pa.array(np.asarray(local, np.int32)),
                           "rank": pa.array(np.asarray(rank, np.int32)),
                           "thread": pa.array(np.asarray(thread, np.int32)),
                           "time (inc)": pa.array(np.asarray(inc, np.float64) * US),
                           "count": pa.array(np.asarray(count, np.float64))})
        return ProfileRows(format=self.kind, source=path, frames=check_frames(path, table), values=values,
                           metrics=list(METRICS), metadata=metadata, reader_version=self.version)


def _nest(events, rank_of, thread_of):
    """Frames (parent, name, module) of the call paths, and one row per (frame, rank, thread): the summed
    durations and the number of events (a reader gives each node one row per location)."""
    frame_of: dict[tuple, int] = {}
    frames: list[tuple] = []
    rows: dict[tuple, list] = {}
    order = sorted(range(len(events)), key=lambda i: (rank_of[events[i][2]], thread_of[events[i][2:4]],
                                                      events[i][4], -events[i][5], i))
    stack: list[tuple[float, int]] = []  # (end, frame) of the open events of the current location
    where = None
    for i in order:
        name, cat, pid, tid, ts, dur = events[i]
        if (pid, tid) != where:
            where, stack = (pid, tid), []
        while stack and (ts >= stack[-1][0] or ts + dur > stack[-1][0]):  # not inside the innermost open event
            stack.pop()
        parent = stack[-1][1] if stack else -1
        key = (parent, name, cat)
        fid = frame_of.get(key)
        if fid is None:
            fid = frame_of[key] = len(frames)
            frames.append(key)
        stack.append((ts + dur, fid))
        row = rows.setdefault((fid, rank_of[pid], thread_of[(pid, tid)]), [0.0, 0])
        row[0] += dur
        row[1] += 1
    keys = list(rows)
    return (frames, [k[0] for k in keys], [k[1] for k in keys], [k[2] for k in keys],
            [rows[k][0] for k in keys], [rows[k][1] for k in keys])


def _scalar(v) -> bool:
    return isinstance(v, (str, bool, int)) or (isinstance(v, float) and math.isfinite(v))
