#!/usr/bin/env python3
"""Benchmark of issue 16 item 4: ``regress`` between two groups of runs (5,000 vs 5,000 at full size).

Run with the project venv from the repository root (``make bench`` runs it through bench/run.sh)::

    .venv/bin/python bench/bench_regress.py                    # full size: 10,000 runs, 5,000 per group
    .venv/bin/python bench/bench_regress.py --quick            # smoke test: 200 runs, RESULTS.md untouched
    .venv/bin/python bench/bench_regress.py --runs 2000 --no-results

Section ``regress-5000-vs-5000`` (``regress-<n/2>-vs-<n/2>``): a nightly series of ``--runs`` runs of one
application, ``perflake.generators.nightly.nightly_series(runs=N, nodes=100, ranks=4, seed=1, shifts=((0.03,
N//4), (0.10, N//2), (0.30, 3N//4)))`` written as Caliper json-split files (``write_nightly``), generated once
under bench/work/ and stamped with the generator's source hash, ingested once into a lake (timed, not a
target).  Baseline: builds 1..N/2; candidate: builds N/2+1..N (``cast(metadata->>'$.build' as int)`` in SQL).

* perflake in-process: ``perflake.analytics.regress.regress(Lake(root), BASE, CAND, metric="time")`` (Welch and
  Mann-Whitney both computed, Benjamini-Hochberg, Hedges' g), best and median of ``--reps`` (3); target < 5 s;
* perflake CLI cold: ``perflake regress --lake L --baseline BASE --candidate CAND --metric time --json FILE``
  under ``/usr/bin/time -f %M`` (peak RSS), interpreter start and imports included;
* check: the per-run values read back with a hand-written DuckDB query over the lake's Parquet files, then
  ``scipy.stats.ttest_ind(equal_var=False)`` and ``scipy.stats.mannwhitneyu`` per call path (vectorised over
  call paths, axis=1): p-values equal (rtol 1e-8 Welch, 1e-10 Mann-Whitney); flagged are exactly the call paths
  of the 10% shift (at the split) and the 30% one (at 3/4: +15% over the candidate half); the 3% shift at 1/4
  leaves the candidate 1.5% above the baseline, under the 5% threshold.

Before every timed call the script waits until the 1-minute load average is below ``--max-load`` (1.0; at most
300 s) and records the load.  Exit status: 0 all ran and the check passed, 1 MISMATCH, 2 a step failed.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import pathlib
import shlex
import shutil
import statistics
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import common as C  # noqa: E402  (stdlib only)

SELF = pathlib.Path(__file__).resolve()
SEED, NODES, RANKS = 1, 100, 4
FULL, QUICK = 10000, 200
GENERATOR_FILES = ("nightly.py", "caliper.py", "calltree.py", "names.py")


def section_name(runs: int) -> str:
    return f"regress-{runs // 2}-vs-{runs - runs // 2}"


def shifts(runs: int):
    return ((0.03, runs // 4), (0.10, runs // 2), (0.30, 3 * runs // 4))


def generator_hash() -> str:
    h = hashlib.sha256()
    for name in GENERATOR_FILES:
        h.update((C.REPO / "pipeline" / "generators" / name).read_bytes())
    return h.hexdigest()


def ensure_lake(runs: int) -> tuple[pathlib.Path, dict]:
    """The generated files and a lake holding them (both reused when the stamp matches)."""
    from perflake import Lake
    from perflake.generators.nightly import nightly_series, write_nightly

    out = C.WORK / f"nightly-{runs}x{NODES}x{RANKS}"
    stamp = out / ".complete.json"
    params = {"generator": "perflake.generators.nightly", "runs": runs, "nodes": NODES, "ranks": RANKS,
              "seed": SEED, "shifts": shifts(runs), "source_sha256": generator_hash()}
    params = json.loads(json.dumps(params))
    info: dict = {}
    if not C.stamp_ok(stamp, params):
        shutil.rmtree(out, ignore_errors=True)
        C.log(f"generating {C.rel(out)} ({runs} runs x {NODES} nodes x {RANKS} ranks) ...")
        t = time.perf_counter()
        series = nightly_series(runs=runs, nodes=NODES, ranks=RANKS, seed=SEED, shifts=shifts(runs))
        write_nightly(series, out / "in")
        (out / "shifts.json").write_text(json.dumps([{"size": x.size, "run": x.run, "path": list(x.path)}
                                                     for x in series.shifts]))
        info["generate_s"] = time.perf_counter() - t
        t = time.perf_counter()
        report = Lake(out / "lake").ingest([str(out / "in")])
        info["ingest_s"] = time.perf_counter() - t
        if report.failed or len(report.ingested) != runs:
            raise RuntimeError(f"ingest: {report.summary()}")
        C.write_stamp(stamp, params)
        C.log(f"generated in {info['generate_s']:.1f} s, ingested in {info['ingest_s']:.1f} s")
    info["files"], info["bytes"] = C.tree_bytes([out / "in"])
    info["lake_files"], info["lake_bytes"] = C.tree_bytes([out / "lake"])
    return out, info


def sides(runs: int) -> tuple[str, str]:
    half = runs // 2
    build = "cast(metadata->>'$.build' as int)"
    return f"{build} <= {half}", f"{build} > {half}"


def timed_regress(root: pathlib.Path, base: str, cand: str, reps: int, max_load: float):
    from perflake import Lake
    from perflake.analytics.regress import regress

    times, loads, result = [], [], None
    for i in range(reps):
        C.release_memory()
        loads.append(C.wait_for_load(max_load, label="perflake"))
        t = time.perf_counter()
        result = regress(Lake(root), base, cand, metric="time")
        times.append(time.perf_counter() - t)
        C.log(f"perflake regress, rep {i + 1}/{reps}: {times[-1]:.3f} s")
    return times, loads, result


def check(root: pathlib.Path, base: str, cand: str, result, runs: int) -> dict:
    """p-values against SciPy on the per-run values of a hand-written query; the flagged call path."""
    import duckdb
    import numpy as np
    from scipy import stats

    from perflake import Lake

    lake = Lake(root)
    files = lake.catalog().files("metrics", lake.catalog().batches())  # the committed batches' live files
    con = duckdb.connect()
    con.register("runs_t", lake.sql("select run_id, metadata from runs"))
    per_run = con.execute(f"""
        select cast(m.node_id as varchar) as node, case when {base} then 0 else 1 end as side, m.run_id,
               avg(m."time") as value
        from read_parquet($files) m join runs_t r using (run_id)
        where m.rank >= 0 and ({base} or {cand})
        group by all order by node, side, m.run_id""", {"files": files}).df()
    nodes = sorted(per_run["node"].unique())
    mats = {}
    for side in (0, 1):
        sub = per_run[per_run["side"] == side]
        mats[side] = sub.pivot(index="node", columns="run_id", values="value").loc[nodes].to_numpy(float)
    welch = stats.ttest_ind(mats[1], mats[0], axis=1, equal_var=False)
    mwu = stats.mannwhitneyu(mats[1], mats[0], axis=1)
    table = result.table.assign(node=result.table["node_id"].astype(str)).set_index("node").loc[nodes]
    bad_t = int((~np.isclose(table["p_welch"], welch.pvalue, rtol=1e-8, atol=1e-300)).sum())
    bad_u = int((~np.isclose(table["p_mwu"], mwu.pvalue, rtol=1e-10, atol=1e-300)).sum())
    # expected: the 10% shift (at the split) and the 30% one (at 3/4: half the candidate runs, +15%); the 3%
    # shift at 1/4 leaves the candidate +1.5% above the baseline, under the 5% threshold
    shifted = json.loads((root.parent / "shifts.json").read_text())
    expected = sorted(tuple(x["path"]) for x in shifted if x["size"] >= 0.10)
    flagged = sorted(tuple(str(x) for x in p) for p in result.flagged["path"])
    return {"nodes": len(nodes), "bad_welch": bad_t, "bad_mwu": bad_u, "flagged": flagged, "expected": expected,
            "ok": bad_t == 0 and bad_u == 0 and flagged == expected}


def run_benchmark(a, runs: int) -> tuple[str, str, bool]:
    name = section_name(runs)
    out, info = ensure_lake(runs)
    root = out / "lake"
    base, cand = sides(runs)
    times, loads, result = timed_regress(root, base, cand, a.reps, a.max_load)
    C.release_memory()
    C.wait_for_load(a.max_load, label="perflake CLI")
    cli = C.run_measured([str(C.PERFLAKE_CLI), "regress", "--lake", str(root), "--baseline", base, "--candidate",
                          cand, "--metric", "time", "--json", str(out / "regress.json")], timeout=3600)
    if cli["rc"] not in (0, 1):
        raise RuntimeError(f"CLI regress failed (rc {cli['rc']}): {cli['stderr'][-2000:]}")
    res = check(root, base, cand, result, runs)
    best, median = min(times), statistics.median(times)
    rows = result.n_baseline + result.n_candidate
    lines = [f"### {name}", "", f"- command: `{a.command}`; {C.now()}; machine load at the timed calls "
             f"(1-min): {', '.join(C.load_note(w) for w in loads)}",
             f"- input: `nightly_series(runs={runs}, nodes={NODES}, ranks={RANKS}, seed={SEED}, shifts="
             f"{shifts(runs)})` written by `write_nightly` (Caliper json-split): {info['files']:,} files, "
             f"{C.fmt_bytes(info['bytes'])}; lake {C.fmt_bytes(info['lake_bytes'])}"
             + (f"; generated in {info['generate_s']:.1f} s, ingested in {info['ingest_s']:.1f} s"
                if "ingest_s" in info else " (reused)"),
             C.venv_line("project venv", a.machine.get("project_venv")), "",
             f"| `regress` {result.n_baseline:,} vs {result.n_candidate:,} runs x {res['nodes']} call paths | "
             "time | peak RSS |", "|---|---|---|",
             f"| in-process `regress(Lake(root), BASE, CAND, metric=\"time\")`, best / median of {a.reps} | "
             f"{C.fmt_s(best)} / {C.fmt_s(median)} | |",
             f"| CLI cold `perflake regress ... --json FILE` (exit {cli['rc']}) | {C.fmt_s(cli['wall_s'])} | "
             f"{C.mib(cli['rss_kib'])} |", "",
             f"- target < 5 s (in-process): **{'met' if best < 5 else 'NOT met'}** ({rows:,} runs)",
             f"- check ({'OK' if res['ok'] else 'MISMATCH'}): p-values vs SciPy on a hand-written query's per-run "
             f"values, {res['nodes']} call paths: Welch differing (rtol 1e-8) {res['bad_welch']}, Mann-Whitney "
             f"differing (rtol 1e-10) {res['bad_mwu']}; flagged: "
             f"{', '.join('`' + ' > '.join(p[-2:]) + '`' for p in res['flagged']) or 'none'}; the call paths of "
             f"the 10% and 30% shifts expected: {res['flagged'] == res['expected']}"]
    return name, "\n".join(lines) + "\n", res["ok"]


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help=f"smoke test: {QUICK} runs")
    p.add_argument("--runs", type=int, help=f"runs in the series, split in two halves (default {FULL})")
    p.add_argument("--reps", type=int, default=3, help="repetitions of the in-process call (3)")
    p.add_argument("--results", type=pathlib.Path, default=C.RESULTS, help="Markdown file to update")
    p.add_argument("--only", action="append", help="run only if this names this benchmark (regress or the "
                                                   "section name); names of the other bench scripts are ignored")
    p.add_argument("--max-load", type=float, default=1.0, help="wait for a 1-min load average below this (1.0)")
    p.add_argument("--skip-hatchet", action="store_true", help="accepted (no Hatchet side here)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--write-results", action="store_true", help="update the results file also with --quick")
    g.add_argument("--no-results", action="store_true", help="do not touch the results file")
    a, unknown = p.parse_known_args(argv)
    if unknown:
        C.log(f"ignoring arguments of the other bench scripts: {' '.join(unknown)}")
    runs = a.runs or (QUICK if a.quick else FULL)
    if a.reps < 1 or runs < 20:
        p.error("--reps must be >= 1 and --runs >= 20")
    name = section_name(runs)
    if a.only and not {"regress", name, section_name(FULL)} & set(a.only):
        C.log(f"--only {' '.join(a.only)}: not this script's benchmark ({name}); nothing to do")
        return 0
    a.command = shlex.join([C.rel(sys.executable), C.rel(SELF), *argv])
    if os.environ.get("PERFLAKE_BENCH_VIA"):
        a.command = f"{os.environ['PERFLAKE_BENCH_VIA']}`, which runs `{a.command}"
    a.machine = C.machine_info(bench_venv=False)
    C.WORK.mkdir(parents=True, exist_ok=True)
    C.log(f"== {name}")
    try:
        name, text, ok = run_benchmark(a, runs)
    except Exception as exc:  # noqa: BLE001 - one line, exit 2
        import traceback

        traceback.print_exc()
        C.log(f"{name} FAILED: {type(exc).__name__}: {exc}")
        return 2
    print(text, flush=True)
    if not a.no_results and (not a.quick or a.write_results):
        C.update_results(a.results, name, text)
        C.log(f"updated section '{name}' of {C.rel(a.results)}")
    print(f"correctness {name}: {'OK' if ok else 'MISMATCH'}", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
