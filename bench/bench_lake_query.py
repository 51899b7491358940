#!/usr/bin/env python3
"""Benchmark of issue 16 item 8: a call-path query across the runs of a lake, answered together
(``lake.query``: perflake.analytics.lake_match) against run by run (``perflake.analytics.lake_query.query(...,
per_run=True)``, what ``lake.query`` did before), same lake, same process kind.

    .venv/bin/python bench/bench_lake_query.py                 # 1,000 runs x 1,000 nodes x 16 ranks (target < 2 s)
    .venv/bin/python bench/bench_lake_query.py --runs 200      # a smaller lake (a loaded machine)
    .venv/bin/python bench/bench_lake_query.py --quick         # smoke test: 20 runs x 200 nodes x 4 ranks
    .venv/bin/python bench/bench_lake_query.py --skip-old      # the new way only (no equality check)

The lake: ``perflake.generators.WRITERS["caliper"](out, nodes=N, ranks=R, runs=K, seed=1)`` (json-split; the
same files as bench_analytics.py's ``ensure_json_runs``, reused when stamped) ingested once into
bench/work/lakes/lake-query-KxNxR/ (reused when stamped).  The queries:

* ``structure``: ``MATCH (".", p)->("*")->(".", q) WHERE p."name" =~ "solve_.*" AND q."name" =~ "MPI_.*"``
  (the issue's query): new way best / median of ``--reps`` calls, old way once;
* ``mixed``: the same with ``AND q."time" > 0.001`` (a metric condition: one DuckDB pass over the metrics),
  new way only at full size; checked against the old way over the first ``--check-runs`` runs.

Each side runs in a fresh process (``worker``) under ``/usr/bin/time -f %M`` (whole-process peak RSS); before each
timed process the 1-minute load average must fall below ``--max-load`` (polled, at most ``--max-wait`` s; the
load measured is printed).  The rows of both ways are compared (pandas ``assert_frame_equal``).  Prints one
Markdown section; writes a results file only with ``--results FILE``.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import shlex
import shutil
import statistics
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import common as C  # noqa: E402

SELF = pathlib.Path(__file__).resolve()
SEED = 1
QUERIES = {
    "structure": 'MATCH (".", p)->("*")->(".", q) WHERE p."name" =~ "solve_.*" AND q."name" =~ "MPI_.*"',
    "mixed": 'MATCH (".", p)->("*")->(".", q) WHERE p."name" =~ "solve_.*" AND q."name" =~ "MPI_.*" '
             'AND q."time" > 0.001',
}
TARGET_S = 2.0


# -- worker: one way, in a fresh process --------------------------------------------------------------------
def worker_main(argv) -> int:
    p = argparse.ArgumentParser(prog="bench_lake_query.py worker")
    p.add_argument("way", choices=["new", "old"])
    p.add_argument("--lake", required=True)
    p.add_argument("--query", required=True)
    p.add_argument("--reps", type=int, default=1)
    p.add_argument("--first", type=int, default=0, help="only the first N runs (0: all)")
    p.add_argument("--out", required=True)
    a = p.parse_args(argv)
    import perflake
    from perflake.analytics import lake_query

    lake = perflake.Lake(a.lake)
    runs = None
    if a.first:
        runs = list(lake.sql("select run_id from runs order by run_id")["run_id"][: a.first])
    info = {"rss_after_import_kib": C.rss_status().get("VmHWM"), "times": [], "cpus": []}
    df = None
    for _ in range(a.reps):
        t, c = time.perf_counter(), time.process_time()
        df = lake_query.query(lake, a.query, runs=runs, per_run=a.way == "old")
        info["times"].append(time.perf_counter() - t)
        info["cpus"].append(time.process_time() - c)
    info["rows"] = len(df)
    info["rss_hwm_kib"] = C.rss_status().get("VmHWM")
    df.to_pickle(a.out)
    print("RESULT " + json.dumps(info), flush=True)
    return 0


# -- driver ---------------------------------------------------------------------------------------------------
def ensure_lake(nodes: int, ranks: int, runs: int) -> tuple[pathlib.Path, dict]:
    import bench_analytics as BA

    files, gen_dir, gen = BA.ensure_json_runs(nodes, ranks, runs)
    lake_dir = C.WORK / "lakes" / f"lake-query-{runs}x{nodes}x{ranks}"
    params = {"inputs": str(gen_dir), "runs": runs, "nodes": nodes, "ranks": ranks, "seed": SEED}
    info = {"inputs": gen_dir, "input_bytes": sum(f.stat().st_size for f in files), "generated": gen}
    if C.stamp_ok(lake_dir / ".complete.json", params):
        return lake_dir / "lake", info
    shutil.rmtree(lake_dir, ignore_errors=True)
    lake_dir.mkdir(parents=True)
    C.log(f"ingesting {runs} runs into {C.rel(lake_dir / 'lake')} ...")
    ing = C.run_measured([str(C.PERFLAKE_CLI), "ingest", str(gen_dir), "--lake", str(lake_dir / "lake"), "--quiet"],
                         timeout=7200)
    if ing["rc"] != 0:
        raise RuntimeError(f"ingest failed: {ing['stderr'][-2000:]}")
    C.write_stamp(lake_dir / ".complete.json", params)
    info["ingest"] = {"wall_s": ing["wall_s"], "rss_kib": ing["rss_kib"]}
    C.log(f"ingested in {ing['wall_s']:.1f} s (peak RSS {C.mib(ing['rss_kib'])})")
    return lake_dir / "lake", info


def run_worker(a, way: str, lake: pathlib.Path, query: str, reps: int, out: pathlib.Path, first: int = 0) -> dict:
    w = C.wait_for_load(a.max_load, a.poll, a.max_wait, label=f"{way} worker")
    cmd = [str(C.PROJECT_PY), str(SELF), "worker", way, "--lake", str(lake), "--query", query, "--reps", str(reps),
           "--out", str(out), "--first", str(first)]
    res = C.run_measured(cmd, timeout=4 * 3600)
    if res["rc"] != 0:
        raise RuntimeError(f"{way} worker failed: {res['stderr'][-3000:]}")
    info = C.result_line(res["stdout"])
    info.update({"load": w, "rss_kib": res["rss_kib"], "wall_s": res["wall_s"],
                 "cmd": shlex.join([C.rel(x) if x.startswith("/") else x for x in cmd])})
    C.log(f"{way}: {', '.join(f'{t:.3f}' for t in info['times'])} s, {info['rows']:,} rows, peak RSS "
          f"{C.mib(res['rss_kib'])} (1-min load before {w['load1']:.2f})")
    return info


def same(a_path: pathlib.Path, b_path: pathlib.Path) -> tuple[bool, str]:
    import pandas as pd

    a, b = pd.read_pickle(a_path), pd.read_pickle(b_path)
    try:
        pd.testing.assert_frame_equal(a, b)
    except AssertionError as exc:
        return False, str(exc).splitlines()[0]
    return True, f"{len(a):,} rows identical"


def best_med(ts) -> str:
    return f"{min(ts):.3f} s / {statistics.median(ts):.3f} s"


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "worker":
        return worker_main(argv[1:])
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=1000)
    p.add_argument("--nodes", type=int, default=1000)
    p.add_argument("--ranks", type=int, default=16)
    p.add_argument("--quick", action="store_true", help="20 runs x 200 nodes x 4 ranks")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--check-runs", type=int, default=50, help="runs the mixed query is checked on, old way (50)")
    p.add_argument("--skip-old", action="store_true")
    p.add_argument("--max-load", type=float, default=1.0)
    p.add_argument("--poll", type=float, default=10.0)
    p.add_argument("--max-wait", type=float, default=300.0)
    p.add_argument("--results", type=pathlib.Path, help="update this Markdown file's section (default: print only)")
    a = p.parse_args(argv)
    if a.quick:
        a.runs, a.nodes, a.ranks = 20, 200, 4
    lake, made = ensure_lake(a.nodes, a.ranks, a.runs)
    tmp = lake.parent
    name = f"lake-query-{a.runs}x{a.nodes}x{a.ranks}"
    res, checks = {}, []
    res["new"] = run_worker(a, "new", lake, QUERIES["structure"], a.reps, tmp / "new.pkl")
    if not a.skip_old:
        res["old"] = run_worker(a, "old", lake, QUERIES["structure"], 1, tmp / "old.pkl")
        checks.append(("structure query, all runs", *same(tmp / "new.pkl", tmp / "old.pkl")))
    res["mixed"] = run_worker(a, "new", lake, QUERIES["mixed"], a.reps, tmp / "mixed.pkl")
    if not a.skip_old:
        n = min(a.check_runs, a.runs)
        res["mixed_new_sub"] = run_worker(a, "new", lake, QUERIES["mixed"], 1, tmp / "mixed-new.pkl", first=n)
        res["mixed_old_sub"] = run_worker(a, "old", lake, QUERIES["mixed"], 1, tmp / "mixed-old.pkl", first=n)
        checks.append((f"mixed query, first {n} runs", *same(tmp / "mixed-new.pkl", tmp / "mixed-old.pkl")))
    new, mixed = res["new"], res["mixed"]
    lines = [f"## {name}", "",
             f"- {C.now()}, {C.load_str()}; command `{shlex.join([C.rel(sys.executable), C.rel(SELF), *argv])}`",
             f"- lake: `WRITERS[\"caliper\"](out, nodes={a.nodes}, ranks={a.ranks}, runs={a.runs}, seed={SEED})` "
             f"({C.fmt_bytes(made['input_bytes'])} of json-split) ingested into `{C.rel(lake)}`",
             f"- structure query: `{QUERIES['structure']}`; mixed: `... AND q.\"time\" > 0.001`", "",
             "| measurement | answered together (new) | run by run (old) | ratio | target |", "|---|---|---|---|---|"]
    old = res.get("old")
    ratio = f"**{min(old['times']) / min(new['times']):,.0f}x**" if old else ""
    old_s = f"{old['times'][0]:.1f} s" if old else "not run"
    lines.append(f"| structure query, {a.runs} runs: best / median of {a.reps} (old: 1 call) | "
                 f"{best_med(new['times'])} | {old_s} | {ratio} | < {TARGET_S:g} s: "
                 f"{'met' if min(new['times']) < TARGET_S else 'NOT met'} |")
    lines.append(f"| peak RSS of the whole worker process (/usr/bin/time) | {C.mib(new['rss_kib'])} | "
                 f"{C.mib(old['rss_kib']) if old else ''} | | |")
    lines.append(f"| mixed query (one metric condition), {a.runs} runs | {best_med(mixed['times'])}, peak RSS "
                 f"{C.mib(mixed['rss_kib'])} | | | |")
    lines.append(f"| rows | {new['rows']:,} (mixed {mixed['rows']:,}) | {old['rows'] if old else ''} | | |")
    lines += ["", "| correctness: new vs old | result |", "|---|---|"]
    lines += [f"| {what} | {'OK' if ok else 'MISMATCH'}: {msg} |" for what, ok, msg in checks] or ["| not checked | |"]
    loads = {k: f"{v['load']['load1']:.2f}" for k, v in res.items()}
    lines += ["", f"1-minute load before each worker: {loads}; RSS after `import perflake`: "
                  f"{C.mib(new['rss_after_import_kib'])}."]
    text = "\n".join(lines) + "\n"
    print(text, flush=True)
    if a.results:
        C.update_results(a.results, name, text)
    return 0 if all(ok for _, ok, _ in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
