"""Measure Delta Lake (delta-rs) and Iceberg (pyiceberg + SQL catalog) on perflake's workloads.

    .venv/bin/python bench/table_format/bench.py small   --store delta   --commits 10000 [--max-seconds 900]
    .venv/bin/python bench/table_format/bench.py small   --store iceberg --commits 1000 [--expire-every 100]
    .venv/bin/python bench/table_format/bench.py batched --store delta   --runs 10000 --per-commit 1000
    .venv/bin/python bench/table_format/bench.py big     --store delta
    .venv/bin/python bench/table_format/bench.py concurrent --store delta --writers 4 --commits 200 [--s3]
    .venv/bin/python bench/table_format/bench.py evolve|timetravel|compact|read --store delta
    .venv/bin/python bench/table_format/bench.py small --store parquet   (today's layout, the baseline)

Every measurement appends one JSON object to bench/work/table_format/results.jsonl (with its command line);
docs/table-format.md quotes them.  Sizes and time limits are capped (the machine is shared): a capped run
says so in its record (``capped``) and gives per-window commit times to extrapolate from.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import protocol  # noqa: E402
import pyarrow as pa  # noqa: E402
from stores import Baseline, open_store  # noqa: E402

import data  # noqa: E402

RESULTS = data.WORK / "results.jsonl"
LAKES = data.WORK / "lakes"


def record(kind: str, rec: dict) -> dict:
    script = f"bench/table_format/{pathlib.Path(sys.argv[0]).name}"
    rec = {"workload": kind, "command": " ".join([".venv/bin/python", script, *sys.argv[1:]]),
           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "load_avg": os.getloadavg(), **rec}
    data.WORK.mkdir(parents=True, exist_ok=True)
    with open(RESULTS, "a") as fh:
        fh.write(json.dumps(rec, default=str) + "\n")
    print(json.dumps(rec, default=str, indent=1))
    return rec


def fresh_lake(name: str) -> str:
    root = LAKES / name
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    return str(root)


def make(kind: str, root: str, s3=None):
    if kind == "parquet":
        return Baseline(root)
    store = open_store(kind, root, s3)
    store.create(protocol.initial_schemas())
    return store


def du(root: str) -> tuple[int, int]:
    n = b = 0
    for d, _dirs, files in os.walk(root):
        for f in files:
            n, b = n + 1, b + os.path.getsize(os.path.join(d, f))
    return n, b


# -- (a) 10,000 small runs, one commit each -------------------------------------------------------------------
def w_small(a) -> dict:
    runs = data.Runs(data.prepare_small(10_000))
    server = s3 = None
    if a.s3:
        import s3server

        server = s3server.start()
        s3 = server.options(bucket="perflake", prefix=f"small-{a.store}-{int(time.time())}")
        root = s3.pop("root")
        if a.store == "iceberg":
            s3["catalog_dir"] = fresh_lake(f"small-{a.store}-s3-catalog")
    else:
        root = fresh_lake(f"small-{a.store}")
    try:
        return _small(a, runs, root, make(a.store, root, s3))
    finally:
        if server is not None:
            server.stop()


def _small(a, runs, root, store) -> dict:
    windows, t_all, done, capped = [], time.perf_counter(), 0, None
    t_win = time.perf_counter()
    for i in range(a.commits):
        if a.store == "parquet":
            store.commit([runs.run(i)])
        else:
            protocol.commit(store, [runs.run(i)])
            if a.expire_every and (i + 1) % a.expire_every == 0:
                expire(store, keep=a.expire_every)
            if a.compact_every and (i + 1) % a.compact_every == 0:
                for name in ("runs", "nodes", "edges", "metrics", "ingest_log"):
                    store.compact(name)
        done = i + 1
        if done % a.window == 0:
            now = time.perf_counter()
            windows.append(round((now - t_win) / a.window * 1000, 1))
            t_win = now
            data.log(f"{a.store}: {done} commits, last window {windows[-1]} ms/commit")
        if time.perf_counter() - t_all > a.max_seconds:
            capped = f"stopped after {done} of {a.commits} commits at the {a.max_seconds:g} s limit"
            break
    total = time.perf_counter() - t_all
    files, nbytes = du(root) if not a.s3 else (None, None)
    rec = {"store": a.store, "s3": a.s3, "commits": done, "runs_per_commit": 1, "seconds": round(total, 2),
           "ms_per_commit_mean": round(total / done * 1000, 1), "ms_per_commit_by_window": windows,
           "window": a.window, "lake_files": files, "lake_bytes": nbytes, "capped": capped,
           "expire_every": a.expire_every or None, "compact_every": a.compact_every or None}
    if a.store != "parquet":
        rec["tables"] = {t: store.storage(t) for t in ("runs", "metrics")} if not a.s3 else None
        runs_now = store.read("runs", columns=["run_id"])
        rec["runs_visible"] = runs_now.num_rows
    if capped or done < 10_000:
        per = windows[-1] if windows else rec["ms_per_commit_mean"]
        rec["extrapolated_10000_s"] = round(total + (10_000 - done) * per / 1000, 0)
        rec["extrapolation"] = "remaining commits at the last window's ms/commit (a lower bound if it grows)"
    return record("small", rec)


def expire(store, keep: int) -> None:
    """Iceberg: expire all but the last ``keep`` snapshots of every table (bounds the metadata pyiceberg
    copies on every commit); Delta: nothing (its checkpoints bound the log already)."""
    if store.name != "iceberg":
        return
    for name in ("runs", "nodes", "edges", "metrics", "ingest_log"):
        t = store.table(name)
        snaps = sorted(t.snapshots(), key=lambda s: s.timestamp_ms)[:-keep]
        if snaps:
            t.maintenance.expire_snapshots().by_ids([s.snapshot_id for s in snaps]).commit()


# -- (a') the same runs, batched as ingest does ----------------------------------------------------------------
def w_batched(a) -> dict:
    runs = data.Runs(data.prepare_small(10_000))
    root = fresh_lake(f"batched-{a.store}")
    store = make(a.store, root)
    t0 = time.perf_counter()
    per = []
    for start in range(0, a.runs, a.per_commit):
        t1 = time.perf_counter()
        batch = runs.many(range(start, min(a.runs, start + a.per_commit)))
        if a.store == "parquet":
            store.commit(batch)
        else:
            protocol.commit(store, batch)
        per.append(round(time.perf_counter() - t1, 3))
    total = time.perf_counter() - t0
    files, nbytes = du(root)
    return record("batched", {"store": a.store, "runs": a.runs, "runs_per_commit": a.per_commit,
                              "seconds": round(total, 2), "seconds_per_commit": per, "lake_files": files,
                              "lake_bytes": nbytes})


# -- (b) one run of 10,000 nodes x 1,024 ranks --------------------------------------------------------------
def w_big(a) -> dict:
    folder = data.prepare_big()
    runs = data.Runs(folder)
    run = runs.run(0)
    rec = {"store": a.store, "metric_rows": run.tables["metrics"].num_rows, "node_rows": run.tables["nodes"].num_rows}
    times = []
    for rep in range(a.repeat):
        root = fresh_lake(f"big-{a.store}")
        store = make(a.store, root)
        t0 = time.perf_counter()
        if a.store == "parquet":
            store.commit([run])
        else:
            protocol.commit(store, [run], log=False)
        times.append(round(time.perf_counter() - t0, 3))
    rec["commit_seconds"] = times
    rec["lake_files"], rec["lake_bytes"] = du(root)
    t0 = time.perf_counter()
    if a.store == "parquet":
        import pyarrow.parquet as pq

        got = pa.concat_tables([pq.read_table(p) for p in store.cat.files("metrics", store.cat.batches())])
    else:
        got = store.read("metrics")
    rec["read_metrics_seconds"] = round(time.perf_counter() - t0, 3)
    rec["read_rows"] = got.num_rows
    return record("big", rec)


# -- (c) concurrent writers ------------------------------------------------------------------------------------
def w_concurrent(a) -> dict:
    import subprocess

    runs_folder = data.prepare_small(10_000)
    s3 = None
    server = None
    if a.s3:
        import s3server

        server = s3server.start()
        s3 = server.options(bucket="perflake", prefix=f"conc-{a.store}-{int(time.time())}")
        root = s3.pop("root")
        if a.store == "iceberg":
            s3["catalog_dir"] = fresh_lake(f"conc-{a.store}-s3-catalog")
    else:
        root = fresh_lake(f"conc-{a.store}")
    try:
        make(a.store, root, s3)
        env = dict(os.environ, TF_S3=json.dumps(s3) if s3 else "", TF_DISJOINT="1" if a.disjoint else "")
        cmd = [sys.executable, str(HERE / "writer.py"), a.store, root, str(runs_folder), str(a.commits)]
        t0 = time.perf_counter()
        procs = [subprocess.Popen([*cmd, str(w)], stdout=subprocess.PIPE, env=env, text=True)
                 for w in range(a.writers)]
        reader = subprocess.Popen([sys.executable, str(HERE / "writer.py"), a.store, root, str(runs_folder), "0",
                                   "reader"], stdout=subprocess.PIPE, env=env, text=True)
        outs = []
        for p in procs:
            out, _ = p.communicate(timeout=a.max_seconds)
            outs.append(json.loads(out.strip().splitlines()[-1]) if p.returncode == 0 else {"rc": p.returncode})
        wall = time.perf_counter() - t0
        reader.terminate()
        rout, _ = reader.communicate(timeout=60)
        rlines = [json.loads(x) for x in rout.strip().splitlines() if x.startswith("{")]
        check = verify(open_store(a.store, root, s3), data.Runs(runs_folder),
                       a.commits * a.writers if a.disjoint else a.commits)
    finally:
        if server is not None:
            server.stop()
    return record("concurrent", {
        "store": a.store, "s3": bool(a.s3), "disjoint_inputs": a.disjoint, "writers": a.writers,
        "commits_per_writer": a.commits,
        "seconds": round(wall, 2), "writers_out": outs, "reader": rlines[-1] if rlines else None, **check})


def verify(store, runs, n: int) -> dict:
    """Exactly once: the committed runs are the n inputs once each, and every committed run's rows are
    there once (no duplicate from a writer that lost, no row of an uncommitted batch in the view)."""
    got = store.read("runs")
    shas = got.column("content_sha256").to_pylist()
    expected = {runs.rows[i]["content_sha256"] for i in range(n)}
    metrics = store.read("metrics", columns=["run_id", "batch"])
    visible = protocol.committed(metrics, got)
    want_rows = sum(runs.run(i).tables["metrics"].num_rows for i in range(n))
    return {"runs_rows": len(shas), "distinct_hashes": len(set(shas)), "missing": len(expected - set(shas)),
            "extra": len(set(shas) - expected), "metrics_rows_all": metrics.num_rows,
            "metrics_rows_committed": visible.num_rows, "metrics_rows_expected": want_rows,
            "exactly_once": len(shas) == len(set(shas)) == n and visible.num_rows == want_rows}


# -- (d) schema evolution --------------------------------------------------------------------------------------
def w_evolve(a) -> dict:
    import pyarrow.compute as pc

    runs = data.Runs(data.prepare_small(10_000))
    root = fresh_lake(f"evolve-{a.store}")
    store = make(a.store, root)
    first, second = runs.run(0), runs.run(1)
    protocol.commit(store, [first])
    m = second.tables["metrics"]
    m = m.append_column("PAPI_TOT_CYC", pc.multiply(pc.cast(m.column("rank"), pa.float64()), 1e6))
    second.tables["metrics"] = m
    protocol.commit(store, [second])
    schema = store.arrow_schema("metrics")
    got = store.read("metrics")
    old = got.filter(pc.equal(got.column("run_id"), first.run_id))
    new = got.filter(pc.equal(got.column("run_id"), second.run_id))
    engines = read_engines(store)
    return record("evolve", {
        "store": a.store, "metrics_schema": [f"{f.name}: {f.type}" for f in schema],
        "new_column_nullable": schema.field("PAPI_TOT_CYC").nullable,
        "old_rows_null": old.column("PAPI_TOT_CYC").null_count == old.num_rows,
        "new_rows_values": new.column("PAPI_TOT_CYC").null_count == 0,
        "engines": {k: v for k, v in engines.items() if k != "frames"}})


def read_engines(store) -> dict:
    """The committed metrics read four ways from the table's file list (no DuckDB extension); equal?"""
    import duckdb
    import polars as pl
    import pyarrow.dataset as pads

    runs, files = protocol.snapshot_files(store)
    mfiles = [f.removeprefix("file://") for f in files["metrics"]]
    schema = store.arrow_schema("metrics")
    out, frames = {}, {}
    t0 = time.perf_counter()
    ref = protocol.committed(store.read("metrics"), runs)
    out["library_s"] = round(time.perf_counter() - t0, 3)
    t0 = time.perf_counter()
    if store.name == "iceberg":  # pyarrow.dataset matches columns by name: the library's own scan instead
        frames["pyarrow"] = ref
    else:
        ds = pads.dataset(mfiles, schema=schema, format="parquet")
        frames["pyarrow"] = protocol.committed(ds.to_table(), runs)
    out["pyarrow_dataset_s"] = round(time.perf_counter() - t0, 3)
    # Iceberg files may name a column differently from the table (pyiceberg writes "time (inc)" as
    # "time_x20_x28inc_x29": Avro-compatible names); a plain Parquet reader needs the mapping.
    physical = {f.name: f.name for f in schema}
    if store.name == "iceberg":
        from pyiceberg.schema import make_compatible_name

        physical = {f.name: make_compatible_name(f.name) for f in schema}
    out["physical_names_differ"] = sorted(k for k, v in physical.items() if k != v)
    t0 = time.perf_counter()
    con = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
    con.register("runs", runs.select(["run_id", "batch"]))
    cols = ", ".join(f'"{v}" as "{k}"' for k, v in physical.items())
    frames["duckdb"] = con.sql(f"select {cols} from read_parquet($f, union_by_name = true) m "
                               "semi join runs using (run_id, batch)", params={"f": mfiles}).to_arrow_table()
    out["duckdb_read_parquet_s"] = round(time.perf_counter() - t0, 3)
    t0 = time.perf_counter()
    lf = pl.scan_parquet(mfiles, missing_columns="insert", extra_columns="ignore",
                         schema=None).rename({v: k for k, v in physical.items() if k != v}, strict=False)
    frames["polars"] = lf.join(pl.from_arrow(runs.select(["run_id", "batch"])).lazy(), on=["run_id", "batch"],
                               how="semi").collect().to_arrow()
    out["polars_scan_parquet_s"] = round(time.perf_counter() - t0, 3)
    import lakeschema

    keys = ["run_id", "node_id", "rank", "thread"]
    for name, t in frames.items():
        t = t.cast(pa.schema([pa.field(f.name, pa.string() if pa.types.is_large_string(f.type) or
                                       pa.types.is_string_view(f.type) else f.type) for f in t.schema]))
        r = ref.cast(pa.schema([pa.field(f.name, pa.string() if pa.types.is_large_string(f.type) else f.type)
                                for f in ref.schema]))
        out[f"{name}_equal"] = lakeschema.same_rows(t.select(r.schema.names), r, keys)
    out["rows"] = ref.num_rows
    out["files"] = len(mfiles)
    out["frames"] = frames
    return out


# -- (e) snapshot reads / time travel ----------------------------------------------------------------------
def w_timetravel(a) -> dict:
    import datetime as dt

    runs = data.Runs(data.prepare_small(10_000))
    root = fresh_lake(f"tt-{a.store}")
    store = make(a.store, root)
    marks = []
    for i in range(30):
        protocol.commit(store, [runs.run(i)])
        if i in (9, 19):
            time.sleep(0.05)
            marks.append((i + 1, dt.datetime.now(dt.timezone.utc), store.version("runs")))
            time.sleep(0.05)
    res = {}
    for n, when, version in marks:
        by_time = store.read("runs", as_of=when).num_rows
        by_version = store.read("runs", as_of=version).num_rows
        pinned = store.read("runs", as_of=when)
        m = protocol.committed(store.read("metrics"), pinned)
        want = sum(runs.run(i).tables["metrics"].num_rows for i in range(n))
        res[str(n)] = {"runs_as_of_time": by_time, "runs_as_of_version": by_version,
                       "metrics_rows": m.num_rows, "metrics_expected": want}
    ok = all(v["runs_as_of_time"] == int(k) == v["runs_as_of_version"] and v["metrics_rows"] == v["metrics_expected"]
             for k, v in res.items())
    return record("timetravel", {"store": a.store, "as_of": res, "ok": ok})


# -- (f) compaction + vacuum, (g) reads before and after ----------------------------------------------------
def w_compact(a) -> dict:
    runs = data.Runs(data.prepare_small(10_000))
    root = fresh_lake(f"compact-{a.store}")
    store = make(a.store, root)
    t0 = time.perf_counter()
    for i in range(a.commits):
        protocol.commit(store, [runs.run(i)])
    load_s = time.perf_counter() - t0
    import datetime as dt

    before_time = dt.datetime.now(dt.timezone.utc)
    time.sleep(0.05)
    before = read_engines(store)
    before_frames = before.pop("frames")
    files_before = du(root)
    t0 = time.perf_counter()
    comp = {t: store.compact(t) for t in ("runs", "nodes", "edges", "metrics", "ingest_log")}
    compact_s = time.perf_counter() - t0
    after = read_engines(store)
    after_frames = after.pop("frames")
    import lakeschema

    keys = ["run_id", "node_id", "rank", "thread"]
    same = lakeschema.same_rows(after_frames["pyarrow"], before_frames["pyarrow"], keys)
    old_snapshot_rows = store.read("runs", as_of=before_time).num_rows
    files_mid = du(root)
    t0 = time.perf_counter()
    removed = {t: len(store.vacuum(t)) for t in ("runs", "nodes", "edges", "metrics", "ingest_log")}
    vacuum_s = time.perf_counter() - t0
    files_after = du(root)
    try:
        tt_after_vacuum = store.read("runs", as_of=before_time).num_rows
    except Exception as exc:  # the files of the old version are gone
        tt_after_vacuum = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
    final = read_engines(store)
    final.pop("frames")
    return record("compact", {
        "store": a.store, "commits": a.commits, "load_seconds": round(load_s, 1),
        "files_before": files_before, "compact_seconds": round(compact_s, 2), "files_after_compact": files_mid,
        "compact": {k: {kk: vv for kk, vv in (v or {}).items() if kk in ("numFilesAdded", "numFilesRemoved",
                                                                         "rewritten", "written")}
                    for k, v in comp.items()},
        "rows_equal_after_compact": same, "as_of_before_compaction_runs": old_snapshot_rows,
        "vacuum_seconds": round(vacuum_s, 2), "vacuum_removed": removed, "files_after_vacuum": files_after,
        "as_of_before_compaction_after_vacuum": tt_after_vacuum,
        "reads_before": before, "reads_after_compact": after, "reads_after_vacuum": final})


# -- SIGKILL during commits -------------------------------------------------------------------------------
def w_kill(a) -> dict:
    """Writers killed (SIGKILL) at random moments while committing the same inputs, then one writer run to
    the end: exactly once?  Rows of the killed writers' uncommitted batches: invisible, then vacuumed."""
    import random
    import signal
    import subprocess

    runs_folder = data.prepare_small(10_000)
    root = fresh_lake(f"kill-{a.store}")
    make(a.store, root)
    cmd = [sys.executable, str(HERE / "writer.py"), a.store, root, str(runs_folder), str(a.commits)]
    rnd = random.Random(7)
    killed = 0
    for k in range(a.kills):
        p = subprocess.Popen([*cmd, str(k)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        p.stdout.readline()  # "ready": the commit loop starts now
        time.sleep(rnd.uniform(0.05, 1.5))
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
            killed += 1
        p.wait()
    t0 = time.perf_counter()
    p = subprocess.run([*cmd, "999"], capture_output=True, text=True, timeout=a.max_seconds)
    final = json.loads(p.stdout.strip().splitlines()[-1])
    store = open_store(a.store, root)
    check = verify(store, data.Runs(runs_folder), a.commits)
    orphans_before = check["metrics_rows_all"] - check["metrics_rows_committed"]
    removed = protocol.vacuum_orphans(store, older_than_s=0)
    after = verify(store, data.Runs(runs_folder), a.commits)
    return record("kill", {"store": a.store, "inputs": a.commits, "kills": killed,
                           "final_writer": {k: final.get(k) for k in ("committed", "skipped_before", "lost", "errors")},
                           "final_seconds": round(time.perf_counter() - t0, 1), **check,
                           "orphan_metric_rows_before_vacuum": orphans_before, "orphan_batches_removed": removed,
                           "metrics_rows_all_after_vacuum": after["metrics_rows_all"],
                           "exactly_once_after_vacuum": after["exactly_once"]})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("workload", choices=["small", "batched", "big", "concurrent", "evolve", "timetravel", "compact",
                                         "kill"])
    ap.add_argument("--store", default="delta", choices=["delta", "delta-default", "iceberg", "parquet"])
    ap.add_argument("--commits", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=10_000)
    ap.add_argument("--per-commit", type=int, default=1000)
    ap.add_argument("--writers", type=int, default=4)
    ap.add_argument("--window", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--max-seconds", type=float, default=900)
    ap.add_argument("--expire-every", type=int, default=0)
    ap.add_argument("--kills", type=int, default=10)
    ap.add_argument("--compact-every", type=int, default=0, help="small: compact every table every N commits")
    ap.add_argument("--disjoint", action="store_true", help="concurrent: each writer its own inputs")
    ap.add_argument("--s3", action="store_true", help="against a moto S3 server on 127.0.0.1 (started here)")
    a = ap.parse_args()
    {"small": w_small, "batched": w_batched, "big": w_big, "concurrent": w_concurrent, "evolve": w_evolve,
     "timetravel": w_timetravel, "compact": w_compact, "kill": w_kill}[a.workload](a)


if __name__ == "__main__":
    main()
