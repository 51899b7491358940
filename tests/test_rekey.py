"""The array fast path of normalisation (pipeline/ingest/rekey.py) against its SQL statement (sql/rekey_metrics.sql)."""

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from perflake.engine import duck, sqlfiles
from perflake.ingest import rekey as rekey_module
from perflake.ingest.normalize import _nan_to_null, _rekey, _with_run, local_nodes
from perflake.readers.base import ProfileRows


def _rows(seed: int, n_nodes: int, ranks: int, layout: str) -> ProfileRows:
    rng = np.random.default_rng(seed)
    parents = [-1] + [int(rng.integers(0, i)) for i in range(1, n_nodes)]
    frames = pa.table({
        "local_id": pa.array(range(n_nodes), pa.int32()),
        "parent_local": pa.array(parents, pa.int32()),
        "name": pa.array([f"f{i}" for i in range(n_nodes)]),
        "type": pa.array(["function"] * n_nodes),
        "file": pa.array([None] * n_nodes, pa.string()),
        "line": pa.array([None] * n_nodes, pa.int64()),
        "end_line": pa.array([None] * n_nodes, pa.int64()),
        "module": pa.array([None] * n_nodes, pa.string()),
    })
    threads = 2 if layout == "location-major" else 1  # blocks (rank, thread): a dense matrix, the transpose path
    lid = np.tile(np.arange(n_nodes), ranks * threads)
    rank = np.repeat(np.arange(ranks) - 1, n_nodes * threads)  # rank -1: a summary profile
    thread = np.tile(np.repeat(np.arange(threads), n_nodes), ranks)
    order = {"random": rng.permutation(len(lid)), "rank-major": np.arange(len(lid)),
             "location-major": np.arange(len(lid)),
             "rank-major-gaps": np.flatnonzero(rng.random(len(lid)) < 0.8),  # not dense: the one-pass sort
             "node-major": np.lexsort((rank, lid))}[layout]  # TAU/HPCToolkit write rank-major, Caliper node-major
    if layout == "random":
        thread = order % 2
    values = pa.table({
        "local_id": pa.array(lid[order].astype(np.int32)),
        "rank": pa.array(rank[order].astype(np.int32)),
        "thread": pa.array(thread[order].astype(np.int32)),
        "time": pa.array(np.where(rng.random(len(order)) < 0.1, np.nan, rng.random(len(order))).tolist(), pa.float64()),
    })
    return ProfileRows(frames=frames, values=values, metrics=[], source=f"seed{seed}", format="test")


@given(st.integers(0, 10_000),
       st.lists(st.tuples(st.integers(1, 40), st.integers(1, 5),
                          st.sampled_from(["random", "rank-major", "location-major", "rank-major-gaps", "node-major"])),
                min_size=1, max_size=4),
       st.sampled_from([1, 7, 1 << 20]))
@settings(max_examples=40, deadline=None)
def test_rekey_equals_sql_rekey_metrics(seed, shapes, slice_rows):
    items = [(no * 2 + 1, _rows(seed + no, *shape)) for no, shape in enumerate(shapes)]  # run numbers with gaps
    con = duck.connection()
    try:
        tables = [(no, rows.values) for no, rows in items]  # NaN: null in both results
        local = local_nodes(pa.concat_tables([_with_run(rows.frames, no) for no, rows in items]))
        con.register("local_nodes", local)
        con.register("values_in", pa.concat_tables([_with_run(_nan_to_null(t), no) for no, t in tables]))
        expected = sqlfiles.relation(con, "rekey_metrics", metrics=["time"]).to_arrow_table()
        counts = np.zeros(items[-1][0] + 1, np.int64)
        for no, rows in items:
            counts[no] = rows.frames.num_rows
        saved, rekey_module.SLICE_ROWS = rekey_module.SLICE_ROWS, slice_rows  # many slices, or one
        try:
            got = _rekey(local, tables, counts, ["time"])
        finally:
            rekey_module.SLICE_ROWS = saved
    finally:
        con.close()
    assert got.column_names == expected.column_names
    assert got.schema.field("node_id").type == expected.schema.field("node_id").type
    for name in ("run_id", "node_id", "rank", "thread"):
        assert got.column(name).to_pylist() == expected.column(name).to_pylist(), name
    assert got.column("time").to_pylist() == expected.column("time").to_pylist()
