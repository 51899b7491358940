"""Every per-rank question answered from the rank summary equals its answer from the per-rank metrics rows.

Each generated lake is asked twice: as it is (imbalance, ensembles, compare, regress and changes read its
rank_summary files and no metrics row: checked) and as a copy without its rank_summary files (a batch without
one is read from its metrics rows: the computation of the perflake before the summary).  (The copy's rank_summary
rows are deleted by a Delta commit.)  The lakes
(tests/rank_lakes.py) hold multi-thread runs, sparse runs (call paths absent on some ranks), ties between ranks,
HPCToolkit summary profiles at rank -1, metric columns NULL at every location, runs of a single location, and --
in the "nan" lake -- NaN and NULL values drawn into the metrics rows (its summaries built again from them);
"nightly" is a series of 48 runs with shifts, for regress and changes.
"""

from __future__ import annotations

import contextlib
import shutil
import sys

import numpy as np
import pytest

from perflake import Lake
from perflake.analytics.ensemble import ensemble
from perflake.analytics.imbalance import imbalance
from perflake.catalogs.catalog import Catalog
from perflake.generators.nightly import nightly_series, write_nightly
from rank_lakes import add_nan, answers, build_mixed, drop_summaries, normalized, same


def _without_summaries(root, copy) -> Lake:
    shutil.copytree(root, copy)
    drop_summaries(copy)
    return Lake(copy)


@pytest.fixture(scope="module", params=["mixed", "nan", "nightly"])
def lakes(request, tmp_path_factory):
    """(kind, the lake, its copy without rank_summary files, the runs compare/regress split)."""
    top = tmp_path_factory.mktemp(request.param)
    pool = "format = 'tau' and ranks > 1"
    if request.param == "nightly":
        series = nightly_series(runs=48, nodes=16, ranks=3, seed=8, shifts=((0.3, 20), (0.1, 34)))
        assert Lake(top / "lake").ingest(write_nightly(series, top / "in")).ok
        pool = "true"
    else:
        build_mixed(top)
    if request.param == "nan":
        add_nan(Lake(top / "lake"))
    lake = Lake(top / "lake")
    if request.param == "nan":
        counts = lake.sql("select count(*) filter (where isnan(time)) as nan, count(*) filter (where time is null) "
                          "as null, count(*) as n from metrics where rank >= 0")
        assert counts["nan"][0] > 0.05 * counts["n"][0] and counts["null"][0] > 0.05 * counts["n"][0]
        assert lake.sql("select count(*) as n from rank_summary where isnan(total)")["n"][0] > 10
    return request.param, lake, _without_summaries(top / "lake", top / "rows"), pool


@contextlib.contextmanager
def summary_only():
    """No question may read the metrics rows (Lake.connect names the files of its views, parallel.plan those of
    its tasks: they read nothing)."""
    files = Catalog.files

    def guarded(self, table, batches, **kw):
        callers = {sys._getframe(up).f_code.co_name for up in (1, 2, 3)}
        assert table != "metrics" or callers & {"connect", "plan"}, "a question read the metrics rows"
        return files(self, table, batches, **kw)

    Catalog.files = guarded
    try:
        yield
    finally:
        Catalog.files = files


def test_the_lakes_have_what_they_are_meant_to(lakes):
    kind, lake, rows, _ = lakes
    assert rows.sql("select count(*) as n from rank_summary")["n"][0] == 0
    if kind == "nightly":
        return
    at = lake.sql("select count(*) filter (where rank = -1) as summary, count(*) filter (where thread > 0) as threads "
                  "from metrics")
    assert at["summary"][0] > 0 and at["threads"][0] > 0
    runs = lake.runs()
    assert ((runs["ranks"] == 1) & (runs["threads"] == 1)).sum() == 3
    assert lake.sql('select count(*) as n from metrics where rank >= 0 and "sum(time)" is null')["n"][0] > 0


def test_every_answer_is_the_same_from_either_source(lakes):
    kind, lake, rows, pool = lakes
    with summary_only():
        from_summary = answers(lake, pool)
    from_rows = answers(rows, pool)
    assert from_summary.keys() == from_rows.keys()
    for name, want in from_rows.items():
        same(normalized(from_summary[name]), normalized(want), name)
    assert len(from_rows["imbalance-default"]) > 100 and len(from_rows["regress"]) > 10
    if kind == "nightly":  # the two shifts found, from either source
        assert len(from_rows["changes"]) >= 2


@pytest.mark.parametrize("absent", ["exclude", "zero"])
@pytest.mark.parametrize("k", [1, 8])
def test_imbalance_settings(lakes, absent, k):
    """Every ranking and threshold, every metric of the lake at once (metrics some runs lack are asked of the runs
    that have them), from either source, in the same order and to the bit (share to 1e-12: its run totals)."""
    kind, lake, rows, _ = lakes
    metrics = ["time", "time (inc)"]
    for by in ("imbalance", "max", "std", "mean", "time"):
        for ddof in (0, 1):
            options = dict(metric=metrics, absent=absent, k=k, ddof=ddof, by=by, min_share=0.02 if ddof else 0.0)
            with summary_only():
                got = imbalance(lake, source="summary", **options)
            want = imbalance(rows, **options)
            same(normalized(got), normalized(want), f"imbalance-{by}")
            assert len(want) > 0
    where = imbalance(lake, where="ranks > 1", metric="time", absent=absent, k=k, top=5, source="summary")
    same(normalized(where), normalized(imbalance(rows, where="ranks > 1", metric="time", absent=absent, k=k, top=5)),
         "imbalance-where")


def test_ensemble_on_a_local_cluster_and_in_groups(lakes):
    """The Dask path of ensembles (per-run values of chunks of runs, one task each) and grouped ensembles."""
    _, lake, rows, _ = lakes
    key = "format" if lake.runs()["format"].nunique() > 1 else "ranks"
    for options in (dict(scheduler="synchronous", task_rows=200), dict(group_by=key), dict(where="threads > 1")):
        if options.get("where") and not (lake.runs()["threads"] > 1).any():
            continue
        stats = ("count", "mean", "std", "min", "max", "p25", "median")
        with summary_only():
            got = ensemble(lake, metric="time", stats=stats, **options)
        want = ensemble(rows, metric="time", stats=stats, **options)
        same(normalized(got), normalized(want), "ensemble")
        assert np.isfinite(want["mean"]).sum() > 5


def test_the_ensemble_object_reads_the_summary_and_gives_the_rows_frame(lakes):
    """``lake.ensemble_of`` (Thicket's ensemble object): its per-run values come from the rank summary (no
    metrics row read) unless a summary total is NaN (the rows path leaves NaN values out of a mean): the same
    dataframe, sub-ensemble dataframe (rows that exist only) and statistics as from the metrics rows."""
    import pandas as pd

    kind, lake, rows, _ = lakes
    metrics = sorted({m["name"] for ms in lake.catalog().runs().column("metrics").to_pylist() for m in ms
                      if m["name"] in ("time", "time (inc)", "sum(time)", "bytes")})
    assert metrics
    guard = contextlib.nullcontext() if kind == "nan" else summary_only()
    with guard:
        ens = lake.ensemble_of(metric=metrics)
        got = ens.dataframe
        sparse = lake.ensemble_of(metric=metrics).sparse_dataframe()
        ens.stats.describe(metrics, ["mean", "median", "std", "min", "max"])
    want_ens = rows.ensemble_of(metric=metrics)
    pd.testing.assert_frame_equal(got, want_ens.dataframe)
    pd.testing.assert_frame_equal(sparse, rows.ensemble_of(metric=metrics).sparse_dataframe())
    want_ens.stats.describe(metrics, ["mean", "median", "std", "min", "max"])
    pd.testing.assert_frame_equal(ens.statsframe, want_ens.statsframe, rtol=1e-12)
    assert got[metrics].notna().to_numpy().sum() > 0
