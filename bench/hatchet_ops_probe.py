"""Hatchet side of bench/bench_ops.py -- run with the *bench* venv: .bench-venv/bin/python.

    .bench-venv/bin/python bench/hatchet_ops_probe.py RUN --threshold T --inc-threshold X --dump OUT.npz
                                                      [--format tau|caliper]
                                                      [--ops uic,filter,query-object,query-string]
                                                      [--max-load 0.7] [--poll 10] [--max-wait 600]
                                                      [--op-limit SECONDS]

Loads the run once (timed for the record, not a target) -- ``--format tau`` (default):
``hatchet.GraphFrame.from_tau(RUN)`` on a TAU run directory; ``--format caliper``:
``hatchet.GraphFrame.from_caliper(RUN, node_ordering=False)`` on a Caliper json-split file (the default
``node_ordering=True`` raises KeyError on files without a ``Node order`` column) -- then times each operation
once, in this order, each after waiting until the 1-minute load average is below
``--max-load`` (polled every ``--poll`` s, at most ``--max-wait`` s, then measured anyway):

==============  ==================================================================================================
uic             ``g.update_inclusive_columns()`` on ``g = GraphFrame(gf.graph, gf.dataframe.copy(), ...)`` (a deep
                copy of the dataframe, made before the timer: the call works in place and must not change ``gf``)
filter          ``gf.filter(lambda x: x["time"] > T, squash=True)`` (Hatchet's defaults otherwise: row-wise
                callable, ``num_procs=mp.cpu_count()`` worker processes, inclusive columns updated by squash)
query-object    ``gf.filter(Q, squash=False, multi_index_mode="any")`` with the object-dialect list
                ``[".", ("*", {"time (inc)": "> X"}), {"name": "MPI_.*"}]``, and separately (its own timer)
                ``gf.query_engine.apply(ObjectQuery(Q, "any"), gf.graph, gf.dataframe)``: the matched nodes only
query-string    the same two calls with the string dialect
                ``MATCH (".")->("*", b)->(".", c) WHERE b."time (inc)" > X AND c."name" =~ "MPI_.*"`` (the first node
                unnamed: Hatchet 2026.2.0 raises SyntaxError for a named node without a WHERE condition, e.g.
                ``(".", a)``; recorded as ``string_form_rejected`` in the RESULT)
==============  ==================================================================================================

``--op-limit`` (default: none) stops an operation that runs longer (SIGALRM; recorded as ``stopped``, no result
dumped for it); the worker processes of a stopped ``filter`` are terminated, and the next operation runs.

Outside the timers, the results are written to OUT.npz for the correctness check (call-path keys: frame names
root first, joined by ``\\x1f``; ``paths`` holds them, the ``*_pidx`` arrays index into it):

* ``uic_pidx``, ``uic_rank``, ``uic_inc``: every (call path, rank) row's ``time (inc)`` after the update;
* ``filter_nodes_pidx``: the call paths of the squashed graph; ``filter_r0_pidx``, ``filter_r0_time``,
  ``filter_r0_inc``: its rank-0 rows (``time``, ``time (inc)``);
* ``<op>_filter_pidx`` / ``<op>_engine_pidx`` for the two queries: the matched call paths (original graph).

The last stdout line is ``RESULT {json}`` (timings, loads, row counts).  Only the public API is used.
"""

import gc
import json
import os
import resource
import signal
import sys
import time

SEP = "\x1f"
OPS = ("uic", "filter", "query-object", "query-string")
FORMATS = ("tau", "caliper")

t_import = time.perf_counter()
import hatchet  # noqa: E402
from hatchet.query import ObjectQuery, parse_string_dialect  # noqa: E402

t_import = time.perf_counter() - t_import


def log(msg: str) -> None:
    print(f"[hatchet-ops] {msg}", file=sys.stderr, flush=True)


def parse_args(argv):
    a = {"run": None, "threshold": None, "inc_threshold": None, "dump": None, "ops": list(OPS), "max_load": 0.7,
         "poll": 10.0, "max_wait": 600.0, "op_limit": None, "format": "tau"}
    it = iter(argv[1:])
    for arg in it:
        if arg == "--threshold":
            a["threshold"] = float(next(it))
        elif arg == "--inc-threshold":
            a["inc_threshold"] = float(next(it))
        elif arg == "--dump":
            a["dump"] = next(it)
        elif arg == "--ops":
            a["ops"] = [o for o in next(it).split(",") if o]
        elif arg == "--max-load":
            a["max_load"] = float(next(it))
        elif arg == "--poll":
            a["poll"] = float(next(it))
        elif arg == "--max-wait":
            a["max_wait"] = float(next(it))
        elif arg == "--op-limit":
            a["op_limit"] = float(next(it))
        elif arg == "--format":
            a["format"] = next(it)
        elif a["run"] is None:
            a["run"] = arg
        else:
            raise SystemExit(f"unexpected argument {arg!r}")
    if a["run"] is None or a["threshold"] is None or a["inc_threshold"] is None or a["dump"] is None:
        raise SystemExit("usage: hatchet_ops_probe.py RUN --threshold T --inc-threshold X --dump OUT.npz")
    if a["format"] not in FORMATS:
        raise SystemExit(f"unknown --format {a['format']!r}; known: {', '.join(FORMATS)}")
    bad = [o for o in a["ops"] if o not in OPS]
    if bad:
        raise SystemExit(f"unknown op(s) {bad}; known: {', '.join(OPS)}")
    return a


def num(x: float) -> str:
    """A threshold as both dialects read it: a whole number, or a positional decimal (never 1e-05 notation) that
    parses back to the same float; the same text as bench_ops.num."""
    from decimal import Decimal

    x = float(x)
    return str(int(x)) if x.is_integer() else format(Decimal(repr(x)), "f")


def queries(inc_threshold: float) -> dict:
    x = num(inc_threshold)
    return {"query-object": [".", ("*", {"time (inc)": f"> {x}"}), {"name": "MPI_.*"}],
            "query-string": f'MATCH (".")->("*", b)->(".", c) WHERE b."time (inc)" > {x} AND c."name" =~ "MPI_.*"'}


def string_form_rejected(inc_threshold: float) -> str | None:
    """Whether Hatchet parses the string query with a named, unconditioned first node (the form of the issue)."""
    q = (f'MATCH (".", a)->("*", b)->(".", c) WHERE b."time (inc)" > {num(inc_threshold)} '
         'AND c."name" =~ "MPI_.*"')
    try:
        parse_string_dialect(q, "any")
    except Exception as exc:  # noqa: BLE001 - recorded, not fatal
        return f"{type(exc).__name__}: {str(exc).strip().splitlines()[-1] if str(exc).strip() else ''}"
    return None


def wait_for_load(max_load: float, poll: float, max_wait: float) -> dict:
    """Sleep until the 1-minute load average is below max_load (at most max_wait seconds)."""
    t = time.perf_counter()
    first = os.getloadavg()[0]
    while True:
        load = os.getloadavg()
        waited = time.perf_counter() - t
        if load[0] < max_load:
            return {"load": list(load), "load_first": first, "waited_s": waited, "load_ok": True}
        if waited >= max_wait:
            log(f"load {load[0]:.2f} still >= {max_load} after {waited:.0f} s: measuring anyway")
            return {"load": list(load), "load_first": first, "waited_s": waited, "load_ok": False}
        time.sleep(poll)


class Stopped(Exception):
    """An operation passed --op-limit."""


def _alarm(_sig, _frame):
    raise Stopped()


def stop_children() -> int:
    """Terminate the worker processes a stopped call left behind (Hatchet's filter starts one per CPU with the
    ``multiprocess`` package, the dill-based fork of ``multiprocessing``, and waits for them; non-daemon, they
    would block this process's exit, stuck writing their results into a queue nobody reads)."""
    import importlib

    kids = []
    for mod in ("multiprocess", "multiprocessing"):
        try:
            kids += importlib.import_module(mod).active_children()
        except ImportError:
            pass
    for p in kids:
        p.terminate()
    for p in kids:
        p.join(10)
        if p.is_alive():
            p.kill()
            p.join(10)
    return len(kids)


def timed(fn, limit):
    """(seconds, result or None, stopped?) of one call, stopped past `limit` seconds."""
    if limit:
        signal.signal(signal.SIGALRM, _alarm)
        signal.setitimer(signal.ITIMER_REAL, limit)
    t = time.perf_counter()
    try:
        out = fn()
        return time.perf_counter() - t, out, False
    except Stopped:
        s = time.perf_counter() - t
        n = stop_children()
        if n:
            log(f"terminated {n} worker process(es) of the stopped call")
        return s, None, True
    finally:
        if limit:
            signal.setitimer(signal.ITIMER_REAL, 0)


class Paths:
    """Call-path keys of nodes (per graph), interned into one list of unique keys."""

    def __init__(self):
        self.ids: dict = {}

    def of_graph(self, graph) -> dict:
        keys = {}
        stack = [(root, str(root.frame.get("name"))) for root in graph.roots]
        while stack:
            node, key = stack.pop()
            if node in keys:
                continue
            keys[node] = self.ids.setdefault(key, len(self.ids))
            stack.extend((c, key + SEP + str(c.frame.get("name"))) for c in node.children)
        return keys

    def array(self):
        import numpy as np

        out = np.empty(len(self.ids), dtype=object)
        for k, i in self.ids.items():
            out[i] = k
        return out.astype(str)


def rows_of(df, pid_of: dict):
    """(path id, rank) of every row of a (node, rank)-indexed dataframe."""
    import numpy as np

    idx = df.index
    lvl = idx.names.index("node")
    uniq, codes = idx.levels[lvl], np.asarray(idx.codes[lvl])
    pid = np.array([pid_of[n] for n in uniq], dtype=np.int64)
    rank = np.asarray(idx.get_level_values("rank"), dtype=np.int64)
    return pid[codes], rank


def main(argv) -> int:
    import numpy as np
    import pandas as pd

    a = parse_args(argv)
    info = {"import_s": t_import, "hatchet_version": getattr(hatchet, "__version__", None),
            "threshold": a["threshold"], "inc_threshold": a["inc_threshold"], "ops": {}}
    info["format"] = a["format"]
    t = time.perf_counter()
    if a["format"] == "caliper":
        info["loader"] = "GraphFrame.from_caliper(path, node_ordering=False)"
        gf = hatchet.GraphFrame.from_caliper(a["run"], node_ordering=False)
    else:
        info["loader"] = "GraphFrame.from_tau(run)"
        gf = hatchet.GraphFrame.from_tau(a["run"])
    info["load_s"] = time.perf_counter() - t
    info["rss_after_load_kib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    info["rows"] = len(gf.dataframe)
    info["nodes"] = len(gf.graph)
    info["index"] = [str(n) for n in gf.dataframe.index.names]
    info["exc_metrics"], info["inc_metrics"] = list(gf.exc_metrics), list(gf.inc_metrics)
    log(f"{info['loader']}: {info['load_s']:.1f} s, {info['rows']:,} rows, {info['nodes']:,} nodes")
    paths = Paths()
    orig = paths.of_graph(gf.graph)
    out = {}
    T, qs = a["threshold"], queries(a["inc_threshold"])
    info["queries"] = {k: (v if isinstance(v, str) else repr(v)) for k, v in qs.items()}
    info["string_form_rejected"] = string_form_rejected(a["inc_threshold"])

    def measure(label, fn):
        w = wait_for_load(a["max_load"], a["poll"], a["max_wait"])
        s, res, stopped = timed(fn, a["op_limit"])
        info["ops"][label] = {"s": s, "stopped": stopped, **w}
        log(f"{label}: {s:.3f} s{' (STOPPED at the limit)' if stopped else ''} (load before {w['load'][0]:.2f}, "
            f"waited {w['waited_s']:.0f} s)")
        return res, stopped

    for op in a["ops"]:
        if op == "uic":
            g = hatchet.GraphFrame(gf.graph, gf.dataframe.copy(), list(gf.exc_metrics), list(gf.inc_metrics),
                                   gf.default_metric, dict(gf.metadata or {}))
            _, stopped = measure("uic", g.update_inclusive_columns)
            if not stopped:
                pid, rank = rows_of(g.dataframe, orig)
                out.update(uic_pidx=pid, uic_rank=rank, uic_inc=g.dataframe["time (inc)"].to_numpy(np.float64))
            del g
        elif op == "filter":
            res, stopped = measure("filter", lambda: gf.filter(lambda x: x["time"] > T, squash=True))
            if not stopped:
                keys = paths.of_graph(res.graph)
                df = res.dataframe
                pid, rank = rows_of(df, keys)
                r0 = rank == 0
                out.update(filter_nodes_pidx=np.array(sorted(set(keys.values())), dtype=np.int64),
                           filter_r0_pidx=pid[r0], filter_r0_time=df["time"].to_numpy(np.float64)[r0],
                           filter_r0_inc=df["time (inc)"].to_numpy(np.float64)[r0])
                info["filter_rows"], info["filter_nodes"] = len(df), len(res.graph)
                info["filter_rows_passing"] = int((gf.dataframe["time"] > T).sum())
            del res
        else:
            q = qs[op]
            key = op.replace("-", "_")
            res, stopped = measure(f"{op} filter",
                                   lambda: gf.filter(q, squash=False, multi_index_mode="any"))
            if not stopped:
                nodes = pd.unique(res.dataframe.index.get_level_values("node"))
                out[f"{key}_filter_pidx"] = np.array(sorted(orig[n] for n in nodes), dtype=np.int64)
                info[f"{op} filter rows"] = len(res.dataframe)
            del res
            qobj = ObjectQuery(q, "any") if isinstance(q, list) else parse_string_dialect(q, "any")
            res, stopped = measure(f"{op} engine", lambda: gf.query_engine.apply(qobj, gf.graph, gf.dataframe))
            if not stopped:
                out[f"{key}_engine_pidx"] = np.array(sorted(orig[n] for n in res), dtype=np.int64)
            del res
        gc.collect()  # what a stopped call left behind
    info["rss_end_kib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    np.savez(a["dump"], paths=paths.array(), **out)
    info["dump"] = a["dump"]
    print("RESULT " + json.dumps(info), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
