"""Writer of PerfFlowAspect traces (``perfflow.<host>.<pid>.pfw``) from a deterministic random call tree.

PerfFlowAspect writes Chrome Trace Event JSON, one event per line followed by a comma, and leaves the array
open; three layouts are written here:

* ``"verbose"``: a ``B`` event when a function is entered and an ``E`` when it returns (its default);
* ``"compact"``: one ``X`` event (``ts`` and ``dur``) per call, written when the call returns (children
  before their caller), and with ``counters=True`` a ``C`` event (``args``: ``cpu_usage`` percent and
  ``memory_usage`` KiB) at the start of each call, as its cpu/memory sampling writes them;
* ``"object"``: the compact events in a closed ``{"traceEvents": [...], "displayTimeUnit": "us",
  "otherData": {...}}`` object.

Times are integer microseconds.  :func:`make_calls` returns the calls themselves (the ground truth the reader
tests compare with); :func:`write_perfflowaspect_trace` writes them.
"""

from __future__ import annotations

import json
import pathlib
import random
from dataclasses import dataclass

NAMES = ["main", "solve", "advance", "exchange_halo", "compute_flux", "MPI_Allreduce", "write_output", "io_sync"]


@dataclass(frozen=True)
class Call:
    path: tuple[str, ...]  # names from the root
    pid: int
    tid: int
    ts: int  # start, microseconds
    dur: int  # microseconds
    cat: str


def make_calls(seed: int = 0, *, processes: int = 1, threads: int = 1, depth: int = 3, fanout: int = 3,
               repeats: int = 2) -> list[Call]:
    """Every call of a random program run by each (pid, tid): ``main`` calls ``repeats`` times a random subtree
    of at most ``depth`` levels below it (names repeat under different callers, and a function may be called
    several times by the same caller).  Calls of one thread are sequential and properly nested."""
    rng = random.Random(seed)
    calls: list[Call] = []
    for p in range(processes):
        pid = 4000 + 17 * p + rng.randrange(10)
        for t in range(threads):
            tid = pid if t == 0 else pid + 100 + t
            clock = [1_000_000 * (1 + p) + 1000 * t]

            def call(path, level):
                start = clock[0]
                clock[0] += rng.randrange(1, 20)
                if level < depth:
                    for _ in range(rng.randrange(0 if level else 1, fanout + 1)):
                        call((*path, rng.choice(NAMES[1:])), level + 1)
                clock[0] += rng.randrange(5, 500)
                calls.append(Call(path, pid, tid, start, clock[0] - start, "app" if len(path) < 3 else "lib"))

            for _ in range(repeats):
                call(("main",), 0)
    return calls


def events(calls: list[Call], layout: str = "compact", *, counters: bool = False, seed: int = 0) -> list[dict]:
    """The calls as trace events, in the order PerfFlowAspect writes them."""
    rng = random.Random(seed + 1)
    if layout == "verbose":
        marks = []
        for c in calls:
            base = {"name": c.path[-1], "cat": c.cat, "pid": c.pid, "tid": c.tid}
            marks.append((c.ts, 1, -c.dur, {**base, "ph": "B", "ts": c.ts}))  # a call may begin when the
            marks.append((c.ts + c.dur, 0, c.dur, {**base, "ph": "E", "ts": c.ts + c.dur}))  # previous ends
        return [m[3] for m in sorted(marks, key=lambda m: m[:3])]
    out = []
    for c in calls:  # already in end order per thread (a call is recorded when it returns)
        if counters:
            out.append({"name": "cpu_mem_usage", "ph": "C", "ts": c.ts, "pid": c.pid, "tid": c.tid,
                        "args": {"cpu_usage": round(rng.uniform(1.0, 99.0), 2),
                                 "memory_usage": rng.randrange(1, 4) * 1024 + rng.randrange(512)}})
        out.append({"name": c.path[-1], "cat": c.cat, "pid": c.pid, "tid": c.tid, "ph": "X", "ts": c.ts,
                    "dur": c.dur})
    return out


def write_perfflowaspect_trace(path, calls: list[Call] | None = None, *, layout: str = "compact",
                               counters: bool = False, seed: int = 0, **shape) -> pathlib.Path:
    """Write a trace of ``calls`` (default: ``make_calls(seed, **shape)``) at ``path``; the path."""
    path = pathlib.Path(path)
    calls = make_calls(seed, **shape) if calls is None else calls
    evs = events(calls, layout, counters=counters, seed=seed)
    if layout == "object":
        doc = {"traceEvents": evs, "displayTimeUnit": "us",
               "otherData": {"hostname": "node17", "perfflow.version": "0.0.1", "seed": seed}}
        path.write_text(json.dumps(doc, indent=1))
    else:
        path.write_text("[\n" + "".join(json.dumps(e) + ",\n" for e in evs))
    return path
