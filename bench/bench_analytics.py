#!/usr/bin/env python3
"""Benchmarks of issue 5 (multi-run analytics): perflake vs Thicket/Hatchet, same run, same files.

Run with the project venv from the repository root (``make bench`` runs it through bench/run.sh, after
bench_ops.py)::

    .venv/bin/python bench/bench_analytics.py                  # full sizes (about an hour on 2 cores)
    .venv/bin/python bench/bench_analytics.py --quick          # smoke test: small sizes, RESULTS.md untouched
    .venv/bin/python bench/bench_analytics.py --skip-hatchet   # perflake only (recorded Thicket figures cited)
    .venv/bin/python bench/bench_analytics.py --only groupby   # one benchmark (repeatable): ingest-cali,
                                                               # groupby, ensemble, ingest-runs, imbalance,
                                                               # imbalance-runs (or the section names below)

Benchmarks (section names at full size):

1. ``ingest-cali-10000``: 10,000 RAJAPerf-sized Spot ``.cali`` files (bench/cali_writer.py
   ``write_cali_profiles(out, 10000, seed=1)``): perflake CLI cold ``perflake ingest DIR --lake L --quiet`` and
   in-process ``Lake(fresh).ingest([DIR])``; target < 60 s.  Thicket is not run on 10,000 files (~15 min or
   more): ``Thicket.from_caliperreader`` is measured on the first 1,000 of the same files (shared with 3) and
   multiplied by 10, labelled as an extrapolation (Thicket is linear at best);
2. ``groupby-1000-runs``: a lake of those first 1,000 files; perflake ``Lake(root).ensemble(group_by=
   ["meta:KEY"], metric="Avg time/rank", stats=("count", "mean", "std"))`` vs Thicket's ``tk.groupby(KEY)`` on
   a Thicket of the same files (its load is timed but excluded), for KEY = ``variant`` (4 groups) and
   ``machine_build`` (one value per run: 1,000 groups, Thicket's quadratic case); target < 0.5 s.  Also timed:
   Thicket's ``stats.mean``/``stats.std`` on every sub-thicket, what gives the numbers perflake returns
   (checked against perflake's, rtol 1e-9);
3. ``ensemble-10000-runs``: mean/std per call path over the 10,000-run lake of 1 (reused when this process did
   not make it): perflake ``Lake(root).ensemble(metric="Avg time/rank", stats=("mean", "std"))`` vs hand-written
   DuckDB GROUP BYs over the lake's metrics Parquet files (file list taken from the catalog, outside the timer);
   best of 5 each, interleaved; targets < 2 s and <= 1.5x the hand query;
4. ``ingest-100-runs-1000x16``: ``perflake.generators.WRITERS["caliper"](out, nodes=1000, ranks=16, runs=100,
   seed=1)`` (json-split); perflake in-process and CLI cold (target < 10 s) vs Thicket on the first 10 and on
   all 100 files, stopped at 300 s.  ``Thicket.from_caliper(files)`` fails on these files (``KeyError: ['Node
   order']``, formats.md 3.4; the failure is recorded), so Thicket is timed as
   ``Thicket.reader_dispatch(GraphFrame.from_caliper, False, True, False, files, None, node_ordering=False)``,
   i.e. exactly ``from_caliper`` with hatchet's ``node_ordering=False``;
5. ``imbalance-10000x1024``: one json-split run of 10,000 nodes x 1,024 ranks (``WRITERS["caliper"](out,
   nodes=10000, ranks=1024, runs=1, seed=1)``, shared with bench_readers.py).  Hatchet: ``GraphFrame.from_caliper
   (run, node_ordering=False)`` once (timed, not a target), then its documented recipe timed: ``gf2 = gf.copy();
   gf3 = gf.copy(); gf2.drop_index_levels(function=np.mean); gf3.drop_index_levels(function=np.max);
   gf2.dataframe["imbalance"] = gf3.dataframe["time"].div(gf2.dataframe["time"])``; its memory is the growth of
   the process's peak RSS during the recipe (VmHWM reset through /proc/self/clear_refs right before it).
   perflake: ``Lake(root).imbalance([run], metric="time")`` in a fresh process over a lake holding only that
   run (ingested beforehand, not timed), whole-process peak RSS by /usr/bin/time.  Targets: >= 5x faster,
   peak memory below Hatchet's.  Checked: max/mean per call path, rtol 1e-9.
6. ``imbalance-1000-runs-1000x16`` (issue 16, item 7): ``WRITERS["caliper"](out, nodes=1000, ranks=16,
   runs=1000, seed=1)`` (16 M metric rows) ingested by the CLI (timed: the lake's rank_summary is written then;
   its size and the CPU time of summarising every batch again are recorded), then the top 10 of
   ``Lake(root).imbalance(metric="time", top=10)`` in a fresh process, from the rank summary (the default) and
   from the metrics rows (``source="rows"``, the way before the summary); target < 1 s.  Checked: both give
   the same rows (run, call path), statistics (rtol 1e-12) and top ranks.  No reference tool.

Timing discipline (the machine has 2 cores and is shared): before every timed call the script (or the probe in
the bench venv) waits until the 1-minute load average is below ``--max-load`` (1.0), polling every 10 s, at most
300 s, and records the load it measured under.  perflake in-process: best and median of ``--reps`` (3; 5 for
the sub-second analytics).  Inputs are generated once under bench/work/ (git-ignored) and stamped.

The reference side runs in the bench venv: this same file with ``probe KIND`` as first argument (stdlib imports
only at module level).  The fresh-process perflake side of 5 runs this file with ``worker imbalance``.

When a target is not met, one extra (untimed) perflake call runs under cProfile; the profile goes to
bench/work/lakes/<section>/profile-*.txt and its top entries into the section.

Writes/replaces one marked section per benchmark in bench/RESULTS.md (``--quick`` only with
``--write-results``).  Exit status: 0 when everything ran and every check passed (or was skipped), 1 on a
MISMATCH, 2 when a step failed.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import shlex
import shutil
import signal
import statistics
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import common as C  # noqa: E402

SELF = pathlib.Path(__file__).resolve()
SEED = 1
SEP = "\x1f"  # joins the frame names of a call path, root first
SPOT_METRIC = "Avg time/rank"
GROUP_KEYS = ("variant", "machine_build")
SIZES = {
    "full": {"cali": 10000, "cali_sub": 1000, "runs": (1000, 16, 100), "thicket_runs": (10, 100), "imb": (10000, 1024),
             "imb_runs": (1000, 16, 1000)},
    "quick": {"cali": 400, "cali_sub": 40, "runs": (200, 4, 12), "thicket_runs": (3, 12), "imb": (1000, 64),
              "imb_runs": (100, 4, 20)},
}
KEYS = ("ingest-cali", "groupby", "ensemble", "ingest-runs", "imbalance", "imbalance-runs")
THICKET_RUNS_LIMIT_S = 300.0
PROBE_TIMEOUT_S = 3 * 3600
TARGET_INGEST_CALI_S, TARGET_INGEST_RUNS_S, TARGET_GROUPBY_S = 60.0, 10.0, 0.5
TARGET_ENSEMBLE_S, TARGET_ENSEMBLE_RATIO, TARGET_IMB_SPEEDUP = 2.0, 1.5, 5.0
TARGET_IMB_RUNS_S = 1.0


def section_names(size: dict) -> dict:
    nodes, ranks, runs = size["runs"]
    return {"ingest-cali": f"ingest-cali-{size['cali']}", "groupby": f"groupby-{size['cali_sub']}-runs",
            "ensemble": f"ensemble-{size['cali']}-runs", "ingest-runs": f"ingest-{runs}-runs-{nodes}x{ranks}",
            "imbalance": f"imbalance-{size['imb'][0]}x{size['imb'][1]}",
            "imbalance-runs": "imbalance-{2}-runs-{0}x{1}".format(*size["imb_runs"])}


# =============================================================================================================
# reference side: ``.bench-venv/bin/python bench/bench_analytics.py probe KIND ...`` (Hatchet / Thicket)
# =============================================================================================================
class _Timeout(BaseException):
    """signal.alarm fired (a BaseException: Thicket's reader wraps Exception into its own)."""


def _path_keys(graph) -> dict:
    """node object -> its call path, frame names root first joined by SEP (the first path of a DAG node)."""
    keys = {}
    stack = [(r, str(r.frame.get("name"))) for r in graph.roots]
    while stack:
        node, key = stack.pop()
        if node in keys:
            continue
        keys[node] = key
        stack.extend((c, key + SEP + str(c.frame.get("name"))) for c in node.children)
    return keys


def _probe_args(argv):
    p = argparse.ArgumentParser(prog="bench_analytics.py probe")
    p.add_argument("kind", choices=["thicket-cali", "thicket-runs", "hatchet-imbalance"])
    p.add_argument("inputs", nargs="*")
    p.add_argument("--paths-from")
    p.add_argument("--group-key", action="append", default=[])
    p.add_argument("--dump", required=True)
    p.add_argument("--limit", type=float, default=None, help="stop the load past this many seconds")
    p.add_argument("--reps", type=int, default=1)
    p.add_argument("--max-load", type=float, default=1.0)
    p.add_argument("--poll", type=float, default=10.0)
    p.add_argument("--max-wait", type=float, default=300.0)
    a = p.parse_args(argv)
    if a.paths_from:
        a.inputs += [ln.rstrip("\n") for ln in open(a.paths_from, encoding="utf-8") if ln.strip()]
    return a


def probe_main(argv) -> int:
    import warnings

    warnings.simplefilter("ignore")  # pandas FutureWarnings from hatchet/thicket internals, once per group
    a = _probe_args(argv)
    wait = dict(max_load=a.max_load, poll=a.poll, max_wait=a.max_wait)
    info = {"kind": a.kind, "n_inputs": len(a.inputs), "load_at_start": list(os.getloadavg())}
    t = time.perf_counter()
    import hatchet

    info["import_hatchet_s"] = time.perf_counter() - t
    if a.kind == "thicket-cali":
        info.update(_probe_thicket_cali(a, wait))
    elif a.kind == "thicket-runs":
        info.update(_probe_thicket_runs(a, hatchet))
    else:
        info.update(_probe_hatchet_imbalance(a, hatchet, wait))
    info["rss_hwm_end_kib"] = C.rss_status().get("VmHWM")
    print("RESULT " + json.dumps(info), flush=True)
    return 0


def _import_thicket(info):
    t = time.perf_counter()
    import thicket

    info["import_thicket_s"] = time.perf_counter() - t
    return thicket


def _probe_thicket_cali(a, wait) -> dict:
    """Thicket.from_caliperreader(files) (timed), per (file, path) values; then, per group key, tk.groupby(key)
    (timed) and stats.mean/std on every sub-thicket (timed), with the per (group, path) results."""
    import numpy as np

    info: dict = {}
    thicket = _import_thicket(info)
    t, c = time.perf_counter(), time.process_time()
    tk = thicket.Thicket.from_caliperreader(a.inputs)  # defaults, as in ingest-cali-1000-files
    info["load_s"], info["load_cpu_s"] = time.perf_counter() - t, time.process_time() - c
    info["loadavg_after_load"] = list(os.getloadavg())
    info["rss_after_load_kib"] = C.rss_status()["VmHWM"]
    index_of = {p: i for i, p in enumerate(a.inputs)}
    keys = _path_keys(tk.graph)
    df = tk.dataframe
    run_of = {prof: index_of.get(str(f), -1) for prof, f in tk.profile_mapping.items()}
    vals = df[SPOT_METRIC].to_numpy(dtype="float64", na_value=np.nan)
    nodes, profs = df.index.get_level_values("node"), df.index.get_level_values("profile")
    dump = {"v_run": np.array([run_of[p] for p in profs], np.int64), "v_path": np.array([keys[n] for n in nodes]),
            "v_value": vals}
    info["rows"] = len(df)
    groups = []
    g_key, g_val, g_path, g_mean, g_std = [], [], [], [], []
    for key in a.group_key:
        C.release_memory()
        w = C.wait_for_load(**wait, label=f"thicket groupby {key}")
        C.peak_rss_reset()
        rss0 = C.rss_status()["VmRSS"]
        t, c = time.perf_counter(), time.process_time()
        gb = tk.groupby(key)
        gb_s, gb_cpu = time.perf_counter() - t, time.process_time() - c
        after = list(os.getloadavg())
        hwm = C.rss_status()["VmHWM"]
        w2 = C.wait_for_load(**wait, label=f"thicket stats {key}")
        t = time.perf_counter()
        for sub in gb.values():
            thicket.stats.mean(sub, columns=[SPOT_METRIC])
            thicket.stats.std(sub, columns=[SPOT_METRIC])
        stats_s = time.perf_counter() - t
        for gv, sub in gb.items():
            sk = _path_keys(sub.graph)
            sf = sub.statsframe.dataframe
            for node, m, s in zip(sf.index, sf[f"{SPOT_METRIC}_mean"], sf[f"{SPOT_METRIC}_std"]):
                g_key.append(key)
                g_val.append(str(gv))
                g_path.append(sk[node])
                g_mean.append(float(m))
                g_std.append(float(s))
        groups.append({"key": key, "groups": len(gb), "groupby_s": gb_s, "groupby_cpu_s": gb_cpu,
                       "loadavg_after": after, "stats_s": stats_s, "load": w,
                       "load_stats": w2, "rss_before_kib": rss0, "rss_peak_kib": hwm})
        del gb
    info["groupbys"] = groups
    dump.update({"g_key": np.array(g_key, dtype=str), "g_val": np.array(g_val, dtype=str),
                 "g_path": np.array(g_path, dtype=str), "g_mean": np.array(g_mean), "g_std": np.array(g_std)})
    np.savez(a.dump, **dump)
    return info


def _probe_thicket_runs(a, hatchet) -> dict:
    """Thicket.from_caliper(files) (expected to fail on Node order: recorded), then the same reader with
    node_ordering=False through Thicket.reader_dispatch, stopped past --limit seconds; per (file, path, rank)
    time and time (inc) of the rows that have a value."""
    import numpy as np

    info: dict = {}
    thicket = _import_thicket(info)
    t = time.perf_counter()
    try:
        thicket.Thicket.from_caliper(a.inputs)
        info["default_call"] = {"ok": True, "s": time.perf_counter() - t}
    except Exception as exc:  # noqa: BLE001 - recorded
        cause = exc.__cause__
        info["default_call"] = {"ok": False, "s": time.perf_counter() - t,
                                "error": f"{type(exc).__name__}: {exc}"
                                         + (f" (from {type(cause).__name__}: {cause})" if cause else "")}

    def alarm(_sig, _frame):
        raise _Timeout()

    signal.signal(signal.SIGALRM, alarm)
    t, c = time.perf_counter(), time.process_time()
    if a.limit:
        signal.setitimer(signal.ITIMER_REAL, a.limit)
    try:
        tk = thicket.Thicket.reader_dispatch(hatchet.GraphFrame.from_caliper, False, True, False, a.inputs, None,
                                             node_ordering=False)
    except _Timeout:
        info.update({"timed_out": True, "limit_s": a.limit, "stopped_after_s": time.perf_counter() - t,
                     "cpu_at_stop_s": time.process_time() - c, "loadavg_at_stop": list(os.getloadavg()),
                     "rss_at_stop_kib": C.rss_status()["VmHWM"]})
        np.savez(a.dump, empty=np.zeros(0))
        return info
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    info["load_s"], info["load_cpu_s"] = time.perf_counter() - t, time.process_time() - c
    info["loadavg_after_load"] = list(os.getloadavg())
    info["timed_out"] = False
    info["rss_after_load_kib"] = C.rss_status()["VmHWM"]
    df = tk.dataframe
    keys = _path_keys(tk.graph)
    index_of = {p: i for i, p in enumerate(a.inputs)}
    run_of = {prof: index_of.get(str(f), -1) for prof, f in tk.profile_mapping.items()}
    exc = df["time"].to_numpy(dtype="float64", na_value=np.nan)
    inc = df["time (inc)"].to_numpy(dtype="float64", na_value=np.nan)
    has = ~(np.isnan(exc) & np.isnan(inc))
    info.update({"rows": len(df), "rows_without_value": int((~has).sum())})
    nodes = df.index.get_level_values("node")[has]
    np.savez(a.dump, run=np.array([run_of[p] for p in df.index.get_level_values("profile")[has]], np.int64),
             path=np.array([keys[n] for n in nodes], dtype=str),
             rank=np.asarray(df.index.get_level_values("rank")[has], dtype=np.int64), time=exc[has], inc=inc[has])
    return info


def _probe_hatchet_imbalance(a, hatchet, wait) -> dict:
    """GraphFrame.from_caliper(run, node_ordering=False) (timed, not a target), then Hatchet's documented
    imbalance recipe --reps times (timed; peak RSS growth over the RSS right before it)."""
    import numpy as np

    info: dict = {}
    t, c = time.perf_counter(), time.process_time()
    gf = hatchet.GraphFrame.from_caliper(a.inputs[0], node_ordering=False)
    info["load_s"], info["load_cpu_s"] = time.perf_counter() - t, time.process_time() - c
    info["rss_after_load_kib"] = C.rss_status()["VmHWM"]
    info["rows"] = len(gf.dataframe)
    info["index"] = [str(n) for n in gf.dataframe.index.names]
    info["columns"] = [str(c) for c in gf.dataframe.columns]
    reps = []
    gf2 = None
    for i in range(a.reps):
        gf2 = gf3 = None
        C.release_memory()
        w = C.wait_for_load(**wait, label=f"hatchet recipe {i + 1}")
        reset = C.peak_rss_reset()
        rss0 = C.rss_status()["VmRSS"]
        t, c = time.perf_counter(), time.process_time()
        gf2 = gf.copy()
        gf3 = gf.copy()
        gf2.drop_index_levels(function=np.mean)
        gf3.drop_index_levels(function=np.max)
        gf2.dataframe["imbalance"] = gf3.dataframe["time"].div(gf2.dataframe["time"])
        s, cpu = time.perf_counter() - t, time.process_time() - c
        st = C.rss_status()
        reps.append({"s": s, "cpu_s": cpu, "loadavg_after": list(os.getloadavg()), "load": w, "peak_reset": reset,
                     "rss_before_kib": rss0, "rss_peak_kib": st["VmHWM"], "rss_after_kib": st["VmRSS"]})
        if i < a.reps - 1:
            del gf2, gf3
    info["recipe"] = reps
    keys = _path_keys(gf.graph)
    d = gf2.dataframe
    np.savez(a.dump, path=np.array([keys[n] for n in d.index], dtype=str), imbalance=d["imbalance"].to_numpy("float64"),
             mean=d["time"].to_numpy("float64"), max=gf3.dataframe["time"].reindex(d.index).to_numpy("float64"))
    return info


# =============================================================================================================
# fresh-process perflake side: ``.venv/bin/python bench/bench_analytics.py worker imbalance ...``
# =============================================================================================================
def worker_main(argv) -> int:
    p = argparse.ArgumentParser(prog="bench_analytics.py worker")
    p.add_argument("kind", choices=["imbalance", "imbalance-runs"])
    p.add_argument("--lake", required=True)
    p.add_argument("--run", help="imbalance: the one run")
    p.add_argument("--source", default="auto", help="imbalance-runs: rank summary (auto) or metrics rows (rows)")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--out", required=True)
    p.add_argument("--profile")
    p.add_argument("--max-load", type=float, default=1.0)
    p.add_argument("--poll", type=float, default=10.0)
    p.add_argument("--max-wait", type=float, default=300.0)
    a = p.parse_args(argv)
    t = time.perf_counter()
    import perflake

    info = {"import_s": time.perf_counter() - t, "rss_after_import_kib": C.rss_status()["VmHWM"]}

    def call():
        if a.kind == "imbalance-runs":
            return perflake.Lake(a.lake).imbalance(metric="time", top=10, source=a.source)
        return perflake.Lake(a.lake).imbalance([a.run], metric="time")

    if a.profile:
        prof = C.profile_call(call, pathlib.Path(a.profile))
        print("RESULT " + json.dumps({"profile": prof}), flush=True)
        return 0
    times, cpus, loads = [], [], []
    df = None
    for _ in range(a.reps):
        df = None
        C.release_memory()
        loads.append(C.wait_for_load(a.max_load, a.poll, a.max_wait, "perflake imbalance"))
        t, c = time.perf_counter(), time.process_time()
        df = call()
        times.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    info.update({"times": times, "cpus": cpus, "loads": loads, "rows": len(df),
                 "rss_hwm_before_save_kib": C.rss_status()["VmHWM"]})
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"path": [SEP.join(map(str, p)) for p in df["path"]],
                             "imbalance": df["imbalance"].to_numpy("float64"), "mean": df["mean"].to_numpy("float64"),
                             "max": df["max"].to_numpy("float64"), "present": df["present"].to_numpy("int64"),
                             "run_id": df["run_id"].astype(str).tolist(), "node_id": df["node_id"].to_numpy("uint64"),
                             "std": df["std"].to_numpy("float64"), "share": df["share"].to_numpy("float64"),
                             "top_ranks": [" ".join(map(str, t)) for t in df["top_ranks"]]}), a.out)
    print("RESULT " + json.dumps(info), flush=True)
    return 0


# =============================================================================================================
# project side: the benchmarks
# =============================================================================================================
class Ctx:
    def __init__(self, a, size: dict, command: str, machine: dict):
        self.a, self.size, self.command, self.machine = a, size, command, machine
        self.names = section_names(size)
        self.cache: dict = {}

    def wait(self, label: str) -> dict:
        return C.wait_for_load(self.a.max_load, self.a.poll, self.a.max_wait, label)

    def lakes(self, key: str) -> pathlib.Path:
        d = C.WORK / "lakes" / self.names[key]
        d.mkdir(parents=True, exist_ok=True)
        return d


def cpu_note(info: dict, wall: str, cpu: str, after: str | None = None) -> str:
    """'CPU 160.2 s, load after 1.21' for a reference call (single-threaded: CPU close to wall on a quiet machine)."""
    parts = []
    if info.get(cpu) is not None:
        parts.append(f"CPU {C.fmt_s(info[cpu])}")
    if after and info.get(after):
        parts.append(f"1-min load at its end {info[after][0]:.2f}")
    return ", ".join(parts)


def best_med(times) -> str:
    return f"{C.fmt_s(min(times))} / {C.fmt_s(statistics.median(times))}"


def verdict(ok: bool) -> str:
    return "met" if ok else "**NOT met**"


def loads_str(ws) -> str:
    return ", ".join(C.load_note(w) for w in ws)


def header(ctx: Ctx, name: str, dataset: str, extra: list[str] = ()) -> list[str]:
    m = ctx.machine
    pv = m.get("project_venv") or {}
    lines = [f"## {name}", "",
             f"- date: {C.now()}",
             f"- machine: {m['nproc']} CPUs ({m['cpu']}), {m['mem_gib']} GiB RAM, {m['os']}; load average at start "
             f"{ctx.cache.get('load_start', {}).get(name, C.load_str())} (1/5/15 min), at the end {C.load_str()}",
             f"- project venv: Python {pv.get('python')}, "
             + ", ".join(f"{k} {v}" for k, v in pv.items() if k != "python") + f" (git {m['git']})"]
    if m.get("bench_venv") and not ctx.a.skip_hatchet:
        lines.append(C.venv_line("bench venv", m["bench_venv"]))
    lines += [f"- command: `{ctx.command}`", f"- dataset: {dataset}", *extra, ""]
    return lines


def run_probe(ctx: Ctx, kind: str, inputs: list[pathlib.Path], dump: pathlib.Path, *extra: str,
              timeout: float = PROBE_TIMEOUT_S) -> dict:
    """This file in the bench venv as a probe; peak RSS of the whole process by /usr/bin/time."""
    if not C.BENCH_PY.exists():
        raise RuntimeError(f"{C.rel(C.BENCH_PY)} missing: run bench/setup_venv.sh")
    listing = dump.with_name(dump.stem + "-inputs.txt")
    listing.write_text("".join(f"{p}\n" for p in inputs), encoding="utf-8")
    load = ["--max-load", str(ctx.a.max_load), "--poll", str(ctx.a.poll), "--max-wait", str(ctx.a.max_wait)]
    args = ["probe", kind, "--paths-from", str(listing), "--dump", str(dump), *extra, *load]
    shown = ["probe", kind, "--paths-from", C.rel(listing), "--dump", C.rel(dump), *extra]
    dump.unlink(missing_ok=True)
    w = ctx.wait(f"{kind} probe start")
    C.log(f"{kind}: {len(inputs)} input(s) in the bench venv (1-min load {w['load1']:.2f}) ...")
    res = C.run_measured([str(C.BENCH_PY), "-W", "ignore", str(SELF), *args], timeout=timeout)
    res["cmd"] = shlex.join([C.rel(C.BENCH_PY), "-W", "ignore", C.rel(SELF), *shown])
    res["start_load"] = w
    dump.with_name(dump.stem + "-stderr.txt").write_text(res["stderr"], encoding="utf-8")
    if res["rc"] != 0 or res["timed_out"]:
        raise RuntimeError(f"probe {kind} failed (rc {res['rc']}, timed out {res['timed_out']}): "
                           f"{res['stderr'][-3000:]}")
    res["info"] = C.result_line(res["stdout"])
    return res


# -- inputs ---------------------------------------------------------------------------------------------------
def ensure_cali(n: int) -> tuple[list[pathlib.Path], pathlib.Path, float | None]:
    """n Spot .cali files (bench/cali_writer.py, seed 1) under bench/work/cali-<n>, index order; the stamp is the
    one bench_readers.py writes, so either script reuses the other's files."""
    import hashlib

    from cali_writer import write_cali_profiles

    out = C.WORK / f"cali-{n}"
    params = {"generator": "bench/cali_writer.py write_cali_profiles", "n_files": n, "seed": SEED,
              "writer_sha256": hashlib.sha256((C.BENCH / "cali_writer.py").read_bytes()).hexdigest()}
    if C.stamp_ok(out / ".complete.json", params):
        files = sorted(out.rglob("*.cali"), key=lambda p: p.name)
        if len(files) == n:
            return files, out, None
    C.log(f"writing {n} .cali files under {C.rel(out)} ...")
    shutil.rmtree(out, ignore_errors=True)
    t = time.perf_counter()
    files = write_cali_profiles(out, n, seed=SEED)
    gen_s = time.perf_counter() - t
    C.write_stamp(out / ".complete.json", params)
    return files, out, gen_s


def ensure_json_runs(nodes: int, ranks: int, runs: int) -> tuple[list[pathlib.Path], pathlib.Path, dict | None]:
    """json-split runs from perflake's generator, made in a subprocess; the directory name and stamp of a
    single run are those of bench_readers.py (caliper-json-NxR), so the 10000 x 1024 file is shared."""
    out = C.WORK / (f"caliper-json-{nodes}x{ranks}" if runs == 1 else f"caliper-json-{nodes}x{ranks}-{runs}runs")
    params = {"generator": "perflake.generators.write_caliper_json_runs", "nodes": nodes, "ranks": ranks,
              "runs": runs, "seed": SEED}
    files = [out / f"run-{k:03d}.json" for k in range(runs)]
    if C.stamp_ok(out / ".complete.json", params) and all(f.exists() for f in files):
        return files, out, None
    C.log(f"generating {C.rel(out)} ({runs} json-split runs of {nodes} nodes x {ranks} ranks) ...")
    shutil.rmtree(out, ignore_errors=True)
    code = (f"from perflake.generators import WRITERS; "
            f"WRITERS['caliper']({str(out)!r}, nodes={nodes}, ranks={ranks}, runs={runs}, seed={SEED})")
    g = C.run_measured([str(C.PROJECT_PY), "-c", code], timeout=3600)
    if g["rc"] != 0 or not all(f.exists() for f in files):
        raise RuntimeError(f"generation failed (rc {g['rc']}): {g['stderr'][-2000:]}")
    C.write_stamp(out / ".complete.json", params)
    C.log(f"generated in {g['wall_s']:.1f} s, peak RSS {C.mib(g['rss_kib'])}")
    return files, out, {"wall_s": g["wall_s"], "rss_kib": g["rss_kib"]}


# -- perflake helpers -------------------------------------------------------------------------------------------
def perflake_ingest_reps(ctx: Ctx, inputs: list, lake_dir: pathlib.Path, n_runs: int, reps: int, label: str):
    import perflake

    times, loads = [], []
    for i in range(reps):
        shutil.rmtree(lake_dir, ignore_errors=True)
        C.release_memory()
        loads.append(ctx.wait(label))
        t = time.perf_counter()
        report = perflake.Lake(lake_dir).ingest([str(p) for p in inputs])
        times.append(time.perf_counter() - t)
        if len(report.ingested) != n_runs or report.failed:
            raise RuntimeError(f"{label}: {report.summary()} {report.failed[:3]}")
        C.log(f"{label} rep {i + 1}/{reps}: {times[-1]:.3f} s ({report.summary()}; load {loads[-1]['load1']:.2f})")
    return times, loads


def perflake_cli(ctx: Ctx, inp: pathlib.Path, lake_dir: pathlib.Path, n_runs: int, label: str) -> dict:
    shutil.rmtree(lake_dir, ignore_errors=True)
    w = ctx.wait(label)
    res = C.run_measured([str(C.PERFLAKE_CLI), "ingest", str(inp), "--lake", str(lake_dir), "--quiet"], timeout=7200)
    res["cmd"] = shlex.join([C.rel(C.PERFLAKE_CLI), "ingest", C.rel(inp), "--lake", C.rel(lake_dir), "--quiet"])
    res["load"] = w
    if res["rc"] != 0 or f"ingested {n_runs} runs" not in res["stdout"] + res["stderr"]:
        raise RuntimeError(f"{label} failed (rc {res['rc']}): {res['stdout'][-500:]} {res['stderr'][-2000:]}")
    C.log(f"{label}: {res['wall_s']:.3f} s, peak RSS {C.mib(res['rss_kib'])} ({res['stdout'].strip()})")
    return res


def lake_values(lake_dir: pathlib.Path, cols: list[str], sources: dict | None = None):
    """Per (input index, call path, rank) sums of ``cols`` from the lake's SQL views; inputs mapped through
    ``sources`` (realpath of the run's source -> index; runs not in it are left out)."""
    import pandas as pd

    import perflake

    con = perflake.Lake(lake_dir).connect()
    try:
        runs = con.sql("select run_id, source from runs").df()
        idx = {rid: sources.get(os.path.realpath(src), -1) if sources is not None else i
               for i, (rid, src) in enumerate(zip(runs["run_id"], runs["source"]))}
        keep = [r for r, i in idx.items() if i >= 0]
        con.register("bench_runs", pd.DataFrame({"run_id": keep, "run": [idx[r] for r in keep]}))
        sel = ", ".join(f'sum(m."{c}") as "{c}"' for c in cols)
        df = con.sql(f"""
            with recursive walk(run_id, node_id, path) as (
                select n.run_id, n.node_id, n.name::varchar from nodes n semi join bench_runs b using (run_id)
                where n.parent_id is null
                union all
                select n.run_id, n.node_id, w.path || chr(31) || n.name from nodes n
                join walk w on n.run_id = w.run_id and n.parent_id = w.node_id
            )
            select b.run, w.path, cast(m.rank as bigint) as rank, {sel}
            from metrics m join walk w using (run_id, node_id) join bench_runs b using (run_id)
            group by all""").df()
    finally:
        con.close()
    return df


def compare_tables(pl, ref, keys: list[str], cols: list[str], *, rtol: float, atol: float = 0.0) -> dict:
    """Outer join on keys; per column the number of pairs differing beyond rtol/atol (NaN = NaN)."""
    import numpy as np

    m = pl.merge(ref, on=keys, how="outer", suffixes=("_pl", "_ref"), indicator=True)
    both = m[m["_merge"] == "both"]
    res = {"n_pl": len(pl), "n_ref": len(ref), "only_pl": int((m["_merge"] == "left_only").sum()),
           "only_ref": int((m["_merge"] == "right_only").sum()),
           "dup_pl": int(pl.duplicated(keys).sum()), "dup_ref": int(ref.duplicated(keys).sum()), "cols": {}}
    ok = res["only_pl"] == 0 and res["only_ref"] == 0 and res["dup_pl"] == 0 and res["dup_ref"] == 0
    for c in cols:
        x, y = both[f"{c}_pl"].to_numpy("float64"), both[f"{c}_ref"].to_numpy("float64")
        same = np.isclose(x, y, rtol=rtol, atol=atol) | (np.isnan(x) & np.isnan(y))
        with np.errstate(invalid="ignore", divide="ignore"):
            relerr = np.abs(x - y) / np.abs(y)
        res["cols"][c] = {"bad": int((~same).sum()), "sum_pl": float(np.nansum(x)), "sum_ref": float(np.nansum(y)),
                          "max_rel": (float(np.nanmax(relerr[np.isfinite(relerr)])) if np.isfinite(relerr).any()
                                      else 0.0)}
        ok = ok and res["cols"][c]["bad"] == 0
    res["ok"] = bool(ok)
    return res


def check_text(c: dict | None, what: str) -> str:
    if c is None:
        return f"not run ({what})"
    cols = "; ".join(f"`{k}` differing {v['bad']:,} (max relative difference {v['max_rel']:.1e}), sum "
                     f"{v['sum_pl']:.10g} vs {v['sum_ref']:.10g}" for k, v in c["cols"].items())
    dup = f", duplicate keys {c['dup_pl']}+{c['dup_ref']}" if c["dup_pl"] or c["dup_ref"] else ""
    return (f"**{'OK' if c['ok'] else 'MISMATCH'}**: {c['n_pl']:,} perflake / {c['n_ref']:,} reference rows, "
            f"unmatched {c['only_pl']}+{c['only_ref']}{dup}; {cols}")


def maybe_profile(ctx: Ctx, key: str, tag: str, fn, prepare=None) -> dict | None:
    """One untimed perflake call under cProfile (for a target not met)."""
    if prepare:
        prepare()
    dest = ctx.lakes(key) / f"profile-{tag}.txt"
    p = C.profile_call(fn, dest)
    p["file"] = C.rel(dest)
    C.log(f"profile of {tag}: {p['wall_s']:.3f} s under cProfile -> {p['file']}")
    return p


def recorded_thicket_1000() -> float | None:
    """Thicket.from_caliperreader on 1000 files as recorded in the ingest-cali-1000-files section."""
    try:
        text = C.RESULTS.read_text(encoding="utf-8")
    except OSError:
        return None
    m = re.search(r"Thicket\.from_caliperreader\(files\[:1000\]\)`[^|]*\| ([\d.]+) s", text)
    return float(m.group(1)) if m else None


# -- the Thicket probe on the first cali files (shared by ingest-cali and groupby) ------------------------------
def thicket_cali(ctx: Ctx, files: list[pathlib.Path]) -> dict | None:
    if ctx.a.skip_hatchet:
        return None
    if "thicket_cali" not in ctx.cache:
        keys = list(GROUP_KEYS) if "groupby" in ctx.selected else []
        dump = ctx.lakes("groupby") / "thicket.npz"
        extra = [x for k in keys for x in ("--group-key", k)]
        res = run_probe(ctx, "thicket-cali", files, dump, *extra)
        res["dump"] = dump
        i = res["info"]
        C.log(f"thicket from_caliperreader({len(files)} files): {i['load_s']:.1f} s, peak RSS {C.mib(res['rss_kib'])}; "
              + "; ".join(f"groupby {g['key']}: {g['groupby_s']:.2f} s ({g['groups']} groups)" for g in i["groupbys"]))
        ctx.cache["thicket_cali"] = res
    return ctx.cache["thicket_cali"]


def thicket_values_check(files, lake_dir, dump) -> dict:
    import numpy as np
    import pandas as pd

    src = {os.path.realpath(f): i for i, f in enumerate(files)}
    pl = lake_values(lake_dir, [SPOT_METRIC], src)
    pl = pl.groupby(["run", "path"], as_index=False)[SPOT_METRIC].sum(min_count=1).rename(columns={SPOT_METRIC: "v"})
    with np.load(dump) as z:
        ref = pd.DataFrame({"run": z["v_run"], "path": z["v_path"].astype(object), "v": z["v_value"]})
    ref = ref.groupby(["run", "path"], as_index=False)["v"].sum(min_count=1)
    return compare_tables(pl, ref, ["run", "path"], ["v"], rtol=1e-12, atol=1e-9)


# -- 1. ingest of 10,000 .cali files ----------------------------------------------------------------------------
def bench_ingest_cali(ctx: Ctx):
    a, n, sub = ctx.a, ctx.size["cali"], ctx.size["cali_sub"]
    name = ctx.names["ingest-cali"]
    files, root, gen_s = ensure_cali(n)
    n_files, nbytes = C.tree_bytes(files)
    lakes = ctx.lakes("ingest-cali")
    cli = perflake_cli(ctx, root, lakes / "cli", n, "perflake CLI cold ingest")
    t, t_loads = perflake_ingest_reps(ctx, [root], lakes / "inprocess", n, a.reps, f"perflake in-process ingest of {n}")
    C.write_stamp(lakes / "inprocess.stamp.json", lake_stamp(files))
    lake_bytes = C.tree_bytes([lakes / "inprocess"])[1]
    t_sub, sub_loads = perflake_ingest_reps(ctx, files[:sub], lakes / f"inprocess-{sub}", sub, a.reps,
                                            f"perflake in-process ingest of the first {sub}")
    import perflake

    same = perflake.Lake(lakes / "cli").sql("select run_id from runs order by 1")["run_id"].tolist() == \
        perflake.Lake(lakes / "inprocess").sql("select run_id from runs order by 1")["run_id"].tolist()
    th = thicket_cali(ctx, files[:sub])
    check = None
    if th:
        check = thicket_values_check(files[:sub], lakes / f"inprocess-{sub}", th["dump"])
        C.log(f"correctness vs thicket: {'OK' if check['ok'] else 'MISMATCH'}")
    best = min(t)
    rec = recorded_thicket_1000() if sub == 1000 else None
    th_sub = th["info"]["load_s"] if th else rec
    scale = n / sub
    lines = header(ctx, name, f"{n} Spot `.cali` files from `bench/cali_writer.py` (`write_cali_profiles(out, {n}, "
                              f"seed={SEED})`, RAJAPerf layout: 74 regions, 75 records, 1 rank; file i has the same "
                              f"bytes for any n) -> `{C.rel(root)}` ({n_files:,} files, {C.fmt_bytes(nbytes)})"
                   + (f"; written in this run in {gen_s:.1f} s" if gen_s is not None else "; reused (stamped)")
                   + "; page cache warm for every reader",
                   [f"- timing: before every timed call the 1-minute load average had to be below {a.max_load:.1f} "
                    f"(polled every {a.poll:g} s, at most {a.max_wait:g} s); perflake best / median of {a.reps}"])
    lines += ["| measurement | perflake best / median | reference | ratio (reference / perflake) | target |",
              "|---|---|---|---|---|"]
    ext = f"{C.fmt_s(th_sub * scale)} (**extrapolated**: {scale:g} x {C.fmt_s(th_sub)}" if th_sub else None
    if ext:
        ext += f", measured in this run on the first {sub:,} files)" if th else ", recorded in ingest-cali-1000-files)"
    lines.append(f"| ingest of {n:,} files, in-process `Lake(fresh).ingest([DIR])` | {best_med(t)} | "
                 f"{ext or 'n/a'} | {ratio_ext(th_sub, scale, best)} | "
                 f"< {TARGET_INGEST_CALI_S:g} s: {verdict(best < TARGET_INGEST_CALI_S)} |")
    lines.append(f"| ingest of {n:,} files, CLI cold `perflake ingest DIR --lake L --quiet` (incl. interpreter "
                 f"start-up) | {C.fmt_s(cli['wall_s'])} (1 run; peak RSS {C.mib(cli['rss_kib'])}) | "
                 f"{ext or 'n/a'} | {ratio_ext(th_sub, scale, cli['wall_s'])} | "
                 f"< {TARGET_INGEST_CALI_S:g} s: {verdict(cli['wall_s'] < TARGET_INGEST_CALI_S)} |")
    if th:
        i = th["info"]
        lines.append(f"| ingest of the first {sub:,} files, in-process | {best_med(t_sub)} | thicket "
                     f"`Thicket.from_caliperreader(files[:{sub}])` {C.fmt_s(i['load_s'])} "
                     f"({cpu_note(i, 'load_s', 'load_cpu_s', 'loadavg_after_load')}; excl. imports "
                     f"{i['import_hatchet_s'] + i['import_thicket_s']:.2f} s; peak RSS at the end of the load "
                     f"{C.mib(i['rss_after_load_kib'])}) | **{i['load_s'] / min(t_sub):,.1f}x** | (measured, like for "
                     "like) |")
    else:
        lines.append(f"| ingest of the first {sub:,} files, in-process | {best_med(t_sub)} | thicket: "
                     + (f"{C.fmt_s(rec)} recorded in ingest-cali-1000-files (not run: --skip-hatchet)"
                        if rec else "not run (--skip-hatchet)")
                     + f" | {f'{rec / min(t_sub):,.1f}x' if rec else 'n/a'} | |")
    lines.append(f"| input bytes / lake bytes | {C.fmt_bytes(nbytes)} / {C.fmt_bytes(lake_bytes)} "
                 f"({nbytes / lake_bytes:,.1f}x) | | | |")
    lines += ["", "| correctness | result |", "|---|---|",
              f"| CLI lake vs in-process lake | **{'OK' if same else 'MISMATCH'}**: the same {n:,} run ids |",
              f"| lake (first {sub:,} files) vs thicket: per (file, call path) `{SPOT_METRIC}` | "
              f"{check_text(check, '--skip-hatchet')} |", ""]
    lines.append(f"1-minute load before each timed call: CLI {C.load_note(cli['load'])}; in-process "
                 f"{loads_str(t_loads)}; first {sub}: {loads_str(sub_loads)}"
                 + (f"; thicket probe start {C.load_note(th['start_load'])}" if th else "") + ".")
    lines.append(f"perflake CLI ran as `{cli['cmd']}` (peak RSS via {cli['rss_source']}); in-process repetitions: "
                 + ", ".join(f"{x:.3f}" for x in t) + f" s; first {sub}: " + ", ".join(f"{x:.3f}" for x in t_sub)
                 + " s.")
    if th:
        lines.append(f"Thicket ran as `{th['cmd']}` (bench venv; whole-process peak RSS {C.mib(th['rss_kib'])} via "
                     f"{th['rss_source']}, incl. the group-bys of groupby-{sub}-runs that followed the load). Thicket "
                     f"was not run on {n:,} files: it is linear at best in the number of files (the issue: ~88 s for "
                     f"1,000, ~15 min for 10,000), so the reference above is {scale:g}x its measured {sub:,}-file "
                     "time, an extrapolation, not a measurement.")
    ok = same and (check["ok"] if check else True)
    if not a.skip_profile and (best >= TARGET_INGEST_CALI_S or cli["wall_s"] >= TARGET_INGEST_CALI_S):
        p = maybe_profile(ctx, "ingest-cali", "ingest",
                          lambda: perflake.Lake(lakes / "profile-lake").ingest([str(root)]),
                          prepare=lambda: shutil.rmtree(lakes / "profile-lake", ignore_errors=True))
        lines.append(f"Target not met: cProfile of one in-process ingest ({p['wall_s']:.1f} s under the profiler) in "
                     f"`{p['file']}`; {C.profile_summary(p)}.")
    return name, "\n".join(lines) + "\n", ok


def ratio_ext(th_sub: float | None, scale: float, s: float) -> str:
    return f"{th_sub * scale / s:,.0f}x (vs the extrapolation)" if th_sub else "n/a"


def lake_stamp(files) -> dict:
    import perflake

    return {"files": len(files), "first": str(files[0]), "last": str(files[-1]),
            "perflake": getattr(perflake, "__version__", "?"), "git": C.git_state().split(" ")[0]}


# -- 2. groupby over 1,000 runs -----------------------------------------------------------------------------------
def bench_groupby(ctx: Ctx):
    import numpy as np
    import pandas as pd

    import perflake

    a, n, sub = ctx.a, ctx.size["cali"], ctx.size["cali_sub"]
    name = ctx.names["groupby"]
    files, root, _ = ensure_cali(n)
    files = files[:sub]
    lakes = ctx.lakes("groupby")
    lake_dir = lakes / "lake"
    shutil.rmtree(lake_dir, ignore_errors=True)
    t0 = time.perf_counter()
    rep = perflake.Lake(lake_dir).ingest([str(f) for f in files])
    ingest_s = time.perf_counter() - t0
    if len(rep.ingested) != sub or rep.failed:
        raise RuntimeError(f"groupby lake: {rep.summary()}")
    results = {}
    for key in GROUP_KEYS:
        def call(key=key):
            return perflake.Lake(lake_dir).ensemble(group_by=[f"meta:{key}"], metric=SPOT_METRIC,
                                                    stats=("count", "mean", "std"))
        times, loads = [], []
        out = None
        for i in range(a.fast_reps):
            out = None
            C.release_memory()
            loads.append(ctx.wait(f"perflake ensemble group_by {key}"))
            t = time.perf_counter()
            out = call()
            times.append(time.perf_counter() - t)
        C.log(f"perflake ensemble(group_by=[meta:{key}]): {best_med(times)} ({out[f'meta:{key}'].nunique()} groups)")
        results[key] = {"times": times, "loads": loads, "out": out, "call": call}
    th = thicket_cali(ctx, files)
    checks = {}
    if th:
        with np.load(th["dump"]) as z:
            ref = pd.DataFrame({"key": z["g_key"].astype(object), "group": z["g_val"].astype(object),
                                "path": z["g_path"].astype(object), "mean": z["g_mean"], "std": z["g_std"]})
        for key in GROUP_KEYS:
            out = results[key]["out"]
            pl = pd.DataFrame({"group": out[f"meta:{key}"].astype(str).to_numpy(dtype=object),
                               "path": [SEP.join(map(str, p)) for p in out["path"]],
                               "mean": out["mean"].to_numpy("float64"), "std": out["std"].to_numpy("float64")})
            r = ref[ref["key"] == key].drop(columns="key")
            checks[key] = compare_tables(pl, r, ["group", "path"], ["mean", "std"], rtol=1e-9)
            checks[key]["groups_pl"] = int(pl["group"].nunique())
            checks[key]["groups_ref"] = int(r["group"].nunique())
            C.log(f"correctness groupby {key}: {'OK' if checks[key]['ok'] else 'MISMATCH'}")
    lines = header(ctx, name, f"the first {sub:,} files of `{C.rel(root)}` (the files of ingest-cali-{n}; "
                              f"`write_cali_profiles(out, {n}, seed={SEED})`): metadata keys `variant` (4 values) and "
                              f"`machine_build` (a distinct value per run) from the Adiak globals; perflake lake "
                              f"`{C.rel(lake_dir)}` ingested beforehand in {ingest_s:.2f} s (not timed)",
                   [f"- timing: 1-minute load average below {a.max_load:.1f} before every timed call (polled every "
                    f"{a.poll:g} s, at most {a.max_wait:g} s); perflake best / median of {a.fast_reps} calls, each "
                    "with a new `Lake(root)` (catalog read included); Thicket: one call each, on a Thicket loaded once "
                    "(load not included)"])
    if th:
        i = th["info"]
        lines.insert(-1, f"- Thicket load `Thicket.from_caliperreader(files)` of the same {sub:,} files: "
                         f"{C.fmt_s(i['load_s'])} ({cpu_note(i, 'load_s', 'load_cpu_s', 'loadavg_after_load')}; peak "
                         f"RSS at the end of the load {C.mib(i['rss_after_load_kib'])}), excluded from the figures "
                         "below")
    lines += ["| operation | perflake best / median | reference (thicket) | ratio (reference / perflake best) | target "
              "|",
              "|---|---|---|---|---|"]
    ok = True
    failed_keys = []
    tg = {g["key"]: g for g in th["info"]["groupbys"]} if th else {}
    for key in GROUP_KEYS:
        r = results[key]
        best = min(r["times"])
        groups = r["out"][f"meta:{key}"].nunique()
        g = tg.get(key)
        met = best < TARGET_GROUPBY_S
        if not met:
            failed_keys.append(key)
        call = (f"`Lake(root).ensemble(group_by=[\"meta:{key}\"], metric=\"{SPOT_METRIC}\", "
                f"stats=(\"count\", \"mean\", \"std\"))` ({groups:,} groups)")
        if g:
            lines.append(f"| {call} vs thicket `tk.groupby(\"{key}\")` ({g['groups']:,} sub-thickets) | "
                         f"{best_med(r['times'])} | {C.fmt_s(g['groupby_s'])} "
                         f"({cpu_note(g, 'groupby_s', 'groupby_cpu_s', 'loadavg_after')}) | "
                         f"**{g['groupby_s'] / best:,.1f}x** | < {TARGET_GROUPBY_S:g} s: {verdict(met)} (issue: "
                         "Thicket 43 s, quadratic) |")
            lines.append(f"| same perflake call vs thicket `tk.groupby(\"{key}\")` + `thicket.stats.mean`/`std` on "
                         f"every sub-thicket (the numbers perflake returns) | {best_med(r['times'])} | "
                         f"{C.fmt_s(g['groupby_s'] + g['stats_s'])} ({C.fmt_s(g['stats_s'])} for the stats) | "
                         f"**{(g['groupby_s'] + g['stats_s']) / best:,.1f}x** | (like for like) |")
        else:
            lines.append(f"| {call} | {best_med(r['times'])} | not run (--skip-hatchet) | | < {TARGET_GROUPBY_S:g} s: "
                         f"{verdict(met)} |")
    lines += ["", "| correctness vs thicket | result |", "|---|---|"]
    for key in GROUP_KEYS:
        c = checks.get(key)
        extra = f" ({c['groups_pl']:,} perflake / {c['groups_ref']:,} thicket groups)" if c else ""
        lines.append(f"| per (`{key}` value, call path) mean and std (ddof 1) of `{SPOT_METRIC}`, rtol 1e-9{extra} | "
                     f"{check_text(c, '--skip-hatchet')} |")
        ok = ok and (c["ok"] if c else True)
    lines.append("")
    lines.append("1-minute load before each timed call: " + "; ".join(
        f"perflake {key} {loads_str(results[key]['loads'])}" for key in GROUP_KEYS)
        + "".join(f"; thicket groupby {k} {C.load_note(g['load'])}, stats {C.load_note(g['load_stats'])}"
                  for k, g in tg.items()) + ".")
    lines.append("perflake repetitions (s): " + "; ".join(
        f"{key} " + ", ".join(f"{x:.3f}" for x in results[key]["times"]) for key in GROUP_KEYS) + ".")
    if th:
        lines.append(f"Thicket's `groupby` deep-copies the whole Thicket once per group and then filters it, so its "
                     f"time grows with groups x runs; perflake computes the statistics of every group in one DuckDB "
                     f"query. Thicket ran as `{th['cmd']}` (bench venv); peak RSS during each groupby: "
                     + "; ".join(f"{k} {C.mib(g['rss_peak_kib'])} (from {C.mib(g['rss_before_kib'])} before)"
                                 for k, g in tg.items()) + ".")
    for key in failed_keys if not a.skip_profile else []:
        p = maybe_profile(ctx, "groupby", f"ensemble-{key}", results[key]["call"])
        lines.append(f"Target not met for `{key}`: cProfile of one perflake call ({p['wall_s']:.3f} s under the "
                     f"profiler) in `{p['file']}`; {C.profile_summary(p)}.")
    return name, "\n".join(lines) + "\n", ok


# -- 3. ensemble over 10,000 runs ---------------------------------------------------------------------------------
HAND_QUERIES = {
    "two-level": ("hand-written DuckDB, the same semantics: per-run value = mean over the run's locations, then "
                  "mean/std over runs",
                  'select node_id, avg(v) as mean, stddev_samp(v) as std from ('
                  ' select run_id, node_id, avg("{m}") as v from read_parquet($files)'
                  ' where rank >= 0 and "{m}" is not null group by run_id, node_id) group by node_id'),
    "two-level + names": ("hand-written DuckDB, the same plus each call path's name from the nodes files (perflake's "
                          "result without the path lists)",
                          'with s as (select node_id, avg(v) as mean, stddev_samp(v) as std from ('
                          ' select run_id, node_id, avg("{m}") as v from read_parquet($files)'
                          ' where rank >= 0 and "{m}" is not null group by run_id, node_id) group by node_id),'
                          ' n as (select node_id, any_value(name) as name from read_parquet($nodes) group by node_id)'
                          ' select s.node_id, n.name, s.mean, s.std from s join n using (node_id)'),
    "one-level": ("hand-written DuckDB, one GROUP BY node_id over the metric rows (the same answer only when every run "
                  "has one location, as here)",
                  'select node_id, avg("{m}") as mean, stddev_samp("{m}") as std from read_parquet($files)'
                  ' where rank >= 0 group by node_id'),
}


def bench_ensemble(ctx: Ctx):
    import duckdb

    import perflake

    a, n = ctx.a, ctx.size["cali"]
    name = ctx.names["ensemble"]
    files, root, _ = ensure_cali(n)
    lakes = ctx.lakes("ingest-cali")
    lake_dir = lakes / "inprocess"
    note = "the in-process lake of ingest-cali in this run"
    fresh = "ingest-cali" in ctx.done and (lake_dir / "perflake.json").exists()
    if not fresh and (not C.stamp_ok(lakes / "inprocess.stamp.json", lake_stamp(files))
                      or not (lake_dir / "perflake.json").exists()):
        shutil.rmtree(lake_dir, ignore_errors=True)
        t = time.perf_counter()
        rep = perflake.Lake(lake_dir).ingest([str(root)])
        if len(rep.ingested) != n or rep.failed:
            raise RuntimeError(f"ensemble lake: {rep.summary()}")
        C.write_stamp(lakes / "inprocess.stamp.json", lake_stamp(files))
        note = f"ingested for this benchmark in {time.perf_counter() - t:.1f} s (not timed)"
    elif "ingest-cali" not in ctx.done:
        note = "the in-process lake of an earlier ingest-cali run (stamped: same files, same git HEAD), reused"
    lake = perflake.Lake(lake_dir)
    cat = lake.catalog()
    batches = sorted(set(cat.runs().column("batch").to_pylist()))
    pfiles = cat.files("metrics", batches)
    nfiles = cat.files("nodes", batches)
    n_runs = cat.runs().num_rows
    metric_rows = lake.sql("select count(*) as n from metrics")["n"][0]

    def pl_call():
        return perflake.Lake(lake_dir).ensemble(metric=SPOT_METRIC, stats=("mean", "std"))

    def hand_call(sql):
        con = duckdb.connect()
        try:
            params = {"files": pfiles, **({"nodes": nfiles} if "$nodes" in sql else {})}
            return con.execute(sql.format(m=SPOT_METRIC), params).df()
        finally:
            con.close()

    from perflake.analytics import ensemble as ens
    from perflake.analytics import selection

    stats_lake = perflake.Lake(lake_dir)  # like the hand queries: the catalog is read outside the timer
    stats_rows = selection.with_metric(selection.select(stats_lake), SPOT_METRIC)

    def stats_call():  # perflake's statistics query alone: node ids, no names or paths, no catalog read
        return ens.group_stats(stats_lake, stats_rows, SPOT_METRIC, stats=("mean", "std"))

    fns = {"perflake": pl_call, "perflake-stats": stats_call,
           **{k: (lambda q=q: hand_call(q)) for k, (_, q) in HAND_QUERIES.items()}}
    times = {k: [] for k in fns}
    loads = {k: [] for k in fns}
    outs = {}
    for i in range(a.fast_reps):
        for k, fn in fns.items():
            outs[k] = None
            C.release_memory()
            loads[k].append(ctx.wait(f"ensemble {k}"))
            t = time.perf_counter()
            outs[k] = fn()
            times[k].append(time.perf_counter() - t)
        C.log(f"ensemble round {i + 1}: " + ", ".join(f"{k} {times[k][-1]:.3f} s" for k in fns))
    import pandas as pd

    pl = outs["perflake"]
    plt = pd.DataFrame({"node_id": pl["node_id"].astype("uint64"), "mean": pl["mean"], "std": pl["std"]})
    checks = {}
    for k in (*HAND_QUERIES, "perflake-stats"):
        h = outs[k]
        ht = pd.DataFrame({"node_id": h["node_id"].astype("uint64"), "mean": h["mean"], "std": h["std"]})
        checks[k] = compare_tables(plt, ht, ["node_id"], ["mean", "std"], rtol=1e-9)
    best = min(times["perflake"])
    lines = header(ctx, name, f"the lake of ingest-cali-{n} (`{C.rel(lake_dir)}`, {note}): {n_runs:,} runs, "
                              f"{int(metric_rows):,} metric rows in {len(pfiles)} metrics Parquet file(s); metric "
                              f"`{SPOT_METRIC}`",
                   [f"- timing: best / median of {a.fast_reps} calls each, interleaved (perflake, then each hand "
                    f"query, per round); 1-minute load average below {a.max_load:.1f} before every call (polled every "
                    f"{a.poll:g} s, at most {a.max_wait:g} s); perflake opens a new `Lake(root)` per call (catalog "
                    "read, node names and paths included); the hand queries get the Parquet file list (from the "
                    "catalog) outside the timer, open a new DuckDB connection per call and return a pandas DataFrame"])
    lines += ["| measurement | best / median | ratio perflake best / this best | target |", "|---|---|---|---|",
              f"| perflake `Lake(root).ensemble(metric=\"{SPOT_METRIC}\", stats=(\"mean\", \"std\"))` | "
              f"{best_med(times['perflake'])} | | < {TARGET_ENSEMBLE_S:g} s: {verdict(best < TARGET_ENSEMBLE_S)} |"]
    ratios = {}
    for k, (label, _q) in HAND_QUERIES.items():
        ratios[k] = best / min(times[k])
        lines.append(f"| {label} | {best_med(times[k])} | **{ratios[k]:.2f}x** | <= {TARGET_ENSEMBLE_RATIO:g}x: "
                     f"{verdict(ratios[k] <= TARGET_ENSEMBLE_RATIO)} |")
    s_best = min(times["perflake-stats"])
    lines.append(f"| perflake's statistics query alone, `ensemble.group_stats(lake, rows, ...)` (catalog read outside "
                 f"the timer, node ids only: the hand queries' output) vs the one-level hand query | "
                 f"{best_med(times['perflake-stats'])} | **{s_best / min(times['one-level']):.2f}x** "
                 f"(this / one-level) | <= {TARGET_ENSEMBLE_RATIO:g}x: "
                 f"{verdict(s_best / min(times['one-level']) <= TARGET_ENSEMBLE_RATIO)} |")
    lines += ["", "| correctness | result |", "|---|---|"]
    for k in (*HAND_QUERIES, "perflake-stats"):
        what = f"{k} hand query" if k in HAND_QUERIES else "its statistics query alone (vs the perflake call)"
        lines.append(f"| perflake vs {what}: per call path mean and std, rtol 1e-9 | {check_text(checks[k], '')} |")
    lines.append("")
    lines.append("Hand queries (`$files` = the lake's metrics Parquet files, `$nodes` its nodes files): "
                 + "; ".join(f"{k}: `{q.format(m=SPOT_METRIC)}`" for k, (_, q) in HAND_QUERIES.items()) + ".")
    lines.append("perflake's call also reads the catalog, checks the metric, reads the nodes files for names and "
                 "paths (a recursive query) and sorts the result in tree order; the hand queries return node ids only.")
    lines.append("1-minute load before each call: " + "; ".join(f"{k} {loads_str(loads[k])}" for k in fns) + ".")
    lines.append("Repetitions (s): " + "; ".join(f"{k} " + ", ".join(f"{x:.3f}" for x in times[k]) for k in fns) + ".")
    not_met = best >= TARGET_ENSEMBLE_S or any(r > TARGET_ENSEMBLE_RATIO for r in ratios.values())
    if not_met and not a.skip_profile:
        p = maybe_profile(ctx, "ensemble", "ensemble", pl_call)
        lines.append(f"Target not met: cProfile of one perflake call ({p['wall_s']:.3f} s under the profiler) in "
                     f"`{p['file']}`; {C.profile_summary(p)}.")
    return name, "\n".join(lines) + "\n", all(c["ok"] for c in checks.values())


# -- 4. ingest of 100 runs of 1000 x 16 ---------------------------------------------------------------------------
def bench_ingest_runs(ctx: Ctx):
    import numpy as np
    import pandas as pd

    a = ctx.a
    nodes, ranks, runs = ctx.size["runs"]
    small, big = ctx.size["thicket_runs"]
    name = ctx.names["ingest-runs"]
    files, root, gen = ensure_json_runs(nodes, ranks, runs)
    n_files, nbytes = C.tree_bytes(files)
    lakes = ctx.lakes("ingest-runs")
    cli = perflake_cli(ctx, root, lakes / "cli", runs, "perflake CLI cold ingest")
    t, t_loads = perflake_ingest_reps(ctx, [root], lakes / "inprocess", runs, a.reps, "perflake in-process ingest of "
                                                                                      f"{runs} runs")
    t_small, small_loads = perflake_ingest_reps(ctx, files[:small], lakes / f"inprocess-{small}", small, a.reps,
                                                f"perflake in-process ingest of {small} runs")
    lake_bytes = C.tree_bytes([lakes / "inprocess"])[1]
    probes, checks = {}, {}
    if not a.skip_hatchet:
        for k in (small, big):
            dump = lakes / f"thicket-{k}.npz"
            res = run_probe(ctx, "thicket-runs", files[:k], dump, "--limit", f"{THICKET_RUNS_LIMIT_S:g}",
                            timeout=THICKET_RUNS_LIMIT_S + 900)
            probes[k] = res
            i = res["info"]
            C.log(f"thicket {k} runs: " + (f"did not finish in {THICKET_RUNS_LIMIT_S:g} s" if i["timed_out"]
                                           else f"{i['load_s']:.1f} s"))
            if not i["timed_out"]:
                src = {os.path.realpath(f): j for j, f in enumerate(files[:k])}
                pl = lake_values(lakes / "inprocess", ["time", "time (inc)"], src)
                with np.load(dump) as z:
                    ref = pd.DataFrame({"run": z["run"], "path": z["path"].astype(object), "rank": z["rank"],
                                        "time": z["time"], "time (inc)": z["inc"]})
                ref = ref.groupby(["run", "path", "rank"], as_index=False)[["time", "time (inc)"]].sum(min_count=1)
                checks[k] = compare_tables(pl, ref, ["run", "path", "rank"], ["time", "time (inc)"], rtol=1e-12,
                                           atol=1e-9)
                checks[k]["nan_rows"] = i["rows_without_value"]
                C.log(f"correctness vs thicket {k}: {'OK' if checks[k]['ok'] else 'MISMATCH'}")
    best = min(t)
    gen_note = (f"; generated in this run in {gen['wall_s']:.1f} s (peak RSS {C.mib(gen['rss_kib'])})" if gen
                else "; reused (stamped)")
    lines = header(ctx, name, f"`perflake.generators.WRITERS[\"caliper\"](out, nodes={nodes}, ranks={ranks}, "
                              f"runs={runs}, seed={SEED})` (Caliper json-split; run k > 0 a perturbed tree) -> "
                              f"`{C.rel(root)}` ({n_files} files, {C.fmt_bytes(nbytes)}){gen_note}; page cache warm "
                              "for every reader",
                   [f"- timing: 1-minute load average below {a.max_load:.1f} before every timed call (polled every "
                    f"{a.poll:g} s, at most {a.max_wait:g} s); perflake best / median of {a.reps}; Thicket once per "
                    f"size, stopped after {THICKET_RUNS_LIMIT_S:g} s"])
    lines += ["| measurement | perflake best / median | reference (thicket) | ratio (reference / perflake) | target |",
              "|---|---|---|---|---|",
              f"| ingest of {runs} runs, in-process `Lake(fresh).ingest([DIR])` | {best_med(t)} | "
              + thicket_cell(probes.get(big), big) + f" | {ratio_cell(probes.get(big), best)} | "
              f"< {TARGET_INGEST_RUNS_S:g} s: {verdict(best < TARGET_INGEST_RUNS_S)} |",
              f"| ingest of {runs} runs, CLI cold `perflake ingest DIR --lake L --quiet` (incl. interpreter start-up) "
              f"| {C.fmt_s(cli['wall_s'])} (1 run; peak RSS {C.mib(cli['rss_kib'])}) | "
              f"{thicket_cell(probes.get(big), big)} | {ratio_cell(probes.get(big), cli['wall_s'])} | < "
              f"{TARGET_INGEST_RUNS_S:g} s: {verdict(cli['wall_s'] < TARGET_INGEST_RUNS_S)} |",
              f"| ingest of the first {small} runs, in-process | {best_med(t_small)} | "
              f"{thicket_cell(probes.get(small), small)} | {ratio_cell(probes.get(small), min(t_small))} | (issue: "
              "Thicket 40 s for 10 runs) |",
              f"| input bytes / lake bytes | {C.fmt_bytes(nbytes)} / {C.fmt_bytes(lake_bytes)} "
              f"({nbytes / lake_bytes:,.1f}x) | | | |",
              "", "| correctness vs thicket | result |", "|---|---|"]
    for k in (small, big):
        c = checks.get(k)
        if c:
            lines.append(f"| {k} runs: per (file, call path, rank) `time`, `time (inc)` (Thicket's rows without a "
                         f"value -- {c['nan_rows']:,} NaN rows added by `fill_perfdata` for call paths a run lacks "
                         f"-- left out) | {check_text(c, '')} |")
        elif k in probes:
            lines.append(f"| {k} runs | not checked: Thicket did not finish |")
        else:
            lines.append(f"| {k} runs | not run (--skip-hatchet) |")
    lines.append("")
    if probes:
        d = probes[small]["info"]["default_call"]
        lines.append("`Thicket.from_caliper(files)` on these files: "
                     + (f"works ({d['s']:.2f} s)" if d["ok"] else f"fails after {d['s']:.2f} s with `{d['error']}` "
                        "(json-split without a `Node order` column, formats.md 3.4; `Thicket.from_caliper` has no "
                        "`node_ordering` argument)")
                     + "; the times above are `Thicket.reader_dispatch(GraphFrame.from_caliper, False, True, False, "
                       "files, None, node_ordering=False)`, the body of `from_caliper` with `node_ordering=False`.")
        lines.append("Thicket ran as " + "; ".join(f"({k}) `{p['cmd']}` (process wall {p['wall_s']:.1f} s, peak RSS "
                                                   f"{C.mib(p['rss_kib'])})" for k, p in probes.items()) + ".")
    lines.append(f"1-minute load before each timed call: CLI {C.load_note(cli['load'])}; in-process "
                 f"{loads_str(t_loads)}; {small} runs {loads_str(small_loads)}"
                 + "".join(f"; thicket {k} {C.load_note(p['start_load'])}" for k, p in probes.items()) + ".")
    lines.append(f"perflake CLI ran as `{cli['cmd']}` (peak RSS via {cli['rss_source']}); in-process repetitions: "
                 + ", ".join(f"{x:.3f}" for x in t) + f" s; {small} runs: " + ", ".join(f"{x:.3f}" for x in t_small)
                 + " s.")
    if (best >= TARGET_INGEST_RUNS_S or cli["wall_s"] >= TARGET_INGEST_RUNS_S) and not a.skip_profile:
        import perflake

        p = maybe_profile(ctx, "ingest-runs", "ingest",
                          lambda: perflake.Lake(lakes / "profile-lake").ingest([str(root)]),
                          prepare=lambda: shutil.rmtree(lakes / "profile-lake", ignore_errors=True))
        lines.append(f"Target not met: cProfile of one in-process ingest ({p['wall_s']:.1f} s under the profiler) in "
                     f"`{p['file']}`; {C.profile_summary(p)}.")
    return name, "\n".join(lines) + "\n", all(c["ok"] for c in checks.values()) if checks else None


def thicket_cell(p: dict | None, k: int) -> str:
    if p is None:
        return "not run (--skip-hatchet)"
    i = p["info"]
    if i["timed_out"]:
        return (f"{k} runs: **did not finish in {THICKET_RUNS_LIMIT_S:g} s** (stopped; "
                f"{cpu_note(i, 'stopped_after_s', 'cpu_at_stop_s', 'loadavg_at_stop')}; peak RSS "
                f"{C.mib(i['rss_at_stop_kib'])})")
    return (f"{k} runs: {C.fmt_s(i['load_s'])} ({cpu_note(i, 'load_s', 'load_cpu_s', 'loadavg_after_load')}; peak RSS "
            f"at the end of the load {C.mib(i['rss_after_load_kib'])})")


def ratio_cell(p: dict | None, s: float) -> str:
    if p is None:
        return "n/a"
    i = p["info"]
    if i["timed_out"]:
        return f"> **{THICKET_RUNS_LIMIT_S / s:,.0f}x** (lower bound)"
    return f"**{i['load_s'] / s:,.1f}x**"


# -- 5. imbalance over 10,000 nodes x 1,024 ranks -----------------------------------------------------------------
def bench_imbalance(ctx: Ctx):
    import numpy as np
    import pandas as pd
    import pyarrow.parquet as pq

    a = ctx.a
    nodes, ranks = ctx.size["imb"]
    name = ctx.names["imbalance"]
    files, root, gen = ensure_json_runs(nodes, ranks, 1)
    run = files[0]
    nbytes = run.stat().st_size
    lakes = ctx.lakes("imbalance")
    lake_dir = lakes / "lake"
    shutil.rmtree(lake_dir, ignore_errors=True)
    ing = C.run_measured([str(C.PERFLAKE_CLI), "ingest", str(run), "--lake", str(lake_dir), "--quiet"], timeout=3600)
    if ing["rc"] != 0:
        raise RuntimeError(f"imbalance lake ingest failed: {ing['stderr'][-2000:]}")
    import perflake

    run_id = perflake.Lake(lake_dir).sql("select run_id from runs")["run_id"][0]
    out = lakes / "perflake-imbalance.parquet"
    load = ["--max-load", str(a.max_load), "--poll", str(a.poll), "--max-wait", str(a.max_wait)]
    wk = ["worker", "imbalance", "--lake", str(lake_dir), "--run", run_id, "--reps", str(a.reps), "--out", str(out)]
    w0 = ctx.wait("perflake imbalance worker")
    pw = C.run_measured([str(C.PROJECT_PY), str(SELF), *wk, *load], timeout=3600)
    if pw["rc"] != 0:
        raise RuntimeError(f"perflake imbalance worker failed: {pw['stderr'][-3000:]}")
    pi = C.result_line(pw["stdout"])
    pw["cmd"] = shlex.join([C.rel(C.PROJECT_PY), C.rel(SELF), "worker", "imbalance", "--lake", C.rel(lake_dir),
                            "--run", run_id, "--reps", str(a.reps), "--out", C.rel(out)])
    best = min(pi["times"])
    C.log(f"perflake imbalance (fresh process): {best_med(pi['times'])}, peak RSS {C.mib(pw['rss_kib'])}")
    h = check = None
    if not a.skip_hatchet:
        dump = lakes / "hatchet-imbalance.npz"
        h = run_probe(ctx, "hatchet-imbalance", [run], dump, "--reps", str(a.hatchet_reps))
        hi = h["info"]
        C.log(f"hatchet: load {hi['load_s']:.1f} s; recipe " + ", ".join(f"{r['s']:.2f} s" for r in hi["recipe"]))
        t = pq.read_table(out).to_pandas()
        pl = pd.DataFrame({"path": t["path"].astype(object), "imbalance": t["imbalance"], "mean": t["mean"],
                           "max": t["max"]})
        with np.load(dump) as z:
            ref = pd.DataFrame({"path": z["path"].astype(object), "imbalance": z["imbalance"], "mean": z["mean"],
                                "max": z["max"]})
        check = compare_tables(pl, ref, ["path"], ["imbalance", "mean", "max"], rtol=1e-9)
        C.log(f"correctness imbalance: {'OK' if check['ok'] else 'MISMATCH'}")
    gen_note = (f"; generated in this run in {gen['wall_s']:.1f} s (peak RSS {C.mib(gen['rss_kib'])})" if gen
                else "; reused (stamped, shared with bench_readers.py)")
    lines = header(ctx, name, f"`perflake.generators.WRITERS[\"caliper\"](out, nodes={nodes}, ranks={ranks}, runs=1, "
                              f"seed={SEED})` -> `{C.rel(run)}` ({C.fmt_bytes(nbytes)}){gen_note}; perflake lake "
                              f"`{C.rel(lake_dir)}` holding only that run, ingested beforehand by the CLI in "
                              f"{ing['wall_s']:.1f} s (not timed)",
                   [f"- timing: 1-minute load average below {a.max_load:.1f} before every timed call (polled every "
                    f"{a.poll:g} s, at most {a.max_wait:g} s); perflake: best / median of {a.reps} calls in one fresh "
                    f"process; Hatchet: the recipe {a.hatchet_reps} times on the frame loaded once"])
    lines += ["| measurement | perflake | hatchet | ratio | target |", "|---|---|---|---|---|"]
    recipe = ("`gf2 = gf.copy(); gf3 = gf.copy(); gf2.drop_index_levels(function=np.mean); "
              "gf3.drop_index_levels(function=np.max); gf2.dataframe[\"imbalance\"] = "
              "gf3.dataframe[\"time\"].div(gf2.dataframe[\"time\"])`")
    pl_call = "`Lake(root).imbalance([run], metric=\"time\")`"
    if h:
        hi = h["info"]
        ht = [r["s"] for r in hi["recipe"]]
        speed = min(ht) / best
        growth = max(r["rss_peak_kib"] - r["rss_before_kib"] for r in hi["recipe"])
        peak_phase = max(r["rss_peak_kib"] for r in hi["recipe"])
        lines += [f"| imbalance (max/mean per call path over ranks): perflake {pl_call} vs Hatchet's recipe {recipe} | "
                  f"{best_med(pi['times'])} | {best_med(ht)} (load `GraphFrame.from_caliper(run, node_ordering=False)` "
                  f"{C.fmt_s(hi['load_s'])}, CPU {C.fmt_s(hi['load_cpu_s'])}, not included) | **{speed:,.1f}x** | >= "
                  f"{TARGET_IMB_SPEEDUP:g}x: {verdict(speed >= TARGET_IMB_SPEEDUP)} |",
                  f"| peak memory: perflake whole fresh process (interpreter, imports, catalog, {a.reps} calls; "
                  f"/usr/bin/time) vs Hatchet's recipe alone (growth of VmHWM over the RSS right before the recipe, "
                  f"the loaded frame not counted) | {C.mib(pw['rss_kib'])} | {C.mib(growth)} | "
                  f"{pw['rss_kib'] / growth:.2f} | perflake below Hatchet: {verdict(pw['rss_kib'] < growth)} |",
                  f"| peak memory: perflake whole process vs the Hatchet process during the recipe phase (VmHWM, "
                  f"with the loaded frame the recipe needs) | {C.mib(pw['rss_kib'])} | {C.mib(peak_phase)} | "
                  f"{pw['rss_kib'] / peak_phase:.2f} | perflake below Hatchet: {verdict(pw['rss_kib'] < peak_phase)} |",
                  f"| whole-process peak RSS (/usr/bin/time), for the record | {C.mib(pw['rss_kib'])} | "
                  f"{C.mib(h['rss_kib'])} (incl. the load) | | |"]
    else:
        lines.append(f"| perflake {pl_call} | {best_med(pi['times'])} (peak RSS {C.mib(pw['rss_kib'])}) | not run "
                     "(--skip-hatchet) | | |")
    lines += ["", "| correctness vs hatchet | result |", "|---|---|",
              f"| per call path `imbalance` (max/mean), mean and max of `time` over ranks, rtol 1e-9 | "
              f"{check_text(check, '--skip-hatchet')} |", ""]
    lines.append(f"Memory method: perflake's figure is the peak RSS of the whole fresh process "
                 f"(`{pw['cmd']}`, via {pw['rss_source']}; after `import perflake` it stood at "
                 f"{C.mib(pi['rss_after_import_kib'])}, before saving the result for the check at "
                 f"{C.mib(pi['rss_hwm_before_save_kib'])}). Hatchet's: in the probe process, after the load, "
                 "`/proc/self/clear_refs` = 5 resets VmHWM to the current RSS right before each recipe run; the "
                 "growth is VmHWM after the recipe minus VmRSS before it (largest over the runs).")
    if h:
        hi = h["info"]
        lines.append("Hatchet recipe runs: " + "; ".join(
            f"{r['s']:.2f} s (CPU {r['cpu_s']:.2f} s), RSS {C.mib(r['rss_before_kib'])} -> peak "
            f"{C.mib(r['rss_peak_kib'])} (1-min load before {C.load_note(r['load'])}, after "
            f"{r['loadavg_after'][0]:.2f})" for r in hi["recipe"])
            + f". Hatchet ran as `{h['cmd']}` (process wall {h['wall_s']:.1f} s incl. `import hatchet` "
            f"{hi['import_hatchet_s']:.2f} s and the load; {hi['rows']:,} dataframe rows, index {hi['index']}).")
    lines.append("perflake repetitions: " + ", ".join(f"{x:.3f} s (CPU {c:.3f} s, all threads)"
                                                  for x, c in zip(pi["times"], pi.get("cpus", [float("nan")] * 9)))
                 + f"; 1-minute load before each: {loads_str(pi['loads'])} (worker start {C.load_note(w0)}). "
                   "perflake's "
                 "DuckDB query runs on both cores, Hatchet's recipe on one: a 1-minute load just below 1.0 (another "
                 "busy process) slows perflake's side more than Hatchet's.")
    if h and not a.skip_profile and (min(r["s"] for r in h["info"]["recipe"]) / best < TARGET_IMB_SPEEDUP):
        prof = lakes / "profile-imbalance.txt"
        pr = C.run_measured([str(C.PROJECT_PY), str(SELF), *wk, "--profile", str(prof)], timeout=3600)
        if pr["rc"] == 0:
            p = C.result_line(pr["stdout"])["profile"]
            lines.append(f"Target not met: cProfile of one perflake call in a fresh process ({p['wall_s']:.3f} s under "
                         f"the profiler) in `{C.rel(prof)}`; {C.profile_summary(p)}.")
    return name, "\n".join(lines) + "\n", (check["ok"] if check else None)


# -- 6. imbalance top 10 over 1,000 runs x 1,000 nodes x 16 ranks (the rank summary) -----------------------------
def _imbalance_worker(ctx: Ctx, lake_dir: pathlib.Path, source: str, out: pathlib.Path) -> dict:
    """The imbalance-runs worker in a fresh process: timings (best/median of --reps) and peak RSS."""
    a = ctx.a
    wk = ["worker", "imbalance-runs", "--lake", str(lake_dir), "--source", source, "--reps", str(a.reps),
          "--out", str(out)]
    load = ["--max-load", str(a.max_load), "--poll", str(a.poll), "--max-wait", str(a.max_wait)]
    w = ctx.wait(f"perflake imbalance-runs worker ({source})")
    res = C.run_measured([str(C.PROJECT_PY), str(SELF), *wk, *load], timeout=3600)
    if res["rc"] != 0:
        raise RuntimeError(f"perflake imbalance-runs worker ({source}) failed: {res['stderr'][-3000:]}")
    res["info"], res["start_load"] = C.result_line(res["stdout"]), w
    res["cmd"] = shlex.join([C.rel(C.PROJECT_PY), C.rel(SELF), *wk[:3], C.rel(lake_dir), *wk[4:-1], C.rel(out)])
    C.log(f"imbalance top 10 ({source}): {best_med(res['info']['times'])}, peak RSS {C.mib(res['rss_kib'])}")
    return res


def bench_imbalance_runs(ctx: Ctx):
    import pandas as pd
    import pyarrow.parquet as pq

    a = ctx.a
    nodes, ranks, runs = ctx.size["imb_runs"]
    name = ctx.names["imbalance-runs"]
    files, root, gen = ensure_json_runs(nodes, ranks, runs)
    n_files, nbytes = C.tree_bytes(files)
    lakes = ctx.lakes("imbalance-runs")
    lake_dir = lakes / "lake"
    cli = perflake_cli(ctx, root, lake_dir, runs, f"perflake CLI cold ingest of {runs} runs")
    sizes = {t: C.tree_bytes([lake_dir / t])[1] for t in ("metrics", "rank_summary")}
    lake_bytes = C.tree_bytes([lake_dir])[1]
    import pyarrow as pa

    import perflake
    from perflake.ingest.summarize import summarize

    cat = perflake.Lake(lake_dir).catalog()
    t, c = time.perf_counter(), time.process_time()
    for batch in cat.batches():  # the summary's share of the ingest: summarising every batch again
        rows = cat.batch_rows("metrics", batch).drop_columns(["batch"])
        summarize(rows.set_column(rows.column_names.index("node_id"), "node_id", rows["node_id"].cast(pa.uint64())))
    summ_s, summ_cpu = time.perf_counter() - t, time.process_time() - c
    summary = _imbalance_worker(ctx, lake_dir, "auto", lakes / "summary.parquet")
    rows = _imbalance_worker(ctx, lake_dir, "rows", lakes / "rows.parquet")
    got, want = pq.read_table(lakes / "summary.parquet").to_pandas(), pq.read_table(lakes / "rows.parquet").to_pandas()
    same_rows = got[["run_id", "node_id"]].equals(want[["run_id", "node_id"]])
    cols = ["imbalance", "mean", "max", "std", "present"]
    close = same_rows and all(pd.Series(got[k]).sub(want[k]).abs().le(1e-12 * want[k].abs()).all() for k in cols)
    ok = bool(close and (got["top_ranks"] == want["top_ranks"]).all())
    C.log(f"correctness imbalance-runs: {'OK' if ok else 'MISMATCH'}")
    best = min(summary["info"]["times"])
    gen_note = (f"; generated in this run in {gen['wall_s']:.1f} s (peak RSS {C.mib(gen['rss_kib'])})" if gen
                else "; reused (stamped)")
    lines = header(ctx, name, f"`perflake.generators.WRITERS[\"caliper\"](out, nodes={nodes}, ranks={ranks}, "
                              f"runs={runs}, seed={SEED})` -> `{C.rel(root)}` ({n_files} files, "
                              f"{C.fmt_bytes(nbytes)}){gen_note}; lake `{C.rel(lake_dir)}` ingested by the CLI",
                   [f"- timing: 1-minute load average below {a.max_load:.1f} before every timed call (polled every "
                    f"{a.poll:g} s, at most {a.max_wait:g} s); best / median of {a.reps} calls in one fresh process "
                    "each; peak RSS of the whole process (/usr/bin/time)"])
    lines += ["| measurement | perflake | target |", "|---|---|---|",
              f"| imbalance top 10 over {runs} runs, from the rank summary: `Lake(root).imbalance(metric=\"time\", "
              f"top=10)` | {best_med(summary['info']['times'])} (peak RSS {C.mib(summary['rss_kib'])}) | < "
              f"{TARGET_IMB_RUNS_S:g} s: {verdict(best < TARGET_IMB_RUNS_S)} |",
              f"| the same from the metrics rows (`source=\"rows\"`: before the summary) | "
              f"{best_med(rows['info']['times'])} (peak RSS {C.mib(rows['rss_kib'])}) | "
              f"{min(rows['info']['times']) / best:,.1f}x slower |",
              f"| CLI cold ingest `perflake ingest DIR --lake L --quiet` (summary included) | {C.fmt_s(cli['wall_s'])} "
              f"(peak RSS {C.mib(cli['rss_kib'])}) | |",
              f"| summarising every batch again (`summarize` of each batch, in-process) | "
              f"{C.fmt_s(summ_s)} (CPU {C.fmt_s(summ_cpu)}) | |",
              f"| lake bytes: all / metrics / rank_summary | {C.fmt_bytes(lake_bytes)} / "
              f"{C.fmt_bytes(sizes['metrics'])} / {C.fmt_bytes(sizes['rank_summary'])} "
              f"({sizes['rank_summary'] / sizes['metrics']:.0%} of metrics) | |",
              "", "| correctness | result |", "|---|---|",
              f"| summary vs metrics rows: the same 10 (run, call path), imbalance/mean/max/std/present (rtol 1e-12), "
              f"top ranks | {'**OK**' if ok else '**MISMATCH**'} |", "",
              f"Workers ran as `{summary['cmd']}` and `{rows['cmd']}`; repetitions (summary): "
              + ", ".join(f"{x:.3f}" for x in summary["info"]["times"]) + " s; (rows): "
              + ", ".join(f"{x:.3f}" for x in rows["info"]["times"]) + " s; 1-minute load before each: "
              f"{loads_str(summary['info']['loads'])}; {loads_str(rows['info']['loads'])}; CLI "
              f"{C.load_note(cli['load'])}."]
    return name, "\n".join(lines) + "\n", ok


BENCHMARKS = {"ingest-cali": bench_ingest_cali, "groupby": bench_groupby, "ensemble": bench_ensemble,
              "ingest-runs": bench_ingest_runs, "imbalance": bench_imbalance, "imbalance-runs": bench_imbalance_runs}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "probe":
        return probe_main(argv[1:])
    if argv and argv[0] == "worker":
        return worker_main(argv[1:])
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="smoke test: small sizes")
    p.add_argument("--skip-hatchet", action="store_true", help="perflake only (no Thicket/Hatchet, no check)")
    p.add_argument("--reps", type=int, default=3, help="repetitions of ingests and of the imbalance call (3)")
    p.add_argument("--fast-reps", type=int, default=5, help="repetitions of the sub-second analytics (5)")
    p.add_argument("--hatchet-reps", type=int, default=3, help="runs of Hatchet's imbalance recipe (3)")
    p.add_argument("--results", type=pathlib.Path, default=C.RESULTS, help="Markdown file to update")
    p.add_argument("--only", action="append", help=f"run only this benchmark (repeatable): {', '.join(KEYS)} or a "
                                                   "section name; names of the other bench scripts are ignored")
    p.add_argument("--max-load", type=float, default=1.0, help="wait for a 1-min load average below this (1.0)")
    p.add_argument("--poll", type=float, default=10.0, help=argparse.SUPPRESS)
    p.add_argument("--max-wait", type=float, default=300.0, help=argparse.SUPPRESS)
    p.add_argument("--skip-profile", action="store_true", help="no cProfile run when a target is not met")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--write-results", action="store_true", help="update the results file also with --quick")
    g.add_argument("--no-results", action="store_true", help="do not touch the results file")
    a, unknown = p.parse_known_args(argv)
    if unknown:
        C.log(f"ignoring arguments of the other bench scripts: {' '.join(unknown)}")
    if min(a.reps, a.fast_reps, a.hatchet_reps) < 1:
        p.error("repetitions must be >= 1")
    size = SIZES["quick" if a.quick else "full"]
    names = section_names(size)
    by_name = {v: k for k, v in names.items()} | {v: k for k, v in section_names(SIZES["full"]).items()}
    selected = list(KEYS)
    if a.only:
        wanted = {by_name.get(o, o) for o in a.only}
        selected = [k for k in KEYS if k in wanted]
        if not selected:
            C.log(f"--only {' '.join(a.only)}: none of this script's benchmarks ({', '.join(KEYS)}); nothing to do")
            return 0
    if not C.PROJECT_PY.exists():
        C.log(".venv/bin/python missing: create the project venv first")
        return 2
    command = shlex.join([C.rel(sys.executable), C.rel(SELF), *argv])
    if os.environ.get("PERFLAKE_BENCH_VIA"):
        command = f"{os.environ['PERFLAKE_BENCH_VIA']}`, which runs `{command}"
    ctx = Ctx(a, size, command, C.machine_info(bench_venv=not a.skip_hatchet))
    ctx.selected, ctx.done = selected, set()
    ctx.cache["load_start"] = {}
    C.WORK.mkdir(parents=True, exist_ok=True)
    write = not a.no_results and (not a.quick or a.write_results)
    status = 0
    for key in selected:
        C.release_memory()
        ctx.cache["load_start"][names[key]] = C.load_str()
        ctx.machine["git"] = C.git_state()  # others may commit while this runs: the state at each section's start
        C.log(f"== {names[key]}")
        try:
            name, text, ok = BENCHMARKS[key](ctx)
        except Exception as exc:  # noqa: BLE001 - report, go on with the next benchmark, fail at the end
            import traceback

            traceback.print_exc()
            C.log(f"{key} FAILED: {type(exc).__name__}: {exc}")
            status = 2
            continue
        ctx.done.add(key)
        print(text, flush=True)
        if write:
            C.update_results(a.results, name, text)
            C.log(f"updated section '{name}' of {C.rel(a.results)}")
        if ok is not None:
            print(f"correctness {name}: {'OK' if ok else 'MISMATCH'}", flush=True)
        if ok is False:
            status = max(status, 1)
    return status


if __name__ == "__main__":
    sys.exit(main())
