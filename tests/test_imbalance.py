"""Per-rank imbalance (perflake.analytics.imbalance) against pandas on the same data, and Hatchet's recipe on a
GraphFrame: drop_index_levels with mean and with max over the rank/thread levels, then max / mean."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from perflake import GraphFrame, Lake
from perflake.analytics.imbalance import graphframe_imbalance, imbalance
from perflake.engine import parallel
from perflake.errors import LakeError, UnknownRun
from perflake.generators import write_caliper_json_runs, write_tau_runs
from perflake.readers.base import Metric

STATS = ["locations", "present", "mean", "min", "max", "std", "imbalance"]


@pytest.fixture(scope="module")
def tau_lake(tmp_path_factory):
    """3 TAU runs x 8 ranks x 2 threads (every node on every location)."""
    root = tmp_path_factory.mktemp("imb")
    lake = Lake(root / "lake")
    lake.ingest(write_tau_runs(root / "gen", nodes=60, ranks=8, threads=2, runs=3, seed=4))
    return lake


@pytest.fixture(scope="module")
def sparse_lake(tmp_path_factory):
    """2 Caliper json-split runs x 4 ranks where some call paths exist on rank 0 only (absent elsewhere)."""
    root = tmp_path_factory.mktemp("sparse")
    runs = write_caliper_json_runs(root / "gen", nodes=30, ranks=4, runs=2, seed=9)
    for path in runs:
        doc = json.loads(path.read_text())
        parents = {n.get("parent") for n in doc["nodes"]}
        leaves = [i for i in range(len(doc["nodes"])) if i not in parents][:4]
        col = {c: i for i, c in enumerate(doc["columns"])}
        doc["data"] = [row for row in doc["data"] if not (row[col["path"]] in leaves and row[col["mpi.rank"]] != 0)]
        path.write_text(json.dumps(doc))
    lake = Lake(root / "lake")
    assert len(lake.ingest(runs).ingested) == 2
    return lake


def expected(lake, metric="time", absent="exclude", ddof=1, k=3) -> pd.DataFrame:
    """The statistics computed with pandas from the lake's metrics table."""
    m = lake.sql("select * from metrics where rank >= 0")
    if absent == "zero":  # every location of the run, 0 where the node is absent or NULL
        locs = m[["run_id", "rank", "thread"]].drop_duplicates()
        nodes = m[["run_id", "node_id"]].drop_duplicates()
        present = m.dropna(subset=[metric])[["run_id", "node_id"]].drop_duplicates()
        full = nodes.merge(present).merge(locs, on="run_id")
        m = full.merge(m, on=["run_id", "node_id", "rank", "thread"], how="left").fillna({metric: 0.0})
    m = m.dropna(subset=[metric])
    g = m.groupby(["run_id", "node_id"])[metric]
    out = pd.DataFrame({"locations": g.size(), "mean": g.mean(), "min": g.min(), "max": g.max(),
                        "std": g.std(ddof=ddof)})
    out["imbalance"] = out["max"] / out["mean"]
    measured = lake.sql("select * from metrics where rank >= 0").dropna(subset=[metric])
    per_rank = measured.groupby(["run_id", "node_id", "rank"])[metric].max().reset_index()
    per_rank = per_rank.sort_values(["run_id", "node_id", metric, "rank"], ascending=[True, True, False, True])
    out["top_ranks"] = per_rank.groupby(["run_id", "node_id"])["rank"].agg(lambda r: list(r[:k]))
    out["present"] = measured.groupby(["run_id", "node_id"]).size()
    return out


def check(got: pd.DataFrame, want: pd.DataFrame) -> None:
    got = got.set_index(["run_id", "node_id"]).sort_index()
    want = want.sort_index()
    assert got.index.equals(want.index)
    pd.testing.assert_frame_equal(got[STATS].astype(float), want[STATS].astype(float), check_exact=False, rtol=1e-12)
    assert [list(r) for r in got["top_ranks"]] == [list(r) for r in want["top_ranks"]]


def test_matches_pandas(tau_lake):
    got = imbalance(tau_lake)
    check(got, expected(tau_lake))
    assert got["imbalance"].is_monotonic_decreasing  # not a timing: most imbalanced first
    assert got["path"].map(len).min() >= 1 and (got["name"] == got["path"].map(lambda p: p[-1])).all()


@pytest.mark.parametrize("absent", ["exclude", "zero"])
def test_absent_nodes(sparse_lake, absent):
    got = imbalance(sparse_lake, absent=absent)
    check(got, expected(sparse_lake, absent=absent))
    rank0_only = got[got["present"] == 1]
    assert len(rank0_only) == 8  # 4 leaves x 2 runs
    if absent == "exclude":
        assert (rank0_only["imbalance"] == 1).all() and (rank0_only["locations"] == 1).all()
    else:  # one rank of four does the work: max / mean = 4
        assert np.allclose(rank0_only["imbalance"], 4) and (rank0_only["locations"] == 4).all()
        assert (rank0_only["min"] == 0).all()


def test_rank_ranges_merge_to_the_same_numbers(tau_lake, sparse_lake):
    for lake, task_rows in ((tau_lake, 400), (sparse_lake, 50)):
        for absent in ("exclude", "zero"):
            whole = imbalance(lake, absent=absent)
            split = imbalance(lake, absent=absent, task_rows=task_rows, scheduler="synchronous")  # 2-3 ranks a task
            check(split, whole.set_index(["run_id", "node_id"]))


def test_schedulers_give_identical_bits(tau_lake):
    one = imbalance(tau_lake, scheduler="synchronous", task_rows=400)
    two = imbalance(tau_lake, scheduler="threads", task_rows=400)
    pd.testing.assert_frame_equal(one.drop(columns=["top_ranks", "path"]), two.drop(columns=["top_ranks", "path"]),
                                  check_exact=True)


def test_options(tau_lake):
    run = tau_lake.runs()["run_id"][0]
    got = imbalance(tau_lake, [run[:6]], metric="time (inc)", top=5, k=1, ddof=0)
    assert len(got) == 5 and set(got["run_id"]) == {run} and set(got["metric"]) == {"time (inc)"}
    want = expected(tau_lake, metric="time (inc)", ddof=0, k=1).loc[run]
    pd.testing.assert_series_equal(got.set_index("node_id")["std"], want.loc[got["node_id"], "std"],
                                   check_names=False, check_index=False, rtol=1e-12)
    assert all(len(r) == 1 for r in got["top_ranks"])
    both = imbalance(tau_lake, [run], metric=["time", "Calls"])
    assert set(both["metric"]) == {"time", "Calls"} and len(both) == 2 * len(imbalance(tau_lake, [run]))
    assert set(imbalance(tau_lake, where="run_id = '" + run + "'")["run_id"]) == {run}


def test_errors(tau_lake):
    with pytest.raises(ValueError, match="absent"):
        imbalance(tau_lake, absent="nan")
    with pytest.raises(LakeError, match="has metric 'PAPI_TOT_CYC'"):
        imbalance(tau_lake, metric="PAPI_TOT_CYC")
    with pytest.raises(UnknownRun):
        imbalance(tau_lake, ["ffffffffffff"])
    with pytest.raises(LakeError, match="where"):
        imbalance(tau_lake, where="no_such_column > 1")


def hatchet_recipe(gf, metric, fill_zero=False) -> pd.DataFrame:
    """Hatchet's imbalance recipe in pandas: the node-level mean and max over the other index levels."""
    df = gf.dataframe[[metric]]
    if fill_zero:
        df = df.fillna(0.0)
    mean = df.groupby(level="node").mean()[metric]
    mx = df.groupby(level="node").max()[metric]
    return pd.DataFrame({"mean": mean, "max": mx, "imbalance": mx / mean})


def test_graphframe_equals_hatchet_recipe(tau_lake):
    gf = tau_lake.graphframe(tau_lake.runs()["run_id"][0])
    for metric in ("time", "time (inc)"):
        got = graphframe_imbalance(gf, metric=metric)
        want = hatchet_recipe(gf, metric).loc[got.index]
        pd.testing.assert_frame_equal(got[["mean", "max", "imbalance"]], want, check_exact=False, rtol=1e-12)
    lake_view = imbalance(tau_lake, [tau_lake.runs()["run_id"][0]]).set_index("node_id")
    got = graphframe_imbalance(gf, metric="time").set_index("node_id")
    pd.testing.assert_frame_equal(got[STATS], lake_view.loc[got.index, STATS], check_exact=False, rtol=1e-12)


def literal_frame() -> GraphFrame:
    """root -> a, b on ranks 0..3 (and rank -1, a summary); b only on rank 2, a NaN on rank 3."""
    nodes = pa.table({"node_id": pa.array([1, 2, 3], pa.uint64()), "parent_id": pa.array([None, 1, 1], pa.uint64()),
                      "depth": pa.array([0, 1, 1], pa.int32()), "name": ["root", "a", "b"], "type": ["function"] * 3})
    rows = [(1, r, 10.0 + r) for r in range(4)] + [(2, 0, 1.0), (2, 1, 2.0), (2, 2, 6.0), (2, 3, None), (3, 2, 5.0)]
    rows += [(1, -1, 1e9), (2, -1, 1e9)]
    metrics = pa.table({"node_id": pa.array([r[0] for r in rows], pa.uint64()),
                        "rank": pa.array([r[1] for r in rows], pa.int32()),
                        "thread": pa.array([0] * len(rows), pa.int32()),
                        "time": pa.array([r[2] for r in rows], pa.float64())})
    return GraphFrame.from_tables(nodes, metrics, [Metric("time", "exclusive")])


def test_literal_frame_by_hand():
    gf = literal_frame()
    got = graphframe_imbalance(gf, metric="time").set_index("name")
    assert got.loc["a", "locations"] == 3 and got.loc["a", "mean"] == 3.0 and got.loc["a", "max"] == 6.0
    assert got.loc["a", "std"] == pytest.approx(np.std([1, 2, 6], ddof=1))
    assert list(got.loc["a", "top_ranks"]) == [2, 1, 0] and list(got.loc["b", "top_ranks"]) == [2]
    assert got.loc["b", "imbalance"] == 1.0  # rank -1 (summary) is not a location
    zero = graphframe_imbalance(gf, metric="time", absent="zero").set_index("name")
    assert zero.loc["b", "locations"] == 4 and zero.loc["b", "mean"] == 1.25 and zero.loc["b", "imbalance"] == 4.0
    assert zero.loc["a", "mean"] == 9 / 4 and zero.loc["a", "min"] == 0.0
    ranks = gf.dataframe[gf.dataframe.index.get_level_values("rank") >= 0]
    sub = GraphFrame(gf.graph, ranks, gf.exc_metrics, gf.inc_metrics)
    for fill in (False, True):
        want = hatchet_recipe(sub, "time", fill_zero=fill)
        mine = graphframe_imbalance(gf, metric="time", absent="zero" if fill else "exclude")
        pd.testing.assert_frame_equal(mine[["mean", "max", "imbalance"]], want.loc[mine.index], check_exact=False)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), k=st.integers(1, 4), threads=st.integers(1, 2))
def test_top_ranks_break_ties_to_the_lower_rank(data, k, threads):
    """sql/imbalance_partial.sql takes a quick top k (numeric key) and redoes only nodes whose k-th and
    (k+1)-th values tie: against a sort by (value desc, rank asc) on values drawn from 3 levels, so that
    ties inside the top k and at its boundary are frequent, on one-thread and multi-thread input."""
    nodes, ranks = data.draw(st.integers(1, 4)), data.draw(st.integers(1, 7))
    rows = [(n, r, t) for n in range(nodes) for r in range(ranks) for t in range(threads)]
    values = data.draw(st.lists(st.sampled_from([0.0, 1.5, 2.5, None]), min_size=len(rows), max_size=len(rows)))
    order = data.draw(st.permutations(range(len(rows))))  # input order must not matter
    src = pd.DataFrame([(*rows[i], values[i]) for i in order], columns=["node_id", "rank", "thread", "value"])
    src.insert(0, "run_id", "r1")
    src["node_id"] = src["node_id"].astype("uint64")
    table = pa.Table.from_pandas(src, preserve_index=False)
    got = parallel.sql_task("imbalance_partial", {"k": k, "one_thread": threads == 1, "count_locations": True},
                            tables={"imbalance_source": table}).to_pandas().set_index("node_id")
    measured = src.dropna(subset=["value"])
    per_rank = measured.groupby(["node_id", "rank"], as_index=False)["value"].max()
    per_rank = per_rank.sort_values(["node_id", "value", "rank"], ascending=[True, False, True])
    assert sorted(got.index) == sorted(measured["node_id"].unique())
    for node, grp in per_rank.groupby("node_id"):
        assert list(got.loc[node, "top_ranks"]) == list(grp["rank"][:k]), node
        assert list(got.loc[node, "top_values"]) == list(grp["value"][:k]), node
        assert got.loc[node, "n"] == len(measured[measured["node_id"] == node])
        assert got.loc[node, "locations"] == ranks * threads
