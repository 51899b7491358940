"""Production ingestion (issue 7): the ingest log, failed inputs retried only when changed, moved and renamed
inputs skipped by hash, --json and exit codes, symlinks, parallel ingest (a real LocalCluster) equal to the
serial one, and readers that see whole runs while another process ingests."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from perflake import Lake
from perflake.errors import LockTimeout
from perflake.generators import write_caliper_json_runs, write_tau_runs
from perflake.ingest.driver import find_runs

PERFLAKE = [sys.executable, "-m", "perflake.cli.app"]


def cli(*args, timeout=300):
    return subprocess.run([*PERFLAKE, *map(str, args)], capture_output=True, text=True, timeout=timeout)


def log_rows(lake: Lake):
    return lake.sql("select source, status, reason, run_id, content_sha256, format, perflake_version, duration_s, "
                    "invocation "
                    "from ingest_log order by attempted_at, source")


def truncate(run_dir: Path) -> Path:
    victim = sorted(run_dir.glob("profile.*"))[1]
    victim.write_bytes(victim.read_bytes()[:2000])
    return victim


@pytest.fixture
def runs(tmp_path):
    return write_tau_runs(tmp_path / "gen", nodes=40, ranks=2, runs=3, seed=3)


# -- the ingest log ------------------------------------------------------------------------------------------
def test_every_attempt_is_logged_once_per_invocation(runs, tmp_path, lake):
    bad = tmp_path / "bad"
    shutil.copytree(runs[0], bad)
    truncate(bad)
    report = lake.ingest([*runs, bad])
    assert len(report.ingested) == 3 and len(report.failed) == 1
    df = log_rows(lake)
    assert sorted(df["status"]) == ["failed", "ingested", "ingested", "ingested"]
    assert set(df.loc[df.status == "ingested", "run_id"]) == set(report.ingested)
    failed = df[df.status == "failed"].iloc[0]
    assert failed["source"] == str(bad) and "truncated" in failed["reason"] and len(failed["content_sha256"]) == 64
    assert (df["format"] == "tau").all() and (df["perflake_version"] == "0.1.0").all() and (df["duration_s"] > 0).all()
    assert report.log_file == f"{lake.root}/ingest_log@{report.invocation}" and set(df["invocation"]) == {
        report.invocation}
    version = lake.catalog().tables.table("ingest_log").version()
    again = lake.ingest([*runs, bad])  # nothing changed: nothing read, nothing logged, no new commit
    assert again.ingested == [] and again.unchanged == 3 and len(again.skipped) == 3 and not again.failed
    assert again.skipped_failed == [(str(bad), failed["reason"])] and again.log_file is None
    assert lake.catalog().tables.table("ingest_log").version() == version


def test_log_files_are_compacted(runs, lake, monkeypatch):
    from perflake.catalogs import compaction

    monkeypatch.setattr(compaction, "AUTO_FILES", 2)
    for run in runs:
        lake.ingest([run])
    parts = lake.catalog().tables.table("ingest_log").file_uris()
    assert len(parts) == 1  # three invocations, merged into one file when the third made it three
    assert sorted(log_rows(lake)["source"]) == sorted(str(r) for r in runs)


# -- failed inputs are retried only when they changed ----------------------------------------------------------
def test_failed_input_retried_only_when_changed(runs, tmp_path, lake):
    bad = tmp_path / "bad"
    shutil.copytree(runs[1], bad)
    victim = truncate(bad)
    assert len(lake.ingest([bad]).failed) == 1
    touched = lake.ingest([bad])
    assert touched.failed == [] and len(touched.skipped_failed) == 1 and "truncated" in touched.skipped_failed[0][1]
    os.utime(victim, (time.time() + 5, time.time() + 5))  # metadata changed, bytes not: hashed, still skipped
    hashed = lake.ingest([bad])
    assert hashed.failed == [] and len(hashed.skipped_failed) == 1
    assert log_rows(lake)["status"].tolist() == ["failed", "skipped"]  # the hashed attempt is logged
    forced = lake.ingest([bad], retry_failed=True)
    assert len(forced.failed) == 1 and forced.skipped_failed == []
    shutil.copy(Path(runs[1]) / victim.name, victim)  # fixed: changed, so retried, and now it is fine
    fixed = lake.ingest([bad])
    assert len(fixed.ingested) == 1 and not fixed.failed and not fixed.skipped_failed


def test_a_failure_under_another_perflake_version_is_retried(runs, tmp_path, lake, monkeypatch):
    import perflake.ingest.log as ingest_log

    bad = tmp_path / "bad"
    shutil.copytree(runs[1], bad)
    truncate(bad)
    lake.ingest([bad])
    monkeypatch.setattr(ingest_log, "__version__", "9.9.9")  # an upgrade may have fixed the reader
    assert len(lake.ingest([bad]).failed) == 1


def test_a_transient_failure_is_retried_next_time(runs, lake, monkeypatch):
    from perflake.readers import tau

    real_read = tau.Reader.read

    def flaky(self, path):
        raise OSError(5, "Input/output error (injected)")

    monkeypatch.setattr(tau.Reader, "read", flaky)
    first = lake.ingest([runs[0]])
    assert len(first.failed) == 1 and "Input/output error" in first.failed[0][1]
    assert lake.sql("select transient from ingest_log").loc[0, "transient"]
    monkeypatch.setattr(tau.Reader, "read", real_read)
    assert len(lake.ingest([runs[0]]).ingested) == 1  # not "failed before": the machine failed, not the input


def test_a_batch_vacuumed_before_its_commit_is_not_committed(runs, tmp_path, lake, monkeypatch):
    from perflake.catalogs.catalog import Catalog
    from perflake.catalogs.vacuum import vacuum

    real_lock = Catalog.commit_lock

    def vacuum_then_lock(self, timeout=None):  # `perflake vacuum --older-than 0` ran just before the commit
        vacuum(self, older_than=0)
        return real_lock(self, timeout)

    monkeypatch.setattr(Catalog, "commit_lock", vacuum_then_lock)
    report = lake.ingest([runs[0]])
    assert report.ingested == [] and "removed before the commit" in report.failed[0][1]
    assert len(lake.runs()) == 0
    monkeypatch.undo()
    assert len(lake.ingest([runs[0]]).ingested) == 1  # a transient failure: tried again


# -- moved and renamed inputs -------------------------------------------------------------------------------
def test_moved_or_renamed_inputs_are_skipped_by_hash(tmp_path, lake):
    files = write_caliper_json_runs(tmp_path / "in", nodes=30, ranks=2, runs=2, seed=4)
    tau = write_tau_runs(tmp_path / "tau", nodes=30, ranks=2, runs=1, seed=4)
    first = lake.ingest([*files, *tau])
    assert len(first.ingested) == 3
    (tmp_path / "moved").mkdir()
    renamed = tmp_path / "moved" / "renamed-run.json"
    os.rename(files[0], renamed)  # another folder and another name: the same bytes
    shutil.copy(files[1], tmp_path / "moved" / "copy.json")
    os.rename(tau[0], tmp_path / "moved" / "tau-run")
    report = lake.ingest([tmp_path / "moved"])
    assert report.ingested == [] and report.failed == [] and len(report.skipped) == 3
    assert sorted(r for _, r in report.skipped) == sorted(first.ingested)
    assert len(lake.runs()) == 3
    skipped = log_rows(lake).query("status == 'skipped'")
    assert len(skipped) == 3 and all(r.startswith("already present as run ") for r in skipped["reason"])


def test_runs_of_older_lakes_are_still_recognised(tmp_path, lake, monkeypatch):
    """Earlier versions hashed a single file's name too: such a run in the catalog is still 'present'."""
    import hashlib

    import perflake.ingest.task as task

    src = write_caliper_json_runs(tmp_path / "in", nodes=20, ranks=1, runs=1, seed=8)[0]
    data = src.read_bytes()
    legacy = hashlib.sha256(src.name.encode() + b"\0" + str(len(data)).encode() + b"\0" + data).hexdigest()
    assert task.hash_run([str(src)], str(src))[2] == legacy
    real = task.hash_run
    monkeypatch.setattr(task, "hash_run", lambda files, base: (legacy, len(data), None))  # an old perflake
    assert lake.ingest([src]).ingested == [legacy[:16]]
    monkeypatch.setattr(task, "hash_run", real)
    (tmp_path / "elsewhere").mkdir()
    shutil.copy(src, tmp_path / "elsewhere" / src.name)  # not in the log: hashed, found under the old hash
    report = lake.ingest([tmp_path / "elsewhere"])
    assert report.ingested == [] and report.skipped == [(str(tmp_path / "elsewhere" / src.name), legacy[:16])]


# -- the command: --json and exit codes ----------------------------------------------------------------------------
def test_cli_json_summary_and_exit_codes(runs, tmp_path):
    lake = tmp_path / "lake"
    bad = tmp_path / "bad"
    shutil.copytree(runs[2], bad)
    truncate(bad)
    first = cli("ingest", tmp_path / "gen", bad, "--lake", lake, "--json")
    assert first.returncode == 1, first.stderr
    s = json.loads(first.stdout)
    assert s["exit_code"] == 1 and s["lake"] == str(lake) and s["perflake_version"] == "0.1.0"
    assert s["counts"] == {"ingested": 3, "skipped": 0, "unchanged": 0, "skipped_failed_before": 0, "failed": 1,
                           "ignored": 0, "settling": 0, "unrecognised": 0}
    assert len(s["ingested"]) == 3 and {f["run_id"] for f in s["ingested_files"]} == set(s["ingested"])
    assert s["failed"][0]["path"] == str(bad) and "truncated" in s["failed"][0]["reason"]
    assert s["duration_s"] > 0 and s["log_file"] == f"{lake}/ingest_log@{s['invocation']}"
    again = cli("ingest", tmp_path / "gen", bad, "--lake", lake, "--json")
    assert again.returncode == 0, again.stderr  # nothing new, and the failed input did not change
    s = json.loads(again.stdout)
    assert s["counts"]["unchanged"] == 3 and s["counts"]["skipped_failed_before"] == 1 and s["failed"] == []
    assert s["skipped_failed_before"][0]["path"] == str(bad) and s["log_file"] is None
    text = cli("ingest", tmp_path / "gen", bad, "--lake", lake)
    assert text.stdout.strip() == ("ingested 0 runs, skipped 3 already present, 0 failed, "
                                   "1 skipped: failed before and unchanged (--retry-failed)")
    assert cli("ingest", bad, "--lake", lake, "--retry-failed", "--quiet").returncode == 1


def test_min_age_leaves_runs_being_written_for_later(runs, tmp_path):
    """--min-age: a run with a file modified less than SECONDS ago is left alone (exit 0, not logged, not
    failed); once its files are old enough the next ingest takes it, whole."""
    lake = tmp_path / "lake"
    old = time.time() - 3600
    for run in runs[:2]:  # finished an hour ago
        for f in [run, *run.iterdir()]:
            os.utime(f, (old, old))
    growing = runs[2]
    for f in growing.iterdir():
        os.utime(f, (old, old))
    first = cli("ingest", tmp_path / "gen", "--lake", lake, "--json", "--min-age", "600")
    assert first.returncode == 0, first.stderr
    s = json.loads(first.stdout)
    assert s["counts"]["ingested"] == 2 and s["counts"]["settling"] == 1 and s["counts"]["failed"] == 0
    assert s["settling"][0]["path"] == str(growing) and "within --min-age" in s["settling"][0]["reason"]
    assert str(growing) not in set(log_rows(Lake(lake))["source"])  # not an attempt: nothing logged
    text = cli("ingest", tmp_path / "gen", "--lake", lake, "--min-age", "600")
    assert text.stdout.strip().endswith("1 left for later: modified within --min-age")
    os.utime(growing, (old, old))
    last = cli("ingest", tmp_path / "gen", "--lake", lake, "--json", "--min-age", "600")
    s = json.loads(last.stdout)
    assert s["counts"]["ingested"] == 1 and s["counts"]["settling"] == 0
    assert s["ingested_files"][0]["path"] == str(growing)
    bad = cli("ingest", tmp_path / "gen", "--lake", lake, "--min-age", "-5")
    assert bad.returncode == 2 and "expected a number of seconds >= 0" in bad.stderr  # not a timing


def test_cli_could_not_run_exits_2(runs, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    proc = cli("ingest", runs[0], "--lake", blocker / "lake", "--json")
    assert proc.returncode == 2 and "cannot create the lake" in proc.stderr and proc.stderr.count("\n") == 1
    assert json.loads(proc.stdout)["exit_code"] == 2
    assert cli("ingest", runs[0], "--lake", tmp_path / "l", "--scheduler", "bogus").returncode == 2
    help_text = cli("ingest", "--help").stdout
    assert "exit codes:" in help_text and "could not run" in help_text and "--retry-failed" in help_text


def test_lock_timeout_exits_2_and_writes_nothing(runs, tmp_path):
    lake = Lake(tmp_path / "lake")
    lake.ingest([runs[0]])
    with open(tmp_path / "lake" / ".commit.lock", "a+b") as fh:  # another ingest stuck in its commit
        fcntl.flock(fh, fcntl.LOCK_EX)
        proc = cli("ingest", runs[1], "--lake", tmp_path / "lake", "--lock-timeout", "0.5")
        with pytest.raises(LockTimeout, match="commit lock"):
            lake.ingest([runs[2]], lock_timeout=0.2)
    assert proc.returncode == 2 and "commit lock" in proc.stderr and "Traceback" not in proc.stderr
    assert len(lake.runs()) == 1
    stored = lake.catalog().tables.read("metrics", columns=["batch"]).column("batch").unique().to_pylist()
    assert stored == [lake.runs().loc[0, "batch"]]  # the rows written meanwhile were deleted again
    assert len(lake.ingest(runs).ingested) == 2  # and nothing stands in the way of the next run


# -- symlinks -------------------------------------------------------------------------------------------------
def test_symlinks_out_of_the_scanned_directory_are_not_followed(tmp_path, lake):
    outside = write_caliper_json_runs(tmp_path / "outside", nodes=20, ranks=1, runs=2, seed=6)
    tau_outside = write_tau_runs(tmp_path / "tau-outside", nodes=20, ranks=2, runs=1, seed=6)
    scanned = tmp_path / "scanned"
    inside = write_caliper_json_runs(scanned / "real", nodes=20, ranks=1, runs=1, seed=7)
    (scanned / "link-out.json").symlink_to(outside[0])  # a file out of the scanned directory
    (scanned / "linked-dir").symlink_to(tmp_path / "outside", target_is_directory=True)
    (scanned / "link-in.json").symlink_to(inside[0])  # inside: taken (and then found present)
    tau_run = scanned / "tau-run"
    tau_run.mkdir()
    for f in Path(tau_outside[0]).iterdir():  # a run whose files are symlinks out
        (tau_run / f.name).symlink_to(f)
    runs, problems = find_runs([scanned])
    assert sorted(os.path.basename(p) for _, p in runs) == ["link-in.json", "run-000.json", "tau-run"]
    report = lake.ingest([scanned])
    assert len(report.ingested) == 1 and len(report.skipped) == 1 and not report.failed
    assert sorted(os.path.basename(p) for p, _ in report.ignored) == ["link-out.json", "linked-dir", "tau-run"]
    assert all("--follow-symlinks" in reason for _, reason in report.ignored)
    followed = lake.ingest([scanned], follow_symlinks=True)
    assert len(followed.ingested) == 3 and not followed.ignored and not followed.failed  # out x2 + tau
    runs, _ = find_runs([scanned], follow_symlinks=True)
    assert {os.path.basename(p) for _, p in runs} >= {"link-out.json", "run-000.json", "run-001.json", "tau-run"}


def test_symlink_cycles_are_walked_once(tmp_path):
    root = tmp_path / "root"
    write_caliper_json_runs(root / "a", nodes=10, ranks=1, runs=1, seed=1)
    (root / "a" / "loop").symlink_to(root, target_is_directory=True)
    runs, _ = find_runs([root], follow_symlinks=True)
    assert len(runs) == 1


# -- parallel ingest: a real LocalCluster gives the serial lake ------------------------------------------------------
def _content(lake: Lake):
    runs = lake.sql("select * exclude (batch, ingested_at) from runs order by run_id")
    nodes = lake.sql("select * from nodes order by run_id, node_id")
    metrics = lake.sql("select * from metrics order by run_id, node_id, rank, thread")
    return runs, nodes, metrics[sorted(metrics.columns)]


def test_local_cluster_ingest_equals_serial(tmp_path, monkeypatch):
    distributed = pytest.importorskip("distributed")
    import perflake.ingest.driver as ingest_mod

    src = tmp_path / "src"
    write_tau_runs(src / "tau", nodes=40, ranks=3, runs=20, seed=9)
    write_caliper_json_runs(src / "json", nodes=40, ranks=2, runs=20, seed=9)
    serial = Lake(tmp_path / "serial")
    assert len(serial.ingest([src], scheduler="synchronous").ingested) == 40
    monkeypatch.setattr(ingest_mod, "MIN_TASK_BYTES", 1)  # small inputs: split them over the workers anyway
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as cluster:
        parallel = Lake(tmp_path / "parallel")
        report = parallel.ingest([src], scheduler=cluster.scheduler_address)
        with distributed.Client(cluster) as client:
            assert sum(client.run(lambda: 1).values()) == 2
    assert len(report.ingested) == 40 and not report.failed
    assert parallel.sql("select count(distinct batch) as n from runs").loc[0, "n"] >= 2  # it was split
    for a, b in zip(_content(serial), _content(parallel)):
        assert a.shape == b.shape and a.equals(b)
    assert parallel.sql("select count(*) as n from ingest_log where status = 'ingested'").loc[0, "n"] == 40


def test_local_schedulers_equal_serial(tmp_path, monkeypatch):
    import perflake.ingest.driver as ingest_mod

    src = write_tau_runs(tmp_path / "src", nodes=30, ranks=2, runs=6, seed=2)
    serial = Lake(tmp_path / "serial")
    serial.ingest(src, scheduler="synchronous")
    monkeypatch.setattr(ingest_mod, "MIN_TASK_BYTES", 1)
    for scheduler in ("threads", "processes"):
        lake = Lake(tmp_path / scheduler)
        assert len(lake.ingest(src, scheduler=scheduler).ingested) == 6
        for a, b in zip(_content(serial), _content(lake)):
            assert a.equals(b)


# -- readers see whole runs while another process ingests ------------------------------------------------------
READER = r"""
import sys, json, time
from perflake import Lake
lake = Lake(sys.argv[1])
expected = json.load(open(sys.argv[2]))
seen, checks, sizes = set(), 0, set()
while True:
    con = lake.connect()
    got = dict(con.sql("select run_id, count(*) from metrics group by run_id").fetchall())
    nodes = dict(con.sql("select run_id, count(*) from nodes group by run_id").fetchall())
    cat = dict(con.sql("select run_id, n_nodes from runs").fetchall())
    con.close()
    assert set(got) == set(cat) == set(nodes), ("rows of runs not in the catalog, or a run without rows", got, cat)
    for run_id, n in got.items():
        assert n == expected[run_id], (run_id, n, expected[run_id])
        assert nodes[run_id] == cat[run_id], (run_id, nodes[run_id], cat[run_id])
    seen |= set(cat)
    sizes.add(len(cat))
    checks += 1
    if len(cat) == len(expected):
        break
    time.sleep(0.05)
print(json.dumps({"checks": checks, "seen": len(seen), "states": len(sizes)}))
"""


def test_readers_see_whole_runs_during_an_ingest(tmp_path):
    src = write_tau_runs(tmp_path / "src", nodes=60, ranks=4, runs=24, seed=5)
    reference = Lake(tmp_path / "reference")
    reference.ingest(src)
    expected = dict(reference.sql("select run_id, count(*) as n from metrics group by run_id").values.tolist())
    (tmp_path / "expected.json").write_text(json.dumps(expected))
    lake_dir = tmp_path / "lake"
    Lake(lake_dir).ingest([src[0]])  # the lake exists when the reader starts
    reader = subprocess.Popen([sys.executable, "-c", READER, str(lake_dir), str(tmp_path / "expected.json")],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for i in range(1, len(src), 3):  # eight invocations, each committing its own batch
        proc = cli("ingest", *src[i:i + 3], "--lake", lake_dir, "--quiet")
        assert proc.returncode == 0, proc.stderr
    out, err = reader.communicate(timeout=120)
    assert reader.returncode == 0, err
    result = json.loads(out)
    assert result["seen"] == 24 and result["states"] >= 3, result  # it saw the lake grow, batch by batch


def test_a_walk_reports_files_that_look_like_profiles_but_no_reader_accepts(tmp_path, shared_data):
    """In a scanned directory an empty .cali, a truncated json-split or a TAU directory with an empty rank-0
    file is not a run (no reader sniffs it), but it is not silently dropped either: a warning, `unrecognised`
    in --json, exit 0; a README or a config .json is passed over.  A path named on the command line that does
    not exist is a failure (reported, not logged)."""
    tree = tmp_path / "profiles"
    tree.mkdir()
    (tree / "empty.cali").write_bytes(b"")
    src = next(shared_data("caliper-lulesh-json").glob("*.json")).read_bytes()
    (tree / "cut.json").write_bytes(src[:3000])
    (tree / "config.json").write_text('{"data": {"nodes": 4}, "columns": ["a"]}')  # a config, not Caliper's
    (tree / "tau-empty").mkdir()
    (tree / "tau-empty" / "profile.0.0.0").write_bytes(b"")
    (tree / "README.txt").write_text("runs of last week")
    shutil.copytree(shared_data("tau-cpi-mpi"), tree / "tau")
    lake = tmp_path / "lake"
    proc = cli("ingest", tree, "--lake", lake, "--json")
    assert proc.returncode == 0, proc.stderr
    s = json.loads(proc.stdout)
    assert s["counts"]["ingested"] == 1 and s["counts"]["unrecognised"] == 3 and s["failed"] == []
    assert [u["path"] for u in s["unrecognised"]] == [str(tree / "cut.json"), str(tree / "empty.cali"),
                                                     str(tree / "tau-empty")]
    assert "a directory of TAU profile.N.C.T files that no reader accepts" in s["unrecognised"][2]["reason"]
    assert proc.stderr.count("perflake: warning: ") == 3
    text = cli("ingest", tree, "--lake", lake)
    assert text.returncode == 0
    assert text.stdout.strip().endswith(", 3 inputs look like profiles but no reader accepts them")
    missing = cli("ingest", tmp_path / "nothere", "--lake", lake)
    assert missing.returncode == 1
    assert missing.stderr == f"perflake: {tmp_path / 'nothere'}: no such file or directory\n"
