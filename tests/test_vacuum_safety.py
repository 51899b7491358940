"""Vacuum and snapshots that cannot lose data (issue 22, item 5): real lakes written by ingest (delta-rs), real
compactions, real failed commits; checked against delta-rs' own reading of every version.

* a lake opened ``as_of`` cannot be vacuumed (Lake and CLI), and committedness is judged on the latest runs table;
* ``older_than`` is honoured to the second: a file a compaction replaced seconds ago survives ``older_than=60``,
  and an ``as_of`` reader of the version before the compaction reads every run; ``older_than=0`` removes it;
* every removed item is reported once (a second vacuum reports nothing new);
* an untracked file (a failed commit's) is removed only once it is older than the retention; ``_``/``.`` names
  are never touched;
* a committed run's rows are never removed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest

from conftest import lake_files
from perflake import Lake
from perflake.catalogs.schema import DATA_TABLES, TABLES
from perflake.catalogs.vacuum import leftovers
from perflake.errors import LakeError, UsageError
from perflake.generators.tau import write_tau_runs
from test_lake_s3 import s3, s3_server  # noqa: F401  (fixtures: a bucket on a loopback S3 server)

PERFLAKE = [sys.executable, "-m", "perflake.cli.app"]


def cli(*args) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PERFLAKE_LAKE"}
    return subprocess.run([*PERFLAKE, *map(str, args)], capture_output=True, text=True, env=env, timeout=300)


def delta_rows(root, table: str, version: int | None = None) -> int:
    """delta-rs' own count of a table's rows (at ``version``)."""
    from deltalake import DeltaTable

    t = DeltaTable(f"{root}/{table}")
    if version is not None:
        t.load_as_version(version)
    return t.to_pyarrow_table().num_rows


def counts(lake: Lake) -> dict[str, int]:
    """Rows a reader of ``lake`` sees per view (runs and the four data tables)."""
    return {t: int(lake.sql(f"select count(*) as n from {t}")["n"][0]) for t in ("runs", *DATA_TABLES)}


def data_files(root: Path, table: str) -> set[str]:
    return {p.name for p in (root / table).glob("*.parquet")}


@pytest.fixture(scope="module")
def profiles(tmp_path_factory) -> list[Path]:
    return write_tau_runs(tmp_path_factory.mktemp("tau"), nodes=20, ranks=2, runs=4, seed=11)


def three_ingests(root: Path, profiles: list[Path]) -> list[int]:
    """Three ingests (one run, one run, two runs): three small files per table; the runs version after each."""
    versions = []
    for part in ([profiles[0]], [profiles[1]], profiles[2:]):
        assert len(Lake(root).ingest(part).ingested) == len(part)
        versions.append(Lake(root).catalog().tables.version("runs"))
    return versions


# -- as_of ---------------------------------------------------------------------------------------------------------
def test_a_lake_opened_as_of_is_not_vacuumed_and_later_runs_keep_their_rows(tmp_path, profiles):
    root = tmp_path / "lake"
    versions = three_ingests(root, profiles)
    before = lake_files(root)
    for as_of in (versions[0], 0):
        with pytest.raises(UsageError, match="as_of"):
            Lake(root, as_of=as_of).vacuum(older_than=0)
    assert lake_files(root) == before, "a refused vacuum changed the lake"
    proc = cli("vacuum", "--lake", root, "--older-than", 0, "--as-of", versions[0])
    assert proc.returncode == 2 and proc.stdout == "", (proc.returncode, proc.stderr)
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr and "as_of" in proc.stderr
    assert lake_files(root) == before
    # the batches committed after version V are committed: an as_of catalog does not make them leftovers
    assert leftovers(Lake(root, as_of=versions[0]).catalog(), 0) == []
    full = counts(Lake(root))
    Lake(root).vacuum(older_than=0)
    assert counts(Lake(root)) == full and full["runs"] == 4
    assert {t: delta_rows(root, t) for t in DATA_TABLES} == {t: full[t] for t in DATA_TABLES}


# -- retention to the second, as_of readers, reports ------------------------------------------------------------
def test_files_a_compaction_replaced_seconds_ago_survive_a_60_s_vacuum(tmp_path, profiles):
    root = tmp_path / "lake"
    versions = three_ingests(root, profiles)
    full = counts(Lake(root))
    old = {t: data_files(root, t) for t in TABLES}
    snapshots = {v: counts(Lake(root, as_of=v)) for v in versions}
    done = Lake(root).compact()
    assert all(c.rewritten >= 2 for c in done), done
    replaced = {t: old[t] - {p.rsplit("/", 1)[-1] for p in Lake(root).catalog().tables.file_uris(t)} for t in TABLES}
    assert all(replaced[t] == old[t] for t in TABLES)  # every earlier file replaced by the compaction

    written = time.time() - 7200
    for t in TABLES:  # written long ago, replaced seconds ago: the replacement's time decides
        for f in old[t]:
            os.utime(root / t / f, (written, written))
    assert Lake(root).vacuum(older_than=60) == []  # replaced just now: kept  # not a timing
    assert all(old[t] <= data_files(root, t) for t in TABLES)
    for v in versions:  # every version within the retention still reads every run, whole
        assert counts(Lake(root, as_of=v)) == snapshots[v]
        assert snapshots[v]["runs"] == delta_rows(root, "runs", v)
    assert counts(Lake(root)) == full

    latest = Lake(root).catalog().tables.version("runs")  # the runs compaction's commit
    at_latest = counts(Lake(root, as_of=latest))
    removed = Lake(root).vacuum(older_than=0)
    assert sorted(removed) == sorted(f"{t}/{f}" for t in TABLES for f in replaced[t])
    assert all(not (old[t] & data_files(root, t)) for t in TABLES)
    assert Lake(root).vacuum(older_than=0) == []  # nothing new: nothing reported again
    assert counts(Lake(root)) == full and counts(Lake(root, as_of=latest)) == at_latest == full
    assert {t: delta_rows(root, t) for t in DATA_TABLES} == {t: full[t] for t in DATA_TABLES}
    with pytest.raises(LakeError, match="vacuum"):  # older than the retention: one clear error
        counts(Lake(root, as_of=versions[-1]))


def test_tombstones_only_a_checkpoint_holds_are_kept_within_the_retention(tmp_path, profiles):
    """After a log cleanup the removals a compaction made are known from the checkpoint's tombstones alone."""
    from deltalake import DeltaTable

    root = tmp_path / "lake"
    three_ingests(root, profiles)
    full = counts(Lake(root))
    old = data_files(root, "metrics")
    Lake(root).compact()
    t = DeltaTable(str(root / "metrics"))
    t.create_checkpoint()
    for commit in (root / "metrics" / "_delta_log").glob("*.json"):  # the log cleaned up to the checkpoint
        if int(commit.name[:20]) <= t.version():
            commit.unlink()
    written = time.time() - 7200
    for f in old:  # written long ago, replaced seconds ago: the tombstone, not the file's age, decides
        os.utime(root / "metrics" / f, (written, written))
    assert Lake(root).vacuum(older_than=60) == []
    assert old <= data_files(root, "metrics") and counts(Lake(root)) == full
    removed = Lake(root).vacuum(older_than=0)
    assert {r for r in removed if r.startswith("metrics/")} == {f"metrics/{f}" for f in old}
    assert counts(Lake(root)) == full and delta_rows(root, "metrics") == full["metrics"]


def test_cli_reports_each_removed_file_once(tmp_path, profiles):
    root = tmp_path / "lake"
    three_ingests(root, profiles)
    Lake(root).compact()
    first = cli("vacuum", "--lake", root, "--older-than", 0)
    assert first.returncode == 0, first.stderr
    lines = first.stdout.splitlines()
    assert len(lines) > 1 and lines[-1] == f"removed {len(lines) - 1} leftovers (uncommitted batches, unused files)"
    assert len(set(lines[:-1])) == len(lines) - 1
    second = cli("vacuum", "--lake", root, "--older-than", 0)
    assert second.returncode == 0 and second.stdout.splitlines() == ["removed 0 leftovers (uncommitted batches, "
                                                                     "unused files)"]


def test_an_uncommitted_batch_is_reported_once_and_its_files_not_again(tmp_path, profiles):
    root = tmp_path / "lake"
    Lake(root).ingest([profiles[0]])
    cat = Lake(root).catalog()
    rows = cat.tables.read("nodes").slice(0, 5).to_pandas()
    for i, crashed in enumerate(("20200101T000000000000-deadbeef", "20210101T000000000000-deadbeef")):
        before = data_files(root, "nodes")
        cat.tables.append("nodes", pa.Table.from_pandas(rows.assign(batch=crashed), preserve_index=False))
        files = data_files(root, "nodes")
        (mine,) = files - before
        assert Lake(root).vacuum(older_than=0 if i else 60) == [f"nodes/batch={crashed}"]  # rows deleted
        assert data_files(root, "nodes") == files  # the file stays: a reader as_of the latest runs version
        assert Lake(root).vacuum(older_than=0) == []  # reads nodes as of that commit, which lists it
        assert len(Lake(root).ingest([profiles[1 + i]]).ingested) == 1  # a newer runs version
        removed = Lake(root).vacuum(older_than=0)  # no runs version needs it now: deleted, reported as a file
        assert removed == [f"nodes/{mine}"] and not (root / "nodes" / mine).exists()
        assert Lake(root).vacuum(older_than=0) == []
        full = counts(Lake(root))
        assert full["runs"] == 2 + i and delta_rows(root, "nodes") == full["nodes"]


# -- untracked files ---------------------------------------------------------------------------------------------
def failed_commit(root: Path) -> str:
    """Make delta-rs write a metrics file and fail its commit, as two writers adding metric columns at once do
    (catalogs/delta.py ``append``): the file is in the folder, no log entry names it.  Returns its name."""
    from deltalake import DeltaTable, write_deltalake
    from deltalake.exceptions import CommitFailedError

    uri = str(root / "metrics")
    first, second = DeltaTable(uri), DeltaTable(uri)  # both at the same version
    data = first.to_pyarrow_table().slice(0, 3)  # rows of a batch no runs row names, never old enough to vacuum
    young = pa.array(["29990101T000000000000-0badc0de"] * 3)
    data = data.set_column(data.schema.get_field_index("batch"), "batch", young)
    before = data_files(root, "metrics")
    write_deltalake(first, data.append_column("extra_a", pa.array([1.0] * 3)), mode="append", schema_mode="merge")
    after_first = data_files(root, "metrics")
    with pytest.raises(CommitFailedError):
        write_deltalake(second, data.append_column("extra_b", pa.array([2.0] * 3)), mode="append",
                        schema_mode="merge")
    orphan = data_files(root, "metrics") - after_first
    assert len(after_first - before) == 1 and len(orphan) == 1, "delta-rs left no file behind the failed commit"
    return orphan.pop()


def test_an_untracked_file_goes_only_once_older_than_the_retention(tmp_path, profiles):
    root = tmp_path / "lake"
    Lake(root).ingest(profiles[:2])
    orphan = failed_commit(root)
    full = counts(Lake(root))
    hidden = [root / "metrics" / ".keep.parquet", root / "metrics" / "_staging" / "part-0.parquet"]
    for path in hidden:
        path.parent.mkdir(exist_ok=True)
        path.write_bytes((root / "metrics" / orphan).read_bytes())
    old = time.time() - 7200
    for path in hidden:
        os.utime(path, (old, old))

    assert Lake(root).vacuum(older_than=60) == []  # written just now: perhaps a commit to come  # not a timing
    assert (root / "metrics" / orphan).exists()
    os.utime(root / "metrics" / orphan, (old, old))  # as if written two hours ago
    assert Lake(root).vacuum(older_than=3 * 3600) == []
    assert Lake(root).vacuum(older_than=60) == [f"metrics/{orphan}"]
    assert not (root / "metrics" / orphan).exists()
    assert all(path.exists() for path in hidden), "a _ or . name was touched"
    assert Lake(root).vacuum(older_than=0) == []
    assert counts(Lake(root)) == full


def test_committed_rows_survive_every_vacuum(tmp_path, profiles):
    """Ingests, a compaction, old leftovers, untracked files and vacuums of every retention: each committed run's
    rows stay, as delta-rs reads them too."""
    root = tmp_path / "lake"
    versions = three_ingests(root, profiles)
    full = counts(Lake(root))
    failed_commit(root)
    expect = {t: delta_rows(root, t) for t in DATA_TABLES}
    Lake(root).compact()
    for older_than in (3600, 60, 1, 0, 0):
        Lake(root).vacuum(older_than=older_than)
        assert counts(Lake(root)) == full
        assert {t: delta_rows(root, t) for t in DATA_TABLES} == expect
    cat = Lake(root).catalog()
    for t in TABLES:  # every live file is on disk, and nothing else is (but the log)
        live = {p.rsplit("/", 1)[-1] for p in cat.tables.file_uris(t)}
        assert data_files(root, t) == live, t
    latest = cat.tables.version("runs")
    assert counts(Lake(root, as_of=latest)) == full and full["runs"] == delta_rows(root, "runs", latest)
    assert versions[-1] < latest  # (the versions before the compaction are past the retention: see above)


def test_refused_retentions(tmp_path, profiles):
    root = tmp_path / "lake"
    Lake(root).ingest([profiles[0]])
    for bad in (-1, float("nan"), "soon"):
        with pytest.raises(UsageError):
            Lake(root).vacuum(older_than=bad)


# -- S3 ------------------------------------------------------------------------------------------------------------
def test_vacuum_on_s3_keeps_the_retention_and_reports_once(s3, profiles):  # noqa: F811
    url = s3.url("lake")
    for part in ([profiles[0]], [profiles[1]]):
        assert len(Lake(url).ingest(part).ingested) == 1
    v = Lake(url).catalog().tables.version("runs")
    before = counts(Lake(url, as_of=v))
    Lake(url).compact()
    objects = set(s3.objects())
    stray = "lake/metrics/part-00009-00000000-0000-0000-0000-000000000000-c000.zstd.parquet"
    s3.client.put_object(Bucket=s3.name, Key=stray, Body=s3.objects()[sorted(
        k for k in objects if k.startswith("lake/metrics/part-"))[0]])
    s3.client.put_object(Bucket=s3.name, Key="lake/metrics/_tmp/part-0.parquet", Body=b"x")

    assert Lake(url).vacuum(older_than=3600) == []
    assert counts(Lake(url, as_of=v)) == before  # replaced files still there for the as_of reader
    removed = Lake(url).vacuum(older_than=0)
    assert f"metrics/{stray.rsplit('/', 1)[-1]}" in removed and len(removed) > 5
    assert all(f"lake/{r}" not in s3.objects() for r in removed)
    assert "lake/metrics/_tmp/part-0.parquet" in s3.objects()
    assert Lake(url).vacuum(older_than=0) == []
    assert counts(Lake(url)) == before
    with pytest.raises(UsageError):
        Lake(url, as_of=v).vacuum(older_than=0)
