"""Per-rank questions answered from the lake's rank_summary table instead of the per-rank metrics rows.

Every batch carries, per run, call path and metric, the statistics over the run's locations (count, total,
mean, m2, min, max, the ranks of the minimum and of the largest values, the run's locations; written at
ingest by perflake.ingest.summarize, catalogs/schema.py ``RANK_SUMMARY_SCHEMA``).  That is all that

- imbalance needs (sql/imbalance_summary.sql: the statistics, ``absent``, ``ddof``, the top k ranks for
  k <= ``RANK_SUMMARY_TOP``, each row's share of its run, the ranking and the first ``top`` rows, in one
  query; perflake.analytics.imbalance merges the same numbers from the metrics rows), and
- the per-run value of ensembles, comparisons, regressions and change points needs (the mean over the run's
  locations: sql/ensemble_values_summary.sql, the same values as sql/ensemble_values.sql),

so those questions read one row per (run, call path, metric) -- 1 million rows for 1,000 runs of 1,000 call
paths, not the 16 million metric rows of 16 ranks.  The metrics rows stay for drill-down (a GraphFrame, SQL)
and are what the questions read when a selected batch has no summary file (one committed by a perflake of
schema 3 after this lake was migrated) or, for imbalance, when k > ``RANK_SUMMARY_TOP``.

The numbers are those computed from the metrics rows, to the bit: the summary sums as DuckDB does
(perflake.ingest.summarize), and sql/imbalance_summary.sql repeats the floating-point operations of
perflake.analytics.imbalance's merge; only ``share`` may differ in its last bits (the run totals are summed
by DuckDB's ``fsum`` here, by pandas there).
"""

from __future__ import annotations

import pandas as pd

from perflake.analytics import imbalance_ranking
from perflake.analytics.selection import session, union_nodes
from perflake.catalogs.schema import RANK_SUMMARY, RANK_SUMMARY_TOP
from perflake.engine import parallel, sqlfiles

SOURCES = ("auto", "summary", "rows")


def summarized(cat, batches) -> bool:
    """Whether every one of ``batches`` has its rank_summary file (one listing of the folder)."""
    batches = set(batches)
    return bool(batches) and cat.having(RANK_SUMMARY, batches) == batches


def run_values(cat, batches, metric: str, one_location: bool, *, summary: bool | None = None) -> dict:
    """The statement giving the per-run values of ``metric`` of the runs of ``selection_t`` held by ``batches``,
    as ``dict(name=..., params=...)`` (a task of perflake.engine.parallel.sql_task; ``name``/``params`` are
    also what ``sqlfiles.relation`` and ``materialize`` take): sql/ensemble_values_summary.sql over the
    batches' rank_summary files when every batch has one (``summary``: known already), else
    sql/ensemble_values.sql over their metrics rows."""
    batches = sorted(set(batches))
    if summary if summary is not None else summarized(cat, batches):
        return dict(name="ensemble_values_summary", params={"files": cat.files(RANK_SUMMARY, batches),
                                                            "metric": metric})
    return dict(name="ensemble_values", params={"files": cat.files("metrics", batches), "metric": metric,
                                                "one_location": one_location})


def use_summary(cat, batches, *, source: str, k: int) -> bool:
    """Whether imbalance reads the rank summary (``source`` auto: when every batch has one and k fits)."""
    if source not in SOURCES:
        raise ValueError(f"source={source!r}: use {', '.join(SOURCES)}")
    if source == "rows":
        return False
    fits = k <= RANK_SUMMARY_TOP
    have = summarized(cat, batches)
    if source == "summary" and not (fits and have):
        why = (f"k={k} is above the {RANK_SUMMARY_TOP} top ranks it holds" if not fits else
               "a selected batch has no rank_summary rows (run `perflake migrate`, or use source='rows')")
        raise ValueError(f"source='summary': {why}")
    return fits and have


def imbalance(lake, sel, metrics: list[str], run_ids: list[str], *, columns: list[str], **options) -> pd.DataFrame:
    """The ranked table of perflake.analytics.imbalance from the rank summary (:func:`ranked`), with the names
    and paths of the call paths it shows joined to it, as ``columns``."""
    table = ranked(lake, sel, metrics, run_ids, **options)
    if table.empty:
        return table.assign(name=pd.Series(dtype=object), path=pd.Series(dtype=object))[columns]
    shown = table["run_id"].unique()
    batches = sel.runs.loc[sel.runs["run_id"].isin(set(shown)), "batch"].unique()
    nodes = union_nodes(lake, shown, batches).to_pandas()
    return table.merge(nodes, on="node_id", how="left")[columns]


def ranked(lake, sel, metrics: list[str], run_ids: list[str], *, absent: str, k: int, ddof: int, by: str,
           min_share: float, top: int | None, scheduler=None) -> pd.DataFrame:
    """Imbalance statistics, total and share of ``metrics`` at every call path of ``run_ids`` (runs of the
    selection ``sel`` that have the metrics), ranked by ``by`` without the rows below ``min_share``, the
    first ``top`` of them (sql/imbalance_summary.sql): run_id, node_id, metric, locations, present, mean, min,
    max, std, imbalance, top_ranks, total, share.  One query: here with every core, or as the one task of
    ``scheduler`` when that is a dask.distributed cluster (perflake.engine.parallel)."""
    cat = lake.catalog()
    batches = sorted(set(sel.runs.loc[sel.runs["run_id"].isin(set(run_ids)), "batch"]))
    batch_of = dict(zip(sel.runs["run_id"], sel.runs["batch"]))
    picked = sorted(set(run_ids))
    roles = imbalance_ranking.roles(sel.catalog).drop_duplicates(["run_id", "metric"])
    params = {"files": cat.files(RANK_SUMMARY, batches), "node_files": cat.files("nodes", batches),
              "run_ids": picked, "batches": [batch_of[r] for r in picked], "metrics": list(metrics), "k": k,
              "ddof": ddof,
              "zero": absent == "zero", "by": imbalance_ranking.check(by, min_share), "min_share": float(min_share),
              "top": top or None}
    local = scheduler is None or isinstance(scheduler, str) and scheduler.lower() in parallel.LOCAL_SCHEDULERS
    if local:
        with session(lake) as con, sqlfiles.scope(con, tables={"roles_t": roles}) as cur:
            return sqlfiles.relation(cur, "imbalance_summary", **params).to_arrow_table().to_pandas()
    task = dict(name="imbalance_summary", params=params, tables={"roles_t": roles},
                filesystem=None if cat.local else cat.fs)
    return parallel.fan_out(parallel.sql_task, [task], scheduler=scheduler)[0].to_pandas()
