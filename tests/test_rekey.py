"""The array fast path of normalisation (pipeline/rekey.py) against its SQL statement (sql/rekey_metrics.sql)."""

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from perflake import duck, sqlfiles
from perflake.normalize import MAX_DEPTH, _nan_to_null, _rekey, _with_run
from perflake.readers.base import ProfileRows
from perflake.rekey import radix_argsort


@given(st.lists(st.tuples(st.integers(0, 70_000), st.integers(0, 3), st.integers(0, 2)), max_size=200))
@settings(max_examples=60, deadline=None)
def test_radix_argsort_equals_a_stable_lexicographic_sort(rows):
    keys = [np.array([r[i] for r in rows], dtype=np.int64) for i in range(3)]
    expected = np.lexsort((keys[2], keys[1], keys[0])) if rows else np.array([], dtype=np.int64)
    assert radix_argsort(keys).tolist() == expected.tolist()


def test_radix_argsort_is_stable_and_handles_wide_keys():
    key = np.array([2**40 + 5, 3, 2**40 + 5, 0, 3], dtype=np.int64)
    assert radix_argsort([key]).tolist() == [3, 1, 4, 0, 2]


def _rows(seed: int, n_nodes: int, ranks: int, shuffle: bool) -> ProfileRows:
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
    lid = np.tile(np.arange(n_nodes), ranks)
    rank = np.repeat(np.arange(ranks) - 1, n_nodes)  # rank -1: a summary profile
    order = rng.permutation(len(lid)) if shuffle else np.arange(len(lid))
    values = pa.table({
        "local_id": pa.array(lid[order].astype(np.int32)),
        "rank": pa.array(rank[order].astype(np.int32)),
        "thread": pa.array(((order % 2) if shuffle else np.zeros(len(lid), np.int64)).astype(np.int32)),  # rank-major: the one-pass path
        "time": pa.array(np.where(rng.random(len(lid)) < 0.1, np.nan, rng.random(len(lid))).tolist()),
    })
    return ProfileRows(frames=frames, values=values, metrics=[], source=f"seed{seed}", format="test")


@given(st.integers(0, 10_000), st.lists(st.tuples(st.integers(1, 40), st.integers(1, 5), st.booleans()),
                                        min_size=1, max_size=4))
@settings(max_examples=25, deadline=None)
def test_rekey_equals_sql_rekey_metrics(seed, shapes):
    items = [(no * 2 + 1, _rows(seed + no, *shape)) for no, shape in enumerate(shapes)]  # run numbers with gaps
    con = duck.connection()
    try:
        values = pa.concat_tables([_with_run(_nan_to_null(rows.values), no) for no, rows in items])
        con.register("frames_in", pa.concat_tables([_with_run(rows.frames, no) for no, rows in items]))
        con.register("values_in", values)
        sqlfiles.materialize(con, "local_nodes", "normalize_nodes", max_depth=MAX_DEPTH)
        expected = sqlfiles.relation(con, "rekey_metrics", metrics=["time"]).to_arrow_table()
        got = _rekey(con, items, values, ["time"])
    finally:
        con.close()
    assert got.column_names == expected.column_names
    assert got.schema.field("node_id").type == expected.schema.field("node_id").type
    for name in ("run_id", "node_id", "rank", "thread"):
        assert got.column(name).to_pylist() == expected.column(name).to_pylist(), name
    assert got.column("time").to_pylist() == expected.column("time").to_pylist()
