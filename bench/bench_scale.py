#!/usr/bin/env python3
"""The scale benchmark of issue 16: one lake of 10,000 runs x 1,000 nodes x 64 ranks (640 M metric rows), or the
largest size that fits the disk, generated and ingested in one go; then the ensemble questions over all of it.

    .venv/bin/python bench/bench_scale.py                       # full size: 10,000 runs x 1,000 nodes x 64 ranks
    .venv/bin/python bench/bench_scale.py --fit-disk            # as many of the runs as the free disk holds
    .venv/bin/python bench/bench_scale.py --quick               # smoke test: 40 x 200 x 4, RESULTS.md untouched
    .venv/bin/python bench/bench_scale.py --runs 200 --nodes 300 --ranks 8 --no-results

Section ``scale-<runs>x<nodes>x<ranks>`` (the requested size; a size cut by ``--fit-disk`` is said inside):

1. **disk**: before anything is written, ``--sample`` (8) runs of the requested nodes x ranks are generated and
   ingested into a scratch lake under bench/work/ to measure input and lake bytes per run; the estimate for all
   runs (+10% and 2 GiB to spare) is compared with ``shutil.disk_usage``.  Too big: the script refuses with the
   numbers (exit 2), or with ``--fit-disk`` takes the largest even run count that fits.
2. **inputs**: Caliper json-split runs of ``perflake.generators.WRITERS["caliper"](out, nodes=N, ranks=R, runs=K,
   seed=1)`` -- the same files, byte for byte (checked on the first two runs against the writer itself) -- made in
   chunks of ``--chunk`` runs by ``--gen-jobs`` worker processes (one run in memory at a time; a chunk is stamped
   when complete, so an interrupted generation resumes), stamped with the generator's source hash under
   bench/work/scale-KxNxR/.
3. **ingest in one go**: one ``perflake ingest IN --lake LAKE --quiet --json`` process under ``/usr/bin/time -f
   %M``: wall time, peak RSS, input bytes against lake bytes.  The lake is stamped and reused (its ingest
   measurements are kept next to it); the inputs are then deleted (they are 3x the lake; ``--keep-inputs`` keeps
   them), which the section says.
4. **questions**, each in a fresh worker process (``/usr/bin/time -f %M``: whole-process peak RSS), ``--reps`` (3)
   calls each with a new ``Lake`` object (first call, best and median reported; a call over ``--max-rep-s`` is
   not repeated); public APIs only:

   * ensemble statistics: ``lake.ensemble_of(metric="time").stats.describe(["time"], ["mean", "median", "std",
     "min", "max"])`` (construction included);
   * imbalance top-10 across all runs: ``lake.imbalance(metric="time", top=10)``;
   * ``lake.regress(BASE, CAND, metric="time")`` between the two halves of the runs by launch time;
   * the call-path query of issue 16 item 8 across all runs: ``lake.query('MATCH (".", p)->("*")->(".", q) WHERE
     p."name" =~ "solve_.*" AND q."name" =~ "MPI_.*"')``.

   Targets: each < 10 s (best call) with peak RSS < 8 GiB.  A worker whose RSS passes ``--mem-guard`` GiB (16) is
   killed by its process id (the machine is shared; 24 GiB), and the row says so.

Before the ingest and before each worker the 1-minute load average must fall below ``--max-load`` (1.0; at most
``--max-wait`` s, 300; none with --quick); the load seen is printed.  Exit status: 0 every step ran, 2 a step failed
(a question that failed or was killed is still reported in the section) or the disk is too small.  Targets not met
are reported, not an error.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pathlib
import shlex
import shutil
import signal
import statistics
import sys
import threading
import time
import uuid

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import common as C  # noqa: E402  (stdlib only)

SELF = pathlib.Path(__file__).resolve()
SEED = 1
FULL = (10000, 1000, 64)
QUICK = (40, 200, 4)
TARGET_S, TARGET_GIB = 10.0, 8.0
METRIC = "time"
STATS = ["mean", "median", "std", "min", "max"]
QUERY = 'MATCH (".", p)->("*")->(".", q) WHERE p."name" =~ "solve_.*" AND q."name" =~ "MPI_.*"'
GENERATOR_FILES = ("caliper.py", "calltree.py", "names.py")
GEN_VERSION = 1  # bump when write_chunk changes what it writes
MARGIN, RESERVE = 1.10, 2 << 30  # disk estimate: +10%, and 2 GiB left free
KINDS = ("ensemble", "imbalance", "regress", "query")
LABELS = {
    "ensemble": f"ensemble statistics: `ensemble_of(metric=\"time\").stats.describe([\"time\"], {STATS})`",
    "imbalance": "imbalance top-10 across all runs: `lake.imbalance(metric=\"time\", top=10)`",
    "regress": "`lake.regress(BASE, CAND, metric=\"time\")`, the two halves by launch time",
    "query": "call-path query across all runs: `lake.query(Q)`",
}


def section_name(runs: int, nodes: int, ranks: int) -> str:
    return f"scale-{runs}x{nodes}x{ranks}"


def generator_hash() -> str:
    h = hashlib.sha256(f"bench_scale.write_chunk v{GEN_VERSION}".encode())
    for name in GENERATOR_FILES:
        h.update((C.REPO / "pipeline" / "generators" / name).read_bytes())
    return h.hexdigest()


def gib(n: float) -> str:
    return f"{n / 2**30:,.1f} GiB" if n >= 2**30 else f"{n / 2**20:,.1f} MiB"


# =============================================================================================================
# generation: WRITERS["caliper"]'s runs first..first+count-1 (its loop, one run at a time)
# =============================================================================================================
def write_chunk(out: pathlib.Path, *, nodes: int, ranks: int, seed: int, first: int, count: int) -> list:
    """Runs ``first`` .. ``first+count-1`` of ``write_caliper_json_runs(out, nodes=, ranks=, runs=K, seed=)``,
    the same bytes under the same names (its loop body; checked against the writer by :func:`check_writer`)."""
    import numpy as np

    from perflake.generators import caliper as cw
    from perflake.generators.calltree import make_metrics, make_tree, perturb

    out.mkdir(parents=True, exist_ok=True)
    base = make_tree(nodes, seed=seed)
    paths = []
    for k in range(first, first + count):
        tree = base if k == 0 else perturb(base, seed=seed * 1000 + k)
        m = make_metrics(tree, ranks, seed=seed * 1000 + k + 500, app_seed=seed)
        rng = np.random.default_rng([seed, k, 78])
        outside = np.rint(rng.uniform(150.0, 900.0, ranks)).astype(np.int64)
        elapsed = int((m.inclusive[0] + outside).max())
        text = cw.caliper_json_text(tree, m, outside, cw._globals(seed, k, ranks, elapsed, int(m.inclusive[0].sum())))
        path = out / f"run-{k:03d}.json"
        with open(path, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
        paths.append(path)
    return paths


def check_writer(scratch: pathlib.Path, nodes: int, ranks: int, n: int = 2) -> None:
    """The first ``n`` runs of write_chunk equal WRITERS["caliper"]'s, byte for byte (else RuntimeError)."""
    from perflake.generators import WRITERS

    shutil.rmtree(scratch, ignore_errors=True)
    ref = WRITERS["caliper"](scratch / "writer", nodes=nodes, ranks=ranks, runs=n, seed=SEED)
    ours = write_chunk(scratch / "chunk", nodes=nodes, ranks=ranks, seed=SEED, first=0, count=n)
    try:
        for a, b in zip(ref, ours):
            if a.name != b.name or a.read_bytes() != b.read_bytes():
                raise RuntimeError(f"bench_scale.write_chunk no longer writes what WRITERS['caliper'] writes "
                                   f"({b.name} differs): update it to the writer's loop and bump GEN_VERSION")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def gen_main(argv) -> int:
    p = argparse.ArgumentParser(prog="bench_scale.py gen")
    p.add_argument("--out", required=True)
    p.add_argument("--nodes", type=int, required=True)
    p.add_argument("--ranks", type=int, required=True)
    p.add_argument("--first", type=int, required=True)
    p.add_argument("--count", type=int, required=True)
    a = p.parse_args(argv)
    paths = write_chunk(pathlib.Path(a.out), nodes=a.nodes, ranks=a.ranks, seed=SEED, first=a.first, count=a.count)
    print("RESULT " + json.dumps({"files": len(paths), "bytes": sum(f.stat().st_size for f in paths)}), flush=True)
    return 0


# =============================================================================================================
# worker: one question, in a fresh process
# =============================================================================================================
def worker_main(argv) -> int:
    p = argparse.ArgumentParser(prog="bench_scale.py worker")
    p.add_argument("kind", choices=KINDS)
    p.add_argument("--lake", required=True)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--max-rep-s", type=float, default=60.0)
    p.add_argument("--base")
    p.add_argument("--cand")
    p.add_argument("--token", help="lets the driver's memory guard find this process")
    a = p.parse_args(argv)
    t = time.perf_counter()
    import perflake

    info = {"import_s": time.perf_counter() - t, "rss_after_import_kib": C.rss_status().get("VmHWM"),
            "times": [], "cpus": []}

    def call():
        lake = perflake.Lake(a.lake)
        if a.kind == "ensemble":
            ens = lake.ensemble_of(metric=METRIC)
            ens.stats.describe([METRIC], STATS)
            return ens
        if a.kind == "imbalance":
            return lake.imbalance(metric=METRIC, top=10)
        if a.kind == "regress":
            return lake.regress(a.base, a.cand, metric=METRIC)
        return lake.query(QUERY)

    out = None
    for _ in range(a.reps):
        out = None
        C.release_memory()
        t, c = time.perf_counter(), time.process_time()
        out = call()
        info["times"].append(time.perf_counter() - t)
        info["cpus"].append(time.process_time() - c)
        if info["times"][-1] > a.max_rep_s:
            break
    info["rss_hwm_kib"] = C.rss_status().get("VmHWM")
    if a.kind == "ensemble":
        sf = out.statsframe
        info["facts"] = {"profiles": len(out.profile), "call_paths": len(sf),
                         "columns": [c for c in sf.columns if str(c).startswith(METRIC + "_")]}
    elif a.kind == "imbalance":
        top = out.iloc[0] if len(out) else None
        info["facts"] = {"rows": len(out)} if top is None else {
            "rows": len(out), "top_name": str(top["name"]), "top_run": str(top["run_id"]),
            "top_imbalance": float(top["imbalance"])}
    elif a.kind == "regress":
        info["facts"] = {"n_baseline": int(out.n_baseline), "n_candidate": int(out.n_candidate),
                         "call_paths": len(out.table), "flagged": len(out.flagged)}
    else:
        info["facts"] = {"rows": len(out), "runs": int(out["run_id"].nunique()) if len(out) else 0}
    print("RESULT " + json.dumps(info), flush=True)
    return 0


# =============================================================================================================
# driver
# =============================================================================================================
class MemGuard(threading.Thread):
    """Kill (SIGKILL, by process id) the python process whose command line holds ``token`` when its RSS passes
    ``limit_kib``; ``killed_kib`` tells it happened.  /usr/bin/time, which holds the token too, is left alone."""

    def __init__(self, token: str, limit_kib: int):
        super().__init__(daemon=True)
        self.token, self.limit_kib = token, limit_kib
        self.stop = threading.Event()
        self.killed_kib = None

    def _find(self) -> int | None:
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                argv = pathlib.Path(f"/proc/{name}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if self.token.encode() in argv and argv[0] != str(C.GNU_TIME).encode():
                return int(name)
        return None

    def run(self) -> None:
        pid = None
        while not self.stop.wait(0.25):
            pid = pid or self._find()
            if pid is None:
                continue
            try:
                rss = next(int(ln.split()[1]) for ln in open(f"/proc/{pid}/status", encoding="ascii")
                           if ln.startswith("VmRSS:"))
            except (OSError, StopIteration, ValueError):
                return  # it ended
            if rss > self.limit_kib:
                self.killed_kib = rss
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
                return


def measured(cmd: list[str], *, timeout: float, mem_guard_kib: int | None = None) -> dict:
    """C.run_measured, with a memory guard on the command when ``mem_guard_kib``."""
    guard = None
    if mem_guard_kib:
        token = f"scale-{uuid.uuid4().hex}"
        cmd = [*cmd, "--token", token]
        guard = MemGuard(token, mem_guard_kib)
        guard.start()
    try:
        res = C.run_measured(cmd, timeout=timeout)
    finally:
        if guard:
            guard.stop.set()
            guard.join()
    res["killed_kib"] = guard.killed_kib if guard else None
    return res


def shown(cmd) -> str:
    return shlex.join([C.rel(x) if str(x).startswith("/") else str(x) for x in cmd])


class Scale:
    def __init__(self, a, runs: int, nodes: int, ranks: int):
        self.a, self.runs, self.nodes, self.ranks = a, runs, nodes, ranks
        self.notes: list[str] = []

    # -- directories of a size --------------------------------------------------------------------------------
    def dirs(self, runs: int) -> dict:
        top = C.WORK / f"scale-{runs}x{self.nodes}x{self.ranks}"
        return {"top": top, "in": top / "in", "chunks": top / "chunks", "lake": top / "lake",
                "gen_stamp": top / ".gen-complete.json", "lake_stamp": top / ".lake-complete.json",
                "ingest": top / "ingest.json", "gen": top / "generate.json"}

    def gen_params(self, runs: int) -> dict:
        return {"generator": "perflake.generators.WRITERS['caliper'] (json-split) via bench_scale.write_chunk",
                "runs": runs, "nodes": self.nodes, "ranks": self.ranks, "seed": SEED,
                "source_sha256": generator_hash()}

    def lake_ready(self, runs: int) -> bool:
        d = self.dirs(runs)
        return C.stamp_ok(d["lake_stamp"], self.gen_params(runs)) and d["ingest"].exists()

    # -- 1. disk --------------------------------------------------------------------------------------------
    def disk_check(self) -> dict:
        """Estimate input and lake bytes per run from a small sample, compare with the free disk; may lower
        self.runs (--fit-disk) or raise SystemExit(2)."""
        from perflake import Lake

        C.WORK.mkdir(parents=True, exist_ok=True)
        free = shutil.disk_usage(C.WORK).free
        n = max(1, min(self.a.sample, self.runs))
        scratch = C.WORK / f"scale-sample-{self.nodes}x{self.ranks}"
        shutil.rmtree(scratch, ignore_errors=True)
        try:
            t = time.perf_counter()
            check_writer(scratch / "check", self.nodes, self.ranks, n=min(2, self.runs))
            write_chunk(scratch / "in", nodes=self.nodes, ranks=self.ranks, seed=SEED, first=0, count=n)
            gen_s = time.perf_counter() - t
            t = time.perf_counter()
            rep = Lake(scratch / "lake").ingest([str(scratch / "in")])
            ing_s = time.perf_counter() - t
            if rep.failed or len(rep.ingested) != n:
                raise RuntimeError(f"sample ingest: {rep.summary()}")
            in_b = C.tree_bytes([scratch / "in"])[1] / n
            lake_b = C.tree_bytes([scratch / "lake"])[1] / n
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        d = self.dirs(self.runs)
        have_inputs = C.stamp_ok(d["gen_stamp"], self.gen_params(self.runs))
        # bytes already on disk that count: a lake of this size that will be rewritten, chunks already written
        existing = C.tree_bytes([d["lake"]])[1] + (0 if have_inputs else C.tree_bytes([d["in"]])[1])
        need = int(self.runs * ((0 if have_inputs else in_b) + lake_b) * MARGIN) + RESERVE - existing
        est = {"free": free, "sample_runs": n, "in_per_run": in_b, "lake_per_run": lake_b, "need": need,
               "existing": existing, "requested": self.runs, "fitted": None,
               "est_input": self.runs * in_b, "est_lake": self.runs * lake_b, "sample_gen_s": gen_s,
               "sample_ingest_s": ing_s}
        C.log(f"disk: free {gib(free)}; sample of {n} runs: {in_b / 1e6:.2f} MB input + {lake_b / 1e6:.2f} MB lake "
              f"per run -> {self.runs} runs need {gib(need)} (incl. {MARGIN - 1:.0%} and {gib(RESERVE)} spare)")
        if need <= free:
            return est
        fit = int((free - RESERVE) / MARGIN / (in_b + lake_b)) // 2 * 2
        if not self.a.fit_disk or fit < 20:
            raise SystemExit(
                f"bench_scale.py: not enough disk for {self.runs:,} runs x {self.nodes} nodes x {self.ranks} ranks: "
                f"estimated {gib(self.runs * in_b)} of json-split input + {gib(self.runs * lake_b)} of lake "
                f"(from a {n}-run sample; {gib(need)} with {MARGIN - 1:.0%} margin and {gib(RESERVE)} to spare), "
                f"but {gib(free)} free under {C.rel(C.WORK)}.  "
                + (f"--fit-disk would run {fit:,} runs; " if fit >= 20 else "")
                + "or pass a smaller --runs, or free disk.")
        self.notes.append(f"**size cut to fit the disk** (`--fit-disk`): {self.runs:,} runs requested, {gib(need)} "
                          f"needed, {gib(free)} free: {fit:,} runs")
        C.log(f"--fit-disk: {self.runs} runs do not fit; running {fit}")
        self.runs = fit
        est.update(fitted=fit, est_input=fit * in_b, est_lake=fit * lake_b)
        return est

    # -- 2. inputs ------------------------------------------------------------------------------------------
    def generate(self) -> dict:
        d, params = self.dirs(self.runs), self.gen_params(self.runs)
        if C.stamp_ok(d["gen_stamp"], params):
            return json.loads(d["gen"].read_text()) | {"reused": True}
        shutil.rmtree(d["lake"], ignore_errors=True)
        d["lake_stamp"].unlink(missing_ok=True)
        d["in"].mkdir(parents=True, exist_ok=True)
        d["chunks"].mkdir(parents=True, exist_ok=True)
        chunks = [(k, min(self.a.chunk, self.runs - k)) for k in range(0, self.runs, self.a.chunk)]
        todo = [(k, n) for k, n in chunks if not C.stamp_ok(d["chunks"] / f"{k}.json", params | {"count": n})]
        C.log(f"generating {self.runs} runs under {C.rel(d['in'])}: {len(todo)} of {len(chunks)} chunks of "
              f"{self.a.chunk} runs to write, {self.a.gen_jobs} processes ...")
        t = time.perf_counter()
        rss, failed = [], []
        lock = threading.Lock()
        queue = list(todo)

        def pump():
            while True:
                with lock:
                    if not queue or failed:
                        return
                    k, n = queue.pop(0)
                cmd = [str(C.PROJECT_PY), str(SELF), "gen", "--out", str(d["in"]), "--nodes", str(self.nodes),
                       "--ranks", str(self.ranks), "--first", str(k), "--count", str(n)]
                res = C.run_measured(cmd, timeout=7200)
                with lock:
                    if res["rc"] != 0:
                        failed.append(f"chunk {k}: rc {res['rc']}: {res['stderr'][-1500:]}")
                        return
                    rss.append(res["rss_kib"])
                    C.write_stamp(d["chunks"] / f"{k}.json", params | {"count": n})
                    C.log(f"chunk {k}..{k + n - 1} written ({len(rss)}/{len(todo)}, "
                          f"{time.perf_counter() - t:.0f} s)")

        threads = [threading.Thread(target=pump) for _ in range(max(1, self.a.gen_jobs))]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        if failed:
            raise RuntimeError(f"generation failed: {failed[0]}")
        files, total = C.tree_bytes([d["in"]])
        if files != self.runs:
            raise RuntimeError(f"generation: {files} files under {d['in']}, expected {self.runs}")
        info = {"wall_s": time.perf_counter() - t, "chunks": len(chunks), "chunks_written": len(todo),
                "max_rss_kib": max(rss) if rss else None, "files": files, "bytes": total,
                "jobs": self.a.gen_jobs, "chunk": self.a.chunk}
        d["gen"].write_text(json.dumps(info))
        C.write_stamp(d["gen_stamp"], params)
        C.log(f"generated {files} files, {gib(total)} in {info['wall_s']:.0f} s")
        return info | {"reused": False}

    # -- 3. ingest in one go --------------------------------------------------------------------------------
    def ingest(self) -> dict:
        d, params = self.dirs(self.runs), self.gen_params(self.runs)
        shutil.rmtree(d["lake"], ignore_errors=True)
        w = C.wait_for_load(self.a.max_load, self.a.poll, self.a.max_wait, label="ingest")
        cmd = [str(C.PERFLAKE_CLI), "ingest", str(d["in"]), "--lake", str(d["lake"]), "--quiet", "--json"]
        C.log(f"ingesting {self.runs} runs in one process (1-min load {w['load1']:.2f}) ...")
        res = C.run_measured(cmd, timeout=self.a.ingest_timeout)
        try:
            summary = json.loads(res["stdout"])
        except ValueError:
            summary = {}
        got = summary.get("counts", {}).get("ingested")
        if res["rc"] != 0 or got != self.runs:
            raise RuntimeError(f"ingest failed (rc {res['rc']}, timed out {res['timed_out']}, ingested {got}): "
                               f"{res['stderr'][-2000:]}")
        in_files, in_bytes = C.tree_bytes([d["in"]])
        lake_files, lake_bytes = C.tree_bytes([d["lake"]])
        info = {"wall_s": res["wall_s"], "rss_kib": res["rss_kib"], "rss_source": res["rss_source"], "load": w,
                "cmd": shown(cmd), "input_files": in_files, "input_bytes": in_bytes, "lake_files": lake_files,
                "lake_bytes": lake_bytes, "rows": metric_rows(d["lake"]), "date": C.now(), "git": C.git_state()}
        d["ingest"].write_text(json.dumps(info))
        C.write_stamp(d["lake_stamp"], params)
        C.log(f"ingested in {res['wall_s']:.1f} s, peak RSS {C.mib(res['rss_kib'])}; input {gib(in_bytes)}, "
              f"lake {gib(lake_bytes)}, {info['rows']:,} metric rows")
        return info

    def inputs_done(self) -> str:
        d = self.dirs(self.runs)
        if self.a.keep_inputs:
            return f"kept under `{C.rel(d['in'])}`"
        shutil.rmtree(d["in"], ignore_errors=True)
        shutil.rmtree(d["chunks"], ignore_errors=True)
        d["gen_stamp"].unlink(missing_ok=True)
        return "deleted after the ingest (the lake is what the questions read; `--keep-inputs` keeps them)"

    # -- 4. questions ---------------------------------------------------------------------------------------
    def halves(self) -> tuple[str, str]:
        from perflake import Lake

        t = Lake(self.dirs(self.runs)["lake"]).sql("select epoch_us(launch_time) as t from runs order by t")["t"]
        cut = int(t.iloc[len(t) // 2])
        return f"epoch_us(launch_time) < {cut}", f"epoch_us(launch_time) >= {cut}"

    def question(self, kind: str, extra: list[str]) -> dict:
        lake = self.dirs(self.runs)["lake"]
        w = C.wait_for_load(self.a.max_load, self.a.poll, self.a.max_wait, label=kind)
        cmd = [str(C.PROJECT_PY), str(SELF), "worker", kind, "--lake", str(lake), "--reps", str(self.a.reps),
               "--max-rep-s", str(self.a.max_rep_s), *extra]
        C.log(f"{kind}: fresh process (1-min load {w['load1']:.2f}) ...")
        res = measured(cmd, timeout=self.a.worker_timeout, mem_guard_kib=int(self.a.mem_guard * 2**20))
        out = {"kind": kind, "load": w, "rss_kib": res["rss_kib"], "wall_s": res["wall_s"], "cmd": shown(cmd),
               "rc": res["rc"], "timed_out": res["timed_out"], "killed_kib": res["killed_kib"]}
        if res["rc"] == 0:
            out.update(C.result_line(res["stdout"]))
            C.log(f"{kind}: {', '.join(f'{x:.3f}' for x in out['times'])} s, peak RSS {C.mib(res['rss_kib'])}")
        else:
            out["error"] = res["stderr"][-1500:]
            C.log(f"{kind}: FAILED (rc {res['rc']}, timed out {res['timed_out']}, memory guard "
                  f"{C.mib(res['killed_kib']) if res['killed_kib'] else 'not fired'}): {res['stderr'][-600:]}")
        return out


def metric_rows(lake: pathlib.Path) -> int:
    import pyarrow.parquet as pq

    return sum(pq.ParquetFile(f).metadata.num_rows for f in sorted((lake / "metrics").glob("*.parquet")))


# -- the section --------------------------------------------------------------------------------------------------
def row(q: dict, label: str) -> str:
    if "times" not in q:
        why = (f"killed by the memory guard at {C.mib(q['killed_kib'])}" if q["killed_kib"] else
               f"timed out after {q['wall_s']:.0f} s" if q["timed_out"] else f"failed (exit {q['rc']})")
        return f"| {label} | {why} | | {C.mib(q['rss_kib'])} | **NOT met** |"
    ts = q["times"]
    best = min(ts)
    ok_t, ok_m = best < TARGET_S, (q["rss_kib"] or 0) / 2**20 < TARGET_GIB
    verdict = "met" if ok_t and ok_m else "**NOT met** (" + ", ".join(
        x for x, bad in (("time", not ok_t), ("memory", not ok_m)) if bad) + ")"
    reps = f"{C.fmt_s(best)} / {C.fmt_s(statistics.median(ts))} ({len(ts)} call{'s' if len(ts) > 1 else ''})"
    return f"| {label} | {C.fmt_s(ts[0])} | {reps} | {C.mib(q['rss_kib'])} | {verdict} |"


def facts(q: dict) -> str:
    f = q.get("facts")
    if not f:
        return f"{q['kind']}: no result"
    if q["kind"] == "ensemble":
        return (f"ensemble: {f['profiles']:,} profiles, statsframe of {f['call_paths']:,} call paths with "
                f"{', '.join('`' + c + '`' for c in f['columns'])}")
    if q["kind"] == "imbalance":
        top = (f"; first: `{f['top_name']}` of run {f['top_run']}, imbalance {f['top_imbalance']:.3f}"
               if "top_name" in f else "")
        return f"imbalance: {f['rows']} rows{top}"
    if q["kind"] == "regress":
        return (f"regress: {f['n_baseline']:,} vs {f['n_candidate']:,} runs, {f['call_paths']:,} call paths, "
                f"{f['flagged']} flagged")
    return f"query: {f['rows']:,} matched nodes in {f['runs']:,} runs"


def render(a, sc: Scale, name: str, est: dict | None, gen: dict | None, ing: dict, inputs: str,
           questions: list[dict], base: str, cand: str) -> str:
    m = a.machine
    runs, nodes, ranks = sc.runs, sc.nodes, sc.ranks
    lines = [f"## {name}", "",
             f"- command: `{a.command}`; {C.now()}; git {m['git']}; {m['nproc']} cores ({m['cpu']}), "
             f"{m['mem_gib']} GiB, {m['os']}",
             C.venv_line("project venv", m.get("project_venv")), *[f"- {n}" for n in sc.notes]]
    if est:
        lines.append(f"- disk before: {gib(est['free'])} free under `{C.rel(C.WORK)}`; from a {est['sample_runs']}-run "
                     f"sample: {est['in_per_run'] / 1e6:.2f} MB of input and {est['lake_per_run'] / 1e6:.2f} MB of "
                     f"lake per run, so {runs:,} runs were estimated at {gib(runs * est['in_per_run'])} + "
                     f"{gib(runs * est['lake_per_run'])}")
    else:
        lines.append("- disk: the lake was reused (stamped), no estimate needed")
    lines.append(f"- input: `WRITERS[\"caliper\"](out, nodes={nodes}, ranks={ranks}, runs={runs}, seed={SEED})` "
                 "(json-split; written in chunks by `write_chunk`, byte-identical to the writer on its first runs): "
                 f"{ing['input_files']:,} files, {gib(ing['input_bytes'])}"
                 + (f"; generated in {gen['wall_s']:.0f} s by {gen['jobs']} processes (chunks of {gen['chunk']} "
                    f"runs, peak RSS of a chunk process {C.mib(gen['max_rss_kib'])})"
                    if gen and not gen.get("reused") and gen.get("max_rss_kib") else "")
                 + f"; inputs {inputs}")
    ratio = ing["lake_bytes"] / ing["input_bytes"] if ing["input_bytes"] else float("nan")
    lines += ["", f"| ingest in one go ({runs:,} runs, {ing['rows']:,} metric rows) | value |", "|---|---|",
              f"| `{ing['cmd']}`: wall time | {C.fmt_s(ing['wall_s'])} ({runs / ing['wall_s']:,.0f} runs/s) |",
              f"| peak RSS of the ingest process ({ing['rss_source']}) | {C.mib(ing['rss_kib'])} |",
              f"| input bytes (json-split) | {C.fmt_bytes(ing['input_bytes'])} |",
              f"| lake bytes ({ing['lake_files']:,} files) | {C.fmt_bytes(ing['lake_bytes'])} "
              f"({ratio:.1%} of the input) |",
              f"| 1-minute load before | {C.load_note(ing['load'])} |"]
    if ing.get("date") and (gen is None or gen.get("reused")):
        lines.append(f"| (measured when the lake was made: {ing['date']}, git {ing.get('git', 'n/a')}) | |")
    lines += ["", f"| question over all {runs:,} runs, fresh process each | first call | best / median | "
                  f"peak RSS | target < {TARGET_S:g} s, < {TARGET_GIB:g} GiB |", "|---|---|---|---|---|"]
    lines += [row(q, LABELS[q["kind"]]) for q in questions]
    after_import = next((q["rss_after_import_kib"] for q in questions if "rss_after_import_kib" in q), None)
    lines += ["", f"- Q = `{QUERY}`; BASE = `{base}`, CAND = `{cand}`",
              "- " + "; ".join(facts(q) for q in questions),
              "- 1-minute load before each worker: " + ", ".join(f"{q['kind']} {C.load_note(q['load'])}"
                                                                  for q in questions),
              f"- peak RSS: `/usr/bin/time -f %M` of the whole worker process (interpreter and imports included; "
              f"after `import perflake`: {C.mib(after_import)}); "
              f"memory guard {a.mem_guard:g} GiB; the first call also pays the imports perflake makes lazily "
              f"(DuckDB, pandas) and cold caches; a call over {a.max_rep_s:g} s is not repeated"]
    met = sum(1 for q in questions if "times" in q and min(q["times"]) < TARGET_S
              and (q["rss_kib"] or 0) / 2**20 < TARGET_GIB)
    lines.append(f"- targets met: **{met} of {len(questions)}**")
    return "\n".join(lines) + "\n"


def run_benchmark(a, name: str) -> tuple[str, bool]:
    sc = Scale(a, a.runs, a.nodes, a.ranks)
    est = None
    if not sc.lake_ready(sc.runs):
        est = sc.disk_check()
    if sc.lake_ready(sc.runs):
        d = sc.dirs(sc.runs)
        ing, gen = json.loads(d["ingest"].read_text()), None
        inputs = (f"kept under `{C.rel(d['in'])}`" if d["in"].exists() else
                  "deleted after the ingest that made the lake")
        C.log(f"reusing the lake {C.rel(d['lake'])} (stamped; made {ing.get('date')})")
    else:
        gen = sc.generate()
        ing = sc.ingest()
        inputs = sc.inputs_done()
    base, cand = sc.halves()
    questions = []
    for kind in KINDS:
        extra = ["--base", base, "--cand", cand] if kind == "regress" else []
        questions.append(sc.question(kind, extra))
    return render(a, sc, name, est, gen, ing, inputs, questions, base, cand), all("times" in q for q in questions)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "worker":
        return worker_main(argv[1:])
    if argv and argv[0] == "gen":
        return gen_main(argv[1:])
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, help=f"runs (default {FULL[0]}; --quick {QUICK[0]})")
    p.add_argument("--nodes", type=int, help=f"call-tree nodes per run (default {FULL[1]}; --quick {QUICK[1]})")
    p.add_argument("--ranks", type=int, help=f"ranks per run (default {FULL[2]}; --quick {QUICK[2]})")
    p.add_argument("--quick", action="store_true", help="smoke test: %d runs x %d nodes x %d ranks" % QUICK)
    p.add_argument("--fit-disk", action="store_true", help="run the largest run count that fits the free disk "
                                                           "instead of refusing")
    p.add_argument("--keep-inputs", action="store_true", help="keep the generated json-split files after the ingest")
    p.add_argument("--sample", type=int, default=8, help="runs of the disk estimate's sample (8)")
    p.add_argument("--chunk", type=int, default=250, help="runs per generation chunk (250)")
    p.add_argument("--gen-jobs", type=int, default=2, help="generation processes (2)")
    p.add_argument("--reps", type=int, default=3, help="calls per question in its worker (3)")
    p.add_argument("--max-rep-s", type=float, default=60.0, help="a call slower than this is not repeated (60)")
    p.add_argument("--mem-guard", type=float, default=16.0, help="kill a worker above this RSS in GiB (16)")
    p.add_argument("--worker-timeout", type=float, default=3600.0, help="seconds per worker (3600)")
    p.add_argument("--ingest-timeout", type=float, default=4 * 3600.0, help="seconds for the ingest (14400)")
    p.add_argument("--max-load", type=float, default=1.0, help="wait for a 1-min load average below this (1.0)")
    p.add_argument("--poll", type=float, default=10.0)
    p.add_argument("--max-wait", type=float, help="seconds to wait for the load at most (300; --quick 0: no wait)")
    p.add_argument("--results", type=pathlib.Path, default=C.RESULTS, help="Markdown file to update")
    p.add_argument("--only", action="append", help="run only if this names this benchmark (scale or the "
                                                   "section name); names of the other bench scripts are ignored")
    p.add_argument("--skip-hatchet", action="store_true", help="accepted (no Hatchet side here)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--write-results", action="store_true", help="update the results file also with --quick")
    g.add_argument("--no-results", action="store_true", help="do not touch the results file")
    a, unknown = p.parse_known_args(argv)
    if unknown:
        C.log(f"ignoring arguments of the other bench scripts: {' '.join(unknown)}")
    size = QUICK if a.quick else FULL
    a.runs, a.nodes, a.ranks = (x if x is not None else d for x, d in zip((a.runs, a.nodes, a.ranks), size))
    a.max_wait = a.max_wait if a.max_wait is not None else 0.0 if a.quick else 300.0
    if a.runs < 20 or a.nodes < 10 or a.ranks < 1 or a.reps < 1 or a.chunk < 1:
        p.error("--runs must be >= 20, --nodes >= 10, --ranks, --reps and --chunk >= 1")
    name = section_name(a.runs, a.nodes, a.ranks)
    if a.only and not {"scale", name, section_name(*FULL)} & set(a.only):
        C.log(f"--only {' '.join(a.only)}: not this script's benchmark ({name}); nothing to do")
        return 0
    a.command = shlex.join([C.rel(sys.executable), C.rel(SELF), *argv])
    if os.environ.get("PERFLAKE_BENCH_VIA"):
        a.command = f"{os.environ['PERFLAKE_BENCH_VIA']}`, which runs `{a.command}"
    a.machine = C.machine_info(bench_venv=False)
    C.log(f"== {name}")
    try:
        text, ran = run_benchmark(a, name)
    except SystemExit as exc:  # the disk estimate's refusal
        if isinstance(exc.code, str):
            print(exc.code, file=sys.stderr, flush=True)
            return 2
        raise
    except Exception as exc:  # noqa: BLE001 - one line, exit 2
        import traceback

        traceback.print_exc()
        C.log(f"{name} FAILED: {type(exc).__name__}: {exc}")
        return 2
    print(text, flush=True)
    if not a.no_results and (not a.quick or a.write_results):
        C.update_results(a.results, name, text)
        C.log(f"updated section '{name}' of {C.rel(a.results)}")
    return 0 if ran else 2


if __name__ == "__main__":
    sys.exit(main())
