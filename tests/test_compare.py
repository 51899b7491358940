"""Comparison of runs and groups of runs (perflake.analytics.compare), and GraphFrame arithmetic built on a join on
call-path ids, against pandas on the same data and the rajaperf goldens."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from perflake import Lake
from perflake.analytics.compare import add, compare, div, iadd, isub, mul, sub
from perflake.errors import LakeError, UnknownRun
from perflake.frame.tables import node_ids
from perflake.generators import write_tau_runs


@pytest.fixture(scope="module")
def tau_lake(tmp_path_factory):
    """4 TAU runs x 4 ranks of one application; perturbed trees, so each run has paths the others lack."""
    root = tmp_path_factory.mktemp("cmp")
    lake = Lake(root / "lake")
    lake.ingest(write_tau_runs(root / "gen", nodes=60, ranks=4, runs=4, seed=12))
    return lake


def run_means(lake, metric="time") -> pd.DataFrame:
    """Per run and node: mean over locations with a value (pandas)."""
    m = lake.sql("select * from metrics where rank >= 0").dropna(subset=[metric])
    return m.groupby(["run_id", "node_id"])[metric].mean().reset_index()


def side(means: pd.DataFrame, runs) -> pd.DataFrame:
    g = means[means["run_id"].isin(runs)].groupby("node_id")["time"]
    return pd.DataFrame({"v": g.mean(), "n": g.size()})


def check_against_pandas(got: pd.DataFrame, means: pd.DataFrame, runs_a, runs_b) -> None:
    a, b = side(means, runs_a), side(means, runs_b)
    want = a.add_suffix("_a").join(b.add_suffix("_b"), how="outer")
    got = got.set_index("node_id")
    assert got.index.sort_values().equals(want.index.sort_values())
    want = want.loc[got.index]
    np.testing.assert_allclose(got["a"], want["v_a"], rtol=1e-12)
    np.testing.assert_allclose(got["b"], want["v_b"], rtol=1e-12)
    assert (got["runs_a"] == want["n_a"].fillna(0)).all() and (got["runs_b"] == want["n_b"].fillna(0)).all()
    np.testing.assert_allclose(got["diff"], want["v_b"] - want["v_a"], rtol=1e-12)
    np.testing.assert_allclose(got["ratio"], want["v_b"] / want["v_a"], rtol=1e-12)
    np.testing.assert_allclose(got["speedup"], want["v_a"] / want["v_b"], rtol=1e-12)
    status = np.where(want["v_a"].isna(), "only b", np.where(want["v_b"].isna(), "only a", "both"))
    assert (got["status"] == status).all()


def test_two_runs(tau_lake):
    ids = sorted(tau_lake.runs()["run_id"])
    got = compare(tau_lake, ids[0], ids[1][:7])  # a prefix is enough
    check_against_pandas(got, run_means(tau_lake), [ids[0]], [ids[1]])
    assert {"both", "only a", "only b"} <= set(got["status"])  # union semantics: one-sided paths kept
    both = got[got["status"] == "both"]
    assert both["diff"].is_monotonic_decreasing  # not a timing: biggest regressions first...
    assert (got["status"].iloc[len(both):] != "both").all()  # ...one-sided paths last
    assert got.loc[got["status"] == "only b", "a"].isna().all()


def test_two_groups(tau_lake):
    ids = sorted(tau_lake.runs()["run_id"])
    got = compare(tau_lake, ids[:3], ids[3:], metric="time")
    check_against_pandas(got, run_means(tau_lake), ids[:3], ids[3:])
    assert got["runs_a"].max() == 3
    overlap = compare(tau_lake, ids[:2], ids[1:3])  # a run may be on both sides
    check_against_pandas(overlap, run_means(tau_lake), ids[:2], ids[1:3])


def test_errors(tau_lake):
    ids = sorted(tau_lake.runs()["run_id"])
    with pytest.raises(UnknownRun):
        compare(tau_lake, ids[0], "0000000000000000")
    with pytest.raises(LakeError, match="metric 'PAPI_L1_DCM'"):
        compare(tau_lake, ids[0], ids[1], metric="PAPI_L1_DCM")
    with pytest.raises(LakeError, match="at least one run"):
        compare(tau_lake, [], ids[1])


def test_rajaperf_groups_against_goldens(lake, shared_data, golden):
    lake.ingest([shared_data("rajaperf-quartz")])
    runs = lake.runs()
    small = runs.loc[runs["source"].str.contains("_1048576/"), "run_id"].tolist()
    large = runs.loc[runs["source"].str.contains("_2097152/"), "run_id"].tolist()
    assert len(small) == 4 and len(large) == 1
    got = compare(lake, small, large, metric="Avg time/rank")
    got.index = pd.Index([tuple(p) for p in got["path"]], tupleize_cols=False)
    names = [f"rajaperf-quartz_gcc10.3.1_1048576_O3_{i}_Base_Seq-default" for i in range(1, 5)]
    want_a = pd.concat([golden(n) for n in names]).groupby("callpath")["Avg time/rank"].mean()
    want_b = golden("rajaperf-quartz_gcc10.3.1_2097152_O3_1_Base_Seq-default").set_index("callpath")["Avg time/rank"]
    np.testing.assert_allclose(got.loc[want_a.index, "a"], want_a, rtol=1e-12)
    np.testing.assert_allclose(got.loc[want_b.index, "b"], want_b, rtol=1e-12)
    assert (got["status"] == "both").all() and (got["speedup"] < 1).mean() > 0.9  # twice the size is slower


def frame(gf) -> pd.DataFrame:
    """A GraphFrame's values keyed by (node_id, rank)."""
    df = gf.dataframe
    return pd.DataFrame({"node_id": node_ids(df), "rank": df.index.get_level_values("rank"),
                         "time": df["time"].to_numpy(), "time (inc)": df["time (inc)"].to_numpy()}
                        ).set_index(["node_id", "rank"])


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_arithmetic_matches_pandas(tau_lake, op):
    ids = sorted(tau_lake.runs()["run_id"])
    g1, g2 = tau_lake.graphframe(ids[0]), tau_lake.graphframe(ids[1])
    before = (g1.dataframe.copy(), g2.dataframe.copy())
    result = {"add": add, "sub": sub, "mul": mul, "div": div}[op](g1, g2)
    pd.testing.assert_frame_equal(g1.dataframe, before[0])  # inputs untouched
    pd.testing.assert_frame_equal(g2.dataframe, before[1])
    a, b = frame(g1), frame(g2)
    raw = getattr(a, op)(b)  # pandas: union of rows, NaN where a side lacks the row, IEEE x / 0
    want = raw.where(raw.notna(), a.reindex(raw.index))  # Hatchet's update: a NaN result keeps the left value
    got = frame(result)
    assert set(got.index) == set(want.index)  # union of call paths x ranks
    pd.testing.assert_frame_equal(got.loc[want.index], want, check_exact=False, rtol=1e-12)
    union = {n.node_id for n in g1.graph} | {n.node_id for n in g2.graph}
    assert {n.node_id for n in result.graph} == union and len(result.graph) == len(union)
    assert result.exc_metrics == ["time"] and result.inc_metrics == ["time (inc)"]
    by_id = {n.node_id: n for n in result.graph}
    for n in g2.graph:  # every node keeps its parent in the union graph
        assert [p.node_id for p in by_id[n.node_id].parents] == [p.node_id for p in n.parents]


def test_in_place_and_fill(tau_lake):
    ids = sorted(tau_lake.runs()["run_id"])
    g1, g2 = tau_lake.graphframe(ids[0]), tau_lake.graphframe(ids[1])
    expected = sub(g1, g2)
    other = g2.dataframe.copy()
    same = isub(g1, g2)
    assert same is g1 and len(g1.graph) == len(expected.graph)
    pd.testing.assert_frame_equal(frame(g1), frame(expected))
    pd.testing.assert_frame_equal(g2.dataframe, other)
    strict = add(tau_lake.graphframe(ids[0]), g2, fill_value=None)
    only_one_side = frame(expected)["time"].notna() & frame(strict)["time"].isna()
    assert only_one_side.any()  # left-only values: kept by default (Hatchet), NaN when asked
    doubled = iadd(tau_lake.graphframe(ids[0]), tau_lake.graphframe(ids[0]))
    np.testing.assert_allclose(frame(doubled)["time"], 2 * frame(tau_lake.graphframe(ids[0]))["time"])
    assert ".TAU application" in doubled.tree(metric_column="time", colour=False)


def test_arithmetic_refuses_frames_indexed_differently(tau_lake):
    """A frame averaged over ranks minus a per-rank one would subtract the mean from rank 0 only (and fill
    the other ranks with 0): an error instead, as the message says; after drop_index_levels() on both it works."""
    ids = sorted(tau_lake.runs()["run_id"])
    g1, g2 = tau_lake.graphframe(ids[0]), tau_lake.graphframe(ids[1])
    mean = g1.copy()
    mean.drop_index_levels()
    with pytest.raises(ValueError, match=r"indexed differently, \(node\) and \(node, rank\): call drop_index_levels"):
        mean - g2
    other = g2.copy()
    other.drop_index_levels()
    diff = (mean - other).dataframe
    root = next(iter(g1.graph.roots)).node_id
    def root_mean(gf):
        return gf.dataframe["time"].to_numpy()[node_ids(gf.dataframe) == root].mean()

    assert diff["time"].to_numpy()[node_ids(diff) == root] == pytest.approx([root_mean(g1) - root_mean(g2)])
