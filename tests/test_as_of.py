"""Reading a lake as it was (catalogs/snapshots.py): every table as of the pinned runs version's commit, and one
clear error -- never an empty or partial lake -- for a time before the lake, a version it never had, or a version
whose files a vacuum removed."""

from __future__ import annotations

import datetime as dt

import pytest
from deltalake import DeltaTable

from perflake import Lake
from perflake.errors import LakeError
from rank_lakes import sparse_caliper


@pytest.fixture
def two_ingests(tmp_path):
    lake = Lake(tmp_path / "lake")
    versions, counts = [], []
    for i in range(2):
        lake.ingest(sparse_caliper(tmp_path / f"in{i}", nodes=8, ranks=3, runs=2, seed=70 + i, drop=0.1,
                                   levels=False))
        versions.append(DeltaTable(str(tmp_path / "lake" / "runs")).version())
        counts.append(int(lake.sql("select count(*) as n from metrics")["n"][0]))
    return tmp_path / "lake", versions, counts


def _count(lake: Lake, table: str = "metrics") -> int:
    return int(lake.sql(f"select count(*) as n from {table}")["n"][0])


def test_every_table_is_read_as_of_the_same_moment(two_ingests):
    root, versions, counts = two_ingests
    DeltaTable(str(root / "metrics")).delete("rank = 0")  # another tool, after both ingests
    now = Lake(root)
    assert _count(now) < counts[1]
    for v, n in zip(versions, counts):
        old = Lake(root, as_of=v)
        assert _count(old) == n  # the delete came later: not in this snapshot
        assert set(old.sql("select distinct run_id from metrics")["run_id"]) == set(old.runs()["run_id"])
        seen = old.versions()
        assert seen["runs"] == v and seen["metrics"] < DeltaTable(str(root / "metrics")).version()


def test_a_time_before_the_lake_is_refused(two_ingests):
    root, _versions, _counts = two_ingests
    with pytest.raises(LakeError, match="has no version at 2001-01-01"):
        Lake(root, as_of=dt.datetime(2001, 1, 1, tzinfo=dt.timezone.utc)).runs()
    assert len(Lake(root, as_of=dt.datetime.now(dt.timezone.utc)).runs()) == 4


def test_a_version_the_lake_never_had_is_refused(two_ingests):
    root, versions, _counts = two_ingests
    with pytest.raises(LakeError, match="runs"):
        Lake(root, as_of=versions[-1] + 5).runs()
    with pytest.raises(LakeError, match="start at 0"):
        Lake(root, as_of=-1).runs()


def test_a_vacuumed_version_is_one_clear_error(two_ingests):
    root, versions, counts = two_ingests
    lake = Lake(root)
    lake.compact()
    for t in ("runs", "nodes", "edges", "metrics", "rank_summary"):  # another tool's vacuum, no retention
        DeltaTable(str(root / t)).vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)
    assert _count(Lake(root)) == counts[1]
    with pytest.raises(LakeError, match="removed by a vacuum") as err:
        _count(Lake(root, as_of=versions[0]))
    assert "\n" not in str(err.value)


def test_a_commit_stamped_in_the_past_does_not_move_an_older_snapshot(two_ingests):
    """A writer whose clock is behind stamps its commit before its predecessor's: it still comes after it in
    time travel (Delta counts it 1 ms after), so an older snapshot does not suddenly include it."""
    import glob
    import json

    root, versions, counts = two_ingests
    log = f"{root}/metrics/_delta_log"
    v = len(glob.glob(f"{log}/*.json"))
    add = next(json.loads(line)["add"] for n in sorted(glob.glob(f"{log}/*.json")) for line in open(n)
               if line.startswith('{"add"'))
    with open(f"{log}/{v:020d}.json", "x") as fh:
        fh.write(json.dumps({"commitInfo": {"timestamp": 1700000000000, "operation": "DELETE"}}) + "\n")
        fh.write(json.dumps({"remove": {"path": add["path"], "deletionTimestamp": 1700000000000,
                                        "dataChange": True, "size": add["size"]}}) + "\n")
    assert _count(Lake(root, as_of=versions[0])) == counts[0]
    assert _count(Lake(root, as_of=versions[1])) == counts[1]
    assert _count(Lake(root)) < counts[1]  # the latest version has the remove
