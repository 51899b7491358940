"""The Delta log read without delta-rs (catalogs/delta_log.py) against delta-rs itself, version by version.

A table goes through appends, deletes, a replace commit (what compaction writes), a schema change and several
checkpoints (interval 4); at every version the live files -- path, size, min/max of the key column -- must be
what delta-rs lists.  Then the rules of the protocol one at a time, each on a log changed by hand as another
writer could leave it: a multi-part checkpoint (read whole; an incomplete one ignored), a gap in the log, reader
features, column mapping and partitioning (refused: no reader can make their files plain Parquet for perflake),
a v2 checkpoint (left to delta-rs), a log without protocol or metaData (refused), a table deleted and created
again at the same path (read afresh, not brought forward from the old one).
"""

from __future__ import annotations

import json
import os
import shutil
import urllib.parse

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, PostCommitHookProperties, write_deltalake

from perflake.catalogs.delta import DeltaTables
from perflake.catalogs.delta_log import LogReader, Refused, Unsupported
from perflake.errors import LakeError

SCHEMA = pa.schema([("run_id", pa.string()), ("batch", pa.string()), ("v", pa.float64())])
HOOKS = PostCommitHookProperties(create_checkpoint=True, cleanup_expired_logs=False)


def _rows(batch: str, n: int = 3, **extra) -> pa.Table:
    cols = {"run_id": [f"{batch}-r{i}" for i in range(n)], "batch": [batch] * n, "v": [float(i) for i in range(n)]}
    cols.update({k: [v] * n for k, v in extra.items()})
    return pa.table(cols)


def _delta_rs(uri: str, version: int) -> dict:
    """delta-rs's listing: path -> (size, min, max of batch), the range None unless both ends are given."""
    acts = pa.table(DeltaTable(uri, version=version).get_add_actions(flatten=True))
    n = acts.num_rows
    lo = acts.column("min.batch").to_pylist() if "min.batch" in acts.column_names else [None] * n
    hi = acts.column("max.batch").to_pylist() if "max.batch" in acts.column_names else [None] * n
    return {urllib.parse.unquote(p): (s, a, b) if a is not None and b is not None else (s, None, None)
            for p, s, a, b in zip(acts.column("path").to_pylist(), acts.column("size_bytes").to_pylist(), lo, hi)}


def _history(uri: str) -> int:
    """Appends, deletes, a replace commit, a new column: returns the last version."""
    DeltaTable.create(uri, SCHEMA, configuration={"delta.checkpointInterval": "4"})
    for i in range(9):
        write_deltalake(uri, _rows(f"b{i:02d}"), mode="append", schema_mode="merge", post_commithook_properties=HOOKS)
    DeltaTable(uri).delete("batch = 'b03'", post_commithook_properties=HOOKS)
    t = DeltaTable(uri)
    merged = pa.concat_tables([_rows("b01"), _rows("b02")])
    write_deltalake(t, merged, mode="overwrite", predicate="batch >= 'b01' AND batch <= 'b02'",
                    post_commithook_properties=HOOKS)
    write_deltalake(uri, _rows("b09", extra_col="x"), mode="append", schema_mode="merge",
                    post_commithook_properties=HOOKS)
    for i in range(10, 14):
        write_deltalake(uri, _rows(f"b{i:02d}"), mode="append", schema_mode="merge", post_commithook_properties=HOOKS)
    DeltaTable(uri).delete("batch = 'b11'", post_commithook_properties=HOOKS)
    return DeltaTable(uri).version()


def test_every_version_lists_what_delta_rs_lists(tmp_path):
    uri = str(tmp_path / "t")
    last = _history(uri)
    names = os.listdir(f"{uri}/_delta_log")
    assert sum(n.endswith(".checkpoint.parquet") for n in names) >= 3  # the checkpoints are read, not only JSON
    for v in range(last + 1):
        ours = LogReader(uri, "batch").snapshot(v)
        assert ours.version == v
        assert ours.files == _delta_rs(uri, v), v
    latest = LogReader(uri, "batch").snapshot()
    assert latest.version == last
    assert sorted((lo, hi) for _s, lo, hi in latest.files.values()) == \
        [("b00", "b00"), ("b01", "b02"), *((f"b{i:02d}", f"b{i:02d}") for i in (4, 5, 6, 7, 8, 9, 10, 12, 13))]


def test_the_latest_snapshot_is_brought_forward_and_a_recreated_table_read_afresh(tmp_path):
    uri = str(tmp_path / "t")
    DeltaTable.create(uri, SCHEMA)
    write_deltalake(uri, _rows("a1"), mode="append")
    first = LogReader(uri, "batch").snapshot()
    write_deltalake(uri, _rows("a2"), mode="append")
    second = LogReader(uri, "batch").snapshot()  # from the cached version 1, reading commit 2 only
    assert (first.version, second.version) == (1, 2)
    assert len(first.files) == 1 and second.files == _delta_rs(uri, 2)
    shutil.rmtree(uri)
    DeltaTable.create(uri, SCHEMA)
    for b in ("c1", "c2", "c3"):
        write_deltalake(uri, _rows(b), mode="append")
    again = LogReader(uri, "batch").snapshot()
    assert again.version == 3 and again.files == _delta_rs(uri, 3)  # nothing of the old table's files
    assert {lo for _s, lo, _hi in again.files.values()} == {"c1", "c2", "c3"}


def test_a_multi_part_checkpoint_is_read_whole_and_an_incomplete_one_ignored(tmp_path):
    uri = str(tmp_path / "t")
    last = _history(uri)
    log = f"{uri}/_delta_log"
    newest = max(int(n[:20]) for n in os.listdir(log) if n.endswith(".checkpoint.parquet"))
    single = f"{log}/{newest:020d}.checkpoint.parquet"
    table = pq.read_table(single)
    half = table.num_rows // 2
    os.remove(single)
    pq.write_table(table.slice(0, half), f"{log}/{newest:020d}.checkpoint.{1:010d}.{2:010d}.parquet")
    pq.write_table(table.slice(half), f"{log}/{newest:020d}.checkpoint.{2:010d}.{2:010d}.parquet")
    expected = _delta_rs(uri, last)
    assert LogReader(uri, "batch").snapshot(last).files == expected
    # the JSON commits after an older checkpoint say the same: part 2 missing, part 1 must not be used alone
    os.remove(f"{log}/{newest:020d}.checkpoint.{2:010d}.{2:010d}.parquet")
    assert LogReader(uri, "batch").snapshot(last).files == expected
    # and with the commits before it gone, an incomplete checkpoint is no base: refused, not half-read
    for v in range(newest + 1):
        os.remove(f"{log}/{v:020d}.json")
    for n in os.listdir(log):
        if n.endswith(".checkpoint.parquet"):
            os.remove(f"{log}/{n}")
    with pytest.raises(Unsupported):
        LogReader(uri, "batch").snapshot(last)


def test_a_gap_in_the_log_is_refused(tmp_path):
    uri = str(tmp_path / "t")
    DeltaTable.create(uri, SCHEMA)
    for b in ("a", "b", "c"):
        write_deltalake(uri, _rows(b), mode="append")
    os.remove(f"{uri}/_delta_log/{2:020d}.json")
    with pytest.raises(Unsupported, match="missing"):
        LogReader(uri, "batch").snapshot()


def _hand_commit(uri: str, version: int, *actions: dict) -> None:
    with open(f"{uri}/_delta_log/{version:020d}.json", "w") as fh:
        fh.write("\n".join(json.dumps(a) for a in actions) + "\n")


def _protocol_change(uri: str, protocol: dict, configuration: dict) -> None:
    """Version 2 of a two-version table: a new protocol and metaData, as another writer could commit them."""
    meta = None
    for line in open(f"{uri}/_delta_log/{0:020d}.json").read().splitlines():
        if "metaData" in json.loads(line):
            meta = json.loads(line)
    meta["metaData"]["configuration"].update(configuration)
    _hand_commit(uri, 2, {"protocol": protocol}, meta)


@pytest.mark.parametrize("protocol, configuration, error", [
    ({"minReaderVersion": 2, "minWriterVersion": 5}, {"delta.columnMapping.mode": "name"}, "column mapping"),
    ({"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["columnMapping"],
      "writerFeatures": ["columnMapping"]}, {"delta.columnMapping.mode": "id"}, "column mapping"),
    ({"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["typeWidening", "someFutureFeature"],
      "writerFeatures": []}, {}, "someFutureFeature"),
    ({"minReaderVersion": 4, "minWriterVersion": 8}, {}, "reader version 4"),
])
def test_what_it_cannot_read_exactly_is_refused(tmp_path, protocol, configuration, error):
    uri = str(tmp_path / "t")
    DeltaTable.create(uri, SCHEMA)
    write_deltalake(uri, _rows("a"), mode="append")
    _protocol_change(uri, protocol, configuration)
    with pytest.raises(Refused, match=error):
        LogReader(uri, "batch").snapshot()
    assert LogReader(uri, "batch").snapshot(1).version == 1  # the versions before the change are still read


@pytest.mark.parametrize("features", [["deletionVectors"], ["timestampNtz", "vacuumProtocolCheck"],
                                      ["columnMapping"]])
def test_features_that_leave_the_files_plain_are_read(tmp_path, features):
    """deletionVectors enabled but no vector yet, column mapping declared with mode none: plain Parquet files."""
    uri = str(tmp_path / "t")
    DeltaTable.create(uri, SCHEMA)
    write_deltalake(uri, _rows("a"), mode="append")
    _protocol_change(uri, {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": features,
                           "writerFeatures": features}, {})
    assert LogReader(uri, "batch").snapshot().files == _delta_rs(uri, 1)


def test_a_v2_checkpoint_table_is_left_to_delta_rs(tmp_path):
    uri = str(tmp_path / "t")
    DeltaTable.create(uri, SCHEMA)
    write_deltalake(uri, _rows("a"), mode="append")
    _protocol_change(uri, {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["v2Checkpoint"],
                           "writerFeatures": ["v2Checkpoint"]}, {})
    with pytest.raises(Unsupported, match="v2Checkpoint"):
        LogReader(uri, "batch").snapshot()


def test_a_log_without_protocol_or_metadata_is_refused(tmp_path):
    uri = str(tmp_path / "t")
    os.makedirs(f"{uri}/_delta_log")
    pq.write_table(_rows("q"), f"{uri}/f.parquet")
    stats = json.dumps({"numRecords": 3, "minValues": {"batch": "q"}, "maxValues": {"batch": "q"}})
    add = {"add": {"path": "f.parquet", "partitionValues": {}, "size": os.path.getsize(f"{uri}/f.parquet"),
                   "modificationTime": 0, "dataChange": True, "stats": stats}}
    _hand_commit(uri, 0, add)
    with pytest.raises(Refused, match="no protocol and metaData"):
        LogReader(uri, "batch").snapshot()
    _hand_commit(uri, 0, {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}, add)
    with pytest.raises(Refused, match="no metaData"):
        LogReader(uri, "batch").snapshot()


def test_a_partitioned_table_is_refused_by_both_readers(tmp_path):
    """Partition values are not in the files: a file-level read would lose the column."""
    root = tmp_path / "lake"
    uri = str(root / "nodes")
    write_deltalake(uri, pa.concat_tables([_rows("p1"), _rows("p2")]), partition_by=["batch"])
    with pytest.raises(Refused, match="partitioned"):
        LogReader(uri, "batch").snapshot()
    with pytest.raises(LakeError, match="partitioned by \\['batch'\\]"):
        DeltaTables(str(root)).live_files("nodes")


def test_log_paths_are_unquoted(tmp_path):
    uri = str(tmp_path / "t")
    DeltaTable.create(uri, SCHEMA)
    name = "part a%b.parquet"
    pq.write_table(_rows("q"), f"{uri}/{name}")
    size = os.path.getsize(f"{uri}/{name}")
    stats = json.dumps({"numRecords": 3, "minValues": {"batch": "q"}, "maxValues": {"batch": "q"}})
    _hand_commit(uri, 1, {"add": {"path": urllib.parse.quote(name), "partitionValues": {}, "size": size,
                                  "modificationTime": 0, "dataChange": True, "stats": stats}})
    assert LogReader(uri, "batch").snapshot().files == {name: (size, "q", "q")}
    assert LogReader(uri, "batch").snapshot().files == _delta_rs(uri, 1)
