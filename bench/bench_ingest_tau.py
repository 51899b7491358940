#!/usr/bin/env python3
"""Benchmark: ingest of one synthetic TAU run -- perflake vs. Hatchet's ``GraphFrame.from_tau``.

Run with the project venv from the repository root (``make bench`` does it through bench/run.sh)::

    .venv/bin/python bench/bench_ingest_tau.py                 # full: 1000 nodes x 256 ranks, seed 1
    .venv/bin/python bench/bench_ingest_tau.py --quick         # smoke test: 200 nodes x 64 ranks
    .venv/bin/python bench/bench_ingest_tau.py --skip-hatchet  # perflake only

What it does:

1. generates (once; deterministic, kept under bench/work/, which is git-ignored) the dataset with
   ``perflake.generators.write_tau_runs(out, nodes=N, ranks=R, runs=1, seed=1)``;
2. times ``perflake.Lake(fresh_dir).ingest([run_dir])`` in-process, ``--reps`` times (default 3), each
   into a new empty lake directory: best and median;
3. times one cold CLI run ``.venv/bin/perflake ingest RUN --lake L --quiet`` (interpreter start-up and
   imports included) with its peak RSS;
4. times Hatchet once in the bench venv (bench/hatchet_probe.py: ``GraphFrame.from_tau``, same shape as
   the one-liner in the brief), with its peak RSS (``/usr/bin/time -f %M`` if present, else wait4 rusage);
5. bytes on disk of the lake (every file under the lake root) vs. the input profile files;
6. correctness: per (call path, rank) sums of ``time`` and ``time (inc)`` from the lake (SQL over the
   ``nodes``/``metrics`` views) against Hatchet's dataframe -- totals, root inclusive per rank and every
   (path, rank) pair; prints OK or MISMATCH;
7. prints a Markdown table and writes/replaces the section ``ingest-tau-<N>x<R>`` of bench/RESULTS.md
   (other sections are kept).  ``--quick`` runs do not touch RESULTS.md unless ``--write-results``.

Exit status: 0 when everything ran and the correctness check passed (or was skipped), 1 on MISMATCH,
2 when a step failed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import pathlib
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from common import (  # noqa: E402,F401  (re-exported)
    BENCH,
    GNU_TIME,
    PERFLAKE_CLI,
    PROJECT_PY,
    REPO,
    RESULTS,
    WORK,
    cpu_and_memory,
    git_state,
    run_measured,
    update_results,
)
from common import BENCH_PY as HATCHET_PY  # noqa: E402

HATCHET_PROBE = BENCH / "hatchet_probe.py"
SEED = 1
FULL = (1000, 256)
QUICK = (200, 64)
PROFILE_RE = re.compile(r"^profile\.\d+\.\d+\.\d+$")
SEP = "\x1f"  # same path-key separator as hatchet_probe.py
COMPRESSION_GOAL = 3.0


def log(msg: str) -> None:
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


def rel(p) -> str:
    try:
        return os.path.relpath(p, REPO)
    except ValueError:
        return str(p)


# -- dataset ---------------------------------------------------------------------------------------------
def ensure_dataset(nodes: int, ranks: int) -> tuple[pathlib.Path, float | None]:
    """The run directory of the dataset (generated if missing or incomplete) and the generation seconds."""
    from perflake.generators import write_tau_runs

    out = WORK / f"tau-{nodes}x{ranks}"
    run_dir = out / "run-000"
    stamp = out / ".complete.json"
    params = {"generator": "perflake.generators.write_tau_runs", "nodes": nodes, "ranks": ranks, "runs": 1,
              "seed": SEED}
    try:
        ok = json.loads(stamp.read_text()) == params and len(profile_files(run_dir)) == ranks
    except (OSError, ValueError):
        ok = False
    if ok:
        return run_dir, None
    log(f"generating {rel(out)} ({nodes} nodes x {ranks} ranks, seed {SEED}) ...")
    stamp.unlink(missing_ok=True)
    t = time.perf_counter()
    dirs = write_tau_runs(out, nodes=nodes, ranks=ranks, runs=1, seed=SEED)
    gen_s = time.perf_counter() - t
    assert dirs == [run_dir], dirs
    stamp.write_text(json.dumps(params))
    return run_dir, gen_s


def profile_files(run_dir: pathlib.Path) -> list[pathlib.Path]:
    if not run_dir.is_dir():
        return []
    return sorted(p for p in run_dir.rglob("profile.*") if p.is_file() and PROFILE_RE.match(p.name))


def tree_bytes(root: pathlib.Path) -> tuple[int, dict[str, int]]:
    """Total bytes of every file under root, and per top-level entry."""
    total, parts = 0, {}
    for p in root.rglob("*"):
        if p.is_file():
            size = p.stat().st_size
            total += size
            top = p.relative_to(root).parts[0]
            parts[top] = parts.get(top, 0) + size
    return total, dict(sorted(parts.items()))


# -- perflake -------------------------------------------------------------------------------------------
def time_inprocess(run_dir: pathlib.Path, reps: int, lakes: pathlib.Path) -> tuple[list[float], pathlib.Path]:
    import perflake

    times = []
    lake_dir = lakes / "inprocess"
    for i in range(reps):
        shutil.rmtree(lake_dir, ignore_errors=True)
        t = time.perf_counter()
        report = perflake.Lake(lake_dir).ingest([run_dir])
        times.append(time.perf_counter() - t)
        if len(report.ingested) != 1 or report.failed:
            raise RuntimeError(f"in-process ingest: {report.summary()} {report.failed}")
        log(f"perflake in-process ingest rep {i + 1}/{reps}: {times[-1]:.3f} s ({report.summary()})")
    return times, lake_dir  # the last repetition's lake is kept for size and correctness


def time_cli(run_dir: pathlib.Path, lakes: pathlib.Path) -> tuple[dict, pathlib.Path]:
    lake_dir = lakes / "cli"
    shutil.rmtree(lake_dir, ignore_errors=True)
    cmd = [str(PERFLAKE_CLI), "ingest", str(run_dir), "--lake", str(lake_dir), "--quiet"]
    res = run_measured(cmd, timeout=3600)
    res["cmd"] = shlex.join([rel(PERFLAKE_CLI), "ingest", rel(run_dir), "--lake", rel(lake_dir), "--quiet"])
    if res["rc"] != 0:
        raise RuntimeError(f"CLI ingest failed (rc {res['rc']}): {res['stderr'][-2000:]}")
    log(f"perflake CLI cold ingest: {res['wall_s']:.3f} s, peak RSS {res['rss_kib'] / 1024:.0f} MiB "
        f"({res['stdout'].strip()})")
    return res, lake_dir


def lake_check_table(lake_dir: pathlib.Path):
    """Per (call path key, rank) sums of time / time (inc) from the lake's SQL views (one run)."""
    import pandas as pd

    import perflake

    lake = perflake.Lake(lake_dir)
    runs = lake.sql("select run_id from runs")
    if len(runs) != 1:
        raise RuntimeError(f"expected 1 run in {lake_dir}, found {len(runs)}")
    # ids as text: 64-bit hashes must not pass through float64 (a null parent_id would force that)
    nodes = lake.sql("select cast(node_id as varchar) as node_id, cast(parent_id as varchar) as parent_id, name "
                     "from nodes")
    values = lake.sql('select cast(node_id as varchar) as node_id, rank, sum(time) as time, '
                      'sum("time (inc)") as inc from metrics group by all')
    parent = dict(zip(nodes["node_id"], nodes["parent_id"]))
    name = dict(zip(nodes["node_id"], nodes["name"]))
    keys: dict[str, str] = {}

    def is_root(nid: str) -> bool:
        p = parent.get(nid)
        return p is None or pd.isna(p) or p not in name

    def key(nid: str) -> str:
        """'root<SEP>...<SEP>name' of a node, memoised; iterative (deep trees must not recurse)."""
        chain, cur = [], nid
        while cur not in keys:
            chain.append(cur)
            if is_root(cur):
                cur = None
                break
            cur = parent[cur]
        base = keys[cur] if cur is not None else None
        for n in reversed(chain):
            base = name[n] if base is None else base + SEP + name[n]
            keys[n] = base
        return keys[nid]

    table = pd.DataFrame({"path": [key(n) for n in values["node_id"]],
                          "rank": values["rank"].astype("int64"),
                          "time": values["time"].astype("float64"),
                          "inc": values["inc"].astype("float64")})
    table = table.groupby(["path", "rank"], sort=True, as_index=False).sum()
    roots = {name[n] for n in name if is_root(n)}
    return table, roots


def compare(lake_tab, hatchet_npz: pathlib.Path, roots: set[str]) -> dict:
    import numpy as np
    import pandas as pd

    with np.load(hatchet_npz, allow_pickle=False) as z:
        h = pd.DataFrame({"path": z["paths"][z["pidx"]].astype(object), "rank": z["rank"].astype("int64"),
                          "time": z["time"], "inc": z["inc"]})
    m = lake_tab.merge(h, on=["path", "rank"], how="outer", suffixes=("_pl", "_ht"), indicator=True)
    only_pl = int((m["_merge"] == "left_only").sum())
    only_ht = int((m["_merge"] == "right_only").sum())
    both = m[m["_merge"] == "both"]

    def close(a, b):
        return np.isclose(a, b, rtol=1e-12, atol=1e-9)

    bad_time = int((~close(both["time_pl"], both["time_ht"])).sum())
    bad_inc = int((~close(both["inc_pl"], both["inc_ht"])).sum())
    tot = {"time_pl": float(lake_tab["time"].sum()), "time_ht": float(h["time"].sum()),
           "inc_pl": float(lake_tab["inc"].sum()), "inc_ht": float(h["inc"].sum())}
    root_pl = lake_tab[lake_tab["path"].isin(roots)].groupby("rank")["inc"].sum()
    root_ht = h[~h["path"].str.contains(SEP, regex=False)].groupby("rank")["inc"].sum()
    root_cmp = pd.concat([root_pl.rename("pl"), root_ht.rename("ht")], axis=1)
    root_bad = int((root_cmp.isna().any(axis=1) | ~close(root_cmp["pl"].fillna(-1), root_cmp["ht"].fillna(-2))).sum())
    ok = (only_pl == 0 and only_ht == 0 and bad_time == 0 and bad_inc == 0 and root_bad == 0
          and np.isclose(tot["time_pl"], tot["time_ht"], rtol=1e-12)
          and np.isclose(tot["inc_pl"], tot["inc_ht"], rtol=1e-12))
    return {"ok": bool(ok), "pairs_pl": len(lake_tab), "pairs_ht": len(h), "only_pl": only_pl, "only_ht": only_ht,
            "bad_time": bad_time, "bad_inc": bad_inc, "ranks_checked": len(root_cmp), "root_bad": root_bad,
            "n_paths": int(lake_tab["path"].nunique()), **tot}


# -- hatchet --------------------------------------------------------------------------------------------
def time_hatchet(run_dir: pathlib.Path, dump: pathlib.Path) -> dict:
    if not HATCHET_PY.exists():
        raise RuntimeError(f"{rel(HATCHET_PY)} missing: run bench/setup_venv.sh")
    cmd = [str(HATCHET_PY), str(HATCHET_PROBE), str(run_dir), "--dump", str(dump)]
    log(f"hatchet GraphFrame.from_tau({rel(run_dir)}) ... (minutes at full size)")
    res = run_measured(cmd, timeout=3600)
    dump.with_name("hatchet-stderr.txt").write_text(res["stderr"], encoding="utf-8")  # its warnings, kept
    res["cmd"] = shlex.join([rel(HATCHET_PY), rel(HATCHET_PROBE), rel(run_dir), "--dump", rel(dump)])
    if res["rc"] != 0:
        raise RuntimeError(f"hatchet probe failed (rc {res['rc']}): {res['stderr'][-3000:]}")
    lines = res["stdout"].splitlines()
    info = json.loads(next(ln for ln in lines if ln.startswith("RESULT "))[len("RESULT "):])
    info["first_line_s"] = float(lines[0])  # what the one-liner prints
    res["info"] = info
    res["warnings"] = sum(1 for ln in res["stderr"].splitlines() if "Warning" in ln)
    log(f"hatchet from_tau: {info['from_tau_s']:.2f} s (import {info['import_s']:.2f} s, process wall "
        f"{res['wall_s']:.2f} s incl. the check dump), peak RSS {res['rss_kib'] / 1024:.0f} MiB")
    return res


# -- environment ----------------------------------------------------------------------------------------
def machine_info() -> dict:
    from importlib import metadata

    def ver(pkg):
        try:
            return metadata.version(pkg)
        except metadata.PackageNotFoundError:
            return "n/a"

    info = {"nproc": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
            "cpu": platform.processor() or platform.machine(), "mem_gib": None,
            "python": platform.python_version(), "os": f"{platform.system()} {platform.release()}",
            "perflake": ver("perflake"), "duckdb": ver("duckdb"), "pyarrow": ver("pyarrow"),
            "pandas": ver("pandas"), "numpy": ver("numpy"),
            "load": " / ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"}
    info.update(cpu_and_memory(info["cpu"]))
    info["git"] = git_state()
    if HATCHET_PY.exists():
        code = ("import json,platform;from importlib import metadata as m;"
                "print(json.dumps({'python':platform.python_version(),"
                "**{p:m.version(p) for p in ('llnl-hatchet','pandas','numpy')}}))")
        try:
            out = subprocess.run([str(HATCHET_PY), "-c", code], capture_output=True, text=True, timeout=60)
            info["bench_venv"] = json.loads(out.stdout)
        except (OSError, subprocess.SubprocessError, ValueError):
            info["bench_venv"] = None
    return info


# -- report ---------------------------------------------------------------------------------------------
def fmt_bytes(n: int) -> str:
    return f"{n / 1e6:,.1f} MB ({n:,} B)"


def fmt_s(s: float) -> str:
    return f"{s:.3f} s" if s < 10 else f"{s:.1f} s"


def build_section(name: str, a: argparse.Namespace, r: dict) -> str:
    m = r["machine"]
    bv = m.get("bench_venv") or {}
    nodes, ranks = r["size"]
    t = r["inproc"]
    best, med = min(t), statistics.median(t)
    cli = r["cli"]
    lines = [
        f"## {name}",
        "",
        f"- date: {r['date']}",
        f"- machine: {m['nproc']} CPUs ({m['cpu']}), {m['mem_gib']} GiB RAM, {m['os']}; "
        f"load average at start {m['load']} (1/5/15 min)",
        f"- project venv: Python {m['python']}, perflake {m['perflake']} (git {m['git']}), duckdb {m['duckdb']}, "
        f"pyarrow {m['pyarrow']}, pandas {m['pandas']}, numpy {m['numpy']}",
    ]
    if bv:
        lines.append(f"- bench venv: Python {bv.get('python')}, llnl-hatchet {bv.get('llnl-hatchet')}, "
                     f"pandas {bv.get('pandas')}, numpy {bv.get('numpy')}")
    lines += [
        f"- command: `{r['command']}`",
        f"- dataset: `write_tau_runs(out, nodes={nodes}, ranks={ranks}, runs=1, seed={SEED})` -> "
        f"`{rel(r['run_dir'])}` ({r['n_files']} profile files, {r['n_nodes']} call-tree nodes incl. root); "
        "page cache warm for every reader (the files were just generated or read)",
        "",
        "| measurement | value |",
        "|---|---|",
        f"| perflake ingest, in-process `Lake(fresh).ingest([run])` (best / median of {len(t)}) | "
        f"{fmt_s(best)} / {fmt_s(med)} |",
        f"| perflake CLI cold, one run incl. interpreter start-up (`perflake ingest RUN --lake L --quiet`) | "
        f"{fmt_s(cli['wall_s'])} (peak RSS {cli['rss_kib'] / 1024:,.0f} MiB) |",
    ]
    h = r.get("hatchet")
    if h:
        hi = h["info"]
        ht = hi["from_tau_s"]
        lines += [
            f"| hatchet `GraphFrame.from_tau(run)` (one run, excl. `import hatchet` {hi['import_s']:.2f} s) | "
            f"{fmt_s(ht)} (peak RSS {h['rss_kib'] / 1024:,.0f} MiB) |",
            f"| speed-up: hatchet from_tau / perflake in-process best | **{ht / best:,.1f}x** |",
            f"| speed-up: hatchet from_tau / perflake CLI cold | **{ht / cli['wall_s']:,.1f}x** |",
        ]
    else:
        lines.append("| hatchet `GraphFrame.from_tau(run)` | not run (--skip-hatchet) |")
    ratio = r["input_bytes"] / r["lake_bytes"]
    lines += [
        f"| input bytes (profile files) | {fmt_bytes(r['input_bytes'])} |",
        f"| lake bytes (all files under the lake root) | {fmt_bytes(r['lake_bytes'])} |",
        f"| compression: input / lake (goal >= {COMPRESSION_GOAL:g}x) | **{ratio:,.1f}x** "
        f"({'goal met' if ratio >= COMPRESSION_GOAL else 'goal NOT met'}) |",
    ]
    c = r.get("check")
    if c:
        verdict = "OK" if c["ok"] else "MISMATCH"
        lines.append(
            f"| correctness vs hatchet: per (call path, rank) `time`, `time (inc)` | **{verdict}**: "
            f"{c['pairs_pl']:,} perflake / {c['pairs_ht']:,} hatchet pairs, {c['n_paths']:,} paths, "
            f"unmatched {c['only_pl']}+{c['only_ht']}, differing time {c['bad_time']}, time (inc) {c['bad_inc']}; "
            f"root inclusive {c['ranks_checked']} ranks, {c['root_bad']} differ; "
            f"sum time {c['time_pl']:.10g} vs {c['time_ht']:.10g}, sum time (inc) {c['inc_pl']:.10g} vs "
            f"{c['inc_ht']:.10g} |")
    else:
        lines.append("| correctness vs hatchet | not run (--skip-hatchet) |")
    parts = ", ".join(f"{k} {v / 1e6:,.2f} MB" for k, v in r["lake_parts"].items())
    lines += ["", f"Lake bytes by folder: {parts}."]
    if h:
        lines.append(f"Hatchet ran as `{h['cmd']}` (bench venv; timing printed before the check dump; "
                     f"process wall {h['wall_s']:.1f} s incl. interpreter, import and dump; "
                     f"peak RSS via {h['rss_source']}).")
    lines.append(f"perflake CLI ran as `{cli['cmd']}` (peak RSS via {cli['rss_source']}); in-process repetitions: "
                 + ", ".join(f"{x:.3f}" for x in t) + " s.")
    return "\n".join(lines) + "\n"




# -- main -----------------------------------------------------------------------------------------------
def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help=f"smoke test on {QUICK[0]} nodes x {QUICK[1]} ranks")
    p.add_argument("--skip-hatchet", action="store_true", help="perflake only (no comparison, no check)")
    p.add_argument("--reps", type=int, default=3, help="in-process ingest repetitions (default 3)")
    p.add_argument("--results", type=pathlib.Path, default=RESULTS, help="Markdown file to update")
    p.add_argument("--only", action="append",
                   help="run only these benchmarks (repeatable, as bench/run.sh passes it to every script): this "
                        "script runs when 'ingest-tau' or an 'ingest-tau-...' section name is among them")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--write-results", action="store_true", help="update the results file also with --quick")
    g.add_argument("--no-results", action="store_true", help="do not touch the results file")
    a = p.parse_args(argv)
    if a.reps < 1:
        p.error("--reps must be >= 1")
    if a.only and not any(o == "ingest-tau" or o.startswith("ingest-tau-") for o in a.only):
        log(f"--only {' '.join(a.only)}: not this script's (ingest-tau); nothing to do")
        return 0

    nodes, ranks = QUICK if a.quick else FULL
    name = f"ingest-tau-{nodes}x{ranks}"
    command = shlex.join([rel(sys.executable), rel(pathlib.Path(__file__).resolve()), *sys.argv[1:]]) \
        if argv is None else shlex.join([rel(sys.executable), rel(pathlib.Path(__file__).resolve()), *argv])
    if os.environ.get("PERFLAKE_BENCH_VIA"):  # set by bench/run.sh (make bench)
        command = f"{os.environ['PERFLAKE_BENCH_VIA']}`, which runs `{command}"
    r: dict = {"size": (nodes, ranks), "command": command,
               "date": dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")}
    r["machine"] = machine_info()  # before the runs: git state and load average at the start
    try:
        WORK.mkdir(parents=True, exist_ok=True)
        run_dir, gen_s = ensure_dataset(nodes, ranks)
        if gen_s is not None:
            log(f"generated in {gen_s:.2f} s")
        files = profile_files(run_dir)
        r["run_dir"], r["n_files"] = run_dir, len(files)
        r["input_bytes"] = sum(f.stat().st_size for f in files)
        lakes = WORK / "lakes" / name
        lakes.mkdir(parents=True, exist_ok=True)

        r["inproc"], lake_dir = time_inprocess(run_dir, a.reps, lakes)
        r["cli"], cli_lake = time_cli(run_dir, lakes)
        r["lake_bytes"], r["lake_parts"] = tree_bytes(lake_dir)
        cli_bytes, _ = tree_bytes(cli_lake)
        if abs(cli_bytes - r["lake_bytes"]) > 0.01 * r["lake_bytes"]:
            log(f"note: CLI lake {cli_bytes} B vs in-process lake {r['lake_bytes']} B")
        lake_tab, roots = lake_check_table(lake_dir)
        r["n_nodes"] = int(lake_tab["path"].nunique())
        if not a.skip_hatchet:
            dump = lakes / "hatchet-check.npz"
            dump.unlink(missing_ok=True)
            r["hatchet"] = time_hatchet(run_dir, dump)
            r["check"] = compare(lake_tab, dump, roots)
            log(f"correctness: {'OK' if r['check']['ok'] else 'MISMATCH'} {r['check']}")
    except Exception as exc:  # noqa: BLE001 - report and fail the benchmark
        log(f"FAILED: {type(exc).__name__}: {exc}")
        return 2

    section = build_section(name, a, r)
    print(section)
    write = not a.no_results and (not a.quick or a.write_results)
    if write:
        update_results(a.results, name, section)
        log(f"updated section '{name}' of {rel(a.results)}")
    check = r.get("check")
    if check is not None:
        print("correctness:", "OK" if check["ok"] else "MISMATCH")
    return 0 if check is None or check["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
