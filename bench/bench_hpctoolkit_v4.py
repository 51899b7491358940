#!/usr/bin/env python3
"""Benchmark of issue 13 item 9: ingest of an HPCToolkit v4 database -- perflake vs Hatchet's from_hpctoolkit_latest.

Run with the project venv from the repository root (``make bench`` runs it through bench/run.sh)::

    .venv/bin/python bench/bench_hpctoolkit_v4.py                  # full size: 10,000 nodes x 64 ranks
    .venv/bin/python bench/bench_hpctoolkit_v4.py --quick          # smoke test: 500 x 4, RESULTS.md untouched
    .venv/bin/python bench/bench_hpctoolkit_v4.py --skip-hatchet   # perflake only
    .venv/bin/python bench/bench_hpctoolkit_v4.py --nodes 2000 --ranks 16 --no-results   # another size

Section ``ingest-hpctoolkit-v4-10000x64``: one database from ``perflake.generators.write_hpctoolkit_v4_runs(out,
nodes=10000, ranks=64, runs=1, seed=1)`` (released 4.0 layout: meta.db, profile.db, cct.db; one thread per rank,
elided instruction contexts, an ``unknown entry``), generated once under bench/work/ and stamped with the
generator's source hash.

* perflake: ``perflake.Lake(fresh_dir).ingest([run])`` in-process, best and median of ``--reps`` (3); one cold
  CLI run ``perflake ingest RUN --lake L --quiet`` under ``/usr/bin/time -f %M`` (peak RSS);
* Hatchet: ``hatchet.GraphFrame.from_hpctoolkit_latest(run)`` with its defaults, once, in the bench venv (this
  file with ``probe`` as first argument; peak RSS by /usr/bin/time, which includes the check dump, and the
  probe's ``ru_maxrss`` right after the load).  Its defaults read much less than perflake: only the summary
  profile and only the first ``main thread`` entry point (formats.md 2.7, B.6), where perflake reads all 64
  per-thread profiles, the summary and every entry point into the lake.  The ratio is reported as measured,
  with that caveat;
* check: per call path below ``main thread``, the lake's summary columns ``sum(time)`` / ``sum(time (inc))``
  (rank -1; SQL over the lake's views) against Hatchet's ``time`` / ``time (inc)`` (rtol 1e-12, both NaN
  counts as equal), and the same set of call paths.

Before every timed call the script waits until the 1-minute load average is below ``--max-load`` (1.0; at most
300 s) and records the load.  Writes/replaces its section in bench/RESULTS.md (``--quick`` only with
``--write-results``).  Exit status: 0 all ran and the check passed (or was skipped), 1 MISMATCH, 2 a step failed.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import pathlib
import resource
import shlex
import shutil
import statistics
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import common as C  # noqa: E402  (stdlib only: importable from both venvs)

SELF = pathlib.Path(__file__).resolve()
SEED = 1
FULL, QUICK = (10000, 64), (500, 4)
GENERATOR_FILES = ("hpctoolkit_v4.py", "hpctoolkit_v4_bytes.py", "calltree.py", "names.py")


def section_name(nodes: int, ranks: int) -> str:
    return f"ingest-hpctoolkit-v4-{nodes}x{ranks}"


# -- Hatchet side (bench venv) -----------------------------------------------------------------------------------
def probe_main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="bench_hpctoolkit_v4.py probe")
    p.add_argument("run")
    p.add_argument("--dump", required=True)
    p.add_argument("--max-load", type=float, default=1.0)
    a = p.parse_args(argv)
    t = time.perf_counter()
    import hatchet

    import_s = time.perf_counter() - t
    load = C.wait_for_load(a.max_load, label="hatchet")
    t = time.perf_counter()
    gf = hatchet.GraphFrame.from_hpctoolkit_latest(a.run)
    elapsed = time.perf_counter() - t
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    df = gf.dataframe
    rows = [[[str(n.frame.get("name")) for n in node.path()], float(tm), float(inc)]
            for node, tm, inc in zip(df.index, df["time"], df["time (inc)"])]
    pathlib.Path(a.dump).write_text(json.dumps(rows))
    print("RESULT " + json.dumps({"load_s": elapsed, "import_s": import_s, "rss_after_load_kib": rss,
                                  "rows": len(df), "nodes": len(gf.graph), "load": load,
                                  "hatchet_version": getattr(hatchet, "__version__", None)}), flush=True)
    return 0


# -- perflake side -------------------------------------------------------------------------------------------------
def generator_hash() -> str:
    h = hashlib.sha256()
    for name in GENERATOR_FILES:
        h.update((C.REPO / "pipeline" / "generators" / name).read_bytes())
    return h.hexdigest()


def ensure_db(nodes: int, ranks: int) -> tuple[pathlib.Path, dict | None]:
    out = C.WORK / f"hpctoolkit-v4-{nodes}x{ranks}"
    run, stamp = out / "run-000", out / ".complete.json"
    params = {"generator": "perflake.generators.write_hpctoolkit_v4_runs", "nodes": nodes, "ranks": ranks,
              "runs": 1, "seed": SEED, "source_sha256": generator_hash()}
    if C.stamp_ok(stamp, params) and (run / "meta.db").exists():
        return run, None
    C.log(f"generating {C.rel(out)} ({nodes} nodes x {ranks} ranks, seed {SEED}) ...")
    shutil.rmtree(out, ignore_errors=True)
    code = (f"from perflake.generators import write_hpctoolkit_v4_runs; "
            f"write_hpctoolkit_v4_runs({str(out)!r}, nodes={nodes}, ranks={ranks}, runs=1, seed={SEED})")
    g = C.run_measured([str(C.PROJECT_PY), "-c", code], timeout=3600)
    if g["rc"] != 0 or not (run / "meta.db").exists():
        raise RuntimeError(f"generation failed (rc {g['rc']}): {g['stderr'][-2000:]}")
    C.write_stamp(stamp, params)
    C.log(f"generated in {g['wall_s']:.1f} s, peak RSS {C.mib(g['rss_kib'])}")
    return run, g


def perflake_ingest(run: pathlib.Path, reps: int, lake: pathlib.Path, max_load: float) -> tuple[list[float], list]:
    import perflake

    times, loads = [], []
    for i in range(reps):
        shutil.rmtree(lake, ignore_errors=True)
        C.release_memory()
        loads.append(C.wait_for_load(max_load, label="perflake"))
        t = time.perf_counter()
        report = perflake.Lake(lake).ingest([str(run)])
        times.append(time.perf_counter() - t)
        if len(report.ingested) != 1 or report.failed:
            raise RuntimeError(f"in-process ingest: {report.summary()} {report.failed[:3]}")
        C.log(f"perflake in-process ingest, rep {i + 1}/{reps}: {times[-1]:.3f} s")
    return times, loads


def lake_summary(lake: pathlib.Path):
    """Per call path below ``main thread`` (entry name first): the summary columns of the lake (rank -1)."""
    import pandas as pd

    import perflake

    lk = perflake.Lake(lake)
    nodes = lk.sql("select cast(node_id as varchar) as id, cast(parent_id as varchar) as parent, name, type "
                   "from nodes")
    vals = lk.sql('select cast(node_id as varchar) as id, "sum(time)" as t, "sum(time (inc))" as i '
                  "from metrics where rank = -1")
    parent = dict(zip(nodes["id"], nodes["parent"]))
    name, typ = dict(zip(nodes["id"], nodes["name"])), dict(zip(nodes["id"], nodes["type"]))
    paths = {}
    for nid in nodes["id"]:
        chain, cur = [], nid
        while cur in name and not (typ[cur] == "entry" and name[cur] == "main thread"):
            chain.append(name[cur])
            cur = parent[cur]
        if cur in name:
            paths[nid] = ("main thread", *reversed(chain))
    df = pd.DataFrame({"path": [paths[n] for n in nodes["id"] if n in paths]})
    v = vals[vals["id"].isin(paths)]
    got = pd.DataFrame({"path": [paths[n] for n in v["id"]], "time": v["t"].astype(float),
                        "time (inc)": v["i"].astype(float)})
    return df.merge(got, on="path", how="left").set_index("path").sort_index()


def check(lake: pathlib.Path, dump: pathlib.Path) -> dict:
    import numpy as np
    import pandas as pd

    rows = json.loads(dump.read_text())
    h = pd.DataFrame([(tuple(["main thread", *p[1:]]), t, i) for p, t, i in rows],
                     columns=["path", "time", "time (inc)"]).set_index("path").sort_index()
    pl = lake_summary(lake)
    res = {"paths_pl": len(pl), "paths_ht": len(h), "dup_pl": int(pl.index.duplicated().sum()),
           "dup_ht": int(h.index.duplicated().sum())}
    same = pl.index.equals(h.index) and not res["dup_pl"] and not res["dup_ht"]
    res["same_paths"] = bool(same)
    bad = 0
    if same:
        a, b = pl.to_numpy(float), h.to_numpy(float)
        bad = int((~(np.isclose(a, b, rtol=1e-12, atol=0) | (np.isnan(a) & np.isnan(b)))).sum())
    res["bad_values"] = bad
    res["ok"] = bool(same and bad == 0)
    return res


def ratio(x: float) -> str:
    return f"{x:.1f}x" if x >= 1 else f"{x:.2f}x"


def run_benchmark(a, nodes: int, ranks: int) -> tuple[str, str, bool | None]:
    name = section_name(nodes, ranks)
    run, gen = ensure_db(nodes, ranks)
    n_files, n_bytes = C.tree_bytes([run])
    lakes = C.WORK / "lakes" / name
    times, loads = perflake_ingest(run, a.reps, lakes / "inprocess", a.max_load)
    C.release_memory()
    C.wait_for_load(a.max_load, label="perflake CLI")
    shutil.rmtree(lakes / "cli", ignore_errors=True)
    cli = C.run_measured([str(C.PERFLAKE_CLI), "ingest", str(run), "--lake", str(lakes / "cli"), "--quiet"],
                         timeout=7200)
    if cli["rc"] != 0:
        raise RuntimeError(f"CLI ingest failed (rc {cli['rc']}): {cli['stderr'][-2000:]}")
    best, median = min(times), statistics.median(times)
    lines = [f"### {name}", "", f"- command: `{a.command}`; {C.now()}; machine load at the timed calls "
             f"(1-min): perflake {', '.join(C.load_note(w) for w in loads)}",
             f"- input: `write_hpctoolkit_v4_runs(out, nodes={nodes}, ranks={ranks}, runs=1, seed={SEED})` -> "
             f"{n_files} files, {C.fmt_bytes(n_bytes)}" + (f"; generated in {gen['wall_s']:.1f} s" if gen else ""),
             C.venv_line("project venv", a.machine.get("project_venv")),
             C.venv_line("bench venv", a.machine.get("bench_venv")), "",
             "| reader | time | peak RSS |", "|---|---|---|",
             f"| perflake `Lake(fresh).ingest([run])`, best / median of {a.reps} | {C.fmt_s(best)} / "
             f"{C.fmt_s(median)} | |",
             f"| perflake CLI cold `perflake ingest RUN --lake L --quiet` | {C.fmt_s(cli['wall_s'])} | "
             f"{C.mib(cli['rss_kib'])} |"]
    ok = None
    if not a.skip_hatchet:
        dump = lakes / "hatchet-rows.json"
        probe = C.run_measured([str(C.BENCH_PY), "-W", "ignore", str(SELF), "probe", str(run), "--dump", str(dump),
                                "--max-load", str(a.max_load)], timeout=3 * 3600)
        if probe["rc"] != 0:
            raise RuntimeError(f"Hatchet probe failed (rc {probe['rc']}): {probe['stderr'][-2000:]}")
        hp = C.result_line(probe["stdout"])
        res = check(lakes / "inprocess", dump)
        ok = res["ok"]
        lines += [f"| Hatchet `GraphFrame.from_hpctoolkit_latest(run)` (defaults) | {C.fmt_s(hp['load_s'])} | "
                  f"{C.mib(probe['rss_kib'])} (after load: {C.mib(hp['rss_after_load_kib'])}) |", "",
                  f"- ratio Hatchet / perflake: **{ratio(hp['load_s'] / best)}** (in-process best), "
                  f"{ratio(hp['load_s'] / cli['wall_s'])} (CLI cold, interpreter start included); Hatchet load "
                  f"measured at 1-min load {C.load_note(hp['load'])}",
                  "- not the same work: Hatchet's defaults read the summary profile of the first `main thread` "
                  f"entry only ({hp['rows']:,} rows); perflake reads every per-thread profile ({ranks} here), the "
                  "summary and every entry point into the lake",
                  f"- check ({'OK' if ok else 'MISMATCH'}): call paths below `main thread`: perflake "
                  f"{res['paths_pl']:,}, Hatchet {res['paths_ht']:,}, same set: {res['same_paths']}; values "
                  f"`sum(time)`/`sum(time (inc))` (rank -1) vs `time`/`time (inc)` differing (rtol 1e-12): "
                  f"{res['bad_values']}"]
    else:
        lines += ["", "- Hatchet skipped (--skip-hatchet)"]
    return name, "\n".join(lines) + "\n", ok


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "probe":
        return probe_main(argv[1:])
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help=f"smoke test: {QUICK[0]} nodes x {QUICK[1]} ranks")
    p.add_argument("--nodes", type=int, help=f"model nodes (default {FULL[0]})")
    p.add_argument("--ranks", type=int, help=f"ranks (default {FULL[1]})")
    p.add_argument("--skip-hatchet", action="store_true", help="perflake only (no Hatchet, no check)")
    p.add_argument("--reps", type=int, default=3, help="repetitions of the in-process ingest (3)")
    p.add_argument("--results", type=pathlib.Path, default=C.RESULTS, help="Markdown file to update")
    p.add_argument("--only", action="append", help="run only if this names this benchmark (hpctoolkit-v4 or the "
                                                   "section name); names of the other bench scripts are ignored")
    p.add_argument("--max-load", type=float, default=1.0, help="wait for a 1-min load average below this (1.0)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--write-results", action="store_true", help="update the results file also with --quick")
    g.add_argument("--no-results", action="store_true", help="do not touch the results file")
    a, unknown = p.parse_known_args(argv)
    if unknown:
        C.log(f"ignoring arguments of the other bench scripts: {' '.join(unknown)}")
    nodes, ranks = QUICK if a.quick else FULL
    nodes, ranks = a.nodes or nodes, a.ranks or ranks
    if a.reps < 1 or nodes < 1 or ranks < 1:
        p.error("--reps, --nodes and --ranks must be >= 1")
    name = section_name(nodes, ranks)
    if a.only and not {"hpctoolkit-v4", name, section_name(*FULL)} & set(a.only):
        C.log(f"--only {' '.join(a.only)}: not this script's benchmark ({name}); nothing to do")
        return 0
    if not C.PROJECT_PY.exists():
        C.log(".venv/bin/python missing: create the project venv first")
        return 2
    a.command = shlex.join([C.rel(sys.executable), C.rel(SELF), *argv])
    if os.environ.get("PERFLAKE_BENCH_VIA"):
        a.command = f"{os.environ['PERFLAKE_BENCH_VIA']}`, which runs `{a.command}"
    a.machine = C.machine_info(bench_venv=not a.skip_hatchet)
    C.WORK.mkdir(parents=True, exist_ok=True)
    C.log(f"== {name}")
    try:
        name, text, ok = run_benchmark(a, nodes, ranks)
    except Exception as exc:  # noqa: BLE001 - one line, exit 2
        import traceback

        traceback.print_exc()
        C.log(f"{name} FAILED: {type(exc).__name__}: {exc}")
        return 2
    print(text, flush=True)
    if not a.no_results and (not a.quick or a.write_results):
        C.update_results(a.results, name, text)
        C.log(f"updated section '{name}' of {C.rel(a.results)}")
    if ok is not None:
        print(f"correctness {name}: {'OK' if ok else 'MISMATCH'}", flush=True)
    return 0 if ok is not False else 1


if __name__ == "__main__":
    sys.exit(main())
