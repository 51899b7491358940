"""Conformance with the Delta protocol as other writers use it: every way delta-rs can write a table, read by
perflake's log reader and compared with delta-rs version by version; then a perflake lake after each such
operation by another tool, where every ``runs``/``sql``/``tree`` answer must equal what delta-rs reads directly,
or be one refusal line.  (The silent zeros this guards against: files without ``batch`` statistics skipped,
struct-only checkpoint statistics ignored, deletion vectors not applied, a handle never re-listing a table.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.parse

import pyarrow as pa
import pytest
from deltalake import DeltaTable, PostCommitHookProperties, write_deltalake

from perflake import Lake
from perflake.catalogs.delta_log import LogReader, Refused, Unsupported
from perflake.errors import LakeError
from test_delta_log import _delta_rs, _rows

HOOKS = PostCommitHookProperties(create_checkpoint=True, cleanup_expired_logs=False)
PERFLAKE = [sys.executable, "-m", "perflake.cli.app"]
SAMPLES = ("tau-cpi-mpi", "caliper-lulesh-cali", "hpctoolkit-cpi-database")


def _append(uri: str, batch: str, **extra) -> None:
    write_deltalake(uri, _rows(batch, **extra), mode="append", schema_mode="merge", post_commithook_properties=HOOKS)


def _checkpointed(uri: str, config: dict) -> None:
    DeltaTable.create(uri, _rows("x").schema, configuration={"delta.checkpointInterval": "3", **config})
    for i in range(7):
        _append(uri, f"b{i:02d}")


def _ops_compact(uri):
    _checkpointed(uri, {})
    DeltaTable(uri).optimize.compact(post_commithook_properties=HOOKS)
    _append(uri, "b20")


def _ops_zorder(uri):
    _checkpointed(uri, {})
    DeltaTable(uri).optimize.z_order(["v"], post_commithook_properties=HOOKS)


def _ops_stats_off(uri):
    _checkpointed(uri, {"delta.dataSkippingNumIndexedCols": "0"})
    DeltaTable(uri).optimize.compact(post_commithook_properties=HOOKS)
    _append(uri, "b20")


def _ops_stats_other_columns(uri):
    _checkpointed(uri, {"delta.dataSkippingStatsColumns": "run_id"})
    DeltaTable(uri).optimize.compact(post_commithook_properties=HOOKS)


def _ops_struct_stats(uri):
    _checkpointed(uri, {"delta.checkpoint.writeStatsAsStruct": "true", "delta.checkpoint.writeStatsAsJson": "false"})
    DeltaTable(uri).create_checkpoint()


def _ops_vacuum_overwrite(uri):
    _checkpointed(uri, {})
    DeltaTable(uri).optimize.compact(post_commithook_properties=HOOKS)
    DeltaTable(uri).vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)
    write_deltalake(uri, _rows("c00"), mode="overwrite", post_commithook_properties=HOOKS)
    _append(uri, "c01")


def _ops_predicate_overwrite_delete(uri):
    _checkpointed(uri, {})
    write_deltalake(uri, _rows("b03"), mode="overwrite", predicate="batch = 'b03'", post_commithook_properties=HOOKS)
    DeltaTable(uri).delete("batch = 'b01' OR v = 2", post_commithook_properties=HOOKS)


def _ops_schema_and_properties(uri):
    _checkpointed(uri, {})
    _append(uri, "b10", extra="x")
    DeltaTable(uri).alter.set_table_properties({"delta.dataSkippingNumIndexedCols": "1"})
    _append(uri, "b11", extra="y")
    DeltaTable(uri).alter.set_table_properties({"delta.checkpointInterval": "2",
                                                "delta.dataSkippingNumIndexedCols": "-1"})
    _append(uri, "b12")


def _ops_cleanup_metadata(uri):
    _checkpointed(uri, {"delta.logRetentionDuration": "interval 0 seconds"})
    DeltaTable(uri).create_checkpoint()
    DeltaTable(uri).cleanup_metadata()
    _append(uri, "b30")


OPERATIONS = {f.__name__.removeprefix("_ops_"): f for f in (
    _ops_compact, _ops_zorder, _ops_stats_off, _ops_stats_other_columns, _ops_struct_stats, _ops_vacuum_overwrite,
    _ops_predicate_overwrite_delete, _ops_schema_and_properties, _ops_cleanup_metadata)}


def _same_listing(uri: str, ours: dict, theirs: dict, where) -> None:
    """The same files and sizes; each range delta-rs gives is ours too, and a range only we give (delta-rs
    shows only the statistics of the columns configured now) is the file's true one."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    assert {p: v[0] for p, v in ours.items()} == {p: v[0] for p, v in theirs.items()}, where
    for path, (_size, lo, hi) in ours.items():
        if theirs[path][1] is not None:
            assert (lo, hi) == theirs[path][1:], (where, path)
        elif lo is not None:
            real = pc.min_max(pq.read_table(f"{uri}/{path}", columns=["batch"]).column("batch")).as_py()
            assert (lo, hi) == (real["min"], real["max"]), (where, path)


@pytest.mark.parametrize("name", sorted(OPERATIONS))
def test_every_version_delta_rs_writes_is_listed_as_delta_rs_lists_it(tmp_path, name):
    uri = str(tmp_path / "t")
    OPERATIONS[name](uri)
    last = DeltaTable(uri).version()
    kept = sorted(int(n[:20]) for n in os.listdir(f"{uri}/_delta_log") if n.endswith(".json"))
    first = 0 if kept[0] == 0 else min(int(n[:20]) for n in os.listdir(f"{uri}/_delta_log")
                                       if ".checkpoint" in n)
    checked = 0
    for v in range(first, last + 1):
        ours = LogReader(uri, "batch").snapshot(v)
        assert ours.version == v
        _same_listing(uri, ours.files, _delta_rs(uri, v), (name, v))
        checked += 1
    assert checked >= 2
    _same_listing(uri, LogReader(uri, "batch").snapshot().files, _delta_rs(uri, last), (name, "latest"))


def test_struct_only_checkpoint_statistics_are_used(tmp_path):
    uri = str(tmp_path / "t")
    _ops_struct_stats(uri)
    log = f"{uri}/_delta_log"
    newest = max(n for n in os.listdir(log) if n.endswith(".checkpoint.parquet"))
    import pyarrow.parquet as pq

    add = pq.read_table(f"{log}/{newest}").column("add").combine_chunks()
    names = {add.type.field(i).name for i in range(add.type.num_fields)}
    assert "stats_parsed" in names and ("stats" not in names or add.field("stats").null_count == len(add))
    for v in range(int(newest[:20]) + 1):  # versions at or below the checkpoint are read from it alone
        os.remove(f"{log}/{v:020d}.json")
    snap = LogReader(uri, "batch").snapshot()
    assert sorted(r[1] for r in snap.files.values()) == [f"b{i:02d}" for i in range(7)]


def test_a_gap_in_the_log_is_refused_by_both_readers(tmp_path):
    root = tmp_path / "lake"
    uri = str(root / "nodes")
    _checkpointed(uri, {})
    os.remove(f"{uri}/_delta_log/{4:020d}.json")  # between the checkpoints of versions 2 and 5...
    os.remove(f"{uri}/_delta_log/{5:020d}.checkpoint.parquet")  # ...and no newer checkpoint to start from
    with pytest.raises(Unsupported, match="missing"):
        LogReader(uri, "batch").snapshot()
    from perflake.catalogs.delta import DeltaTables

    with pytest.raises(LakeError):
        DeltaTables(str(root)).live_files("nodes")


def _deletion_vector(uri: str, version: int, path: str, size: int) -> None:
    """A commit as Spark's DELETE with deletion vectors writes it: the file removed and added back with a
    vector (delta-rs writes none; the vector's bytes are never read: perflake refuses the table first)."""
    dv = {"storageType": "u", "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^", "offset": 1, "sizeInBytes": 36,
          "cardinality": 2}
    acts = [{"protocol": {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["deletionVectors"],
                          "writerFeatures": ["deletionVectors"]}},
            {"remove": {"path": path, "deletionTimestamp": 1, "dataChange": True}},
            {"add": {"path": path, "partitionValues": {}, "size": size, "modificationTime": 1, "dataChange": True,
                     "deletionVector": dv}}]
    with open(f"{uri}/_delta_log/{version:020d}.json", "w") as fh:
        fh.write("\n".join(json.dumps(a) for a in acts) + "\n")


def test_deletion_vectors_are_refused_not_ignored(tmp_path):
    uri = str(tmp_path / "t")
    _checkpointed(uri, {})
    last = DeltaTable(uri).version()
    path, (size, _lo, _hi) = next(iter(LogReader(uri, "batch").snapshot().files.items()))
    _deletion_vector(uri, last + 1, path, size)
    with pytest.raises(Refused, match="deletion vectors"):
        LogReader(uri, "batch").snapshot()
    assert LogReader(uri, "batch").snapshot(last).version == last  # before the vector: still read
    # a later rewrite of that file without a vector makes the table plain again
    acts = [{"remove": {"path": path, "deletionTimestamp": 2, "dataChange": True}}]
    with open(f"{uri}/_delta_log/{last + 2:020d}.json", "w") as fh:
        fh.write("\n".join(json.dumps(a) for a in acts) + "\n")
    assert path not in LogReader(uri, "batch").snapshot().files


# -- a perflake lake after another tool's operations -----------------------------------------------------------
@pytest.fixture(scope="module")
def samples_lake(tmp_path_factory, request):
    from conftest import DATA, _need

    root = tmp_path_factory.mktemp("conf") / "lake"
    lake = Lake(root)
    for name in SAMPLES:
        report = lake.ingest([_need(DATA / name)])
        assert not report.failed
    return root


def _answers(root) -> dict:
    """What perflake says: counts of every table, the runs, and each run's tree text."""
    lake = Lake(root)
    out = {t: int(lake.sql(f"select count(*) as n from {t}")["n"][0])
           for t in ("runs", "nodes", "edges", "metrics", "rank_summary")}
    out["trees"] = {r: lake.graphframe(r).tree() for r in sorted(lake.runs()["run_id"])}
    return out


def _direct(root) -> dict:
    """What delta-rs reads of the same tables (every batch in them is committed)."""
    return {t: DeltaTable(str(root / t)).to_pyarrow_table().num_rows
            for t in ("runs", "nodes", "edges", "metrics", "rank_summary")}


def _copy(src, dst):
    import shutil

    shutil.copytree(src, dst)
    return dst


def _foreign(root, op: str) -> None:
    for t in ("nodes", "edges", "metrics", "rank_summary", "runs"):
        uri = str(root / t)
        dt_ = DeltaTable(uri)
        if op == "stats_off_compact":
            dt_.alter.set_table_properties({"delta.dataSkippingNumIndexedCols": "0"})
            DeltaTable(uri).optimize.compact()
        elif op == "stats_other_column_compact":
            dt_.alter.set_table_properties({"delta.dataSkippingStatsColumns": "run_id"})
            DeltaTable(uri).optimize.compact()
        elif op == "struct_stats_checkpoint":
            dt_.alter.set_table_properties({"delta.checkpoint.writeStatsAsStruct": "true",
                                            "delta.checkpoint.writeStatsAsJson": "false"})
            DeltaTable(uri).create_checkpoint()
            DeltaTable(uri).alter.set_table_properties({"delta.logRetentionDuration": "interval 0 seconds"})
            DeltaTable(uri).create_checkpoint()
            DeltaTable(uri).cleanup_metadata()
        elif op == "zorder_vacuum":
            dt_.optimize.z_order(["run_id"])
            DeltaTable(uri).vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)
        elif op == "compact_checkpoint":
            dt_.optimize.compact()
            DeltaTable(uri).create_checkpoint()
        elif op == "overwrite_same_rows":  # a rewrite of the whole table with its own rows
            write_deltalake(uri, dt_.to_pyarrow_table(), mode="overwrite")
        elif op == "property_change":
            dt_.alter.set_table_properties({"delta.checkpointInterval": "2", "delta.appendOnly": "false"})
            DeltaTable(uri).create_checkpoint()


@pytest.mark.parametrize("op", ["stats_off_compact", "stats_other_column_compact", "struct_stats_checkpoint",
                                "zorder_vacuum", "compact_checkpoint", "overwrite_same_rows", "property_change"])
def test_a_lake_after_another_tools_operation_answers_as_before(samples_lake, tmp_path, op):
    root = _copy(samples_lake, tmp_path / "lake")
    before = _answers(root)
    assert before["metrics"] == _direct(root)["metrics"] > 0
    _foreign(root, op)
    after = _answers(root)
    assert after == before
    assert {t: after[t] for t in _direct(root)} == _direct(root)
    run = sorted(before["trees"])[0]
    proc = subprocess.run([*PERFLAKE, "tree", run, "--lake", str(root)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.count("\n") > 5, proc.stderr
    sql = subprocess.run([*PERFLAKE, "sql", "select count(*) as n from metrics", "--lake", str(root)],
                         capture_output=True, text=True, timeout=120)
    assert sql.returncode == 0 and str(before["metrics"]) in sql.stdout, sql.stderr


def test_a_handle_sees_what_another_writer_did_since(samples_lake, tmp_path):
    root = _copy(samples_lake, tmp_path / "lake")
    lake = Lake(root)
    count = lambda: int(lake.sql("select count(*) as n from metrics")["n"][0])  # noqa: E731
    n = count()
    v0 = lake.catalog().versions()
    DeltaTable(str(root / "metrics")).delete("rank = 0")
    left = DeltaTable(str(root / "metrics")).to_pyarrow_table().num_rows
    assert 0 < left < n
    assert count() == left  # the same handle, a fresh answer
    v1 = lake.catalog().versions()
    assert v1["metrics"] == v0["metrics"] + 1 and v1["runs"] == v0["runs"]
    DeltaTable(str(root / "metrics")).optimize.compact()
    assert count() == left


@pytest.mark.parametrize("op", ["deletion_vector", "partitioned_overwrite", "column_mapping", "rows_without_batch"])
def test_what_perflake_cannot_read_exactly_is_one_refusal(samples_lake, tmp_path, op):
    root = _copy(samples_lake, tmp_path / "lake")
    uri = str(root / "metrics")
    if op == "deletion_vector":
        last = DeltaTable(uri).version()
        path, (size, _lo, _hi) = next(iter(LogReader(uri, "batch").snapshot().files.items()))
        _deletion_vector(uri, last + 1, path, size)
    elif op == "partitioned_overwrite":
        data = DeltaTable(uri).to_pyarrow_table()
        write_deltalake(uri, data, mode="overwrite", partition_by=["run_id"], schema_mode="overwrite")
    elif op == "column_mapping":  # as Spark commits it (delta-rs cannot): files then hold physical names
        meta = next(json.loads(line) for line in open(f"{uri}/_delta_log/{0:020d}.json") if '"metaData"' in line)
        meta["metaData"]["configuration"]["delta.columnMapping.mode"] = "name"
        version = DeltaTable(uri).version() + 1
        with open(f"{uri}/_delta_log/{version:020d}.json", "w") as fh:
            fh.write(json.dumps({"protocol": {"minReaderVersion": 2, "minWriterVersion": 5}}) + "\n"
                     + json.dumps(meta) + "\n")
    else:
        data = DeltaTable(uri).to_pyarrow_table().slice(0, 5)
        data = data.set_column(data.schema.get_field_index("batch"), "batch", pa.nulls(5, pa.string()))
        write_deltalake(uri, data, mode="append")
    with pytest.raises(LakeError) as err:
        Lake(root).sql("select count(*) from metrics")
    assert "\n" not in str(err.value) and "metrics" in str(err.value)
    proc = subprocess.run([*PERFLAKE, "sql", "select count(*) from metrics", "--lake", str(root)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "Traceback" not in proc.stderr


def test_absolute_paths_are_one_file_however_spelt(tmp_path):
    """As Delta's canonicalized-paths golden tables: an add of ``/dir/with%20space/p@%23h`` and a remove of
    ``file:/dir/with%20space/p@%23h`` name one file; an absolute file outside the table is read where it is."""
    import pyarrow.parquet as pq

    uri = str(tmp_path / "nodes")
    DeltaTable.create(uri, _rows("x").schema)
    elsewhere = tmp_path / "with space"
    elsewhere.mkdir()
    pq.write_table(_rows("q"), elsewhere / "p@#h")
    size = (elsewhere / "p@#h").stat().st_size
    quoted = urllib.parse.quote(str(elsewhere / "p@#h"))
    stats = json.dumps({"numRecords": 3, "minValues": {"batch": "q"}, "maxValues": {"batch": "q"}})
    with open(f"{uri}/_delta_log/{1:020d}.json", "w") as fh:
        fh.write(json.dumps({"add": {"path": quoted, "partitionValues": {}, "size": size, "modificationTime": 1,
                                     "dataChange": True, "stats": stats}}) + "\n")
    snap = LogReader(uri, "batch").snapshot()
    assert snap.files == {f"file://{elsewhere / 'p@#h'}": (size, "q", "q")}
    from perflake.catalogs.delta import DeltaTables

    live = DeltaTables(str(tmp_path)).live_files("nodes")
    assert live.column("path").to_pylist() == [f"file://{elsewhere / 'p@#h'}"]
    with open(f"{uri}/_delta_log/{2:020d}.json", "w") as fh:
        fh.write(json.dumps({"remove": {"path": "file:" + quoted, "deletionTimestamp": 2, "dataChange": True}}) + "\n")
    assert LogReader(uri, "batch").snapshot().files == {}
    assert LogReader(uri, "batch").snapshot(1).files == snap.files


def test_a_damaged_checkpoint_or_commit_is_one_error(tmp_path):
    from perflake.catalogs.delta import DeltaTables

    root = tmp_path / "lake"
    uri = str(root / "nodes")
    _checkpointed(uri, {})
    with open(f"{uri}/_delta_log/{5:020d}.checkpoint.parquet", "wb") as fh:
        fh.write(b"PAR1 not really")
    for v in range(6):
        os.remove(f"{uri}/_delta_log/{v:020d}.json")
    with pytest.raises(Unsupported, match="unreadable"):
        LogReader(uri, "batch").snapshot()
    with pytest.raises(LakeError) as err:
        DeltaTables(str(root)).live_files("nodes")
    assert "\n" not in str(err.value)


def test_a_successful_ingest_leaves_no_file_that_no_version_lists(tmp_path):
    """A new lake's first ingest runs tasks side by side; each brings the metric columns to the metrics table.
    The schema change lost by one of them used to fail its commit after its data file was written (a 19 MB
    untracked file for 1,000 runs): new columns are now committed on their own first (catalogs/delta.py)."""
    proc = subprocess.run([*PERFLAKE, "generate", "tau", str(tmp_path / "in"), "--nodes", "50", "--ranks", "4",
                           "--runs", "200"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    root = tmp_path / "lake"
    assert not Lake(root).ingest([tmp_path / "in"]).failed
    for t in ("runs", "nodes", "edges", "metrics", "rank_summary", "ingest_log"):
        live = {os.path.basename(p) for p in LogReader(str(root / t), "batch").snapshot().files}
        here = {n for n in os.listdir(root / t) if n.endswith(".parquet")}
        assert here == live, t
    assert len(Lake(root).runs()) == 200


def test_an_ingest_into_a_lake_it_cannot_read_exactly_is_refused(samples_lake, tmp_path, shared_data):
    root = _copy(samples_lake, tmp_path / "lake")
    uri = str(root / "runs")
    last = DeltaTable(uri).version()
    path, (size, _lo, _hi) = next(iter(LogReader(uri, "batch").snapshot().files.items()))
    _deletion_vector(uri, last + 1, path, size)
    proc = subprocess.run([*PERFLAKE, "ingest", str(shared_data("gprof2dot-cpi")), "--lake", str(root)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr
    assert "deletion vectors" in proc.stderr + proc.stdout
    assert DeltaTable(uri).version() == last + 1  # no runs committed


def _run_rows(root, table: str, run_id: str) -> pa.Table:
    data = DeltaTable(str(root / table)).to_pyarrow_table()
    return data.filter(pa.compute.equal(data.column("run_id"), run_id))


def _with(data: pa.Table, **values) -> pa.Table:
    for name, value in values.items():
        i = data.schema.get_field_index(name)
        data = data.set_column(i, name, pa.array([value] * data.num_rows, data.schema.field(i).type))
    return data


def _semi_join_count(root, table: str) -> int:
    """The README's recipe: the rows whose (run_id, batch) the runs table names, read by delta-rs."""
    import duckdb

    runs = DeltaTable(str(root / "runs")).to_pyarrow_table(columns=["run_id", "batch"])  # noqa: F841 (in the SQL)
    rows = DeltaTable(str(root / table)).to_pyarrow_table(columns=["run_id", "batch"])  # noqa: F841
    return duckdb.sql("select count(*) from rows semi join runs using (run_id, batch)").fetchall()[0][0]


def _every_door(lake: Lake, tau: str) -> dict:
    """The answers of the entry points that read data files: views, one run's frame, statistics, imbalance from
    the rows and from the summary, a lake query."""
    ens = lake.ensemble(runs=[tau])
    return {"sql": {t: int(lake.sql(f"select count(*) as n from {t}")["n"][0])
                    for t in ("nodes", "edges", "metrics", "rank_summary")},
            "tree": lake.graphframe(tau).tree(),
            "ensemble": ens.sort_values("node_id").to_csv(index=False),
            "imbalance": lake.imbalance([tau], source="rows").sort_values(["node_id", "metric"]).to_csv(index=False),
            "summary": lake.imbalance([tau]).sort_values(["node_id", "metric"]).to_csv(index=False),
            "query": lake.query('MATCH (".", p)->("*") WHERE p."name" =~ ".*"', runs=[tau]).shape}


@pytest.mark.parametrize("case", ["leftover_then_compact", "mixed_file", "foreign_run_id", "rows_under_another_batch"])
def test_rows_other_tools_put_beside_committed_ones_are_not_read(samples_lake, tmp_path, case):
    """Rows whose (run_id, batch) the runs table does not name are never read, whatever file holds them: a
    crashed ingest's rows merged into committed files by another tool's compaction, one appended file mixing
    committed and uncommitted rows, rows of an unknown run under a committed batch, a run's rows copied under
    another run's batch.  Each entry point that reads data files answers as before, and as delta-rs reads the
    committed rows."""
    root = _copy(samples_lake, tmp_path / "lake")
    runs = DeltaTable(str(root / "runs")).to_pyarrow_table().to_pandas()
    tau = runs[runs["format"] == "tau"]["run_id"].iloc[0]
    other_batch = runs[runs["format"] == "caliper"]["batch"].iloc[0]
    before = _every_door(Lake(root), tau)
    for table in ("nodes", "metrics", "rank_summary"):
        rows = _run_rows(root, table, tau)
        if case == "leftover_then_compact":
            write_deltalake(str(root / table), _with(rows, batch="20261127T235959000000-deadbeef"), mode="append")
        elif case == "mixed_file":
            extra = _with(rows, batch="20261127T235959000000-deadbeef")
            write_deltalake(str(root / table), pa.concat_tables([rows, extra]), mode="append")
        elif case == "foreign_run_id":
            write_deltalake(str(root / table), _with(rows, run_id="ffffffffffffffff"), mode="append")
        else:
            write_deltalake(str(root / table), _with(rows, batch=other_batch), mode="append")
        if case in ("leftover_then_compact", "mixed_file"):
            DeltaTable(str(root / table)).optimize.compact()
    lake = Lake(root)
    after = _every_door(lake, tau)
    if case == "mixed_file":  # the committed half is a second copy of committed rows: read as delta-rs reads it
        for t in ("nodes", "metrics", "rank_summary"):
            assert after["sql"][t] == _semi_join_count(root, t)
        return
    assert after == before
    for t in ("nodes", "metrics", "rank_summary"):
        assert after["sql"][t] == _semi_join_count(root, t)


def test_tables_other_writers_touched_are_read_or_refused_in_one_line(samples_lake, tmp_path):
    """delta-rs' update and polars-like appends write strings as string_view: read like perflake's own strings;
    a runs row appended twice is refused (which batch holds the run?); a run whose rows were rewritten under
    another batch says so instead of drawing an empty tree."""
    root = _copy(samples_lake, tmp_path / "lake")
    runs = DeltaTable(str(root / "runs")).to_pyarrow_table().to_pandas()
    tau = runs[runs["format"] == "tau"]["run_id"].iloc[0]
    DeltaTable(str(root / "runs")).update(predicate=f"run_id = '{tau}'", updates={"batch": "'nosuchbatch'"})
    lake = Lake(root)
    assert len(lake.runs()) == 3
    assert int(lake.sql("select count(*) as n from metrics")["n"][0]) == _semi_join_count(root, "metrics")
    with pytest.raises(LakeError, match="no rows in the nodes table under its batch nosuchbatch"):
        lake.graphframe(tau)
    proc = subprocess.run([*PERFLAKE, "tree", tau, "--lake", str(root)], capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    copy = DeltaTable(str(root / "runs")).to_pyarrow_table()
    write_deltalake(str(root / "runs"), copy.filter(pa.compute.not_equal(copy.column("run_id"), tau)), mode="append")
    with pytest.raises(LakeError, match="more than once"):
        Lake(root).runs()
    proc = subprocess.run([*PERFLAKE, "runs", "--lake", str(root)], capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
