"""Ensembles: statistics of every call path across many runs, grouped by catalog metadata.

Per-run value: for one run and one call path, the mean of the metric over the run's locations (rank >= 0,
every thread) where the node has a value; absent rows and NULLs are excluded and rank -1 (a summary
profile) is not a location.  A mean rather than a sum keeps runs of different sizes comparable (a
strong-scaling study reads time per rank); for a sum multiply ``mean`` by the catalog's ``ranks``.
``count`` is the number of runs of the group in which the call path has a value.

The statistics are ONE DuckDB query over the selected batches' Parquet files (``sql/ensemble_values.sql``
feeding ``sql/value_stats.sql``), never a Python loop over runs; the per-run values come from the lake's
rank summary (``sql/ensemble_values_summary.sql``: one row per run and call path, the mean stored as total
and count) when every selected batch has one (perflake.analytics.rank_summary).  With ``scheduler`` the per-run values
are computed by Dask tasks over chunks of runs (``pipeline/engine/parallel.py``) and the statistics by the same
``sql/value_stats.sql`` over their union: the same numbers up to floating-point summation order (DuckDB
sums in parallel, so the last bits of ``mean``/``std`` vary between any two executions).
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from perflake.analytics.rank_summary import run_values, summarized
from perflake.analytics.selection import parse_key, select, selection_metric, session, union_nodes, with_metric
from perflake.engine import parallel, sqlfiles
from perflake.errors import UsageError
from perflake.readers.base import OTHER, Metric

DEFAULT_STATS = ("count", "mean", "median", "std", "min", "max", "p25", "p75")
MOMENTS = ("count", "mean", "std", "var", "min", "max")
_PERCENTILE = re.compile(r"^p(100|\d{1,2}(\.\d+)?)$")


def default_metric(lake, *, where: str | None = None, runs=None) -> tuple[str, int, int]:
    """(metric, runs that have it, runs selected): what ``ensemble``/``scaling_table`` use without ``metric``."""
    sel = select(lake, runs=runs, where=where)
    return (*selection_metric(sel), len(sel.runs))


def parse_stats(stats) -> tuple[list[str], list[float]]:
    """Validated stat names and the probabilities the quantile stats need (median = p50)."""
    stats = [stats] if isinstance(stats, str) else list(stats)
    probs: list[float] = []
    for s in stats:
        m = _PERCENTILE.match(s)
        if s == "median" or m:
            p = 0.5 if s == "median" else float(m.group(1)) / 100
            probs += [] if p in probs else [p]
        elif s not in MOMENTS:
            raise UsageError(f"unknown statistic {s!r}: use {', '.join(MOMENTS)}, median or pNN (0 <= NN <= 100)")
    return stats, probs


def group_stats(lake, rows: pd.DataFrame, metric: str, *, stats=("count", "mean"), ddof: int = 1, scheduler=None,
                task_rows: int = parallel.DEFAULT_TASK_ROWS, con=None) -> pd.DataFrame:
    """Statistics across runs per (group_id, node_id) of ``metric`` for ``rows`` (run_id, group_id, batch,
    n_nodes, ranks, threads; a run may appear under several groups).

    One DuckDB query (sql/ensemble_values.sql feeding sql/value_stats.sql, which computes the quantiles only
    when one is asked for); with ``scheduler``, Dask tasks compute the per-run values of chunks of runs and
    the same statistics file runs over their union.
    Returns group_id, node_id, metric, one column per stat.
    """
    stats, probs = parse_stats(stats)
    cat = lake.catalog()
    selection = rows[["run_id", "batch", "group_id"]].reset_index(drop=True)
    one = bool(((rows["ranks"] == 1) & (rows["threads"] == 1)).all())  # NULL (unknown) counts as not one
    summary = summarized(cat, rows["batch"].unique())  # per-run values from the rank summary (analytics.rank_summary)
    if scheduler is None:
        spec = run_values(cat, rows["batch"].unique(), metric, one, summary=summary)
        inputs = dict(tables={"selection_t": selection}, views={"stat_values_t": (spec["name"], spec["params"])})
    else:
        distinct = rows.drop_duplicates("run_id").to_dict("records")
        batch_of = dict(zip(rows["run_id"], rows["batch"]))
        tasks = parallel.plan(distinct, lambda b: cat.files("metrics", [b]), task_rows=task_rows, split_ranks=False)
        specs = [{**run_values(cat, {batch_of[r] for r in t["run_ids"]}, metric, one, summary=summary),
                  "tables": {"selection_t": selection[selection["run_id"].isin(t["run_ids"])]},
                  "filesystem": None if cat.local else cat.fs} for t in tasks]
        inputs = dict(tables={"stat_values_t": pa.concat_tables(parallel.fan_out(parallel.sql_task, specs,
                                                                                 scheduler=scheduler))})
    with session(lake, con) as con, sqlfiles.scope(con, **inputs) as cur:
        raw = sqlfiles.relation(cur, "value_stats", key="group_id", ddof=ddof, probs=probs).df()
    out = raw[["group_id", "node_id"]].assign(metric=metric)
    q = np.stack(raw["quantiles"].to_numpy()) if probs and len(raw) else np.empty((len(raw), len(probs)))
    for s in stats:
        out[s] = raw[s] if s in MOMENTS else q[:, probs.index(0.5 if s == "median" else float(s[1:]) / 100)]
    return out


def _metrics(metric) -> list[str]:
    return [metric] if isinstance(metric, str) else list(metric)


def ensemble(lake, where: str | None = None, group_by=None, *, metric=None, stats=DEFAULT_STATS, ddof: int = 1,
             runs=None, scheduler=None, task_rows: int = parallel.DEFAULT_TASK_ROWS,
             unknown_keys: str = "warn") -> pd.DataFrame:
    """Per call path (and group), statistics across runs of the per-run value (module docstring).

    ``where``: SQL condition on the runs catalog (``"nprocs >= 64 and app = 'lulesh2.0'"``); ``runs``:
    ids or prefixes; ``group_by``: catalog columns and ``meta:KEY`` metadata keys (a column ``meta:KEY``
    each, numbers typed as numbers); ``metric``: a name or a list (default: :func:`selection_metric`, the
    selected runs' inclusive time in the first place); ``stats``: count, mean, std, var
    (divisor count - ``ddof``), min, max, median, pNN (linear interpolation); ``unknown_keys``: a ``meta:KEY``
    no selected run has warns (``"warn"``) or raises a UsageError naming close keys (``"error"``).
    Returns [group keys], node_id, name, path, metric, one column per stat; sorted by keys, metric, path
    (tree order).
    """
    sel = select(lake, runs=runs, where=where, group_by=group_by)
    from perflake.analytics.ensemble_ops import check_group_keys  # a typo (meta:nokey) warns, never silent

    check_group_keys(lake, sel.runs, sel.keys, unknown_keys=unknown_keys)
    stats = parse_stats(stats)[0]
    if isinstance(ddof, bool) or not isinstance(ddof, (int, np.integer)) or ddof < 0:
        raise UsageError(f"ddof must be a whole number >= 0 (the divisor is count - ddof), not {ddof!r}")
    metric = metric if metric is not None else selection_metric(sel)[0]
    with session(lake) as con:
        frames = [group_stats(lake, with_metric(sel, m), m, stats=stats, ddof=ddof, scheduler=scheduler,
                              task_rows=task_rows, con=con) for m in _metrics(metric)]
        nodes = union_nodes(lake, sel.runs["run_id"], sel.runs["batch"].unique(), con=con).to_pandas()
    out = nodes.merge(pd.concat(frames, ignore_index=True), on="node_id")  # keeps the nodes' path order
    out = out.merge(sel.runs[["group_id", *sel.keys]].drop_duplicates("group_id"), on="group_id", how="left")
    out = out[[*sel.keys, "node_id", "name", "path", "metric", *stats]]
    return out.sort_values([*sel.keys, "metric"], na_position="last", kind="stable", ignore_index=True)


def scaling_table(lake, metric: str | None = None, by: str = "nprocs", *, where: str | None = None, stat: str = "mean",
                  runs=None, scheduler=None, unknown_keys: str = "warn") -> pd.DataFrame:
    """A metric's ``stat`` per call path (rows, indexed by node_id, with name and path) and value of ``by``
    (columns, ascending): the table of a scaling study.  NaN where a call path does not occur.  ``metric``
    defaults as in :func:`ensemble`; the metric used is in ``attrs["metric"]``."""
    df = ensemble(lake, where, [by], metric=metric, stats=(stat,), runs=runs, scheduler=scheduler,
                  unknown_keys=unknown_keys)
    key = parse_key(by)[2]
    wide = df.pivot(index="node_id", columns=key, values=stat)
    wide = wide[sorted(wide.columns, key=lambda v: (pd.isna(v), v if not pd.isna(v) else 0))]
    order = df.drop_duplicates("node_id").set_index("node_id")[["name", "path"]]
    out = order.join(wide)
    out.columns.name = key
    out.attrs["metric"] = df["metric"].iloc[0] if len(df) else metric
    return out


def ensemble_graphframe(lake, where: str | None = None, *, metric=None, stats=DEFAULT_STATS, ddof: int = 1,
                        runs=None, scheduler=None):
    """The ensemble as a GraphFrame: the graph is the union of the selected runs' call paths, one row per
    node, one column ``<metric>_<stat>`` per metric and stat (mean/median/min/max/pNN keep the metric's
    exclusive/inclusive role, the others are 'other'); the frame's class is ``lake.frame_class``."""
    sel = select(lake, runs=runs, where=where)
    stats = parse_stats(stats)[0]
    metric = metric if metric is not None else selection_metric(sel)[0]
    flat = pc.list_flatten(sel.catalog.column("metrics"))
    roles = dict(zip(pc.struct_field(flat, "name").to_pylist()[::-1], pc.struct_field(flat, "role").to_pylist()[::-1]))
    wide, info = None, []
    for m in _metrics(metric):
        part = group_stats(lake, with_metric(sel, m), m, stats=stats, ddof=ddof, scheduler=scheduler)
        part = part.set_index("node_id")[stats].add_prefix(f"{m}_")
        wide = part if wide is None else wide.join(part, how="outer")
        info += [Metric(f"{m}_{s}", OTHER if s in ("count", "std", "var") else roles.get(m, OTHER)) for s in stats]
    nodes = union_nodes(lake, sel.runs["run_id"], sel.runs["batch"].unique(), full=True)
    values = pa.Table.from_pandas(wide.reset_index().assign(rank=0, thread=0), preserve_index=False)
    meta = {"ensemble": {"runs": len(sel.runs), "where": where, "metrics": _metrics(metric), "stats": stats,
                         "ddof": ddof}}
    return lake.frame_class.from_tables(nodes, values, info, meta)
