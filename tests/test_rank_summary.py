"""The rank summary (catalogs/schema.py rank_summary, perflake.ingest.summarize): written with every batch, it
equals a direct computation from the metrics rows; imbalance and the per-run values of ensembles answered from
it equal the answers from the metrics rows; the migration 0003 builds it for the batches of older lakes, and a
batch without one falls back to the metrics rows."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from perflake import Lake
from perflake.analytics.ensemble import ensemble
from perflake.analytics.imbalance import imbalance
from perflake.catalogs.schema import RANK_SUMMARY, RANK_SUMMARY_FILE_SCHEMA, RANK_SUMMARY_TOP
from perflake.generators import write_tau_runs
from perflake.ingest.summarize import summarize
from rank_lakes import sparse_caliper

KEYS = ["run_id", "node_id", "rank", "thread"]
INDEX = ["run_id", "node_id", "metric"]
EXACT = ["count", "min", "max", "min_rank", "max_rank", "locations"]


def direct(metrics: pd.DataFrame | pa.Table, k: int = RANK_SUMMARY_TOP) -> pd.DataFrame:
    """The summary computed row by row from metrics rows (run_id, node_id, rank, thread, <metrics>): over the
    locations (rank >= 0, every thread) where the call path has a value (not NULL; NaN is a value: in a pandas
    frame NULL and NaN are both NaN, an Arrow table tells them apart)."""
    names = [c for c in metrics.column_names if c not in KEYS] if isinstance(metrics, pa.Table) else None
    valid = ({c: pc.is_valid(metrics.column(c)).to_numpy(zero_copy_only=False) for c in names} if names else None)
    metrics = metrics.to_pandas() if names is not None else metrics
    at = metrics["rank"].to_numpy() >= 0
    located = metrics[at]
    locations = located[["run_id", "rank", "thread"]].drop_duplicates().groupby("run_id", observed=True).size()
    out = []
    for metric in [c for c in metrics.columns if c not in KEYS]:
        measured = metrics[at & valid[metric]] if valid is not None else located.dropna(subset=[metric])
        np.seterr(invalid="ignore")  # an infinite value makes its m2 NaN
        for (run, node), g in measured.groupby(["run_id", "node_id"], sort=True):
            g = g.sort_values(["rank", "thread"])
            v, r = g[metric].to_numpy(float), g["rank"].to_numpy()
            # NaN is above every number and equal to NaN (DuckDB's order): a max over it is NaN, a min skips it
            per_rank = g.groupby("rank")[metric].agg(lambda x: np.max(x.to_numpy()))
            top = sorted(per_rank.items(), key=lambda p: (not math.isnan(p[1]), 0.0 if math.isnan(p[1]) else -p[1],
                                                          p[0]))  # value desc, rank asc
            low = np.fmin.reduce(v)
            total = 0.0
            for x in v:  # one after the other, in (rank, thread) order: as DuckDB sums them
                total += x
            out.append({"run_id": run, "node_id": node, "metric": metric, "count": len(v), "total": total,
                        "fsum": math.fsum(v), "abs_sum": math.fsum(np.abs(v)),
                        "m2": float(((v - v.mean()) ** 2).sum()), "min": low, "max": v.max(),
                        "min_rank": int(r[(v == low) | (np.isnan(v) & np.isnan(low))].min()),
                        "max_rank": int(top[0][0]),
                        "top_ranks": [int(x) for x, _ in top[:k]], "locations": int(locations[run])})
    columns = [*INDEX, "count", "total", "fsum", "abs_sum", "m2", "min", "max", "min_rank", "max_rank",
               "top_ranks", "locations"]
    return pd.DataFrame(out, columns=columns).set_index(INDEX).sort_index()


def check(got: pd.DataFrame, want: pd.DataFrame) -> None:
    if want.empty:
        assert got.empty
        return
    got = got.set_index(INDEX).sort_index()
    assert got.index.equals(want.index)
    for col in EXACT:
        assert np.array_equal(got[col].to_numpy(), want[col].to_numpy(), equal_nan=col in ("min", "max")), col
    assert [list(t) for t in got["top_ranks"]] == list(want["top_ranks"])
    np.testing.assert_array_equal(got["total"].to_numpy(), want["total"].to_numpy())  # the same bits
    bounded = np.isfinite(want["abs_sum"].to_numpy())  # against the exact sum: a sum's accuracy
    error = np.abs(got["total"].to_numpy() - want["fsum"].to_numpy())[bounded]
    assert (error <= 1e-12 * want["abs_sum"].to_numpy()[bounded]).all()
    finite = np.isfinite(want["m2"].to_numpy())  # (an infinite value makes m2 NaN or infinite either way)
    scale = (1 + want.loc[finite, "max"].abs().max()) ** 2 if finite.any() else 1.0
    np.testing.assert_allclose(got["m2"].to_numpy()[finite], want["m2"].to_numpy()[finite], rtol=1e-9,
                               atol=1e-12 * scale)


# -- summarize() on any metrics table -----------------------------------------------------------------------
@st.composite
def metrics_tables(draw):
    """Metrics rows of 1-3 runs: some (node, rank, thread) rows missing, a rank -1 (summary profile) now and
    then, values from few levels (ties), NULL or NaN, two metrics (one absent from some runs), any row order."""
    rows, threads = [], draw(st.integers(1, 3))
    for run in ["r1", "r2", "r3"][: draw(st.integers(1, 3))]:
        ranks = draw(st.lists(st.integers(-1, 6), min_size=1, max_size=5, unique=True))
        only_a = draw(st.booleans())
        for node in range(draw(st.integers(1, 4))):
            for rank in ranks:
                for thread in range(threads):
                    if draw(st.integers(0, 4)) == 0:
                        continue
                    a = draw(st.sampled_from([None, 0.0, 1.5, 2.5, -1.0, 1e-300, math.nan]))
                    b = None if only_a else draw(st.sampled_from([None, 3.0, 7.25]))
                    rows.append((run, node * 7919 + 3, rank, thread, a, b))
    rows = draw(st.permutations(rows)) if draw(st.booleans()) else sorted(rows, key=lambda r: r[:4])
    table = pa.table({"run_id": pa.array([r[0] for r in rows], pa.string()),
                      "node_id": pa.array([r[1] for r in rows], pa.uint64()),
                      "rank": pa.array([r[2] for r in rows], pa.int32()),
                      "thread": pa.array([r[3] for r in rows], pa.int32()),
                      "time": pa.array([r[4] for r in rows], pa.float64()),
                      "bytes": pa.array([r[5] for r in rows], pa.float64())})
    if draw(st.booleans()):  # as ingest writes it: run ids dictionary-encoded
        table = table.set_column(0, "run_id", pc.dictionary_encode(table.column("run_id")))
    return table


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(table=metrics_tables())
def test_summary_equals_a_direct_computation(table):
    got = summarize(table)
    assert got.schema == RANK_SUMMARY_FILE_SCHEMA
    check(got.to_pandas(), direct(table))
    metrics = got.column("metric").to_pylist()
    assert metrics == sorted(metrics)  # metric-major: a question about one metric reads its row groups only


@pytest.mark.parametrize("shape", ["uneven", "very uneven", "uniform"])
def test_top_ranks_of_every_group_shape(shape):
    """The three ways of sorting the per-rank values (a matrix of equal rows, a padded one, one lexsort)."""
    rng = np.random.default_rng(7)
    sizes = {"uniform": [16] * 50, "uneven": [16] * 40 + [1, 3, 9] * 5, "very uneven": [3000] + [1] * 3000}[shape]
    node = np.repeat(np.arange(len(sizes), dtype=np.uint64), sizes)
    rank = np.concatenate([np.sort(rng.choice(4000, s, replace=False)) for s in sizes]).astype(np.int32)
    value = rng.choice([0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, -np.inf], len(node))  # ties and -inf
    table = pa.table({"run_id": ["r"] * len(node), "node_id": node, "rank": rank,
                      "thread": np.zeros(len(node), np.int32), "time": value})
    check(summarize(table).to_pandas(), direct(table.to_pandas()))


def test_an_empty_table_and_a_metric_no_run_has():
    empty = pa.table({"run_id": pa.array([], pa.string()), "node_id": pa.array([], pa.uint64()),
                      "rank": pa.array([], pa.int32()), "thread": pa.array([], pa.int32()),
                      "time": pa.array([], pa.float64())})
    assert summarize(empty).num_rows == 0 and summarize(empty).schema == RANK_SUMMARY_FILE_SCHEMA
    summary_profile_only = pa.table({"run_id": ["r"], "node_id": pa.array([1], pa.uint64()),
                                     "rank": pa.array([-1], pa.int32()), "thread": pa.array([0], pa.int32()),
                                     "time": [1.0], "calls": pa.array([None], pa.float64())})
    assert summarize(summary_profile_only).num_rows == 0  # rank -1 is not a location


# -- lakes ---------------------------------------------------------------------------------------------------


def _same_imbalance(lake, **options) -> pd.DataFrame:
    summary = imbalance(lake, source="summary", **options)
    rows = imbalance(lake, source="rows", **options)
    assert list(zip(summary["run_id"], summary["node_id"], summary["metric"])) == list(
        zip(rows["run_id"], rows["node_id"], rows["metric"])), options
    pd.testing.assert_frame_equal(summary.drop(columns=["top_ranks", "share"]),
                                  rows.drop(columns=["top_ranks", "share"]), check_exact=True)
    pd.testing.assert_series_equal(summary["share"], rows["share"], check_exact=False, rtol=1e-12)
    assert [list(t) for t in summary["top_ranks"]] == [list(t) for t in rows["top_ranks"]]
    return summary


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(["caliper", "tau"]), seed=st.integers(0, 1000), ranks=st.integers(1, 9),
       threads=st.integers(1, 3), drop=st.sampled_from([0.0, 0.3, 0.8]), levels=st.booleans(),
       absent=st.sampled_from(["exclude", "zero"]), ddof=st.integers(0, 2), k=st.integers(1, RANK_SUMMARY_TOP),
       by=st.sampled_from(["imbalance", "max", "std", "time"]), min_share=st.sampled_from([0.0, 0.01]))
def test_random_lakes(tmp_path_factory, kind, seed, ranks, threads, drop, levels, absent, ddof, k, by, min_share):
    """On random lakes: the rank_summary view equals the direct computation from the metrics view; a run's
    mean is the very ``avg`` over its metrics rows; imbalance from the summary equals imbalance from the rows
    (same rows, order, bits; share up to the summation order of the run totals)."""
    root = tmp_path_factory.mktemp("random")
    if kind == "tau":
        src = write_tau_runs(root / "in", nodes=15, ranks=ranks, threads=threads, runs=2, seed=seed)
    else:
        src = sparse_caliper(root / "in", nodes=15, ranks=ranks, runs=2, seed=seed, drop=drop, levels=levels)
    lake = Lake(root / "lake")
    assert len(lake.ingest(src).ingested) == 2
    check(lake.sql("select * exclude (mean) from rank_summary"), direct(lake.sql("select * from metrics")))
    means = lake.sql("select run_id, node_id, metric, mean from rank_summary where metric = 'time'")
    avg = lake.sql("select run_id, node_id, avg(time) as avg from metrics where rank >= 0 and time is not null "
                   "group by all")
    both = means.merge(avg, on=["run_id", "node_id"])
    assert len(both) == len(means) == len(avg) and (both["mean"] == both["avg"]).all()
    _same_imbalance(lake, absent=absent, ddof=ddof, k=k, by=by, min_share=min_share)
    _same_imbalance(lake, metric=["time", "time (inc)"], top=5, absent=absent, k=k)


@pytest.fixture(scope="module")
def two_batches(tmp_path_factory):
    """Two ingests (two batches): 3 TAU runs x 8 ranks x 2 threads, 2 sparse Caliper runs x 16 ranks."""
    root = tmp_path_factory.mktemp("two")
    lake = Lake(root / "lake")
    lake.ingest(write_tau_runs(root / "a", nodes=40, ranks=8, threads=2, runs=3, seed=4, metrics=("TIME", "PAPI_L1")))
    lake.ingest(sparse_caliper(root / "b", nodes=40, ranks=16, runs=2, seed=5, drop=0.3, levels=True))
    assert len(lake.catalog().batches()) == 2
    return root, lake


def test_every_question_reads_the_summary(two_batches, monkeypatch):
    """With summaries everywhere no question reads a metrics file (the metrics view is made to fail)."""
    _, lake = two_batches
    with monkeypatch.context() as rows_only:  # the per-run values from the metrics rows
        rows_only.setattr("perflake.analytics.ensemble.summarized", lambda cat, batches: False)
        want = {"imbalance": imbalance(lake, source="rows", metric="time"),
                "ensemble": ensemble(lake, metric="time", group_by="format")}
    from perflake.catalogs.catalog import Catalog

    files = Catalog.files

    def no_metrics(self, table, batches):
        assert table != "metrics", "a question read the metrics rows"
        return files(self, table, batches)

    monkeypatch.setattr(Catalog, "files", no_metrics)
    got = imbalance(lake, metric="time")
    pd.testing.assert_frame_equal(got, want["imbalance"], check_exact=False, rtol=1e-12)
    pd.testing.assert_frame_equal(ensemble(lake, metric="time", group_by="format"), want["ensemble"], check_exact=True)


def test_k_above_what_the_summary_holds_reads_the_rows(two_batches):
    _, lake = two_batches
    got = imbalance(lake, metric="time", k=RANK_SUMMARY_TOP + 2)
    assert max(len(t) for t in got["top_ranks"]) == RANK_SUMMARY_TOP + 2
    with pytest.raises(ValueError, match="above the 8 top ranks"):
        imbalance(lake, metric="time", k=RANK_SUMMARY_TOP + 1, source="summary")


def test_a_batch_without_summary_falls_back_to_the_rows(two_batches, tmp_path):
    """A batch with no rank_summary rows (deleted here by a Delta commit; a schema-3 perflake's batch before
    schema 5 was such a batch): imbalance and ensembles read the metrics rows (same results), the view shows the
    other batches."""
    import shutil

    root, lake = two_batches
    copy = tmp_path / "lake"
    shutil.copytree(root / "lake", copy)
    lake = Lake(copy)
    want_imb = imbalance(lake, metric="time")
    want_ens = ensemble(lake, metric="time", group_by="format")
    runs = lake.runs()
    lake.catalog().tables.delete_batch(RANK_SUMMARY, runs.loc[runs["format"] == "tau", "batch"].iloc[0])
    lake = Lake(copy)
    assert len(lake.sql("select distinct run_id from rank_summary")) == 2  # the Caliper batch's runs
    pd.testing.assert_frame_equal(imbalance(lake, metric="time"), want_imb, check_exact=False, rtol=1e-12)
    pd.testing.assert_frame_equal(ensemble(lake, metric="time", group_by="format"), want_ens, check_exact=True)
    with pytest.raises(ValueError, match="no rank_summary rows"):
        imbalance(lake, metric="time", source="summary")


def test_a_batch_subset_keeps_its_summary(two_batches, tmp_path):
    """When another ingest committed some runs of a batch first, the batch is appended again without them: its
    rank_summary rows too (catalogs/catalog.py subset_batch)."""
    import shutil

    root, _ = two_batches
    shutil.copytree(root / "lake", tmp_path / "lake")
    cat = Lake(tmp_path / "lake").catalog()
    batch = cat.batches()[0]
    keep = sorted(cat.runs([batch]).column("run_id").to_pylist())[:1]
    cat.subset_batch(batch, "subset", keep)
    summary = cat.batch_rows(RANK_SUMMARY, "subset")
    assert set(summary.column("run_id").to_pylist()) == set(keep) and summary.num_rows > 0


def test_on_a_dask_cluster(two_batches):
    """On a distributed scheduler the summary query is the one task: the local numbers."""
    distributed = pytest.importorskip("distributed")
    _, lake = two_batches
    local = imbalance(lake, metric="time", absent="zero")
    with distributed.LocalCluster(n_workers=1, processes=False, threads_per_worker=1, dashboard_address=None,
                                  silence_logs=40) as cluster, distributed.Client(cluster) as client:
        remote = imbalance(lake, metric="time", absent="zero", scheduler=client)
    pd.testing.assert_frame_equal(remote, local, check_exact=True)
