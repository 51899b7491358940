"""The table-format prototype (bench/table_format/, docs/table-format.md): perflake's commit protocol on Delta Lake
and Iceberg keeps its guarantees on a few real runs.  Skipped unless the optional extras are installed
(``pip install -e '.[delta,iceberg]'``): the prototype is not part of perflake yet."""

from __future__ import annotations

import pathlib
import sys

import pytest

PROTO = pathlib.Path(__file__).resolve().parent.parent / "bench" / "table_format"
MODULES = ("data", "lakeschema", "protocol", "stores", "delta_store", "iceberg_store")


@pytest.fixture(autouse=True)
def _prototype_on_path(monkeypatch):
    """The prototype's scripts import each other by bare name: on sys.path for these tests only."""
    monkeypatch.syspath_prepend(str(PROTO))
    yield
    for name in MODULES:
        sys.modules.pop(name, None)


def _runs(tmp_path, n=4):
    """n TAU runs (6 nodes x 2 ranks), read and normalised as ingest does, as data.Run objects."""
    import lakeschema
    import pyarrow as pa

    import data

    paths = data._generate("tau", tmp_path / "gen", nodes=6, ranks=2, runs=n, seed=5)
    batch, rows = data._read_group("tau", paths)
    folder = tmp_path / "data"
    folder.mkdir()
    import pyarrow.parquet as pq

    for name, table in (("nodes", batch.nodes), ("edges", batch.edges), ("metrics", batch.metrics)):
        pq.write_table(lakeschema.conform(name, table), folder / f"{name}.parquet")
    pq.write_table(pa.Table.from_pylist(rows, schema=lakeschema.runs_table([]).schema), folder / "runs.parquet")
    return data.Runs(folder)


@pytest.fixture(params=["delta", "iceberg"])
def store_kind(request):
    pytest.importorskip("deltalake" if request.param == "delta" else "pyiceberg")
    return request.param


def test_protocol_exactly_once_and_snapshots(tmp_path, store_kind):
    import protocol
    from stores import open_store

    runs = _runs(tmp_path)
    root = str(tmp_path / "lake")
    a = open_store(store_kind, root)
    a.create(protocol.initial_schemas())
    b = open_store(store_kind, root)  # a second writer with its own view of the tables

    first = protocol.commit(a, [runs.run(0), runs.run(1)])
    assert sorted(first.committed) == sorted([runs.rows[0]["run_id"], runs.rows[1]["run_id"]])
    assert protocol.commit(b, [runs.run(1)]).skipped == [runs.rows[1]["run_id"]]  # same bytes: skipped

    # a lost race: b pins the runs table, a commits run 2, b's compare-and-swap of run 2 must fail
    head, present = b.runs_head()
    assert runs.rows[2]["content_sha256"] not in present
    protocol.commit(a, [runs.run(2)])
    rows = protocol.lakeschema.runs_table([{**runs.rows[2], "batch": "x"}])
    assert b.append_runs_cas(head, rows) is False
    assert protocol.commit(b, [runs.run(2)]).skipped == [runs.rows[2]["run_id"]]

    # rows of a batch no runs row names (a writer killed before its commit) are invisible, then vacuumed
    orphan = runs.run(3)
    b.append("metrics", protocol.lakeschema.with_batch(orphan.tables["metrics"], protocol.new_batch_id()))
    committed_runs = a.read("runs")
    assert committed_runs.num_rows == 3
    metrics = a.read("metrics")
    visible = protocol.committed(metrics, committed_runs)
    want = sum(runs.run(i).tables["metrics"].num_rows for i in range(3))
    assert visible.num_rows == want
    assert metrics.num_rows == want + orphan.tables["metrics"].num_rows
    assert protocol.vacuum_orphans(a, older_than_s=0)["metrics"] == 1
    assert a.read("metrics").num_rows == want

    # as_of: the runs table as it was after the first commit
    if store_kind == "delta":
        assert a.read("runs", as_of=1).num_rows == 2  # version 0 is the table's creation
    else:
        first_snapshot = min(a.table("runs").snapshots(), key=lambda s: s.timestamp_ms).snapshot_id
        assert a.read("runs", as_of=first_snapshot).num_rows == 2


def test_compaction_keeps_rows(tmp_path, store_kind):
    import lakeschema
    import protocol
    from stores import open_store

    runs = _runs(tmp_path)
    store = open_store(store_kind, str(tmp_path / "lake"))
    store.create(protocol.initial_schemas())
    for i in range(4):
        protocol.commit(store, [runs.run(i)])
    before = store.read("metrics")
    assert len(store.files("metrics")) == 4
    store.compact("metrics")
    assert len(store.files("metrics")) == 1
    assert lakeschema.same_rows(store.read("metrics"), before, ["run_id", "node_id", "rank", "thread"])
