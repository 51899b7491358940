"""Benchmark of issue 16 items 1-2: Ensemble construction + 5 statistics over RAJAPerf-like runs, against Thicket.

    .venv/bin/python bench/bench_ensemble.py                 # 1,000 runs vs Thicket, 10,000 runs perflake only
    .venv/bin/python bench/bench_ensemble.py --quick         # smoke test: 50 runs vs Thicket, 100 perflake only
    .venv/bin/python bench/bench_ensemble.py --skip-hatchet  # perflake only

Inputs: ``bench/cali_writer.py`` RAJAPerf-like Spot ``.cali`` files (seed 1; 74 regions, one rank each), written
under ``bench/work/ensemble-cali-<n>`` and ingested into ``bench/work/lakes/ensemble-<n>`` (ingest timed, reported
apart).  The five statistics are Thicket's ``mean, median, std, minimum, maximum`` of ``Avg time/rank``.

* ``ensemble-object-<n>-runs`` (1,000): Thicket's ``Thicket.from_caliperreader(files)`` then ``th.stats.mean`` ...
  (each timed) in the bench venv, against perflake's ``lake.ensemble_of(metric=...)`` then ``ens.stats.mean`` ...
  (five calls, as Thicket's) and ``ens.stats.describe`` (the five in one DuckDB pass), each in a fresh process
  (``worker``), plus the time of perflake's ``.dataframe`` (which the statistics never need).  Every statistic of
  every call path is checked equal to Thicket's (relative 1e-9).
* ``ensemble-object-<N>-runs`` (10,000; Thicket cannot do it here): perflake only, each statistic timed (target
  < 2 s) and compared with a hand-written DuckDB query over the same Parquet files (target within 1.5x).

Peak memory: ``/usr/bin/time -f %M`` of the whole worker / probe process.  Exit status: 0 ok, 1 a value MISMATCH,
2 a step failed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pathlib
import shlex
import shutil
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import common as C  # noqa: E402

SELF = pathlib.Path(__file__).resolve()
SEED = 1
SEP = "\x1f"
METRIC = "Avg time/rank"
STATS = ("mean", "median", "std", "minimum", "maximum")
THICKET_COLUMN = {"mean": "_mean", "median": "_median", "std": "_std", "minimum": "_min", "maximum": "_max"}
SIZES = {"full": (1000, 10000), "quick": (50, 100)}
TARGET_STAT_S, TARGET_RATIO = 2.0, 1.5


def _key(names) -> str:
    return SEP.join(map(str, names))


# -- reference side (.bench-venv) --------------------------------------------------------------------------------
def probe_main(argv) -> int:
    p = argparse.ArgumentParser(prog="bench_ensemble.py probe")
    p.add_argument("--paths-from", required=True)
    p.add_argument("--dump", required=True)
    a = p.parse_args(argv)
    files = pathlib.Path(a.paths_from).read_text().split("\n")
    files = [f for f in files if f]
    t = time.perf_counter()
    import thicket as th

    info = {"import_s": time.perf_counter() - t}
    t = time.perf_counter()
    tk = th.Thicket.from_caliperreader(files, disable_tqdm=True)
    info["load_s"] = time.perf_counter() - t
    fns = {"mean": th.stats.mean, "median": th.stats.median, "std": th.stats.std, "minimum": th.stats.minimum,
           "maximum": th.stats.maximum}
    info["stats_s"] = {}
    for name in STATS:
        t = time.perf_counter()
        fns[name](tk, columns=[METRIC])
        info["stats_s"][name] = time.perf_counter() - t
    sf = tk.statsframe.dataframe
    values = {_key(n.frame["name"] for n in node.path()): [float(sf.loc[node, METRIC + THICKET_COLUMN[s]])
                                                            for s in STATS] for node in sf.index}
    pathlib.Path(a.dump).write_text(json.dumps(values))
    info["nodes"] = len(sf)
    print("RESULT " + json.dumps(info), flush=True)
    return 0


# -- project side: the worker (a fresh process per measurement) ----------------------------------------------------
def worker_main(argv) -> int:
    p = argparse.ArgumentParser(prog="bench_ensemble.py worker")
    p.add_argument("--lake", required=True)
    p.add_argument("--mode", choices=["calls", "describe", "dataframe", "handwritten", "warm", "cold"], required=True)
    p.add_argument("--stat", choices=STATS, help="cold: the one statistic")
    p.add_argument("--dump")
    a = p.parse_args(argv)
    t = time.perf_counter()
    import perflake
    import perflake.analytics.ensemble_frame  # noqa: F401 -- what perflake needs loaded, as Thicket's import
    import perflake.analytics.ensemble_stats  # noqa: F401 -- loads pandas/numpy/hatchet (import time apart)

    info = {"import_s": time.perf_counter() - t}
    lake = perflake.Lake(a.lake)
    if a.mode == "handwritten":
        info.update(_handwritten(lake))
        print("RESULT " + json.dumps(info), flush=True)
        return 0
    t0 = time.perf_counter()
    ens = lake.ensemble_of(metric=METRIC)
    info["construct_s"] = time.perf_counter() - t0
    info["stats_s"] = {}
    if a.mode == "calls":
        for name in STATS:
            t = time.perf_counter()
            getattr(ens.stats, name)([METRIC])
            info["stats_s"][name] = time.perf_counter() - t
    elif a.mode == "warm":  # the tables read first (an analysis session), then each statistic
        t = time.perf_counter()
        ens.values_table()
        len(ens.graph)
        info["read_s"] = time.perf_counter() - t
        for name in STATS:
            t = time.perf_counter()
            getattr(ens.stats, name)([METRIC])
            info["stats_s"][name] = time.perf_counter() - t
    elif a.mode == "cold":  # construction + one statistic: everything it needs read from the Parquet files
        t = time.perf_counter()
        getattr(ens.stats, a.stat)([METRIC])
        info["stats_s"][a.stat] = time.perf_counter() - t
    elif a.mode == "describe":
        t = time.perf_counter()
        ens.stats.describe([METRIC], ["mean", "median", "std", "min", "max"])
        info["stats_s"]["describe"] = time.perf_counter() - t
    else:
        t = time.perf_counter()
        info["rows"] = len(ens.dataframe)
        info["dataframe_s"] = time.perf_counter() - t
    info["total_s"] = time.perf_counter() - t0
    if a.dump and a.mode != "dataframe":
        sf = ens.statsframe
        cols = [f"{METRIC}_{s}" for s in ("mean", "median", "std", "min", "max")]
        values = {_key(n.frame.get("name") for n in node.path()): [float(sf.at[node, c]) for c in cols]
                  for node in sf.index}
        pathlib.Path(a.dump).write_text(json.dumps(values))
    print("RESULT " + json.dumps(info), flush=True)
    return 0


def _handwritten(lake) -> dict:
    """Each statistic as one hand-written DuckDB query over the lake's metrics Parquet files (one rank per run:
    no per-run averaging), to compare perflake's overhead with."""
    import duckdb

    cat = lake.catalog()
    files = cat.files("metrics", cat.runs(columns=["batch"]).column("batch").unique().to_pylist())
    con = duckdb.connect()
    out = {}
    for name, agg in (("mean", "avg(v)"), ("median", "median(v)"), ("std", "stddev_samp(v)"), ("minimum", "min(v)"),
                      ("maximum", "max(v)")):
        t = time.perf_counter()
        con.sql(f'select node_id, {agg} from (select node_id, "{METRIC}" as v from read_parquet($f) where rank >= 0) '
                "group by node_id", params={"f": files}).fetchall()
        out[name] = time.perf_counter() - t
    return {"stats_s": out}


# -- driver ------------------------------------------------------------------------------------------------------------
def ensure_inputs(n: int) -> tuple[list[pathlib.Path], pathlib.Path, dict]:
    """n .cali files and a lake holding them (reused when the stamp matches); ingest facts."""
    from cali_writer import write_cali_profiles

    out = C.WORK / f"ensemble-cali-{n}"
    lake_dir = C.WORK / "lakes" / f"ensemble-{n}"
    params = {"n_files": n, "seed": SEED,
              "writer_sha256": hashlib.sha256((C.BENCH / "cali_writer.py").read_bytes()).hexdigest()}
    if C.stamp_ok(out / ".complete.json", params) and (lake_dir / ".ingest.json").exists():
        files = sorted(out.rglob("*.cali"), key=lambda p: p.name)
        return files, lake_dir, json.loads((lake_dir / ".ingest.json").read_text())
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(lake_dir, ignore_errors=True)
    C.log(f"writing {n} .cali files under {C.rel(out)} ...")
    files = write_cali_profiles(out, n, seed=SEED)
    C.write_stamp(out / ".complete.json", params)
    C.log(f"ingesting them into {C.rel(lake_dir)} ...")
    res = C.run_measured([str(C.PROJECT_PY), "-c", "import sys, perflake; r = perflake.Lake(sys.argv[1]).ingest("
                          "[sys.argv[2]]); print(r.summary())", str(lake_dir / "lake"), str(out)], timeout=7200)
    if res["rc"] != 0:
        raise RuntimeError(f"ingest failed: {res['stderr'][-2000:]}")
    facts = {"ingest_s": res["wall_s"], "ingest_rss_kib": res["rss_kib"], "summary": res["stdout"].strip()}
    (lake_dir / ".ingest.json").write_text(json.dumps(facts))
    return files, lake_dir, facts


def worker(a, lake_dir: pathlib.Path, mode: str, dump: pathlib.Path | None = None, *extra: str) -> dict:
    best = None
    for _ in range(a.reps):
        C.wait_for_load(a.max_load, 10.0, a.max_wait, f"perflake {mode}")
        cmd = [str(C.PROJECT_PY), str(SELF), "worker", "--lake", str(lake_dir / "lake"), "--mode", mode, *extra]
        res = C.run_measured(cmd + (["--dump", str(dump)] if dump else []), timeout=3600)
        if res["rc"] != 0:
            raise RuntimeError(f"worker {mode} failed: {res['stderr'][-3000:]}")
        info = C.result_line(res["stdout"]) | {"rss_kib": res["rss_kib"], "wall_s": res["wall_s"]}
        key = info.get("total_s", sum(info["stats_s"].values()))
        if best is None or key < best.get("total_s", sum(best["stats_s"].values())):
            best = info
    return best


def compare(ours: dict, theirs: dict) -> tuple[bool, int]:
    bad, n = 0, 0
    for path, values in theirs.items():
        mine = ours.get(path)
        for i, v in enumerate(values):
            n += 1
            m = None if mine is None else mine[i]
            same = (m is not None and (abs(m - v) <= 1e-9 * abs(v) + 1e-300 or (m != m and v != v)))
            bad += not same
    return bad == 0 and len(ours) == len(theirs), n


def section_thicket(a, n: int) -> tuple[str, str, bool | None]:
    files, lake_dir, ingest = ensure_inputs(n)
    name = f"ensemble-object-{n}-runs"
    work = C.WORK / name
    work.mkdir(parents=True, exist_ok=True)
    calls = worker(a, lake_dir, "calls", work / "perflake.json")
    one = worker(a, lake_dir, "describe")
    frame = worker(a, lake_dir, "dataframe")
    lines = [f"## {name}", "", f"- date: {C.now()}", f"- git: {C.git_state()}", f"- command: `{a.command}`",
             f"- dataset: {n} RAJAPerf-like .cali files (bench/cali_writer.py, seed {SEED}), 74 call paths, one rank; "
             f"perflake ingest {C.fmt_s(ingest['ingest_s'])} (peak {C.mib(ingest['ingest_rss_kib'])}), timed apart", "",
             "| step | perflake | Thicket | ratio |", "|---|---|---|---|"]
    ok = None
    ref = None
    if not a.skip_hatchet:
        listing = work / "inputs.txt"
        listing.write_text("".join(f"{f}\n" for f in files))
        C.wait_for_load(a.max_load, 10.0, a.max_wait, "thicket")
        res = C.run_measured([str(C.BENCH_PY), "-W", "ignore", str(SELF), "probe", "--paths-from", str(listing),
                              "--dump", str(work / "thicket.json")], timeout=4 * 3600)
        if res["rc"] != 0:
            raise RuntimeError(f"Thicket probe failed: {res['stderr'][-3000:]}")
        ref = C.result_line(res["stdout"]) | {"rss_kib": res["rss_kib"]}
        ok, compared = compare(json.loads((work / "perflake.json").read_text()),
                               json.loads((work / "thicket.json").read_text()))
    ours_total = calls["construct_s"] + sum(calls["stats_s"].values())

    def row(step, mine, theirs):
        r = theirs / mine if theirs and mine else None
        ratio = "n/a" if r is None else f"{r:.1f}x" if r >= 1 else f"{r:.2f}x"
        lines.append(f"| {step} | {C.fmt_s(mine)} | {C.fmt_s(theirs) if theirs else 'n/a'} | {ratio} |")

    row("construction (`ensemble_of` / `from_caliperreader`)", calls["construct_s"], ref and ref["load_s"])
    for s in STATS:
        row(f"`stats.{s}`", calls["stats_s"][s], ref and ref["stats_s"][s])
    row("construction + 5 statistics", ours_total, ref and ref["load_s"] + sum(ref["stats_s"].values()))
    row("the same, perflake's 5 in one `describe` pass", one["construct_s"] + one["stats_s"]["describe"],
        ref and ref["load_s"] + sum(ref["stats_s"].values()))
    row("perflake ingest + construction + 5 statistics", ingest["ingest_s"] + ours_total,
        ref and ref["load_s"] + sum(ref["stats_s"].values()))
    lines += ["", f"- perflake `.dataframe` ({frame['rows']:,} rows, built only when asked): "
                  f"{C.fmt_s(frame['dataframe_s'])}",
              f"- peak memory: perflake worker {C.mib(calls['rss_kib'])}" +
              (f", Thicket probe {C.mib(ref['rss_kib'])}" if ref else ""),
              f"- best of {a.reps} fresh processes each (import excluded: perflake {C.fmt_s(calls['import_s'])})"]
    if ok is not None:
        lines.append(f"- values: {compared} statistics (5 x every call path) equal Thicket's (rel 1e-9): "
                     f"{'OK' if ok else '**MISMATCH**'}")
    return name, "\n".join(lines) + "\n", ok


def section_big(a, n: int) -> tuple[str, str, bool | None]:
    files, lake_dir, ingest = ensure_inputs(n)
    name = f"ensemble-object-{n}-runs"
    hand = worker(a, lake_dir, "handwritten")
    warm = worker(a, lake_dir, "warm")
    cold = {s: worker(a, lake_dir, "cold", None, "--stat", s) for s in STATS}
    one = worker(a, lake_dir, "describe")
    lines = [f"## {name}", "", f"- date: {C.now()}", f"- git: {C.git_state()}", f"- command: `{a.command}`",
             f"- dataset: {n} RAJAPerf-like .cali files, 74 call paths; ingest {C.fmt_s(ingest['ingest_s'])} "
             f"(peak {C.mib(ingest['ingest_rss_kib'])}); perflake only (Thicket cannot load this many here)",
             "- cold: a fresh process, `ensemble_of` + that one statistic (catalog, call tree and values read from "
             "the Parquet files); warm: the statistic on an ensemble whose tables are read (read once: "
             f"{C.fmt_s(warm['read_s'])}); hand-written: one DuckDB query over the metrics Parquet files", "",
             f"| statistic | cold | warm | hand-written DuckDB | cold / hand | warm / hand | < {TARGET_STAT_S:g} s "
             f"(cold) | within {TARGET_RATIO:g}x (cold; warm) |", "|---|---|---|---|---|---|---|---|"]
    for s in STATS:
        c = cold[s]["construct_s"] + cold[s]["stats_s"][s]
        w, h = warm["stats_s"][s], hand["stats_s"][s]
        lines.append(f"| `{s}` | {C.fmt_s(c)} | {C.fmt_s(w)} | {C.fmt_s(h)} | {c / h:.2f} | {w / h:.2f} | "
                     f"{'met' if c < TARGET_STAT_S else '**NOT met**'} | "
                     f"{'met' if c <= TARGET_RATIO * h else '**NOT met**'}; "
                     f"{'met' if w <= TARGET_RATIO * h else '**NOT met**'} |")
    lines += ["", f"- the five in one `describe` pass (cold, construction included): "
                  f"{C.fmt_s(one['construct_s'] + one['stats_s']['describe'])}",
              f"- peak memory: perflake worker {C.mib(max(x['rss_kib'] for x in [warm, *cold.values()]))}; "
              f"best of {a.reps} fresh processes each"]
    return name, "\n".join(lines) + "\n", None


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "probe":
        return probe_main(argv[1:])
    if argv and argv[0] == "worker":
        return worker_main(argv[1:])
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="smoke test: 50 / 100 runs")
    p.add_argument("--skip-hatchet", action="store_true", help="perflake only")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--results", type=pathlib.Path, default=C.RESULTS)
    p.add_argument("--only", action="append", help="ensemble-object (both sections) or a section name")
    p.add_argument("--max-load", type=float, default=1.0)
    p.add_argument("--max-wait", type=float, default=300.0)
    g = p.add_mutually_exclusive_group()
    g.add_argument("--write-results", action="store_true")
    g.add_argument("--no-results", action="store_true")
    a, unknown = p.parse_known_args(argv)
    if unknown:
        C.log(f"ignoring arguments of the other bench scripts: {' '.join(unknown)}")
    small, big = SIZES["quick" if a.quick else "full"]
    sections = {f"ensemble-object-{small}-runs": lambda: section_thicket(a, small),
                f"ensemble-object-{big}-runs": lambda: section_big(a, big)}
    if a.only:
        wanted = set(a.only)
        sections = {k: v for k, v in sections.items() if k in wanted or "ensemble-object" in wanted}
        if not sections:
            return 0
    a.command = shlex.join([C.rel(sys.executable), C.rel(SELF), *argv])
    if os.environ.get("PERFLAKE_BENCH_VIA"):
        a.command = f"{os.environ['PERFLAKE_BENCH_VIA']}`, which runs `{a.command}"
    C.WORK.mkdir(parents=True, exist_ok=True)
    write = not a.no_results and (not a.quick or a.write_results)
    status = 0
    for key, fn in sections.items():
        C.log(f"== {key}")
        try:
            name, text, ok = fn()
        except Exception as exc:  # noqa: BLE001 - report, go on, fail at the end
            import traceback

            traceback.print_exc()
            C.log(f"{key} FAILED: {type(exc).__name__}: {exc}")
            status = 2
            continue
        print(text, flush=True)
        if write:
            C.update_results(a.results, name, text)
        if ok is False:
            status = max(status, 1)
    return status


if __name__ == "__main__":
    sys.exit(main())
