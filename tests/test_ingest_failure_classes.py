"""Failure classes of an ingest (issue 23): out of memory and a full disk are permanent for the input they hit
(logged once with the reason, not retried by a scheduled ingest until the input changes or --retry-failed),
and a full disk stops the ingest with one line, the summary and exit 2, the lake reading as before.

The full disk is a real one: a tmpfs mounted in a user and mount namespace (``unshare --user --map-root-user
--mount``) holds the lake; out of memory is a real RLIMIT_AS set on the child process that ingests.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from perflake import Lake
from perflake.generators import write_caliper_json_runs
from perflake.ingest.task import (
    DISK_FULL,
    LINK_LOOP,
    OUT_OF_MEMORY,
    PERMISSION,
    failure_class,
    failure_reason,
    is_transient,
)

PERFLAKE = [sys.executable, "-m", "perflake.cli.app"]

# Run inside the namespaces: mount a tmpfs, copy the seed lake onto it, then do the steps; each ingest's exit
# code, stdout, stderr and a copy of the lake afterwards go to OUT (outside the tmpfs, read by the test).
_INNER = textwrap.dedent('''
    import json, os, shutil, subprocess, sys

    mnt, seed, src, out, size = sys.argv[1:6]
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}k", "none", mnt], check=True)
    lake = os.path.join(mnt, "lake")

    def free():
        st = os.statvfs(mnt)
        return st.f_bavail * st.f_frsize

    for step in sys.argv[6:]:
        what, _, arg = step.partition(":")
        if what == "reset":  # the seed lake again, nothing else on the disk
            for name in os.listdir(mnt):
                p = os.path.join(mnt, name)
                shutil.rmtree(p) if os.path.isdir(p) else os.remove(p)
            shutil.copytree(seed, lake, symlinks=True)
        elif what == "fill":  # leave ARG KiB free
            with open(os.path.join(mnt, "filler"), "ab") as fh:
                try:
                    fh.write(bytes(max(0, free() - int(arg) * 1024)))
                except OSError:
                    pass
        elif what == "unfill":
            os.remove(os.path.join(mnt, "filler"))
        else:  # an ingest: NAME[,extra args]
            name, *extra = step.split(",")
            proc = subprocess.run([sys.executable, "-m", "perflake.cli.app", "ingest", src, "--lake", lake, *extra],
                                  capture_output=True, text=True, timeout=300)
            with open(os.path.join(out, name + ".json"), "w") as fh:
                json.dump({"rc": proc.returncode, "stdout": proc.stdout, "stderr": proc.stderr}, fh)
            shutil.copytree(lake, os.path.join(out, name + "-lake"), symlinks=True)
''')


def _namespaces_work() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c",
                            "mount -t tmpfs -o size=1m none /mnt && test -w /mnt"], capture_output=True)
    return probe.returncode == 0


needs_tmpfs = pytest.mark.skipif(not _namespaces_work(),
                                 reason="unshare --user --mount with a tmpfs is not allowed here (no real full disk)")


def on_full_disk(tmp_path: Path, src: Path, steps: list[str], *, size_kib: int = 4096) -> dict[str, dict]:
    """Run ``steps`` with the lake on a tmpfs of ``size_kib``; returns each ingest's outcome, with ``lake``:
    the path of a copy of the lake right after it."""
    seed = tmp_path / "seed"
    Lake(seed).ingest([write_caliper_json_runs(tmp_path / "small", nodes=20, ranks=1, runs=1, seed=1)[0]])
    mnt, out = tmp_path / "mnt", tmp_path / "out"
    mnt.mkdir()
    out.mkdir()
    script = tmp_path / "inner.py"
    script.write_text(_INNER)
    proc = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", sys.executable, str(script), str(mnt),
                           str(seed), str(src), str(out), str(size_kib), *steps],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr
    results = {}
    for f in out.glob("*.json"):
        results[f.stem] = {**json.loads(f.read_text()), "lake": out / f"{f.stem}-lake"}
    return results


def content(root: Path) -> dict:
    """What a lake answers: its runs and the rows of every table (as the lake's readers see them)."""
    lake = Lake(root)
    return {"runs": sorted(lake.runs()["run_id"]),
            **{t: lake.sql(f"select count(*) as n from {t}").loc[0, "n"]
               for t in ("nodes", "edges", "metrics", "rank_summary")}}


def log_rows(root: Path):
    return Lake(root).sql("select source, status, reason, transient from ingest_log order by attempted_at")


@pytest.fixture(scope="module")
def big_run(tmp_path_factory) -> Path:
    """A run whose metrics (about 700 KiB stored) dwarf its other tables (about 50 KiB): with 300 KiB free the
    metrics write fails and the small ingest log row still fits."""
    return write_caliper_json_runs(tmp_path_factory.mktemp("big"), nodes=100, ranks=512, runs=1, seed=5)[0]


# -- the classes ---------------------------------------------------------------------------------------------------
def test_failure_classes_from_errno_and_from_the_words_of_other_libraries():
    import duckdb
    import pyarrow as pa

    from perflake.errors import ReaderError

    assert failure_class(MemoryError()) == OUT_OF_MEMORY and not is_transient(MemoryError())
    assert failure_class(pa.ArrowMemoryError("malloc of size 64 failed")) == OUT_OF_MEMORY
    assert failure_class(duckdb.OutOfMemoryException("Out of Memory Error: failed to allocate")) == OUT_OF_MEMORY
    for code in (errno.ENOSPC, errno.EDQUOT):
        assert failure_class(OSError(code, os.strerror(code))) == DISK_FULL
    delta = Exception("Failed to parse parquet: External: Generic LocalFileSystem error: Unable to copy data to "
                      "file: No space left on device (os error 28)")  # a DeltaError's words
    assert failure_class(delta) == DISK_FULL and not is_transient(delta)
    spill = duckdb.IOException('Could not write file "x.tmp": No space left on device')  # a reader's temp files
    assert failure_class(spill) == DISK_FULL
    assert failure_reason("/in/x.json", spill) == "/in/x.json: disk full while reading it (No space left on device)"
    assert failure_reason("/in/x.json", OSError(errno.EDQUOT, "Disk quota exceeded"), doing="writing it to the lake") \
        == "/in/x.json: disk full writing the lake (Disk quota exceeded)"
    try:  # a reader wraps the OSError it met (raise ... from None keeps it as the context)
        try:
            raise PermissionError(errno.EACCES, "Permission denied", "/p/run.cali")
        except OSError:
            raise ReaderError("/p/run.cali", "cannot read: Permission denied") from None
    except ReaderError as exc:
        wrapped = exc
    assert failure_class(wrapped) == PERMISSION
    assert failure_reason("/p/run.cali", wrapped) == "/p/run.cali: permission denied"
    assert failure_class(OSError(errno.ELOOP, "Too many levels of symbolic links")) == LINK_LOOP
    assert failure_class(ReaderError("/p/x.json", "metric 'Out of memory events' unknown")) is None  # its own words
    eio = OSError(errno.EIO, "Input/output error")
    assert failure_class(eio) is None and is_transient(eio)  # a passing I/O error: tried again next time
    assert failure_reason("/in/big.json", MemoryError(), nbytes=1_234_567) == \
        "/in/big.json: out of memory reading it (1,234,567 bytes)"


# -- a full disk ---------------------------------------------------------------------------------------------------
@needs_tmpfs
def test_disk_full_stops_with_one_line_and_is_not_retried_every_run(tmp_path, big_run):
    r = on_full_disk(tmp_path, big_run, ["reset", "fill:300", "full,--json", "cron,--json", "text",
                                         "unfill", "freed,--json", "retry,--json,--retry-failed"])
    before = content(tmp_path / "seed")
    full = r["full"]
    assert full["rc"] == 2, full["stderr"]
    lake_url = str(tmp_path / "mnt" / "lake")
    line = (f"perflake: {lake_url}: disk full writing the lake (No space left on device); 1 input(s) not ingested, "
            "logged as failed: tried again when they change or with --retry-failed\n")
    assert full["stderr"] == line  # one line: no traceback, no Rust panic messages
    s = json.loads(full["stdout"])
    assert s["exit_code"] == 2 and s["error"] == line.removeprefix("perflake: ").strip()
    assert s["counts"]["failed"] == 1 and s["counts"]["ingested"] == 0 and s["problem_kinds"] == {"disk full": 1}
    assert s["failed"] == [{"path": str(big_run), "reason": f"{big_run}: disk full writing the lake "
                                                             "(No space left on device)"}]
    assert s["log_error"] is None and s["log_file"].endswith(s["invocation"])
    assert content(full["lake"]) == before  # nothing half-written: no orphan runs row, no visible rows
    log = log_rows(full["lake"])
    assert log["status"].tolist() == ["ingested", "failed"] and not log["transient"].iloc[-1]
    assert log["reason"].iloc[-1] == f"{big_run}: disk full writing the lake (No space left on device)"

    cron = json.loads(r["cron"]["stdout"])  # the next scheduled run: not tried again, not logged again, exit 0
    assert r["cron"]["rc"] == 0 and r["cron"]["stderr"] == "" and cron["counts"]["failed"] == 0
    assert cron["skipped_failed_before"] == s["failed"] and cron["log_file"] is None
    assert r["text"]["stdout"] == ("ingested 0 runs, skipped 0 already present, 0 failed, "
                                   "1 skipped: failed before and unchanged (--retry-failed)\n")
    assert len(log_rows(r["text"]["lake"])) == 2
    freed = json.loads(r["freed"]["stdout"])  # space freed: still the documented rule, --retry-failed says when
    assert freed["counts"]["skipped_failed_before"] == 1 and freed["counts"]["ingested"] == 0
    retry = json.loads(r["retry"]["stdout"])
    assert r["retry"]["rc"] == 0 and retry["counts"]["ingested"] == 1 and retry["failed"] == []
    after = content(r["retry"]["lake"])
    assert after["runs"] == sorted([*before["runs"], retry["ingested"][0]]) and after["metrics"] > before["metrics"]


@needs_tmpfs
def test_disk_too_full_for_the_log_says_so_and_the_next_run_does_not_crash(tmp_path, big_run):
    r = on_full_disk(tmp_path, big_run, ["reset", "fill:0", "first,--json", "second"])
    before = content(tmp_path / "seed")
    first = r["first"]
    assert first["rc"] == 2 and first["stderr"].count("\n") == 1 and "Traceback" not in first["stderr"]
    assert first["stderr"].endswith("1 input(s) not ingested, the ingest log could not be written either, so they "
                                    "are tried again next time\n")
    s = json.loads(first["stdout"])
    assert s["log_error"] == "disk full: No space left on device" and s["log_file"] is None
    assert s["counts"]["failed"] == 1
    assert content(first["lake"]) == before and len(log_rows(first["lake"])) == 1  # the seed's row only
    second = r["second"]  # nothing remembered: tried again, and fails the same way, cleanly
    assert second["rc"] == 2 and second["stderr"] == first["stderr"]
    assert second["stdout"] == ("ingested 0 runs, skipped 0 already present, 1 failed; ingest log not written "
                                "(disk full: No space left on device): these attempts are not remembered\n")
    assert content(second["lake"]) == before


@needs_tmpfs
def test_a_disk_full_at_any_moment_leaves_the_lake_whole(tmp_path, big_run):
    """However much room is left (the data files, the runs commit or the ingest log may be the write that
    fails), an ingest either commits the run whole (exit 0, or exit 2 when only its log did not fit) or stops
    with one line and exit 2, the lake reading as before."""
    rooms = [120, 700, 720, 730, 740, 900]
    steps = [s for room in rooms for s in ("reset", f"fill:{room}", f"room{room},--json")]
    r = on_full_disk(tmp_path, big_run, steps)
    before = content(tmp_path / "seed")
    outcomes = set()
    for room in rooms:
        got = r[f"room{room}"]
        s = json.loads(got["stdout"])
        assert got["rc"] in (0, 2) and "Traceback" not in got["stderr"] and got["stderr"].count("\n") <= 1, got
        after = content(got["lake"])
        if s["counts"]["ingested"] == 1:  # committed whole
            assert after["runs"] == sorted([*before["runs"], *s["ingested"]]) and after["metrics"] > before["metrics"]
            outcomes.add("committed" if got["rc"] == 0 else "committed, log not written")
        else:
            assert got["rc"] == 2 and after == before and s["counts"]["failed"] == 1
            outcomes.add("stopped")
    # the smallest rooms cannot hold the data files; around 720-750 KiB (on this build) the runs commit or the
    # log is the write that fails; 900 KiB hold it all
    assert {"stopped", "committed"} <= outcomes, outcomes


# -- out of memory -----------------------------------------------------------------------------------------------
# The child warms up (an ingest into a scratch lake starts DuckDB, delta-rs's runtime and the thread pools), then
# caps its address space at what it uses now plus MARGIN and runs the command: a value that lets Python, DuckDB
# and delta-rs run on any machine (their reservations grow with the cores), and that reading the big input exceeds.
_UNDER_LIMIT = textwrap.dedent('''
    import resource, sys
    from perflake import Lake
    from perflake.cli.app import main

    Lake(sys.argv[1]).ingest([sys.argv[2]])
    size = next(int(line.split()[1]) * 1024 for line in open("/proc/self/status") if line.startswith("VmSize"))
    resource.setrlimit(resource.RLIMIT_AS, (size + int(sys.argv[3]) * (1 << 20), resource.RLIM_INFINITY))
    sys.exit(main(sys.argv[4:]))
''')
MARGIN_MIB = 256


def write_huge_caliper_json(path: Path, rows: int) -> Path:
    """A Caliper json-split file whose rows hold strings: read by ``json.loads`` of the whole text, about 150
    bytes of Python objects per 30 bytes of file (1.5 million rows: 50 MB on disk, over 700 MB to read)."""
    with open(path, "w") as fh:
        fh.write('{"data": [')
        fh.write(",".join(f'["main/solve/x{i % 1000}", {i}, 1.5]' for i in range(rows)))
        fh.write('], "columns": ["path", "count", "time"], "column_metadata": [{"is_value": false}, '
                 '{"is_value": true}, {"is_value": true}], "nodes": []}')
    return path


def test_out_of_memory_is_permanent_logged_once_and_retried_when_asked_or_changed(tmp_path):
    warm = write_caliper_json_runs(tmp_path / "warm", nodes=20, ranks=1, runs=1, seed=1)[0]
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    big = write_huge_caliper_json(inputs / "huge.json", 1_500_000)
    lake = tmp_path / "lake"
    script = tmp_path / "under_limit.py"
    script.write_text(_UNDER_LIMIT)

    def ingest(*extra):
        proc = subprocess.run([sys.executable, str(script), str(tmp_path / "scratch"), str(warm), str(MARGIN_MIB),
                               "ingest", str(inputs), "--lake", str(lake), "--json", *extra],
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode in (0, 1), proc.stderr
        return proc, json.loads(proc.stdout)

    proc, s = ingest()
    reason = f"{big}: out of memory reading it ({big.stat().st_size:,} bytes)"
    assert proc.returncode == 1 and proc.stderr == f"perflake: {reason}\n"
    assert s["failed"] == [{"path": str(big), "reason": reason}] and s["problem_kinds"] == {"out of memory": 1}
    log = log_rows(lake)
    assert log.to_dict("records") == [{"source": str(big), "status": "failed", "reason": reason, "transient": False}]

    proc, s = ingest()  # the next scheduled run: not read again, not logged again
    assert proc.returncode == 0 and proc.stderr == "" and s["counts"]["skipped_failed_before"] == 1
    assert s["skipped_failed_before"] == [{"path": str(big), "reason": reason}] and len(log_rows(lake)) == 1

    proc, s = ingest("--retry-failed")  # asked: read again (and out of memory again: logged again)
    assert proc.returncode == 1 and s["failed"] == [{"path": str(big), "reason": reason}]
    assert log_rows(lake)["status"].tolist() == ["failed", "failed"]

    shutil.copy(write_caliper_json_runs(tmp_path / "fixed", nodes=20, ranks=2, runs=1, seed=9)[0], big)
    proc, s = ingest()  # the file changed (a profile of normal size now): read, and ingested under the same limit
    assert proc.returncode == 0, proc.stderr
    assert s["counts"]["ingested"] == 1 and s["ingested_files"][0]["path"] == str(big)
    assert Lake(lake).runs()["run_id"].tolist() == s["ingested"]
