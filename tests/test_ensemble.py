"""Ensembles (perflake.analytics.ensemble): statistics across runs per call path equal those computed with pandas from
the goldens (rajaperf, 5 Caliper runs) and from the lake's own metrics table (generated TAU runs)."""

from __future__ import annotations

import os

import duckdb
import numpy as np
import pandas as pd
import pytest

from perflake import Lake
from perflake.analytics.ensemble import ensemble, ensemble_graphframe, scaling_table
from perflake.errors import LakeError, UsageError
from perflake.generators import write_tau_runs

RAJA = [f"rajaperf-quartz_gcc10.3.1_{size}_O3_{rep}_Base_Seq-default"
        for size, rep in [(1048576, 1), (1048576, 2), (1048576, 3), (1048576, 4), (2097152, 1)]]
METRIC = "Avg time/rank"
STATS = ["count", "mean", "median", "std", "min", "max", "p25", "p75"]


def golden_stats(frames: list[pd.DataFrame], metric: str = METRIC) -> pd.DataFrame:
    """count/mean/median/std(ddof=1)/min/max/p25/p75 across runs per call path, with pandas."""
    g = pd.concat(frames).groupby("callpath")[metric]
    return pd.DataFrame({"count": g.count(), "mean": g.mean(), "median": g.median(), "std": g.std(ddof=1),
                         "min": g.min(), "max": g.max(), "p25": g.quantile(0.25), "p75": g.quantile(0.75)})


def by_path(df: pd.DataFrame) -> pd.DataFrame:
    return df.assign(callpath=[tuple(p) for p in df["path"]]).set_index("callpath")


def test_rajaperf_statistics_equal_the_goldens(lake, shared_data, golden):
    assert len(lake.ingest([shared_data("rajaperf-quartz")]).ingested) == 5
    gold = [golden(name) for name in RAJA]
    got = by_path(ensemble(lake, metric=METRIC))
    everything = golden_stats(gold)
    assert sorted(got.index) == sorted(everything.index)  # the union of the 5 runs' call paths
    pd.testing.assert_frame_equal(got.loc[everything.index, STATS], everything, check_dtype=False, rtol=1e-12)

    # group_by on problem size: the runs' metadata key is ProblemSizeRunParam (typed as a number)
    grouped = ensemble(lake, group_by=["meta:ProblemSizeRunParam"], metric=METRIC)
    assert list(grouped["meta:ProblemSizeRunParam"].unique()) == [1048576, 2097152]
    for size, frames in ((1048576, gold[:4]), (2097152, gold[4:])):
        part = by_path(grouped[grouped["meta:ProblemSizeRunParam"] == size])
        want = golden_stats(frames)
        pd.testing.assert_frame_equal(part.loc[want.index, STATS], want, check_dtype=False, rtol=1e-12)

    table = scaling_table(lake, METRIC, by="meta:ProblemSizeRunParam")
    assert list(table.columns) == ["name", "path", 1048576, 2097152]
    small = golden_stats(gold[:4])["mean"]
    got_small = table.set_index(table["path"].map(tuple))[1048576]
    pd.testing.assert_series_equal(got_small.loc[small.index], small, check_names=False, rtol=1e-12)

    gf = ensemble_graphframe(lake, metric=METRIC, stats=("mean", "std"))
    assert len(gf.graph) == len(everything) and gf.inc_metrics == [f"{METRIC}_mean"]
    means = {tuple(str(x.frame.get("name")) for x in node.path()): v
             for node, v in gf.dataframe[f"{METRIC}_mean"].items()}
    assert np.allclose([means[p] for p in everything.index], everything["mean"], rtol=1e-12)
    assert "RAJAPerf" in gf.tree(metric_column=f"{METRIC}_mean", colour=False)


@pytest.fixture(scope="module")
def tau_lake(tmp_path_factory):
    """3 TAU runs on 2 ranks and 3 on 4 ranks (perturbed trees: some call paths in some runs only)."""
    root = tmp_path_factory.mktemp("ens")
    lake = Lake(root / "lake")
    lake.ingest(write_tau_runs(root / "two", nodes=50, ranks=2, runs=3, seed=31))
    lake.ingest(write_tau_runs(root / "four", nodes=50, ranks=4, threads=2, runs=3, seed=31))
    return lake


def pandas_ensemble(lake, keys, metric="time", where="true", ddof=1) -> pd.DataFrame:
    """Per-run value = mean over locations with a value; then stats across runs per (keys, node)."""
    m = lake.sql(f"select m.*, {', '.join('r.' + k for k in keys) or 'null as g'} from metrics m "
                 f"join runs r using (run_id) where rank >= 0 and {where}")
    keys = keys or ["g"]
    per_run = m.dropna(subset=[metric]).groupby([*keys, "run_id", "node_id"], dropna=False)[metric].mean()
    g = per_run.groupby(level=[*keys, "node_id"], dropna=False)
    return pd.DataFrame({"count": g.count(), "mean": g.mean(), "std": g.std(ddof=ddof), "min": g.min(),
                         "max": g.max(), "median": g.median(), "p90": g.quantile(0.9)})


def test_group_by_catalog_column_matches_pandas(tau_lake):
    stats = ["count", "mean", "std", "min", "max", "median", "p90"]
    got = ensemble(tau_lake, group_by="nprocs", metric="time", stats=stats).set_index(["nprocs", "node_id"])
    want = pandas_ensemble(tau_lake, ["nprocs"])
    assert got.index.sort_values().equals(want.index.sort_values())
    pd.testing.assert_frame_equal(got.loc[want.index, stats], want, check_dtype=False, rtol=1e-12)
    assert set(got.reset_index()["count"]) <= {1, 2, 3} and (got["name"].notna()).all()


def test_one_location_runs_skip_the_per_run_mean(tmp_path):
    """Runs of one rank x one thread take the path without the per-run grouping (sql/ensemble_values.sql,
    $one_location); with a 3-rank run added the grouped path runs.  Both equal pandas."""
    lake = Lake(tmp_path / "lake")
    lake.ingest(write_tau_runs(tmp_path / "one", nodes=40, ranks=1, runs=4, seed=8))
    stats = ["count", "mean", "std", "min", "max"]
    for _ in range(2):
        runs = lake.catalog().runs().to_pandas()
        single = bool(((runs["ranks"] == 1) & (runs["threads"] == 1)).all())
        got = ensemble(lake, metric="time", stats=stats).set_index("node_id")
        want = pandas_ensemble(lake, []).droplevel(0)
        assert got.index.sort_values().equals(want.index.sort_values())
        pd.testing.assert_frame_equal(got.loc[want.index, stats], want[stats], check_dtype=False, rtol=1e-12)
        if single:
            assert got["count"].max() == 4
            lake.ingest(write_tau_runs(tmp_path / "three", nodes=40, ranks=3, runs=1, seed=9))
    assert not single and got["count"].max() == 5


def test_where_ddof_and_metrics(tau_lake):
    got = ensemble(tau_lake, "nprocs >= 4 and app is not null", stats=("count", "std"), ddof=0,
                   metric=["time", "time (inc)"])
    assert set(got["metric"]) == {"time", "time (inc)"} and (got["count"] <= 3).all()
    for metric in ("time", "time (inc)"):
        want = pandas_ensemble(tau_lake, [], metric=metric, where="nprocs >= 4", ddof=0)
        mine = got[got["metric"] == metric].set_index("node_id")
        pd.testing.assert_series_equal(mine["std"], want.droplevel(0)["std"].loc[mine.index], check_names=False,
                                       rtol=1e-12, atol=1e-9)


def test_group_by_metadata_keys(tau_lake):
    got = ensemble(tau_lake, group_by=["nprocs", "meta:CWD", "metadata->>'$.pid'"], stats=("count",))
    assert list(got.columns[:3]) == ["nprocs", "meta:CWD", "meta:pid"]
    assert str(got["meta:pid"].dtype) == "Int64" and got["meta:CWD"].str.startswith("/scratch/").all()
    assert got.groupby(["nprocs", "meta:CWD"]).ngroups == 6  # every run is its own group here
    assert got["count"].max() == 1
    absent = ensemble(tau_lake, group_by="meta:no such key", stats=("count",))
    assert absent["meta:no such key"].isna().all() and absent["count"].max() == 6


def test_dask_path_equals_the_single_query(tau_lake):
    one = ensemble(tau_lake, group_by="nprocs")
    for scheduler in ("synchronous", "threads"):
        other = ensemble(tau_lake, group_by="nprocs", scheduler=scheduler, task_rows=300)  # several tasks
        pd.testing.assert_frame_equal(one.drop(columns="path"), other.drop(columns="path"), check_exact=False,
                                      rtol=1e-12)


def test_errors(tau_lake):
    with pytest.raises(LakeError, match="not a catalog column"):
        ensemble(tau_lake, group_by="metrics")
    with pytest.raises(LakeError, match="metadata key"):
        ensemble(tau_lake, group_by='meta:a"b')
    with pytest.raises(UsageError, match="unknown statistic 'p101'"):
        ensemble(tau_lake, stats=("mean", "p101"))
    with pytest.raises(LakeError, match="where"):
        ensemble(tau_lake, "nprocs >>> 3")
    with pytest.raises(LakeError, match="has metric 'PAPI_TOT_CYC'"):
        ensemble(tau_lake, metric="PAPI_TOT_CYC")
    assert Lake(tau_lake.root).runs().shape[0] == 6  # nothing was written


@pytest.mark.skipif(os.environ.get("PERFLAKE_BENCH") != "1", reason="set PERFLAKE_BENCH=1 (writes 10,000 runs)")
def test_ten_thousand_runs_equal_hand_written_duckdb(tmp_path):
    """Ten thousand runs: the same means as a hand-written DuckDB query (its speed is bench/'s to measure)."""
    lake = Lake(tmp_path / "lake")
    lake.ingest(write_tau_runs(tmp_path / "gen", nodes=75, ranks=1, runs=10_000, seed=5))

    def hand():
        runs = lake.catalog().runs()
        con = duckdb.connect()
        con.register("runs", runs)
        out = con.sql("select node_id, avg(v) as mean, stddev_samp(v) as std from (select run_id, node_id, "
                      "avg(time) as v from read_parquet($f) where run_id in (select run_id from runs) group by all) "
                      "group by node_id",
                      params={"f": lake.catalog().files("metrics", runs.column("batch").to_pylist())}).df()
        con.close()
        return out

    mine = ensemble(lake, stats=("mean", "std")).set_index("node_id")
    ref = hand().set_index("node_id")
    assert np.allclose(mine.loc[ref.index, "mean"], ref["mean"], rtol=1e-12)


def test_concurrent_calls_in_one_process_do_not_mix(tau_lake):
    """Every call works on its own cursor of the process's shared DuckDB instance: its intermediate
    relations are registered on that cursor, so two threads selecting different runs never read each other's
    (a view would live in the shared catalog, where the other thread replaces it)."""
    from concurrent.futures import ThreadPoolExecutor

    wheres = ["nprocs = 2", "nprocs = 4"]
    serial = {w: ensemble(tau_lake, w, stats=("count", "mean")) for w in wheres}

    def one(i):
        w = wheres[i % 2]
        return w, ensemble(tau_lake, w, stats=("count", "mean"))

    with ThreadPoolExecutor(4) as pool:
        for w, got in pool.map(one, range(40)):
            pd.testing.assert_frame_equal(got, serial[w])
