"""Per-rank load imbalance of every call path, for runs of the lake or for one GraphFrame.

For a run, a call path and a metric, the statistics are over the run's locations (rank >= 0, every thread;
rank -1 holds a summary profile and is not a location):

- ``absent="exclude"`` (the default): only locations where the node has a value.  A call path that only
  some ranks execute (rank-0 I/O, a solver on a sub-communicator) is judged by how evenly those ranks
  share it, and a value that was not measured is never turned into a measurement of 0: the lake stores
  absent values as absent for that reason, and the previous SQL did the same.
- ``absent="zero"``: every location of the run counts, 0 where the node is absent, so a path executed by
  one rank of 64 shows imbalance 64.  Hatchet's readers fill absent values with 0, so this is what
  Hatchet's recipe gives on Hatchet's frames.

Columns: ``mean``, ``min``, ``max``, ``std`` (divisor ``locations - ddof``; ddof=1 by default, as pandas),
``imbalance = max / mean`` (NaN when mean <= 0), ``top_ranks`` (the k ranks with the largest values, a
rank's value being its max over threads; ties to the lower rank; only ranks where the node has a value),
``locations`` (the count the statistics are over) and ``present`` (locations with a value).

The work is cut into Dask tasks by pipeline/engine/parallel.py (chunks of runs; rank ranges of big runs only on a
distributed cluster); each task runs sql/imbalance_scan.sql + sql/imbalance_partial.sql on its own DuckDB
connection (on a local scheduler with the cores the tasks leave over, so one big run uses them all)
and returns mergeable partials (count, sum, sum of squared deviations, min, max, top k), merged here in
pandas in a fixed order, so every scheduler gives bit-identical results.

A NaN value (ingest stores NULL for one; a lake's files may hold one) is a value above every number, as
DuckDB orders it in every task: sum, std and max over it are NaN, min skips it, its rank is first in top_ranks.

Lake-wide, the same statistics come by default from the lake's rank summary, computed once at ingest
(perflake.analytics.rank_summary, sql/imbalance_summary.sql): no per-rank row is read again.
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from perflake.analytics import imbalance_ranking, rank_summary, selection
from perflake.engine import parallel
from perflake.errors import LakeError
from perflake.frame.tables import metrics_table, node_ids

ABSENT = ("exclude", "zero")
KEYS = ["run_id", "node_id", "metric"]
COLUMNS = ["run_id", "node_id", "name", "path", "metric", "locations", "present", "mean", "min", "max", "std",
           "imbalance", "top_ranks"]


def _check(absent: str, k: int, ddof: int) -> None:
    if absent not in ABSENT:
        raise ValueError(f"absent={absent!r}: use 'exclude' or 'zero'")
    if k < 1 or ddof < 0:
        raise ValueError("k must be >= 1 and ddof >= 0")


def merge_partials(parts: pa.Table, *, absent: str = "exclude", k: int = 3, ddof: int = 1) -> pd.DataFrame:
    """Combine partials (run_id, node_id, metric, part, n, total, m2, min, max, top_ranks, top_values,
    locations) of disjoint location sets into per-(run, node, metric) statistics: Chan et al.'s pairwise
    update, vectorised; rows in (run, node, metric) order."""
    scalars = parts.drop_columns(["top_ranks", "top_values"]).to_pandas()
    codes = [pd.factorize(scalars[c], sort=True)[0] for c in ("run_id", "metric")]
    order = np.lexsort((scalars["part"].to_numpy(), codes[1], scalars["node_id"].to_numpy(), codes[0]))
    p = scalars.take(order).reset_index(drop=True)
    g = p.groupby(KEYS, sort=False)
    gid = np.empty(len(p), np.int64)
    gid[order] = g.ngroup().to_numpy()  # group of each partial, in the input's row order
    n = g["n"].transform("sum")
    p["dev"] = p["m2"] + p["n"] * (p["total"] / p["n"] - g["total"].transform("sum") / n) ** 2
    out = g.agg(present=("n", "sum"), total=("total", "sum"), m2=("dev", "sum"), min=("min", "min"),
                max=("max", "max")).reset_index()
    # NaN values as DuckDB treats them in every partial (pandas' sums and max skip NaN): above every number,
    # so a sum, m2 and max over a NaN are NaN, a min is NaN only when every value is
    nan = p[["total", "dev", "max"]].isna().groupby([p[c] for c in KEYS], sort=False).any().to_numpy()
    out.loc[nan[:, 0], "total"], out.loc[nan[:, 1], "m2"], out.loc[nan[:, 2], "max"] = np.nan, np.nan, np.nan
    if absent == "zero":
        per_run = p.drop_duplicates(["run_id", "metric", "part"]).groupby(["run_id", "metric"], as_index=False)
        locations = out[["run_id", "metric"]].merge(per_run["locations"].sum(), how="left")["locations"]
        locations = locations.to_numpy(np.int64)
    else:
        locations = out["present"].to_numpy(np.int64)
    present = out["present"].to_numpy(np.int64)
    mean_p = out["total"].to_numpy() / present
    mean = out["total"].to_numpy() / locations
    zeros = locations - present
    m2 = out["m2"].to_numpy() + present * (mean_p - mean) ** 2 + zeros * mean**2
    out["locations"] = locations
    out["mean"] = mean
    out["min"] = np.where(zeros > 0, np.fmin(out["min"], 0.0), out["min"])  # NaN above 0, as in DuckDB
    out["max"] = np.where(zeros > 0, np.maximum(out["max"], 0.0), out["max"])
    with np.errstate(invalid="ignore", divide="ignore"):
        out["std"] = np.where(locations > ddof, np.sqrt(m2 / np.maximum(locations - ddof, 1)), np.nan)
        out["imbalance"] = np.where(mean > 0, out["max"] / mean, np.nan)
    out["top_ranks"] = _top(parts, gid, len(out), k)
    return out.drop(columns=["total", "m2"])


def _top(parts: pa.Table, gid: np.ndarray, groups: int, k: int) -> np.ndarray:
    """The k largest (value desc, rank asc) of the concatenated top lists of each group, with no Python
    object per row until the result: flatten, lexsort by (group, -value, rank), keep k per group."""
    ranks = parts.column("top_ranks").combine_chunks()
    owner = gid[pc.list_parent_indices(ranks).to_numpy()]
    r = pc.list_flatten(ranks).to_numpy().astype(np.int64)
    v = pc.list_flatten(parts.column("top_values").combine_chunks()).to_numpy()
    missing = np.isnan(v)  # NaN first (above every number, as DuckDB's max_by orders it), ties to the lower rank
    idx = np.lexsort((r, np.where(missing, 0.0, -v), ~missing, owner))
    owner, r = owner[idx], r[idx]
    keep = np.arange(len(owner)) - np.searchsorted(owner, np.arange(groups))[owner] < k
    offsets = np.concatenate([[0], np.cumsum(np.bincount(owner[keep], minlength=groups))]).astype(np.int32)
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(r[keep])).to_pandas().to_numpy()


def _label(part: pa.Table, metric: str, index: int) -> pa.Table:
    """A task's partials with the metric and the task's position (the merge order)."""
    n = len(part)
    return part.append_column("metric", pa.repeat(pa.scalar(metric, pa.string()), n)).append_column(
        "part", pa.repeat(pa.scalar(index, pa.int64()), n))


def _order(df: pd.DataFrame, top: int | None) -> pd.DataFrame:
    """Most imbalanced first (NaN last), then the largest mean; the merge's (run, node, metric) order
    breaks ties, so the order is reproducible."""
    imb, mean = df["imbalance"].to_numpy(), df["mean"].to_numpy()
    idx = np.lexsort((-np.nan_to_num(mean, nan=-np.inf), -np.nan_to_num(imb, nan=-np.inf)))
    if top:
        idx = idx[:top]
    return df.take(idx).reset_index(drop=True)


def imbalance(lake, runs=None, *, metric="time", top: int | None = None, absent: str = "exclude", k: int = 3,
              ddof: int = 1, where: str | None = None, scheduler=None,
              task_rows: int | None = None, by: str = "imbalance", min_share: float = 0.0,
              source: str = "auto") -> pd.DataFrame:
    """Per call path of each run (all runs, ``runs`` ids/prefixes, and/or ``where`` SQL on the catalog):
    statistics over locations and imbalance = max/mean (module docstring), with ``total`` and ``share`` (of
    the run's time); ranked by ``by`` (imbalance, max, std, mean or time), largest first, without the call
    paths below ``min_share`` of their run's time (perflake.analytics.imbalance_ranking).

    ``scheduler``: None (local threads), "synchronous", "processes", "tcp://host:port" or a
    distributed.Client (see pipeline/engine/parallel.py); ``task_rows`` bounds the metric rows of one task.  By
    default a run is cut into rank ranges only on a distributed cluster (to bound a worker's memory): every
    such task scans the run's whole file (it is sorted by node), so on this machine one task per run is
    faster and DuckDB spreads it over the cores itself.

    ``source``: "auto" (the default) answers from the lake's rank summary (perflake.analytics.rank_summary: one
    row per run, call path and metric, no per-rank row read; one query, on a distributed ``scheduler`` its
    one task) when every selected batch has one, ``k`` is at most catalogs.schema.RANK_SUMMARY_TOP and no
    ``task_rows`` is given; otherwise, or with "rows", from the metrics rows as described above.  Both give
    the same numbers (``share`` up to the summation order of the run totals).
    """
    _check(absent, k, ddof)
    imbalance_ranking.check(by, min_share)
    sel = selection.select(lake, runs=runs, where=where)
    if sel.runs.empty:
        raise LakeError(f"{lake.root}: no runs selected")
    metrics = [metric] if isinstance(metric, str) else list(metric)
    cat = lake.catalog()
    selected = {m: selection.with_metric(sel, m) for m in metrics}
    for m, rows in selected.items():
        if runs is not None and len(rows) < len(sel.runs):
            missing = sorted(set(sel.runs["run_id"]) - set(rows["run_id"]))
            raise LakeError(f"run {missing[0]} has no metric {m!r}")
    if (task_rows is None or source == "summary") and rank_summary.use_summary(
            cat, sel.runs["batch"].unique(), source=source, k=k):
        run_ids = sorted(set().union(*(set(rows["run_id"]) for rows in selected.values())))
        return rank_summary.imbalance(lake, sel, metrics, run_ids, absent=absent, k=k, ddof=ddof, by=by,
                                      min_share=min_share, top=top, scheduler=scheduler,
                                      columns=[*COLUMNS, "total", "share"])
    specs = []
    for m, rows in selected.items():
        local = scheduler is None or isinstance(scheduler, str) and scheduler.lower() in parallel.LOCAL_SCHEDULERS
        for t in parallel.plan(rows.to_dict("records"), lambda b: cat.files("metrics", [b]),
                               task_rows=task_rows or parallel.DEFAULT_TASK_ROWS,
                               split_ranks=task_rows is not None or not local):
            scan = {"files": t["files"], "run_ids": t["run_ids"], "batch": t["batch"], "metric": m,
                    "rank_lo": t["rank_lo"], "rank_hi": t["rank_hi"]}
            one_thread = bool((rows[rows["run_id"].isin(t["run_ids"])]["threads"].fillna(1) <= 1).all())
            specs.append(dict(name="imbalance_partial", params={"k": k, "one_thread": one_thread,
                                                                   "count_locations": absent == "zero"},
                              views={"imbalance_source": ("imbalance_scan", scan)},
                              filesystem=None if cat.local else cat.fs))
    if local:  # fewer tasks than cores (one big run): give each task's DuckDB the cores left over
        for spec in specs:
            spec["threads"] = max(1, (os.cpu_count() or 1) // len(specs))
    results = parallel.fan_out(parallel.sql_task, specs, scheduler=scheduler)
    metric_of = [s["views"]["imbalance_source"][1]["metric"] for s in specs]
    stats = merge_partials(pa.concat_tables([_label(r, m, i) for i, (r, m) in enumerate(zip(results, metric_of))]),
                           absent=absent, k=k, ddof=ddof)
    nodes = selection.union_nodes(lake, sel.runs["run_id"], sel.runs["batch"].unique()).to_pandas()
    table = imbalance_ranking.with_share(stats.merge(nodes, on="node_id", how="left")[COLUMNS],
                                         imbalance_ranking.roles(sel.catalog))
    return imbalance_ranking.rank(table, by=by, min_share=min_share, top=top)


def graphframe_imbalance(gf, *, metric=None, top: int | None = None, absent: str = "exclude", k: int = 3,
                         ddof: int = 1) -> pd.DataFrame:
    """The same statistics for one GraphFrame (default metric: the frame's default), indexed by ``node``.

    Equal to Hatchet's recipe on the frame's dataframe: ``drop_index_levels`` with mean and with max over
    the rank/thread levels (NaN skipped, i.e. absent='exclude'; fill NaN with 0 first for 'zero'), then
    max / mean.
    """
    _check(absent, k, ddof)
    metrics = [metric or gf.default_metric] if metric is None or isinstance(metric, str) else list(metric)
    df = gf.dataframe
    parts = []
    for m in metrics:
        table = metrics_table(df, [m]).rename_columns(["run_id", "node_id", "rank", "thread", "value"])
        one_thread = not pc.any(pc.not_equal(table.column("thread"), 0)).as_py()
        part = parallel.sql_task("imbalance_partial", {"k": k, "one_thread": one_thread,
                                                      "count_locations": absent == "zero"},
                                 tables={"imbalance_source": table})
        parts.append(_label(part, m, 0))
    stats = merge_partials(pa.concat_tables(parts), absent=absent, k=k, ddof=ddof)
    ids = node_ids(df)
    first = pd.Series(df.index.get_level_values("node"), index=ids).groupby(level=0).first()
    stats.insert(0, "node", stats["node_id"].map(first))
    stats["name"] = [str(n.frame.get("name")) for n in stats["node"]]
    cols = ["node", "node_id", "name", "metric", *COLUMNS[5:]]
    return _order(stats[cols], top).set_index("node")
