#!/usr/bin/env python3
"""Benchmarks: ingest of Caliper json-split, HPCToolkit and 1000 native .cali files -- perflake vs Hatchet/Thicket.

Run with the project venv from the repository root (``make bench`` runs it through bench/run.sh, after the TAU
benchmark)::

    .venv/bin/python bench/bench_readers.py                  # full size (several minutes)
    .venv/bin/python bench/bench_readers.py --quick          # smoke test: small sizes, no scale point
    .venv/bin/python bench/bench_readers.py --skip-hatchet   # perflake only
    .venv/bin/python bench/bench_readers.py --only cali      # one benchmark: caliper-json, hpctoolkit, cali,
                                                             # caliper-json-scale (repeatable)

Three benchmarks, each measured in the same run on the same files:

1. ``ingest-caliper-json-1000x256``: ``write_caliper_json_runs(out, nodes=1000, ranks=256, runs=1, seed=1)``
   vs ``hatchet.GraphFrame.from_caliper(path)`` (which fails on the missing ``Node order`` column, see
   bench/hatchet_probe.py: the failure is recorded and ``node_ordering=False`` is timed).  Target: perflake
   >= 5x faster.  Scale point ``ingest-caliper-json-10000x1024`` (run last; not with --quick/--no-scale): its
   generation runs in a guarded subprocess and is skipped (with a note) past 2 minutes or 8 GiB; target:
   perflake's peak RSS at most a quarter of Hatchet's;
2. ``ingest-hpctoolkit-10000x64``: ``write_hpctoolkit_runs(out, nodes=10000, ranks=64, runs=1, seed=1)`` vs
   ``GraphFrame.from_hpctoolkit(path)``.  Target: >= 10x;
3. ``ingest-cali-1000-files``: 1000 RAJAPerf-sized Spot ``.cali`` files from bench/cali_writer.py vs
   ``GraphFrame.from_caliperreader(f)`` on each file in one process (target >= 10x) and vs
   ``thicket.Thicket.from_caliperreader(files)`` for the first 100 and all 1000 files (target at 1000:
   >= 20x; Thicket at 1000 is skipped with --quick).

For each: ``perflake.Lake(fresh_dir).ingest(paths)`` in-process, best and median of ``--reps`` (default 3); one
cold CLI run ``.venv/bin/perflake ingest ... --lake L --quiet`` under ``/usr/bin/time -f %M`` for perflake's
peak RSS; the reference reader once in the bench venv (bench/hatchet_probe.py, peak RSS the same way, plus the
probe's own ``ru_maxrss`` right after the load, before its check dump); the ratio; and a correctness check:
per (input, call path, rank) sums of the main time metrics from the lake (SQL over the views) against the
reference reader's dataframe.  Datasets are generated once under bench/work/ (git-ignored, stamped).

Writes/replaces one section per benchmark in bench/RESULTS.md (``--quick`` only with ``--write-results``).
Exit status: 0 when everything ran and every check passed (or was skipped), 1 on a MISMATCH, 2 when a step
failed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import pathlib
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import bench_ingest_tau as common  # noqa: E402  (shared helpers: subprocess RSS, machine facts, RESULTS.md)
from bench_ingest_tau import (  # noqa: E402
    BENCH,
    GNU_TIME,
    HATCHET_PROBE,
    HATCHET_PY,
    PERFLAKE_CLI,
    PROJECT_PY,
    REPO,
    RESULTS,
    WORK,
    fmt_bytes,
    fmt_s,
    log,
    rel,
    run_measured,
    tree_bytes,
    update_results,
)
from common import release_memory  # noqa: E402

SEED = 1
CALI_JSON, CALI_JSON_QUICK, CALI_JSON_SCALE = (1000, 256), (200, 64), (10000, 1024)
HPC, HPC_QUICK = (10000, 64), (1000, 16)
CALI_FILES, CALI_FILES_QUICK = 1000, 100
THICKET_SUBSET = 100
GEN_LIMIT_S, GEN_LIMIT_KIB = 120.0, 8 * 1024 ** 2
TIME_METRICS = [("time", "time"), ("inc", "time (inc)")]
SPOT_METRICS = [("avg", "Avg time/rank"), ("total", "Total time")]
SEP = "\x1f"
PROBE_TIMEOUT = 3 * 3600


# -- datasets --------------------------------------------------------------------------------------------
def _stamp_ok(stamp: pathlib.Path, params: dict) -> bool:
    try:
        return json.loads(stamp.read_text()) == params
    except (OSError, ValueError):
        return False


def run_guarded(cmd: list[str], *, limit_s: float, limit_kib: int) -> dict:
    """Run cmd, killing it past limit_s seconds or limit_kib peak RSS (VmHWM polled every 0.1 s, so a peak in the
    last 0.1 s before exit can be missed)."""
    err = tempfile.TemporaryFile()
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, cwd=REPO)
    peak, reason, status, usage = 0, None, None, None
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        try:
            for line in open(f"/proc/{proc.pid}/status", encoding="ascii"):
                if line.startswith("VmHWM:"):
                    peak = max(peak, int(line.split()[1]))
        except OSError:
            pass
        if reason is None and peak > limit_kib:
            reason = f"peak RSS passed {limit_kib / 1024 ** 2:.0f} GiB"
            proc.kill()
        elif reason is None and time.perf_counter() - t > limit_s:
            reason = f"still running after {limit_s:.0f} s"
            proc.kill()
        time.sleep(0.1)
    wall = time.perf_counter() - t
    proc.returncode = os.waitstatus_to_exitcode(status)
    err.seek(0)
    # VmHWM of the exec'd program, not ru_maxrss: that one keeps the pages the child shared with this (possibly
    # large) process between fork and exec
    return {"wall_s": wall, "rc": proc.returncode, "rss_kib": peak or usage.ru_maxrss, "killed": reason,
            "stderr": err.read().decode(errors="replace")}


def ensure_generated(fmt: str, nodes: int, ranks: int, *, guarded: bool) -> tuple[pathlib.Path | None, dict | None]:
    """The run path of a perflake-generated dataset (made in a subprocess if missing) and the generation facts;
    (None, facts with 'skipped') when the guard stopped the generation."""
    writer = {"caliper-json": "write_caliper_json_runs", "hpctoolkit": "write_hpctoolkit_runs"}[fmt]
    out = WORK / f"{fmt}-{nodes}x{ranks}"
    run = out / ("run-000.json" if fmt == "caliper-json" else "run-000")
    stamp = out / ".complete.json"
    params = {"generator": f"perflake.generators.{writer}", "nodes": nodes, "ranks": ranks, "runs": 1, "seed": SEED}
    if _stamp_ok(stamp, params) and run.exists():
        try:  # the facts of the run that generated it, if it was this script
            return run, {**json.loads((out / ".generation.json").read_text()), "earlier": True}
        except (OSError, ValueError):
            return run, None
    log(f"generating {rel(out)} ({writer}, {nodes} nodes x {ranks} ranks, seed {SEED}) ...")
    shutil.rmtree(out, ignore_errors=True)
    code = (f"from perflake.generators import {writer}; "
            f"{writer}({str(out)!r}, nodes={nodes}, ranks={ranks}, runs=1, seed={SEED})")
    limit_s, limit_kib = (GEN_LIMIT_S, GEN_LIMIT_KIB) if guarded else (3600.0, 1 << 62)
    g = run_guarded([str(PROJECT_PY), "-c", code], limit_s=limit_s, limit_kib=limit_kib)
    g["code"] = code
    if g["killed"]:
        shutil.rmtree(out, ignore_errors=True)
        g["skipped"] = f"generation stopped: {g['killed']} (limits {limit_s:.0f} s, {limit_kib / 1024 ** 2:.0f} GiB)"
        log(g["skipped"])
        return None, g
    if g["rc"] != 0 or not run.exists():
        raise RuntimeError(f"generation failed (rc {g['rc']}): {g['stderr'][-2000:]}")
    stamp.write_text(json.dumps(params))
    (out / ".generation.json").write_text(json.dumps({"date": dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M "
                                                                                                      "%Z"),
                                                      "wall_s": g["wall_s"], "rss_kib": g["rss_kib"]}))
    log(f"generated in {g['wall_s']:.1f} s, peak RSS {g['rss_kib'] / 1024:,.0f} MiB")
    return run, g


def ensure_cali(n: int) -> tuple[list[pathlib.Path], float | None]:
    from cali_writer import N_RECORDS, write_cali_profiles

    out = WORK / f"cali-{n}"
    stamp = out / ".complete.json"
    params = {"generator": "bench/cali_writer.py write_cali_profiles", "n_files": n, "seed": SEED,
              "writer_sha256": _sha256(BENCH / "cali_writer.py")}
    if _stamp_ok(stamp, params):
        files = sorted(out.rglob("*.cali"), key=lambda p: p.name)
        if len(files) == n:
            return files, None
    log(f"writing {n} .cali files under {rel(out)} (bench/cali_writer.py, seed {SEED}, {N_RECORDS} records each) ...")
    shutil.rmtree(out, ignore_errors=True)
    t = time.perf_counter()
    files = write_cali_profiles(out, n, seed=SEED)
    gen_s = time.perf_counter() - t
    stamp.write_text(json.dumps(params))
    return files, gen_s


def _sha256(path: pathlib.Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def input_bytes(paths) -> tuple[int, int]:
    """(files, bytes) of every file under the given files/directories."""
    n = total = 0
    for p in map(pathlib.Path, paths):
        for f in ([p] if p.is_file() else [q for q in p.rglob("*") if q.is_file() and q.name != ".complete.json"]):
            n += 1
            total += f.stat().st_size
    return n, total


# -- perflake ---------------------------------------------------------------------------------------------
def perflake_inprocess(inputs: list[pathlib.Path], reps: int, lake_dir: pathlib.Path, n_runs: int) -> list[float]:
    import perflake

    times = []
    paths = [str(p) for p in inputs]
    for i in range(reps):
        shutil.rmtree(lake_dir, ignore_errors=True)
        t = time.perf_counter()
        report = perflake.Lake(lake_dir).ingest(paths)
        times.append(time.perf_counter() - t)
        if len(report.ingested) != n_runs or report.failed:
            raise RuntimeError(f"in-process ingest: {report.summary()} {report.failed[:3]}")
        log(f"perflake in-process ingest of {len(paths)} input(s), rep {i + 1}/{reps}: {times[-1]:.3f} s "
            f"({report.summary()})")
    return times  # the last repetition's lake is kept for size and correctness


def perflake_cli(args: list[str], shown: str, lake_dir: pathlib.Path) -> dict:
    shutil.rmtree(lake_dir, ignore_errors=True)
    res = run_measured([str(PERFLAKE_CLI), "ingest", *args, "--lake", str(lake_dir), "--quiet"], timeout=7200)
    res["cmd"] = f"{rel(PERFLAKE_CLI)} ingest {shown} --lake {rel(lake_dir)} --quiet"
    if res["rc"] != 0:
        raise RuntimeError(f"CLI ingest failed (rc {res['rc']}): {res['stderr'][-2000:]}")
    log(f"perflake CLI cold ingest: {res['wall_s']:.3f} s, peak RSS {res['rss_kib'] / 1024:,.0f} MiB "
        f"({res['stdout'].strip()})")
    return res


def lake_table(lake_dir: pathlib.Path, metrics, run_index: dict, path_id: dict):
    """Per (input index, call path id, rank) sums of the metric columns, from the lake's SQL views; and one row
    per (input, call path) with its frame type and parent path id (for the B.2 expectation)."""
    import numpy as np
    import pandas as pd

    import perflake

    con = perflake.Lake(lake_dir).connect()
    try:
        runs = con.sql("select run_id, source from runs").df()
        run_of = {}
        for rid, src in zip(runs["run_id"], runs["source"]):
            key = os.path.realpath(src)
            if key not in run_index:
                raise RuntimeError(f"lake run {rid} from unexpected source {src}")
            run_of[rid] = run_index[key]
        # ids as text: 64-bit hashes must not pass through float64 (a null parent_id would force that)
        nodes = con.sql("select run_id, cast(node_id as varchar) as node_id, cast(parent_id as varchar) as parent_id, "
                        "name, type from nodes").df()
        parent, name = {}, {}
        for rid, nid, pid, nm in zip(nodes["run_id"], nodes["node_id"], nodes["parent_id"], nodes["name"]):
            parent[(rid, nid)] = None if pid is None or pd.isna(pid) else (rid, pid)
            name[(rid, nid)] = str(nm)
        keys: dict = {}

        def key(k):
            chain, cur = [], k
            while cur is not None and cur not in keys:
                chain.append(cur)
                p = parent[cur]
                cur = p if p in name else None
            base = keys[cur] if cur is not None else None
            for n in reversed(chain):
                base = name[n] if base is None else base + SEP + name[n]
                keys[n] = base
            return keys[k]

        pids = [path_id.setdefault(key(k), len(path_id)) for k in zip(nodes["run_id"], nodes["node_id"])]
        parent_pid = [-1 if parent[k] is None or parent[k] not in name else path_id[keys[parent[k]]]
                      for k in zip(nodes["run_id"], nodes["node_id"])]
        ktab = pd.DataFrame({"run_id": nodes["run_id"].astype(str),
                             "node_id": np.array([int(x) for x in nodes["node_id"]], dtype=np.uint64),
                             "run": np.array([run_of[r] for r in nodes["run_id"]], dtype=np.int64),
                             "pid": np.array(pids, dtype=np.int64)})
        con.register("bench_keys", ktab)
        cols = ", ".join(f'sum(m."{c}") as "{k}"' for k, c in metrics)
        vals = con.sql(f"select k.run, k.pid, cast(m.rank as bigint) as rank, {cols} from metrics m join bench_keys k "
                       "on m.run_id = k.run_id and m.node_id = k.node_id group by all").df()
    finally:
        con.close()
    for k, _ in metrics:
        vals[k] = vals[k].astype("float64")
    info = pd.DataFrame({"run": ktab["run"], "pid": ktab["pid"], "type": nodes["type"].astype(str),
                         "parent_pid": np.array(parent_pid, dtype=np.int64)}).drop_duplicates(["run", "pid"])
    return vals, info


def b2_extra(pl, info):
    """What Hatchet's from_hpctoolkit adds to ``time`` (formats.md 1.7/B.2): it subtracts a statement's exclusive
    time from its direct parent only, so every enclosing loop above the parent and the procedure frame keep it;
    perflake subtracts it from all of them.  Returns per (run, pid, rank) the expected Hatchet - perflake."""
    import pandas as pd

    typ = dict(zip(zip(info["run"], info["pid"]), info["type"]))
    par = dict(zip(zip(info["run"], info["pid"]), info["parent_pid"]))
    pairs = []
    for (run, pid), t in typ.items():
        if t != "statement" or typ.get((run, par[(run, pid)])) != "loop":
            continue
        a = par[(run, par[(run, pid)])]
        while a != -1:
            ta = typ.get((run, a))
            if ta == "loop":
                pairs.append((run, pid, a))
                a = par[(run, a)]
                continue
            if ta == "function":
                pairs.append((run, pid, a))
            break
    if not pairs:
        return pd.DataFrame({"run": [], "pid": [], "rank": [], "extra": []})
    p = pd.DataFrame(pairs, columns=["run", "pid", "anc"])
    x = p.merge(pl[["run", "pid", "rank", "time"]], on=["run", "pid"])
    x = x.groupby(["run", "anc", "rank"], as_index=False)["time"].sum()
    return x.rename(columns={"anc": "pid", "time": "extra"})


def compare(pl, npz: pathlib.Path, keys: list[str], path_id: dict, *, runs=None, adjust=None) -> dict:
    """Every (input, call path, rank) pair of the lake against the probe's dump (rtol 1e-12, atol 1e-9).

    ``runs``: only these input indices of the lake table; ``adjust``: {key: DataFrame(run, pid, rank, extra)}
    added to perflake's values before comparing (the documented Hatchet deviation B.2)."""
    import numpy as np
    import pandas as pd

    with np.load(npz, allow_pickle=False) as z:
        hp = np.array([path_id.setdefault(p, len(path_id)) for p in z["paths"].tolist()], dtype=np.int64)
        h = pd.DataFrame({"run": z["run"].astype(np.int64), "pid": hp[z["pidx"]], "rank": z["rank"].astype(np.int64),
                          **{k: z[k] for k in keys}})
    if runs is not None:
        pl = pl[pl["run"].isin(runs)]
    pl = pl.copy()
    raw = {}
    for k, extra in (adjust or {}).items():
        raw[k] = pl[k].copy()
        pl = pl.merge(extra, on=["run", "pid", "rank"], how="left")
        pl[k] = pl[k] + pl.pop("extra").fillna(0.0)
    m = pl.merge(h, on=["run", "pid", "rank"], how="outer", suffixes=("_pl", "_ht"), indicator=True)
    both = m[m["_merge"] == "both"]
    res = {"pairs_pl": len(pl), "pairs_ht": len(h), "only_pl": int((m["_merge"] == "left_only").sum()),
           "only_ht": int((m["_merge"] == "right_only").sum()), "n_paths": int(pl["pid"].nunique()),
           "n_runs": int(pl["run"].nunique()), "keys": keys, "adjusted": sorted(adjust or {})}
    ok = res["only_pl"] == 0 and res["only_ht"] == 0
    for k in keys:
        a, b = both[f"{k}_pl"].to_numpy(), both[f"{k}_ht"].to_numpy()
        absent0 = np.isnan(a) & (b == 0)  # perflake keeps "no measurement" null, Hatchet fills 0
        bad = ~(np.isclose(a, b, rtol=1e-12, atol=1e-9) | absent0)
        res[f"bad_{k}"] = int(bad.sum())
        res[f"absent0_{k}"] = int(absent0.sum())
        res[f"sum_{k}_pl"] = float(np.nansum(pl[k].to_numpy()))
        res[f"sum_{k}_ht"] = float(np.nansum(h[k].to_numpy()))
        ok = ok and res[f"bad_{k}"] == 0 and np.isclose(res[f"sum_{k}_pl"], res[f"sum_{k}_ht"], rtol=1e-12)
    if "time" in raw:  # how many pairs the B.2 expectation moved, and by how much in total
        moved = pl["time"].to_numpy() != raw["time"].to_numpy()
        res["b2_pairs"] = int(np.sum(moved & ~np.isnan(raw["time"].to_numpy())))
        res["b2_total"] = float(np.nansum(pl["time"].to_numpy()) - np.nansum(raw["time"].to_numpy()))
    res["ok"] = bool(ok)
    return res


# -- reference readers ----------------------------------------------------------------------------------
def probe(reader: str, inputs: list[pathlib.Path], dump: pathlib.Path | None, metrics, *extra: str) -> dict:
    if not HATCHET_PY.exists():
        raise RuntimeError(f"{rel(HATCHET_PY)} missing: run bench/setup_venv.sh")
    cmd = [str(HATCHET_PY), str(HATCHET_PROBE), "--reader", reader, *extra]
    shown = [rel(HATCHET_PY), rel(HATCHET_PROBE), "--reader", reader, *extra]
    if len(inputs) == 1:
        cmd.append(str(inputs[0]))
        shown.append(rel(inputs[0]))
    else:
        listing = dump.with_name(dump.stem + "-inputs.txt") if dump else WORK / f"probe-{reader}-inputs.txt"
        listing.write_text("".join(f"{p}\n" for p in inputs), encoding="utf-8")
        cmd += ["--paths-from", str(listing)]
        shown += ["--paths-from", rel(listing)]
    for k, c in metrics:
        cmd += ["--metric", f"{k}={c}"]
        shown += ["--metric", f"{k}={c}"]
    if dump:
        dump.unlink(missing_ok=True)
        cmd += ["--dump", str(dump)]
        shown += ["--dump", rel(dump)]
    log(f"{reader}: {len(inputs)} input(s) in the bench venv ...")
    res = run_measured(cmd, timeout=PROBE_TIMEOUT)
    res["cmd"] = shlex.join(shown)
    if dump:
        dump.with_name(dump.stem + "-stderr.txt").write_text(res["stderr"], encoding="utf-8")
    if res["rc"] != 0 or res["timed_out"]:
        raise RuntimeError(f"probe {reader} failed (rc {res['rc']}): {res['stderr'][-3000:]}")
    lines = res["stdout"].splitlines()
    res["info"] = json.loads(next(ln for ln in lines if ln.startswith("RESULT "))[len("RESULT "):])
    res["load_s"] = res["info"]["load_s"]
    log(f"{reader}: {res['load_s']:.2f} s (process wall {res['wall_s']:.1f} s), peak RSS "
        f"{res['rss_kib'] / 1024:,.0f} MiB (at the end of the load {res['info']['rss_after_load_kib'] / 1024:,.0f} "
        "MiB)")
    return res


# -- report -----------------------------------------------------------------------------------------------
def mib(kib) -> str:
    return f"{kib / 1024:,.0f} MiB"


def header(name: str, r: dict, dataset: str) -> list[str]:
    m = r["machine"]
    bv = m.get("bench_venv") or {}
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
        lines.append("- bench venv: Python " + str(bv.get("python")) + ", "
                     + ", ".join(f"{p} {v}" for p, v in bv.items() if p != "python"))
    lines += [f"- command: `{r['command']}`", f"- dataset: {dataset}", "",
              "| measurement | value |", "|---|---|"]
    return lines


def perflake_rows(t: list[float], cli: dict, label: str) -> list[str]:
    return [
        f"| perflake ingest, in-process `Lake(fresh).ingest({label})` (best / median of {len(t)}) | "
        f"{fmt_s(min(t))} / {fmt_s(statistics.median(t))} |",
        f"| perflake CLI cold, incl. interpreter start-up (`perflake ingest ... --lake L --quiet`) | "
        f"{fmt_s(cli['wall_s'])} (peak RSS {mib(cli['rss_kib'])}) |",
    ]


def ref_rows(h: dict, what: str, short: str, best: float, cli_s: float, target: float | None,
             issue: str | None) -> list[str]:
    i = h["info"]
    imp = f"excl. `import hatchet` {i['import_s']:.2f} s" + (
        f" and `import thicket` {i['import_thicket_s']:.2f} s" if "import_thicket_s" in i else "")
    speed = h["load_s"] / best
    verdict = ""
    if target:
        verdict = f" (target >= {target:g}x: {'met' if speed >= target else '**NOT met**'})"
    rows = [
        f"| {what} ({imp}) | {fmt_s(h['load_s'])} (peak RSS {mib(h['rss_kib'])}; "
        f"{mib(i['rss_after_load_kib'])} at the end of the load){f'; issue: {issue}' if issue else ''} |",
        f"| speed-up: {short} / perflake in-process best | **{speed:,.1f}x**{verdict} |",
        f"| speed-up: {short} / perflake CLI cold | **{h['load_s'] / cli_s:,.1f}x** |",
    ]
    return rows


def check_row(c: dict | None, what: str, note: str = "") -> str:
    if not c:
        return f"| correctness vs {what} | not run (--skip-hatchet) |"
    parts = [f"{c['pairs_pl']:,} perflake / {c['pairs_ht']:,} reference pairs over {c['n_runs']:,} input(s), "
             f"{c['n_paths']:,} call paths, unmatched {c['only_pl']}+{c['only_ht']}"]
    for k in c["keys"]:
        extra = f" ({c[f'absent0_{k}']} perflake-null vs reference-0)" if c[f"absent0_{k}"] else ""
        parts.append(f"`{k}` differing {c[f'bad_{k}']}{extra}, sum {c[f'sum_{k}_pl']:.10g} vs {c[f'sum_{k}_ht']:.10g}")
    if "b2_pairs" in c:
        parts.append(f"`time` compared after adding Hatchet's B.2 double count to perflake's values "
                     f"({c['b2_pairs']:,} pairs, {c['b2_total']:.10g} in total)")
    return f"| correctness vs {what}{note} | **{'OK' if c['ok'] else 'MISMATCH'}**: " + "; ".join(parts) + " |"


# -- benchmarks -------------------------------------------------------------------------------------------
def single_run_bench(a, r: dict, fmt: str, nodes: int, ranks: int, *,
                     scale: bool = False) -> tuple[str, str, bool | None]:
    """caliper-json or hpctoolkit: one generated run, perflake vs the Hatchet reader."""
    name = f"ingest-{fmt}-{nodes}x{ranks}"
    writer = {"caliper-json": "write_caliper_json_runs", "hpctoolkit": "write_hpctoolkit_runs"}[fmt]
    reader = {"caliper-json": "caliper", "hpctoolkit": "hpctoolkit"}[fmt]
    gen_call = f"`{writer}(out, nodes={nodes}, ranks={ranks}, runs=1, seed={SEED})`"
    run, gen = ensure_generated(fmt, nodes, ranks, guarded=scale)
    gen_note = ""
    if gen and not gen.get("skipped"):
        when = f"on {gen['date']} (reused here)" if gen.get("earlier") else "in this run"
        gen_note = (f"; generated {when}: {gen['wall_s']:.1f} s, peak RSS {mib(gen['rss_kib'])} "
                    f"(`.venv/bin/python -c ...` subprocess; limits {GEN_LIMIT_S:.0f} s / "
                    f"{GEN_LIMIT_KIB / 1024 ** 2:.0f} GiB{'' if scale else ' not applied'})")
    if run is None:
        lines = header(name, r, f"{gen_call}: **skipped** -- {gen['skipped']}")
        lines.append(f"| everything | skipped: {gen['skipped']} |")
        return name, "\n".join(lines) + "\n", None
    n_files, nbytes = input_bytes([run])
    lakes = WORK / "lakes" / name
    lakes.mkdir(parents=True, exist_ok=True)
    t = perflake_inprocess([run], a.reps, lakes / "inprocess", 1)
    cli = perflake_cli([str(run)], rel(run), lakes / "cli")
    lake_bytes, _ = tree_bytes(lakes / "inprocess")
    h = c = None
    path_id: dict = {}
    default = None  # caliper: what the plain from_caliper(run) call does (cheap at 1000 x 256: run it there)
    if not a.skip_hatchet:
        dump = lakes / "hatchet-check.npz"
        extra = []
        if reader == "caliper":
            if not scale:
                default = probe(reader, [run], None, TIME_METRICS)
            extra = ["--no-node-ordering"]
        h = probe(reader, [run], dump, TIME_METRICS, *extra)
        pl, info = lake_table(lakes / "inprocess", TIME_METRICS, {os.path.realpath(run): 0}, path_id)
        adjust = {"time": b2_extra(pl, info)} if fmt == "hpctoolkit" else None
        c = compare(pl, dump, ["time", "inc"], path_id, adjust=adjust)
        log(f"correctness: {'OK' if c['ok'] else 'MISMATCH'} {c}")
    best = min(t)
    lines = header(name, r, f"{gen_call} -> `{rel(run)}` ({n_files} file(s), {fmt_bytes(nbytes)}){gen_note}; "
                            "page cache warm for every reader")
    lines += perflake_rows(t, cli, "[run]")
    if fmt == "caliper-json":
        target, issue = (5.0, "hatchet 0.76 s") if not scale else (None, "hatchet 114 s, 4.2 GiB")
        what, short = "hatchet `GraphFrame.from_caliper(run, node_ordering=False)`", "hatchet from_caliper"
    else:
        target, issue = 10.0, None
        what, short = "hatchet `GraphFrame.from_hpctoolkit(run)`", "hatchet from_hpctoolkit"
    if h:
        lines += ref_rows(h, what, short, best, cli["wall_s"], target, issue)
        if scale:
            ratio = cli["rss_kib"] / h["rss_kib"]
            lines.append(f"| peak RSS: perflake CLI / hatchet process (target <= 1/4) | **{ratio:.2f}** "
                         f"({mib(cli['rss_kib'])} vs {mib(h['rss_kib'])}: "
                         f"{'met' if ratio <= 0.25 else '**NOT met**'}) |")
    else:
        lines.append(f"| {what} | not run (--skip-hatchet) |")
    lines.append(f"| input bytes / lake bytes | {fmt_bytes(nbytes)} / {fmt_bytes(lake_bytes)} "
                 f"({nbytes / lake_bytes:,.1f}x) |")
    lines.append(check_row(c, "hatchet: per (call path, rank) `time`, `time (inc)`"))
    lines.append("")
    if default and default["info"].get("default_call_failed"):
        f = default["info"]["default_call_failed"]
        lines.append(f"The default `GraphFrame.from_caliper(run)` fails with `{f['error']}` after {f['after_s']:.2f} s "
                     "(json-split written without a `Node order` column; formats.md 3.4); measured in its own process "
                     f"(`{default['cmd']}`, which then timed `node_ordering=False` at {default['load_s']:.3f} s "
                     "after the failure). The time above is a separate process calling "
                     "`from_caliper(run, node_ordering=False)` directly.")
    elif default:
        lines.append(f"The default `GraphFrame.from_caliper(run)` worked here ({default['load_s']:.3f} s); the time "
                     "above is `node_ordering=False` all the same.")
    elif h and reader == "caliper":
        lines.append("The time above is `from_caliper(run, node_ordering=False)` called directly: the default call "
                     "fails with `KeyError: \"['Node order'] not found in axis\"` on these files (shown at 1000 x 256 "
                     "in its section), only after parsing the whole file (it failed after 106.8 s at 10000 x 1024 in "
                     "the first full run of this script, 2026-11-22, before its retry took 115.7 s).")
    if fmt == "hpctoolkit" and c:
        lines.append("Hatchet's `time` of a procedure frame or loop keeps the exclusive time of statements nested "
                     "in loops below it (it subtracts a statement from its direct parent only, formats.md 1.7 / B.2), "
                     "perflake's does not; the check adds that documented difference to perflake's values, computed "
                     "from perflake's own tree. `time (inc)` is compared as is.")
    if h:
        lines.append(f"Hatchet ran as `{h['cmd']}` (process wall {h['wall_s']:.1f} s incl. interpreter, import and "
                     f"the check dump; peak RSS via {h['rss_source']}).")
    lines.append(f"perflake CLI ran as `{cli['cmd']}` (peak RSS via {cli['rss_source']}); in-process repetitions: "
                 + ", ".join(f"{x:.3f}" for x in t) + " s.")
    return name, "\n".join(lines) + "\n", (c["ok"] if c else None)


def bench_caliper_json(a, r):
    return [single_run_bench(a, r, "caliper-json", *(CALI_JSON_QUICK if a.quick else CALI_JSON))]


def bench_caliper_json_scale(a, r):
    if a.quick or a.no_scale:
        log("caliper-json scale point skipped (--quick/--no-scale)")
        return []
    return [single_run_bench(a, r, "caliper-json", *CALI_JSON_SCALE, scale=True)]


def bench_hpctoolkit(a, r):
    return [single_run_bench(a, r, "hpctoolkit", *(HPC_QUICK if a.quick else HPC))]


def bench_cali(a, r):
    n = CALI_FILES_QUICK if a.quick else CALI_FILES
    name = f"ingest-cali-{n}-files"
    files, gen_s = ensure_cali(n)
    n_files, nbytes = input_bytes(files)
    root = files[0].parent.parent
    lakes = WORK / "lakes" / name
    lakes.mkdir(parents=True, exist_ok=True)
    run_index = {os.path.realpath(f): i for i, f in enumerate(files)}
    t = perflake_inprocess(files, a.reps, lakes / "inprocess", n)
    cli = perflake_cli([str(root)], rel(root), lakes / "cli")
    lake_bytes, _ = tree_bytes(lakes / "inprocess")
    sub = min(THICKET_SUBSET, n)
    t_sub, cli_sub = t, cli
    if sub < n:
        t_sub = perflake_inprocess(files[:sub], a.reps, lakes / f"inprocess-{sub}", sub)
        cli_sub = perflake_cli([str(f) for f in files[:sub]], f"<the first {sub} files>", lakes / f"cli-{sub}")
    h = None
    checks = {}
    thickets = {}
    if not a.skip_hatchet:
        path_id: dict = {}
        pl, _ = lake_table(lakes / "inprocess", SPOT_METRICS, run_index, path_id)
        keys = [k for k, _ in SPOT_METRICS]
        dump = lakes / "hatchet-check.npz"
        h = probe("caliperreader", files, dump, SPOT_METRICS)
        checks["hatchet"] = compare(pl, dump, keys, path_id)
        log(f"correctness vs hatchet: {'OK' if checks['hatchet']['ok'] else 'MISMATCH'} {checks['hatchet']}")
        for k in ([sub] if a.quick or sub == n else [sub, n]):
            d = lakes / f"thicket-{k}-check.npz"
            thickets[k] = probe("thicket", files[:k], d, SPOT_METRICS)
            checks[f"thicket-{k}"] = compare(pl, d, keys, path_id, runs=range(k))
            log(f"correctness vs thicket {k}: {'OK' if checks[f'thicket-{k}']['ok'] else 'MISMATCH'}")
    from cali_writer import N_RECORDS, N_REGIONS

    lines = header(name, r, f"{n} Spot `.cali` files from `bench/cali_writer.py` (`write_cali_profiles(out, {n}, "
                            f"seed={SEED})`, RAJAPerf layout: {N_REGIONS} regions, {N_RECORDS} records, 1 rank, "
                            f"distinct values and launchdate per file) -> `{rel(root)}` ({n_files} files, "
                            f"{fmt_bytes(nbytes)})"
                            + (f"; written in this run in {gen_s:.1f} s" if gen_s is not None else "")
                            + "; page cache warm for every reader")
    lines += perflake_rows(t, cli, f"[{n} files]")
    if h:
        lines += ref_rows(h, f"hatchet `GraphFrame.from_caliperreader(f)` for each of the {n} files, one process",
                          f"hatchet from_caliperreader x {n}", min(t), cli["wall_s"], 10.0, None)
    else:
        lines.append("| hatchet `GraphFrame.from_caliperreader(f)` per file | not run (--skip-hatchet) |")
    if sub < n:
        lines += [f"| perflake ingest of the first {sub} files, in-process (best / median of {len(t_sub)}) | "
                  f"{fmt_s(min(t_sub))} / {fmt_s(statistics.median(t_sub))} |",
                  f"| perflake CLI cold, the first {sub} files | {fmt_s(cli_sub['wall_s'])} "
                  f"(peak RSS {mib(cli_sub['rss_kib'])}) |"]
    for k, th in thickets.items():
        tk, ck = (t_sub, cli_sub) if k == sub else (t, cli)
        issue = {100: "Thicket ~8.5 s", 1000: "Thicket ~88 s"}.get(k)
        lines += ref_rows(th, f"thicket `Thicket.from_caliperreader(files[:{k}])`", f"thicket ({k} files)",
                          min(tk), ck["wall_s"], 20.0 if k == 1000 else None, issue)
    if not a.skip_hatchet and a.quick and sub == n:
        lines.append("| thicket at 1000 files | skipped (--quick) |")
    elif a.skip_hatchet:
        lines.append("| thicket `Thicket.from_caliperreader(files)` | not run (--skip-hatchet) |")
    lines.append(f"| input bytes / lake bytes | {fmt_bytes(nbytes)} / {fmt_bytes(lake_bytes)} "
                 f"({nbytes / lake_bytes:,.1f}x) |")
    what = "per (file, call path) `Avg time/rank` (avg), `Total time` (total)"
    if not checks:
        lines.append(check_row(None, "hatchet / thicket"))
    for label, c in checks.items():
        lines.append(check_row(c, f"{label.replace('-', ' at ')}{' files' if '-' in label else ''}: {what}"))
    lines.append("")
    if h:
        lines.append(f"Hatchet ran as `{h['cmd']}`; " + "; ".join(
            f"Thicket ({k}) as `{th['cmd']}`" for k, th in thickets.items())
            + " (bench venv; peak RSS via /usr/bin/time -f %M for the whole process incl. the check dump, and the "
              "probe's ru_maxrss at the end of the load).")
    lines.append(f"perflake CLI ran as `{cli['cmd']}` (the folder holding the {n} files; peak RSS via "
                 f"{cli['rss_source']}); in-process ingest was given the list of {n} file paths in one call; "
                 "repetitions: " + ", ".join(f"{x:.3f}" for x in t) + " s"
                 + (f"; first {sub} files: " + ", ".join(f"{x:.3f}" for x in t_sub) + " s" if sub < n else "")
                 + ".")
    ok = all(c["ok"] for c in checks.values()) if checks else None
    return [(name, "\n".join(lines) + "\n", ok)]


# the scale point runs last: its 10M-row check leaves this process large, which slowed a later in-process ingest
# (hpctoolkit 10000x64: 3.7 s here vs 2.2 s in a fresh process, first full run)
BENCHMARKS = {"caliper-json": bench_caliper_json, "hpctoolkit": bench_hpctoolkit, "cali": bench_cali,
              "caliper-json-scale": bench_caliper_json_scale}




def load_avg() -> str:
    return " / ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"


def machine_info() -> dict:
    info = common.machine_info()
    if HATCHET_PY.exists():
        code = ("import json,platform;from importlib import metadata as m;"
                "print(json.dumps({'python':platform.python_version(),"
                "**{p:m.version(p) for p in ('llnl-hatchet','llnl-thicket','caliper-reader','pandas','numpy')}}))")
        try:
            out = subprocess.run([str(HATCHET_PY), "-c", code], capture_output=True, text=True, timeout=60)
            info["bench_venv"] = json.loads(out.stdout)
        except (OSError, subprocess.SubprocessError, ValueError):
            info["bench_venv"] = None
    return info


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="smoke test: small sizes, no scale point, no Thicket at 1000")
    p.add_argument("--skip-hatchet", action="store_true", help="perflake only (no comparison, no check)")
    p.add_argument("--reps", type=int, default=3, help="in-process ingest repetitions (default 3)")
    p.add_argument("--results", type=pathlib.Path, default=RESULTS, help="Markdown file to update")
    p.add_argument("--only", action="append",
                   help=f"run only this benchmark (repeatable): {', '.join(sorted(BENCHMARKS))}; names of the other "
                        "bench scripts are ignored (bench/run.sh passes --only to every script)")
    p.add_argument("--no-scale", action="store_true", help="skip the 10000 x 1024 Caliper json scale point")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--write-results", action="store_true", help="update the results file also with --quick")
    g.add_argument("--no-results", action="store_true", help="do not touch the results file")
    a = p.parse_args(argv)
    if a.reps < 1:
        p.error("--reps must be >= 1")
    if not GNU_TIME.exists():
        log("note: /usr/bin/time missing, peak RSS falls back to wait4 rusage")
    args = sys.argv[1:] if argv is None else argv
    command = shlex.join([rel(sys.executable), rel(pathlib.Path(__file__).resolve()), *args])
    if os.environ.get("PERFLAKE_BENCH_VIA"):  # set by bench/run.sh (make bench)
        command = f"{os.environ['PERFLAKE_BENCH_VIA']}`, which runs `{command}"
    r = {"command": command, "date": dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
         "machine": machine_info()}
    WORK.mkdir(parents=True, exist_ok=True)
    write = not a.no_results and (not a.quick or a.write_results)
    status = 0
    if a.only and not any(k in a.only for k in BENCHMARKS):
        log(f"--only {' '.join(a.only)}: none of this script's benchmarks ({', '.join(BENCHMARKS)}); nothing to do")
        return 0
    for key in [k for k in BENCHMARKS if k in (a.only or BENCHMARKS)]:
        release_memory()
        r["machine"]["load"] = load_avg()  # per benchmark: the machine may be shared
        try:
            sections = BENCHMARKS[key](a, r)
        except Exception as exc:  # noqa: BLE001 - report, go on with the next benchmark, fail at the end
            log(f"{key} FAILED: {type(exc).__name__}: {exc}")
            status = 2
            continue
        for name, text, ok in sections:
            text = text.replace("\n\n| measurement |", f"\n- load average at the end: {load_avg()} (1/5/15 min)"
                                "\n\n| measurement |", 1)
            print(text)
            if write:
                update_results(a.results, name, text)
                log(f"updated section '{name}' of {rel(a.results)}")
            if ok is not None:
                print(f"correctness {name}:", "OK" if ok else "MISMATCH")
            if ok is False:
                status = max(status, 1)
    return status


if __name__ == "__main__":
    sys.exit(main())
