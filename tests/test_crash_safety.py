"""Crash safety (issue 7): an ingest killed with SIGKILL at any moment leaves the lake readable and consistent --
every run is fully there or not at all -- and the next ingest finishes the work; vacuum removes what the
killed process left behind and nothing else.

The kill moments are spread over the whole life of a CLI ingest (interpreter start-up, sniffing, reading,
normalising, writing the data files, the commit rename), measured from a first uninterrupted run.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from perflake import Lake
from perflake.generators.tau import write_tau_runs

KILLS = int(os.environ.get("PERFLAKE_KILLS", "25"))  # per window; more with PERFLAKE_KILLS (bench/ and campaigns)
RUNS = 16


def _cli(src: Path, lake_dir: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "perflake.cli.app", "ingest", str(src), "--lake", str(lake_dir),
                             "--quiet"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


TABLES = ("nodes", "edges", "metrics", "rank_summary")


def _counts(lake_dir: Path) -> dict[str, tuple[int, ...]]:
    """Per visible run: rows in nodes, edges, metrics, rank_summary."""
    lake = Lake(lake_dir)
    runs = lake.sql("select run_id from runs")["run_id"]
    per = {t: lake.sql(f"select run_id, count(*) as n from {t} group by run_id").set_index("run_id")["n"]
           for t in TABLES}
    extra = set().union(*(set(per[t].index) for t in TABLES)) - set(runs)
    assert not extra, f"rows of runs that are not committed: {sorted(extra)}"
    assert runs.is_unique
    return {r: tuple(int(per[t].get(r, 0)) for t in TABLES) for r in runs}


def _check_consistent(lake_dir: Path, reference: dict) -> int:
    """The lake opens, and every visible run has exactly its rows (those of an uninterrupted ingest)."""
    if not (lake_dir / "perflake.json").exists():
        return 0  # killed before the lake was created: nothing to read, nothing half-made
    counts = _counts(lake_dir)
    for run, rows in counts.items():
        assert rows == reference[run], f"{run}: rows {rows}, an uninterrupted ingest gives {reference[run]}"
    return len(counts)


@pytest.mark.parametrize("window", [(0.3, 1.0), (0.8, 1.05)], ids=["whole-ingest", "writes-and-commit"])
def test_sigkill_at_random_moments_never_leaves_a_partial_run(tmp_path, window):
    """SIGKILL at uniform moments of a CLI ingest: over its whole life, and (``writes-and-commit``) over its last
    fifth, where the batch's rows are appended to the Delta tables and the runs row is committed."""
    src = tmp_path / "src"
    write_tau_runs(src, nodes=30, ranks=2, runs=RUNS, seed=5)
    reference = tmp_path / "reference"
    t0 = time.monotonic()
    done = _cli(src, reference)
    assert done.wait(timeout=120) == 0, done.stderr.read()
    full = time.monotonic() - t0
    ref = _counts(reference)
    expected = sorted(ref)
    assert len(expected) == RUNS and all(n > 0 for rows in ref.values() for n in rows)

    rng = random.Random(7)
    outcomes = {"killed": 0, "finished first": 0, "all runs visible after the kill": 0, "vacuumed files": 0}
    for i in range(KILLS):
        lake_dir = tmp_path / f"lake-{i}"
        started = time.monotonic()
        proc = _cli(src, lake_dir)
        time.sleep(rng.uniform(*window) * full)  # start-up is a third of it; the rest reads, writes, commits
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            outcomes["killed"] += 1
        else:
            outcomes["finished first"] += 1
            full = min(full, time.monotonic() - started)  # the machine got faster: aim earlier from now on
        proc.wait(timeout=300)
        visible = _check_consistent(lake_dir, ref)
        assert visible in (0, RUNS), f"kill {i}: {visible} runs visible, a batch is all or nothing"
        outcomes["all runs visible after the kill"] += visible == RUNS
        report = Lake(lake_dir).ingest([src])  # the next ingest completes the work
        assert not report.failed, report.failed
        assert sorted(Lake(lake_dir).sql("select run_id from runs")["run_id"]) == expected, f"kill {i}"
        _check_consistent(lake_dir, ref)
        batches = set(Lake(lake_dir).sql("select distinct batch from runs")["batch"])
        removed = Lake(lake_dir).vacuum(older_than=0)  # leftovers of the killed process, and only those
        assert not [p for p in removed if p.split("/batch=")[-1] in batches], "vacuum removed a committed batch"
        outcomes["vacuumed files"] += len(removed)
        assert _check_consistent(lake_dir, ref) == RUNS
        cat = Lake(lake_dir).catalog()
        for table in TABLES:  # every live data file holds committed batches only
            live = cat.tables.live_files(table)
            ranges = zip(live.column("min_batch").to_pylist(), live.column("max_batch").to_pylist())
            assert all(lo in batches and hi in batches for lo, hi in ranges), f"{table}: rows no commit owns"
    print(f"\n{KILLS} ingests, SIGKILL at uniform moments over {full:.2f} s: {outcomes}")
    assert outcomes["killed"] >= KILLS // 2, outcomes  # most kills hit a live process


@pytest.mark.parametrize("moment", ["data rows appended", "runs committed, log not written"])
def test_a_crash_between_the_steps_of_a_commit_is_invisible(tmp_path, monkeypatch, moment):
    """The windows of an ingest, simulated in-process: data rows appended to the Delta tables without their runs
    row are invisible and vacuumed; runs committed without the log row are whole; the next ingest completes."""
    src = tmp_path / "src"
    write_tau_runs(src, nodes=20, ranks=2, runs=3, seed=1)
    Lake(tmp_path / "reference").ingest([src])
    ref = _counts(tmp_path / "reference")
    lake = Lake(tmp_path / "lake")
    cat = lake.catalog(create=True)
    from perflake.catalogs import catalog as catalog_module

    class Crash(BaseException):
        pass

    target = "commit" if moment == "data rows appended" else "write_log"
    monkeypatch.setattr(catalog_module.Catalog, target, lambda self, *a, **k: (_ for _ in ()).throw(Crash()))
    monkeypatch.setattr(catalog_module.Catalog, "discard", lambda self, batch: None)  # a SIGKILL runs no cleanup
    with pytest.raises(Crash):
        lake.ingest([src])
    monkeypatch.undo()
    visible = 0 if moment == "data rows appended" else 3
    assert cat.runs().num_rows == visible and _check_consistent(tmp_path / "lake", ref) == visible
    if moment == "data rows appended":
        assert cat.tables.read("metrics").num_rows > 0, "the simulated crash left rows behind"
        assert Lake(tmp_path / "lake").sql("select count(*) as n from metrics")["n"][0] == 0
    Lake(tmp_path / "lake").ingest([src])
    assert _check_consistent(tmp_path / "lake", ref) == 3
    removed = Lake(tmp_path / "lake").vacuum(older_than=0)
    assert bool([p for p in removed if "/batch=" in p]) == (moment == "data rows appended")
    assert _check_consistent(tmp_path / "lake", ref) == 3
    expected = sum(n[2] for n in ref.values())
    assert Lake(tmp_path / "lake").catalog().tables.read("metrics").num_rows == expected  # orphans deleted


def test_a_failed_summary_write_leaves_no_file(tmp_path, monkeypatch):
    """The rank summary is one of the batch's data tables: when writing it fails (here: the disk fills up once
    its rows are appended), the batch is discarded whole -- no nodes, edges, metrics nor rank_summary row, no run
    visible -- and the next ingest commits all four."""
    src = tmp_path / "src"
    write_tau_runs(src, nodes=20, ranks=3, threads=2, runs=3, seed=2)
    from perflake.catalogs import catalog as catalog_module

    real = catalog_module.Catalog.write_table

    def full_disk(self, table_name, batch, table, **kw):
        real(self, table_name, batch, table, **kw)
        if table_name == "rank_summary":
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(catalog_module.Catalog, "write_table", full_disk)
    with pytest.raises(OSError, match="No space left"):
        Lake(tmp_path / "lake").ingest([src])
    monkeypatch.undo()
    cat = Lake(tmp_path / "lake").catalog()
    left = {t: cat.tables.read(t).num_rows for t in ("runs", *TABLES)}
    assert not any(left.values()), left  # the batch's rows were deleted from every table
    assert Lake(tmp_path / "lake").sql("select count(*) as n from runs")["n"][0] == 0
    Lake(tmp_path / "lake").ingest([src], retry_failed=True)  # disk full is permanent until asked again
    counts = _counts(tmp_path / "lake")
    assert len(counts) == 3 and all(min(rows) > 0 for rows in counts.values())
