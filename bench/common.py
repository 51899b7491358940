"""Plumbing shared by the benchmark scripts written after bench_ops.py (bench/bench_analytics.py).

Standard library only at import time: the same module is imported by the project venv (.venv) and by the
bench venv (.bench-venv, Hatchet/Thicket), where the reference side of a benchmark runs.

* paths of the repository, the two interpreters, bench/work/ and bench/RESULTS.md;
* ``machine_info()``: CPU, memory, OS, git state, package versions of both venvs;
* ``wait_for_load()``: sleep until the 1-minute load average is below a limit (the machine is shared);
* ``run_measured()``: a subprocess under ``/usr/bin/time -f %M`` (peak RSS), with a wall-clock limit;
* ``peak_rss_reset()`` / ``rss_status()``: the process's own VmHWM/VmRSS, and a reset of the high-water mark
  (``/proc/self/clear_refs`` = 5), to measure the peak of one phase of a long-lived process;
* ``update_results()``: replace (or append) one ``<!-- BEGIN bench:NAME -->`` ... ``<!-- END bench:NAME -->``
  section of RESULTS.md, keeping everything else;
* ``stamp_ok()`` / ``write_stamp()``: reuse of generated inputs under bench/work/;
* ``profile_call()``: one call under cProfile, the top entries written to a file and summarised.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import pathlib
import platform
import re
import subprocess
import sys
import tempfile
import threading
import time

BENCH = pathlib.Path(__file__).resolve().parent
REPO = BENCH.parent
WORK = BENCH / "work"
RESULTS = BENCH / "RESULTS.md"
PROJECT_PY = REPO / ".venv" / "bin" / "python"
PERFLAKE_CLI = REPO / ".venv" / "bin" / "perflake"
BENCH_PY = REPO / ".bench-venv" / "bin" / "python"
GNU_TIME = pathlib.Path("/usr/bin/time")
PROJECT_PACKAGES = ("perflake", "duckdb", "pyarrow", "pandas", "numpy", "dask")
BENCH_PACKAGES = ("llnl-hatchet", "llnl-thicket", "caliper-reader", "pandas", "numpy")


# -- small formatting helpers ------------------------------------------------------------------------------
def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def rel(p) -> str:
    """A path relative to the repository root when it is inside it."""
    try:
        r = os.path.relpath(p, REPO)
    except ValueError:
        return str(p)
    return str(p) if r.startswith("..") else r


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def fmt_s(s: float | None) -> str:
    if s is None:
        return "n/a"
    return f"{s:.3f} s" if s < 10 else f"{s:.1f} s"


def fmt_bytes(n: int) -> str:
    return f"{n / 1e6:,.1f} MB ({n:,} B)"


def mib(kib: float | None) -> str:
    return "n/a" if kib is None else f"{kib / 1024:,.0f} MiB"


def load_str(load=None) -> str:
    load = os.getloadavg() if load is None else load
    return " / ".join(f"{x:.2f}" for x in load)


# -- machine ------------------------------------------------------------------------------------------------
def _versions(python: pathlib.Path, packages) -> dict | None:
    code = ("import json,platform,sys;from importlib import metadata as m\n"
            "def v(p):\n"
            "    try: return m.version(p)\n"
            "    except m.PackageNotFoundError: return 'n/a'\n"
            f"print(json.dumps({{'python': platform.python_version(), **{{p: v(p) for p in {list(packages)!r}}}}}))")
    try:
        out = subprocess.run([str(python), "-c", code], capture_output=True, text=True, timeout=120)
        return json.loads(out.stdout)
    except (OSError, subprocess.SubprocessError, ValueError):
        return None


def git_state() -> str:
    try:
        head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, timeout=30).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "n/a"
    return f"{head}{' + uncommitted changes' if dirty else ''}" if head else "n/a"


def cpu_and_memory(cpu: str) -> dict:
    """{"cpu": the model name from /proc/cpuinfo (else ``cpu``), "mem_gib": MemTotal in GiB (else None)}."""
    out = {"cpu": cpu, "mem_gib": None}
    try:
        for line in open("/proc/cpuinfo", encoding="utf-8"):
            if line.startswith("model name"):
                out["cpu"] = line.split(":", 1)[1].strip()
                break
        for line in open("/proc/meminfo", encoding="utf-8"):
            if line.startswith("MemTotal:"):
                out["mem_gib"] = round(int(line.split()[1]) / 1024 ** 2, 1)
                break
    except OSError:
        pass
    return out


def machine_info(*, bench_venv: bool = True) -> dict:
    """Facts printed in every section header."""
    info = {"nproc": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
            "cpu": platform.machine(), "mem_gib": None, "os": f"{platform.system()} {platform.release()}",
            "git": git_state(), "project_venv": _versions(PROJECT_PY, PROJECT_PACKAGES)}
    info.update(cpu_and_memory(info["cpu"]))
    info["bench_venv"] = _versions(BENCH_PY, BENCH_PACKAGES) if bench_venv and BENCH_PY.exists() else None
    return info


def venv_line(label: str, versions: dict | None) -> str:
    if not versions:
        return f"- {label}: n/a"
    return (f"- {label}: Python {versions.get('python')}, "
            + ", ".join(f"{p} {v}" for p, v in versions.items() if p != "python"))


# -- load average -------------------------------------------------------------------------------------------
def wait_for_load(max_load: float = 1.0, poll: float = 10.0, max_wait: float = 300.0, label: str = "") -> dict:
    """Sleep until the 1-minute load average is below ``max_load`` (polled every ``poll`` s, at most
    ``max_wait`` s), then return what was seen: {"load1", "waited_s", "ok"}; ok False = measured anyway."""
    t = time.monotonic()
    while True:
        load1 = os.getloadavg()[0]
        waited = time.monotonic() - t
        if load1 < max_load:
            return {"load1": load1, "waited_s": waited, "ok": True, "limit": max_load}
        if waited >= max_wait:
            log(f"{label + ': ' if label else ''}1-min load {load1:.2f} still >= {max_load} after "
                f"{waited:.0f} s: measuring anyway")
            return {"load1": load1, "waited_s": waited, "ok": False, "limit": max_load}
        time.sleep(poll)


def load_note(w: dict, max_load: float = 1.0) -> str:
    """'0.42' / '0.42 (waited 40 s)' / '1.31 (waited 300 s, above 1.0)'."""
    s = f"{w['load1']:.2f}"
    extra = []
    if w["waited_s"] >= 1:
        extra.append(f"waited {w['waited_s']:.0f} s")
    if not w["ok"]:
        extra.append(f"**above {w.get('limit', max_load):.1f}**")
    return s + (f" ({', '.join(extra)})" if extra else "")


# -- subprocesses and memory --------------------------------------------------------------------------------
def run_measured(cmd: list[str], *, timeout: float, env: dict | None = None) -> dict:
    """Run ``cmd`` from the repository root: wall seconds, return code, stdout, stderr, peak RSS in KiB
    (``/usr/bin/time -f %M`` when it exists, else this child's wait4 rusage) and whether ``timeout`` killed it."""
    rss_file = None
    full = list(cmd)
    if GNU_TIME.exists() and os.access(GNU_TIME, os.X_OK):
        fd, rss_file = tempfile.mkstemp(prefix="bench-rss-", suffix=".txt")
        os.close(fd)
        full = [str(GNU_TIME), "-f", "%M", "-o", rss_file, *cmd]
    out_f, err_f = tempfile.TemporaryFile(), tempfile.TemporaryFile()
    t = time.perf_counter()
    proc = subprocess.Popen(full, stdout=out_f, stderr=err_f, cwd=REPO, env=env, start_new_session=True)
    fired = threading.Event()

    def kill():
        fired.set()
        try:
            os.killpg(proc.pid, 9)  # the process group we created: time and its child
        except OSError:
            pass

    timer = threading.Timer(timeout, kill)
    timer.start()
    try:
        _pid, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t
    finally:
        timer.cancel()
    proc.returncode = os.waitstatus_to_exitcode(status)
    out_f.seek(0)
    err_f.seek(0)
    res = {"wall_s": wall, "rc": proc.returncode, "timed_out": fired.is_set(),
           "stdout": out_f.read().decode(errors="replace"), "stderr": err_f.read().decode(errors="replace"),
           "rss_kib": None, "rss_source": None}
    if rss_file:
        try:
            lines = pathlib.Path(rss_file).read_text().strip().splitlines()
            res["rss_kib"] = int(lines[-1])
            res["rss_source"] = "/usr/bin/time -f %M"
        except (OSError, ValueError, IndexError):
            pass
        finally:
            os.unlink(rss_file)
    if res["rss_kib"] is None:
        res["rss_kib"] = usage.ru_maxrss
        res["rss_source"] = "wait4 rusage ru_maxrss"
    return res


def result_line(stdout: str) -> dict:
    """The JSON after the last 'RESULT ' line of a probe's/worker's stdout."""
    lines = [ln for ln in stdout.splitlines() if ln.startswith("RESULT ")]
    if not lines:
        raise RuntimeError("no RESULT line in the output")
    return json.loads(lines[-1][len("RESULT "):])


def rss_status() -> dict:
    """This process's VmRSS and VmHWM (peak) in KiB."""
    out = {}
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith(("VmRSS:", "VmHWM:")):
                out[line.split(":")[0]] = int(line.split()[1])
    return out


def peak_rss_reset() -> bool:
    """Reset this process's peak RSS (VmHWM) to its current RSS (Linux >= 4.0); False when not possible."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def release_memory() -> None:
    import ctypes
    import gc

    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


# -- inputs -------------------------------------------------------------------------------------------------
def stamp_ok(stamp: pathlib.Path, params: dict) -> bool:
    try:
        return json.loads(stamp.read_text(encoding="utf-8")) == params
    except (OSError, ValueError):
        return False


def write_stamp(stamp: pathlib.Path, params: dict) -> None:
    stamp.write_text(json.dumps(params), encoding="utf-8")


def tree_bytes(paths) -> tuple[int, int]:
    """(files, bytes) of every file under the given files/directories (stamps excluded)."""
    n = total = 0
    for p in map(pathlib.Path, paths):
        for f in ([p] if p.is_file() else (q for q in p.rglob("*") if q.is_file())):
            if f.name.startswith(".") and f.suffix == ".json":
                continue
            n += 1
            total += f.stat().st_size
    return n, total


# -- RESULTS.md ---------------------------------------------------------------------------------------------
def update_results(path: pathlib.Path, name: str, section: str) -> None:
    """Replace the marked section ``name`` of ``path`` with ``section`` (or append it); the rest is kept."""
    begin, end = f"<!-- BEGIN bench:{name} -->", f"<!-- END bench:{name} -->"
    block = f"{begin}\n{section.rstrip()}\n{end}\n"
    text = path.read_text(encoding="utf-8") if path.exists() else (
        "# perflake benchmark results\n\n"
        "Written by the scripts in `bench/` (`make bench`). Each section is owned by one benchmark and is\n"
        "replaced when that benchmark runs again; anything outside the marked sections is kept.\n\n")
    pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end) + r"\n?", re.S)
    if pattern.search(text):
        text = pattern.sub(lambda _m: block, text, count=1)
    else:
        text = text.rstrip("\n") + "\n\n" + block
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


# -- profiling ----------------------------------------------------------------------------------------------
def profile_call(fn, dest: pathlib.Path, top: int = 40) -> dict:
    """Call ``fn`` once under cProfile; the top ``top`` entries by cumulative and by own time go to ``dest``.
    Returns {"wall_s", "own": [(label, own s, cum s)...] (largest own time first, 8 entries)}."""
    import cProfile
    import io
    import pstats

    prof = cProfile.Profile()
    t = time.perf_counter()
    prof.enable()
    try:
        fn()
    finally:
        prof.disable()
    wall = time.perf_counter() - t
    buf = io.StringIO()
    st = pstats.Stats(prof, stream=buf)
    st.sort_stats("cumulative").print_stats(top)
    st.sort_stats("tottime").print_stats(top)
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(buf.getvalue(), encoding="utf-8")
    rows, ours = [], []
    for (file, line, func), (_cc, _nc, tt, ct, _callers) in st.stats.items():
        short = file
        for marker in ("site-packages/", str(REPO) + "/"):
            if marker in file:
                short = file.split(marker, 1)[1]
        row = (f"{func} ({short}:{line})" if line else func, tt, ct)
        rows.append(row)
        if file.startswith(str(REPO) + "/") and "/bench/" not in file and "/.venv/" not in file:
            ours.append(row)
    rows.sort(key=lambda r: -r[1])
    ours.sort(key=lambda r: -r[2])
    return {"wall_s": wall, "own": rows[:8], "perflake_cum": ours[:8]}


def profile_summary(p: dict) -> str:
    own = "; ".join(f"{label} {o:.3f} s own / {c:.3f} s cum" for label, o, c in p["own"])
    cum = "; ".join(f"{label} {c:.3f} s cum" for label, _o, c in p.get("perflake_cum", []))
    return f"most own time: {own}" + (f". perflake functions by cumulative time: {cum}" if cum else "")
