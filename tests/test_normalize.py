"""Normalisation on hand-built trees: call-path ids, sibling merging, derived inclusive/exclusive metrics."""

from __future__ import annotations

import hashlib

import pyarrow as pa
import pytest

from perflake.errors import ReaderError
from perflake.frame.graphframe import GraphFrame
from perflake.ingest.normalize import normalize, normalize_many
from perflake.readers.base import Metric
from trees import SMALL_EXPECTED_EXC, SMALL_EXPECTED_INC, profile, small_exclusive_only


def _values_by_path(n, metric: str, rank: int = 0) -> dict:
    gf = GraphFrame.from_tables(n.nodes, n.metrics, n.metric_info)
    df = gf.dataframe.reset_index()
    if "rank" in df.columns:
        df = df[df["rank"] == rank]
    return {tuple(x.frame["name"] for x in node.path()): v for node, v in zip(df["node"], df[metric])}


def test_inclusive_is_derived_from_exclusive_by_hand():
    n = normalize(small_exclusive_only())
    assert [m.name for m in n.metric_info] == ["time", "time (inc)"]
    assert n.metric_info[0].pair == "time (inc)" and n.metric_info[1].role == "inclusive"
    assert _values_by_path(n, "time") == SMALL_EXPECTED_EXC
    assert _values_by_path(n, "time (inc)") == SMALL_EXPECTED_INC
    assert _values_by_path(n, "time (inc)", rank=1) == {k: 10 * v for k, v in SMALL_EXPECTED_INC.items()}
    assert n.nodes.num_rows == 7 and n.ranks == 2 and n.threads == 1


def test_root_inclusive_equals_sum_of_exclusive():
    n = normalize(small_exclusive_only())
    exc, inc = _values_by_path(n, "time"), _values_by_path(n, "time (inc)")
    assert inc[("main",)] == sum(exc.values())


def test_exclusive_is_derived_from_inclusive():
    # main(inc 10) -> x(inc 7) -> y(inc 3), x -> z(inc 1): exclusive main 3, x 3, y 3, z 1
    nodes = [(0, -1, "main"), (1, 0, "x"), (2, 1, "y"), (3, 1, "z")]
    values = [(0, 0, 0, 10.0), (1, 0, 0, 7.0), (2, 0, 0, 3.0), (3, 0, 0, 1.0)]
    n = normalize(profile(nodes, values, [Metric("time (inc)", "inclusive", "s", pair="time")]))
    assert _values_by_path(n, "time") == {("main",): 3, ("main", "x"): 3, ("main", "x", "y"): 3, ("main", "x", "z"): 1}


def test_edges_have_explicit_roots_and_match_nodes():
    n = normalize(small_exclusive_only())
    edges = n.edges.to_pylist()
    roots = [e for e in edges if e["parent_id"] is None]
    assert len(roots) == 1 and len(edges) == n.nodes.num_rows
    ids = set(n.nodes.column("node_id").to_pylist())
    assert all(e["child_id"] in ids and (e["parent_id"] is None or e["parent_id"] in ids) for e in edges)


def _python_id(names: list[str]) -> int:
    """The documented identity (perflake/identity.py), recomputed independently with hashlib: md5's first 8
    bytes, little-endian, top bit cleared (ids are 63-bit)."""
    keys = ["\x1f".join(["function", name, "", "", ""]) for name in names]
    return int.from_bytes(hashlib.md5("\x1e".join(keys).encode()).digest()[:8], "little") & 0x7FFF_FFFF_FFFF_FFFF


def test_callpath_id_is_the_documented_md5():
    n = normalize(small_exclusive_only())
    gf = GraphFrame.from_tables(n.nodes, n.metrics, n.metric_info)
    for node in gf.graph.traverse():
        assert node.node_id == _python_id([x.frame["name"] for x in node.path()])


def test_same_name_under_different_parents_is_two_nodes():
    n = normalize(small_exclusive_only())
    names = n.nodes.column("name").to_pylist()
    assert names.count("c") == 2 and names.count("a") == 1


def test_unreachable_nodes_are_an_error():
    nodes = [(0, -1, "main"), (1, 2, "x"), (2, 1, "y")]  # x and y are each other's parent
    with pytest.raises(ReaderError, match="2 nodes are not reachable from a root"):
        normalize(profile(nodes, [(0, 0, 0, 1.0)], [Metric("time", "exclusive")]))


def test_all_nan_merge_stays_nan():
    nodes = [(0, -1, "main"), (1, 0, "a"), (2, 0, "a")]
    values = [(0, 0, 0, 1.0), (1, 0, 0, float("nan")), (2, 0, 0, None)]
    n = normalize(profile(nodes, values, [Metric("count", "other")]))
    counts = dict(zip(n.nodes.column("name").to_pylist(), [None] * 2))
    df = n.metrics.to_pandas()
    assert len(df) == 2 and counts
    assert df["count"].isna().sum() == 1


def test_nan_is_absent_when_siblings_merge():
    # two identical "a" siblings: one measured (5), one not (NaN): the merged node is 5, not NaN
    nodes = [(0, -1, "main"), (1, 0, "a"), (2, 0, "a")]
    values = [(0, 0, 0, 1.0), (1, 0, 0, 5.0), (2, 0, 0, float("nan"))]
    n = normalize(profile(nodes, values, [Metric("time", "exclusive")]))
    by_name = dict(zip(n.nodes.column("node_id").to_pylist(), n.nodes.column("name").to_pylist()))
    got = {by_name[r["node_id"]]: (r["time"], r["time (inc)"]) for r in n.metrics.to_pylist()}
    assert got == {"main": (1.0, 6.0), "a": (5.0, 5.0)}


@pytest.mark.parametrize("first", ["inclusive-only", "exclusive-only"])
def test_a_batch_mixing_derivations_in_either_order(first):
    """One batch, one run needing exclusive values derived and one needing inclusive ones (two groups on one
    connection): each gets its own values, whichever group runs first."""
    from perflake.ingest.normalize import normalize_many

    nodes = [(0, -1, "main"), (1, 0, "x"), (2, 1, "y"), (3, 1, "z")]
    inc_only = profile(nodes, [(0, 0, 0, 10.0), (1, 0, 0, 7.0), (2, 0, 0, 3.0), (3, 0, 0, 1.0)],
                       [Metric("time (inc)", "inclusive", "s", pair="time")])
    items = [("a-inc", inc_only), ("b-exc", small_exclusive_only())]
    batch = normalize_many(items if first == "inclusive-only" else items[::-1])
    metrics = batch.metrics.to_pandas()
    assert set(metrics["run_id"].astype(str)) == {"a-inc", "b-exc"}
    inc_run = metrics[metrics["run_id"].astype(str) == "a-inc"]
    assert sorted(inc_run["time"]) == [1.0, 3.0, 3.0, 3.0]  # exclusive derived: main 3, x 3, y 3, z 1
    exc_run = metrics[(metrics["run_id"].astype(str) == "b-exc") & (metrics["rank"] == 0)]
    assert exc_run["time (inc)"].max() == SMALL_EXPECTED_INC[("main",)]


def test_one_batch_with_a_merging_group_then_a_plain_group():
    """Runs with different derivations are normalised as groups on one cursor: a group whose siblings merge
    (the SQL path) must leave nothing behind that breaks the next group's array path (it once left a
    nodes_t table: "Table with name nodes_t already exists")."""
    merging = profile([(0, -1, "main"), (1, 0, "a"), (2, 0, "a")], [(0, 0, 0, 1.0), (1, 0, 0, 2.0), (2, 0, 0, 3.0)],
                      [Metric("time", "exclusive")])
    both = [Metric("time", "exclusive", None, "time (inc)"), Metric("time (inc)", "inclusive", None, "time")]
    plain = profile([(0, -1, "main"), (1, 0, "a")], [(0, 0, 0, 1.0, 3.0), (1, 0, 0, 2.0, 2.0)], both)
    batch = normalize_many([("a", merging), ("b", plain)])
    name = {(r["run_id"], r["node_id"]): r["name"] for r in batch.nodes.to_pylist()}
    rows = sorted((r["run_id"], name[r["run_id"], r["node_id"]], r["time"], r["time (inc)"])
                  for r in batch.metrics.to_pylist())
    assert rows == [("a", "a", 5.0, 5.0), ("a", "main", 1.0, 6.0), ("b", "a", 2.0, 2.0), ("b", "main", 1.0, 3.0)]
    assert {r["node_id"] for r in batch.nodes.to_pylist() if r["run_id"] == "a"} == \
           {r["node_id"] for r in batch.nodes.to_pylist() if r["run_id"] == "b"}  # same call paths, same ids


@pytest.mark.parametrize("nodes, message", [
    ([(0, -1, "main"), (1, 0, "a"), (1, 0, "b")], "frame local ids are not 0..2, each once"),
    ([(0, -1, "main"), (2, 0, "a")], "frame local ids are not 0..1, each once"),
    ([(0, -1, "main"), (1, -2, "a")], "parent id is below -1"),
    ([(0, -1, "main"), (1, 5, "a")], "1 nodes are not reachable from a root"),
])
def test_broken_frame_links_are_a_reader_error(nodes, message):
    values = [(0, 0, 0, 1.0)]
    with pytest.raises(ReaderError, match=message.replace(".", r"\.")):
        normalize(profile(nodes, values, [Metric("time", "exclusive")]))


def test_a_null_parent_is_a_reader_error():
    rows = profile([(0, -1, "main"), (1, 0, "a")], [(0, 0, 0, 1.0)], [Metric("time", "exclusive")])
    rows.frames = rows.frames.set_column(1, "parent_local", pa.array([-1, None], pa.int32()))
    with pytest.raises(ReaderError, match="null local id or parent id"):
        normalize(rows)
