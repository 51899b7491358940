#!/usr/bin/env python3
"""Benchmark of issue 22 item 1: how perflake should list a Delta table's live data files for a question --
its own log reader (``perflake.catalogs.delta_log.LogReader(location, key).snapshot()``, what
``catalogs/delta.py`` ``DeltaTables.snapshot/live`` use) or delta-rs (``deltalake.DeltaTable(uri)`` then
``get_add_actions(flatten=True)``, a kept handle brought forward by ``update_incremental()``, its listing cached
by table identity and version).

    .venv/bin/python bench/bench_delta_listing.py                     # 10, 1,000 and 10,000 commits
    .venv/bin/python bench/bench_delta_listing.py --sizes 10,1000     # a quick run (builds in ~1 min)
    .venv/bin/python bench/bench_delta_listing.py --procs 3 --reps 20 # fewer repetitions
    .venv/bin/python bench/bench_delta_listing.py --rebuild           # build the tables again
    .venv/bin/python bench/bench_delta_listing.py --json out.json     # the raw numbers as well

Arguments: ``--sizes`` commits per table, comma-separated (default 10,1000,10000); ``--procs`` fresh processes per
cold measurement (default 5); ``--reps`` warm repetitions (default 50); ``--work`` the tables' folder (default
bench/work/delta-listing, git-ignored); ``--rebuild``; ``--max-load`` / ``--max-wait``: before each phase, wait
until the 1-minute load average is below ``--max-load`` (default 1.5), at most ``--max-wait`` s (default 120), and
measure anyway (the load seen is printed with each phase); ``--json FILE``.

The tables (built once, reused when their stamp ``built.json`` matches; 10,000 commits take several minutes):
``<work>/c<N>/metrics``, N commits -- ``DeltaTable.create`` (version 0, configuration
``delta.checkpointInterval=100`` as perflake's) then N-1 appends of 8 rows each (``batch`` string,
``node_id``/``count`` int64, ``rank`` int32, ``time`` float64) by ``write_deltalake`` on a kept handle with
``PostCommitHookProperties(create_checkpoint=True, cleanup_expired_logs=False)`` as catalogs/delta.py (the handle
opened again after every 100 commits: one kept over thousands of commits slows down), N-1 live files. delta-rs
writes the checkpoint of version v when v+1 is a multiple of 100 (99, 199, ...): the latest version N-1 of the
1,000- and 10,000-commit tables is a checkpoint (the shortest replay); version N-2 is the checkpoint before it and
99 JSON commits (the longest). The 10-commit table has no checkpoint.

Measured, for each size:

* COLD: a fresh ``python -c`` process (the ``COLD`` code below, nothing else imported) that imports what it needs and
  lists the live files once -- own: ``from perflake.catalogs.delta_log import LogReader`` then
  ``LogReader(loc, "batch").snapshot()``; delta-rs: ``from deltalake import DeltaTable`` then
  ``DeltaTable(loc).get_add_actions(flatten=True)``; "start-up": the same process listing nothing.  Wall of the
  whole process (seen by this script), of the import and of the listing alone (seen by the process), peak RSS;
  best / median of ``--procs`` processes, the two sides alternating.  Once bare (only the lister imported:
  the own reader then imports pyarrow, pyarrow.parquet and pyarrow.compute itself to read a checkpoint, inside
  its listing), once with ``import pyarrow, pyarrow.parquet, pyarrow.compute`` done first and not timed: what a
  perflake question process has loaded before it lists a table (``import perflake.lake`` loads them, and
  duckdb, not deltalake); in that mode also the listing of version N-2 (``snapshot(N-2)`` /
  ``DeltaTable(loc, version=N-2)``): the longest replay.  The files are in the OS page cache (a fresh process,
  not a cold disk).
* WARM, in one process per size, on a copy of the table (the original stays at N commits): each side listed once
  first (timed: "first listing in the process"; delta-rs opens its handle then); then ``--reps`` times: one commit
  appended (by another handle, not timed), then each side lists the table (order alternating) -- "new commit";
  then ``--reps`` times with no new commit (the pure "is there a new version?" check). Twice: the raw listing
  (own: ``LogReader(loc, "batch").snapshot()``, a new reader each time as DeltaTables.snapshot makes, the module's
  snapshot cache brought forward by the new commit; delta-rs: the kept handle -- ``delta_log.identity(loc)``
  checked as DeltaTables.table does, ``update_incremental()``, ``version()``, ``get_add_actions(flatten=True)``
  only when (identity, version) changed), and perflake's form (``DeltaTables(root).live("metrics")``: the 4-column
  pyarrow table path/size/min_batch/max_batch, cached per version; delta-rs: the same table made from the add
  actions, cached the same way). Medians (and best). At the end both sides' files are compared (path, size, min
  and max batch).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import time

BENCH = pathlib.Path(__file__).resolve().parent
REPO = BENCH.parent
PY = REPO / ".venv" / "bin" / "python"
SELF = pathlib.Path(__file__).resolve()
TABLE = "metrics"  # KEY_COLUMN["metrics"] == "batch": DeltaTables.live reads it by that name
ROWS = 8
SIDES = ("own", "delta-rs")

# The cold process: only what the listing needs (plus json/time/resource to report), nothing of this script.
COLD = r"""
import time
t0 = time.perf_counter()
import sys
side, loc, preload = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
at = int(sys.argv[4]) if sys.argv[4] else None
if preload:  # what a perflake question process has loaded before it lists a table (import perflake.lake)
    import pyarrow, pyarrow.parquet, pyarrow.compute
t1 = time.perf_counter()
version = files = None
if side == "own":
    from perflake.catalogs.delta_log import LogReader
    t2 = time.perf_counter()
    snap = LogReader(loc, "batch").snapshot(at)
    version, files = snap.version, len(snap.files)
elif side == "delta-rs":
    from deltalake import DeltaTable
    t2 = time.perf_counter()
    dt = DeltaTable(loc, version=at)
    acts = dt.get_add_actions(flatten=True)
    version, files = dt.version(), acts.num_rows
else:
    t2 = time.perf_counter()
t3 = time.perf_counter()
import json
hwm = int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0])
print(json.dumps({"preload_s": t1 - t0, "import_s": t2 - t1, "list_s": t3 - t2, "version": version,
                  "files": files, "pyarrow": "pyarrow" in sys.modules, "maxrss_kib": hwm}))
"""


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def wait_load(max_load: float, max_wait: float, label: str) -> str:
    """Wait for the 1-minute load average to fall below ``max_load`` (at most ``max_wait`` s): what was seen."""
    t = time.monotonic()
    while True:
        load = os.getloadavg()
        waited = time.monotonic() - t
        if load[0] < max_load or waited >= max_wait:
            note = "/".join(f"{x:.2f}" for x in load)
            if waited >= 1:
                note += f" (waited {waited:.0f} s{'' if load[0] < max_load else f', above {max_load}'})"
            log(f"{label}: load {note}")
            return note
        time.sleep(10)


# -- the tables ---------------------------------------------------------------------------------------------
def schema():
    import pyarrow as pa

    return pa.schema([("batch", pa.string()), ("node_id", pa.int64()), ("rank", pa.int32()),
                      ("time", pa.float64()), ("count", pa.int64())])


def batch_rows(i: int):
    import pyarrow as pa

    return pa.table({"batch": [f"20261127T0000-{i:06d}"] * ROWS, "node_id": list(range(ROWS)),
                     "rank": pa.array([i % 16] * ROWS, pa.int32()), "time": [i * 1e-3 + k for k in range(ROWS)],
                     "count": [i + k for k in range(ROWS)]}, schema=schema())


def hooks():
    from deltalake import PostCommitHookProperties

    return PostCommitHookProperties(create_checkpoint=True, cleanup_expired_logs=False)


def build(work: pathlib.Path, n: int, rebuild: bool) -> pathlib.Path:
    """``<work>/c<n>/metrics`` with n commits (reused when stamped; a build interrupted is carried on from the
    version it reached: every commit is atomic)."""
    root = work / f"c{n}"
    stamp = root / "built.json"
    want = {"commits": n, "rows": ROWS, "checkpointInterval": "100"}
    if not rebuild and stamp.exists():
        got = json.loads(stamp.read_text())
        if {k: got.get(k) for k in want} == want:
            log(f"c{n}: reused ({got.get('build_s', 0):.0f} s to build)")
            return root / TABLE
    from deltalake import DeltaTable, write_deltalake

    t = time.perf_counter()
    if rebuild or not (root / TABLE / "_delta_log" / f"{0:020d}.json").exists():
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        dt = DeltaTable.create(str(root / TABLE), schema(), configuration={"delta.checkpointInterval": "100"})
    else:
        dt = DeltaTable(str(root / TABLE))
        log(f"c{n}: carrying on from version {dt.version()}")
    h = hooks()
    for i in range(dt.version() + 1, n):
        write_deltalake(dt, batch_rows(i), mode="append", post_commithook_properties=h)
        if i % 100 == 0:
            # a handle kept over thousands of commits slows down (at 7,000 commits: ~600 ms an append against
            # ~60 ms on a handle just opened): a new one after each checkpoint
            dt = DeltaTable(str(root / TABLE))
        if i % 1000 == 0:
            log(f"c{n}: {i} commits, {time.perf_counter() - t:.0f} s")
    assert dt.version() == n - 1, dt.version()
    took = time.perf_counter() - t
    stamp.write_text(json.dumps({**want, "version": n - 1, "live_files": n - 1, "build_s": took}))
    log(f"c{n}: built in {took:.1f} s")
    return root / TABLE


# -- cold -------------------------------------------------------------------------------------------------
def run_child(args: list[str], attempts: int = 4) -> tuple[float, str]:
    """A child process's wall time and stdout; a failure (an import mid-edit by another engineer) is retried a
    minute later."""
    for attempt in range(attempts):
        t = time.perf_counter()
        p = subprocess.run(args, capture_output=True, text=True, cwd=REPO)
        wall = time.perf_counter() - t
        if p.returncode == 0:
            return wall, p.stdout
        log(f"child failed (rc {p.returncode}), retrying in 60 s: {p.stderr.strip().splitlines()[-1:]}")
        time.sleep(60)
    raise SystemExit(f"child failed {attempts} times: {' '.join(args[:3])}")


def cold(loc: pathlib.Path, procs: int, preload: bool, at: int | None = None) -> dict:
    out = {s: [] for s in ("start-up", *SIDES)}
    for i in range(procs):
        for side in (("start-up", *SIDES) if i % 2 == 0 else ("start-up", *SIDES[::-1])):
            wall, stdout = run_child([str(PY), "-c", COLD, side, str(loc), "1" if preload else "0",
                                      "" if at is None else str(at)])
            if side != "start-up" and at is not None:
                assert json.loads(stdout.strip().splitlines()[-1])["version"] == at
            rec = json.loads(stdout.strip().splitlines()[-1])
            rec["wall_s"] = wall
            out[side].append(rec)
    return out


# -- warm -------------------------------------------------------------------------------------------------
def warm_worker(table: pathlib.Path, reps: int) -> dict:
    """In one process, on a copy of ``table``: the measurements of the WARM part (see the module's text)."""
    import gc

    import pyarrow as pa
    import pyarrow.compute as pc
    from deltalake import DeltaTable, write_deltalake

    from perflake.catalogs import delta_log
    from perflake.catalogs.delta import DeltaTables

    scratch = table.parent.parent / f"scratch-{table.parent.name}"
    shutil.rmtree(scratch, ignore_errors=True)
    shutil.copytree(table.parent, scratch)
    loc = str(scratch / TABLE)
    writer = DeltaTable(loc)
    h = hooks()
    n_appended = [0]

    def append() -> int:
        n_appended[0] += 1
        write_deltalake(writer, batch_rows(10_000_000 + n_appended[0]), mode="append", post_commithook_properties=h)
        return writer.version()

    class Kept:
        """delta-rs as perflake would use it: one handle kept, brought forward, its listing cached by (table
        identity, version); ``form``: perflake's live-files table made from the add actions."""

        def __init__(self, form: bool):
            self.form, self.h, self.mark, self.key, self.out = form, None, None, None, None

        def __call__(self):
            now = delta_log.identity(loc)
            if self.h is None or now is None or now != self.mark:  # the first call opens the table
                self.h, self.mark = DeltaTable(loc), now
            else:
                self.h.update_incremental()
            key = (now, self.h.version())
            if key != self.key:
                acts = self.h.get_add_actions(flatten=True)
                if self.form:
                    t = pa.table(acts)
                    acts = pa.table({"path": pc.binary_join_element_wise(loc, t.column("path"), "/"),
                                     "size": t.column("size_bytes"), "min_batch": t.column("min.batch"),
                                     "max_batch": t.column("max.batch")})
                self.key, self.out = key, acts
            return key[1], self.out

    def own_raw():
        snap = delta_log.LogReader(loc, "batch").snapshot()
        return snap.version, snap

    tables = DeltaTables(str(scratch))

    def own_form():
        return tables.live(TABLE)

    def series(fns: dict, new_commit: bool) -> dict:
        times = {k: [] for k in fns}
        gc.collect()
        for i in range(reps):
            expect = append() if new_commit else None
            for name in (list(fns) if i % 2 == 0 else list(fns)[::-1]):
                t = time.perf_counter()
                version, _ = fns[name]()
                times[name].append(time.perf_counter() - t)
                if expect is not None and version != expect:
                    raise AssertionError(f"{name}: version {version}, expected {expect}")
        return times

    res = {"base_version": writer.version()}
    pa.array(["x"], pa.string())  # pyarrow's first pa.array/pa.table of Python data imports pandas (0.3-0.4 s):
    # done here, so that neither side's first listing below carries it
    # the first listing of each (as a question after the process's first one would find them)
    first = {}
    for name, fn in (("own", own_raw), ("delta-rs", (raw := Kept(False))), ("own-form", own_form),
                     ("delta-rs-form", (form := Kept(True)))):
        t = time.perf_counter()
        fn()
        first[name] = time.perf_counter() - t
    res["first"] = first
    res["new_raw"] = series({"own": own_raw, "delta-rs": raw}, True)
    res["same_raw"] = series({"own": own_raw, "delta-rs": raw}, False)
    res["new_form"] = series({"own": own_form, "delta-rs": form}, True)
    res["same_form"] = series({"own": own_form, "delta-rs": form}, False)
    # the check: both sides list the same files at the end
    snap = delta_log.LogReader(loc, "batch").snapshot()
    acts = pa.table(Kept(False)()[1])
    theirs = {delta_log.file_name(p): (s, lo, hi) for p, s, lo, hi in zip(
        *(acts.column(c).to_pylist() for c in ("path", "size_bytes", "min.batch", "max.batch")))}
    live = tables.live(TABLE)[1]
    ours_form = {p[len(loc) + 1:]: (s, lo, hi) for p, s, lo, hi in zip(
        *(live.column(c).to_pylist() for c in ("path", "size", "min_batch", "max_batch")))}
    res["check"] = {"version": snap.version, "files": len(snap.files), "same": snap.files == theirs == ours_form}
    res["rss_kib"] = int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0])
    shutil.rmtree(scratch, ignore_errors=True)
    return res


def warm(table: pathlib.Path, reps: int) -> dict:
    _, stdout = run_child([str(PY), str(SELF), "warm-worker", str(table), str(reps)])
    return json.loads(stdout.strip().splitlines()[-1])


# -- report -----------------------------------------------------------------------------------------------
def ms(x: float) -> str:
    return f"{x * 1e3:.1f}" if x < 0.1 else f"{x * 1e3:.0f}"


def bm(xs: list[float]) -> str:
    return f"{ms(min(xs))} / {ms(statistics.median(xs))}"


def report(results: dict) -> str:
    lines = ["COLD: a fresh process listing once; ms, best / median of the processes (process wall: interpreter"
             " start-up included); *: pyarrow, pyarrow.parquet and pyarrow.compute imported first, not timed (as in"
             " a perflake question process)", "",
             "| commits (live files) | side | process wall | import | listing | peak RSS | import* | listing* |"
             " listing* of version N-2 (checkpoint + 99 commits) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for n, r in results.items():
        bare, pre, replay = r["cold"], r["cold_pyarrow"], r["cold_replay"]
        for side in ("start-up", *SIDES):
            b, p, q = bare[side], pre[side], replay[side]
            rss = f"{max(x['maxrss_kib'] for x in b) / 1024:.0f} MiB"
            if side == "start-up":
                lines.append(f"| {n:,} ({r['live_files']:,}) | python start-up only | {bm([x['wall_s'] for x in b])} |"
                             f" | | {rss} | | | |")
                continue
            lines.append(f"| {n:,} ({b[0]['files']:,}) | {side} | {bm([x['wall_s'] for x in b])} | "
                         f"{bm([x['import_s'] for x in b])} | {bm([x['list_s'] for x in b])} | {rss} | "
                         f"{bm([x['import_s'] for x in p])} | {bm([x['list_s'] for x in p])} | "
                         f"{bm([x['list_s'] for x in q])} |")
    lines += ["", "WARM: in one process; ms, median (best) of the repetitions; delta-rs - own > 0: the own reader"
              " is cheaper", "",
              "| commits | case | own reader | delta-rs (kept handle) | delta-rs - own |", "|---|---|---|---|---|"]
    cases = (("new_raw", "new commit, raw listing"), ("same_raw", "no new commit, raw listing"),
             ("new_form", "new commit, perflake's live table"), ("same_form", "no new commit, perflake's live table"))
    for n, r in results.items():
        w = r["warm"]
        for key, label in cases:
            o, d = w[key]["own"], w[key]["delta-rs"]
            lines.append(f"| {n:,} | {label} | {ms(statistics.median(o))} ({ms(min(o))}) | "
                         f"{ms(statistics.median(d))} ({ms(min(d))}) | "
                         f"{(statistics.median(d) - statistics.median(o)) * 1e3:+.1f} |")
        f = w["first"]
        lines.append(f"| {n:,} | first listing in the process (raw; delta-rs: opening the table) | {ms(f['own'])} |"
                     f" {ms(f['delta-rs'])} | {(f['delta-rs'] - f['own']) * 1e3:+.1f} |")
    lines += ["", "loads (1/5/15-min) and checks:"]
    for n, r in results.items():
        c = r["warm"]["check"]
        lines.append(f"- {n:,} commits: cold {r['load_cold']}; cold* {r['load_cold_pyarrow']}; cold* of version"
                     f" N-2 {r['load_cold_replay']}; warm"
                     f" {r['load_warm']}; warm process peak RSS {r['warm']['rss_kib'] / 1024:.0f} MiB;"
                     f" same files at the end (version {c['version']}, {c['files']:,} files): "
                     f"{'OK' if c['same'] else '**DIFFERENT**'}")
    return "\n".join(lines)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "warm-worker":
        print(json.dumps(warm_worker(pathlib.Path(sys.argv[2]), int(sys.argv[3]))))
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10,1000,10000")
    ap.add_argument("--procs", type=int, default=5)
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--work", type=pathlib.Path, default=BENCH / "work" / "delta-listing")
    ap.add_argument("--rebuild", action="store_true")
    ap.add_argument("--max-load", type=float, default=1.5)
    ap.add_argument("--max-wait", type=float, default=120.0)
    ap.add_argument("--json", type=pathlib.Path)
    a = ap.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")]
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--", "catalogs/delta_log.py",
                            "catalogs/delta.py"], capture_output=True, text=True).stdout.strip()
    def src() -> str:  # the own reader is being edited by others: which version was measured
        return hashlib.sha256((REPO / "catalogs" / "delta_log.py").read_bytes()).hexdigest()[:12]

    srcs = [src()]
    tables = {n: build(a.work, n, a.rebuild) for n in sizes}
    results = {}
    for n, table in tables.items():
        r = results[n] = {"live_files": n - 1}
        r["load_cold"] = wait_load(a.max_load, a.max_wait, f"c{n} cold")
        r["cold"] = cold(table, a.procs, preload=False)
        r["load_cold_pyarrow"] = wait_load(a.max_load, a.max_wait, f"c{n} cold, pyarrow first")
        r["cold_pyarrow"] = cold(table, a.procs, preload=True)
        r["load_cold_replay"] = wait_load(a.max_load, a.max_wait, f"c{n} cold, pyarrow first, version N-2")
        r["cold_replay"] = cold(table, a.procs, preload=True, at=n - 2)
        r["load_warm"] = wait_load(a.max_load, a.max_wait, f"c{n} warm")
        r["warm"] = warm(table, a.reps)
        srcs.append(src())
        log(f"c{n}: done (delta_log.py {srcs[-1]})")
    import deltalake

    print(f"git {head}{' (delta_log.py/delta.py modified in the worktree)' if dirty else ''}, "
          f"catalogs/delta_log.py sha256 {' -> '.join(dict.fromkeys(srcs))}; deltalake {deltalake.__version__}; "
          f"{a.procs} processes, {a.reps} repetitions; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n")
    print(report(results))
    if a.json:
        a.json.write_text(json.dumps({"git": head, "delta_log_sha256": srcs, "results": results}, indent=1))


if __name__ == "__main__":
    main()
