"""filter / squash / update_inclusive_columns on hand-built trees, plus properties on random trees."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from perflake.frame.graphframe import GraphFrame
from perflake.ingest.normalize import normalize
from perflake.readers.base import Metric
from trees import profile, small_exclusive_only


def frame_of(rows) -> GraphFrame:
    n = normalize(rows)
    return GraphFrame.from_tables(n.nodes, n.metrics, n.metric_info)


def by_path(gf, metric, rank=0) -> dict:
    df = gf.dataframe.reset_index()
    if "rank" in df.columns:
        df = df[df["rank"] == rank]
    return {tuple(x.frame["name"] for x in node.path()): v for node, v in zip(df["node"], df[metric])}


def test_filter_then_squash_reparents_and_recomputes_inclusive():
    gf = frame_of(small_exclusive_only())
    out = gf.filter(lambda df: df["name"] != "a")
    assert by_path(out, "time") == {("main",): 1, ("main", "b"): 16, ("main", "b", "c"): 32, ("main", "c"): 4,
                                    ("main", "d"): 8, ("main", "e"): 128}
    assert by_path(out, "time (inc)")[("main",)] == 1 + 16 + 32 + 4 + 8 + 128
    assert by_path(out, "time (inc)", rank=1)[("main",)] == 10 * 189
    assert len(gf.graph) == 7 and len(out.graph) == 6  # the input frame's graph is untouched


def test_squash_merges_siblings_that_now_have_the_same_frame():
    # removing a and b leaves two "c" under main: they merge (4 + 32), like Hatchet's psm2 example
    gf = frame_of(small_exclusive_only())
    out = gf.filter(lambda df: ~df["name"].isin(["a", "b"]))
    assert by_path(out, "time") == {("main",): 1, ("main", "c"): 36, ("main", "d"): 8, ("main", "e"): 128}
    assert by_path(out, "time (inc)")[("main",)] == 173
    assert [c.frame["name"] for c in out.graph.roots[0].children] == ["c", "d", "e"]


def test_filter_without_squash_keeps_the_graph():
    gf = frame_of(small_exclusive_only())
    out = gf.filter(lambda row: row["time"] > 10, squash=False)  # row-wise fallback also works
    assert out.graph is gf.graph and (out.dataframe["time"] > 10).all()
    # rank 0 keeps a(66), b(16), c(32), e(128); rank 1 (x10) keeps all but main(10): 4 + 6 rows
    assert len(out.dataframe) == 10


def test_row_wise_callable():
    gf = frame_of(small_exclusive_only())
    out = gf.filter(lambda row: row["name"].startswith("c") or row["name"] == "main")
    assert by_path(out, "time") == {("main",): 1, ("main", "c"): 36}


def test_all_nan_merge_stays_nan():
    nodes = [(0, -1, "main"), (1, 0, "x"), (2, 1, "k"), (3, 0, "y"), (4, 3, "k")]
    values = [(0, 0, 0, 1.0, 1.0), (1, 0, 0, 2.0, float("nan")), (3, 0, 0, 4.0, float("nan"))]
    gf = frame_of(profile(nodes, values, [Metric("time", "exclusive"), Metric("count", "other")]))
    out = gf.filter(lambda df: ~df["name"].isin(["x", "y"]))
    k = by_path(out, "count")[("main", "k")]
    assert np.isnan(k)  # both k's were unmeasured: merged value stays NaN, not 0


def test_update_inclusive_columns_in_place():
    gf = frame_of(small_exclusive_only())
    gf.dataframe["time (inc)"] = -1.0
    gf.dataframe.loc[gf.dataframe["name"] == "e", "time"] = 1000.0
    gf.update_inclusive_columns()
    inc = by_path(gf, "time (inc)")
    assert inc[("main",)] == 255 - 128 + 1000 and inc[("main", "a")] == 206 - 128 + 1000


@st.composite
def random_tree(draw):
    n = draw(st.integers(2, 20))
    parents = [-1] + [draw(st.integers(0, i - 1)) for i in range(1, n)]
    names = [draw(st.sampled_from("abcd")) for _ in range(n)]
    nodes = [(i, p, names[i]) for i, p in enumerate(parents)]
    values = [(i, r, 0, float(draw(st.integers(0, 100)))) for r in range(2) for i in range(n)]
    drop = draw(st.sets(st.sampled_from("abcd"), max_size=2))
    return nodes, values, drop


@settings(max_examples=40, deadline=None)
@given(random_tree())
def test_squash_properties(tree):
    nodes, values, drop = tree
    gf = frame_of(profile(nodes, values, [Metric("time", "exclusive")]))
    same = gf.squash()
    assert by_path(same, "time") == by_path(gf, "time") and by_path(same, "time (inc)") == by_path(gf, "time (inc)")
    out = gf.filter(lambda df: ~df["name"].isin(drop)
                    | (df.index.get_level_values("node").map(lambda n: not n.parents)))
    again = out.squash()
    assert by_path(again, "time") == by_path(out, "time")  # idempotent
    for r in (0, 1):  # root inclusive = sum of exclusive, and nothing kept is lost
        exc = by_path(out, "time", r)
        roots = [p for p in by_path(out, "time (inc)", r) if len(p) == 1]
        assert sum(by_path(out, "time (inc)", r)[p] for p in roots) == sum(exc.values())
        kept_total = sum(v for i, rr, _, v in values if rr == r and nodes[i][2] not in drop or (rr == r and i == 0))
        assert sum(exc.values()) == kept_total
