"""Metric conditions of a call-path query over many runs: one boolean per (call path, run), from DuckDB passes
over the lake's metrics table (perflake/analytics/lake_match.py asks; the semantics are those of
perflake.query.predicates on each run's GraphFrame).

A run's GraphFrame has one row per node and location (rank, thread), NaN where the node has no metrics row.
What a condition reads of a node:

* multi_index_mode "off", or a run with one location: the mean over the node's rows, NaN skipped
  (``sql/lake_query_means.sql``);
* "any" / "all" on a run with several ranks or threads: the condition on each row (``sql/lake_query_rows.sql``,
  streamed), then any / every row of the node.  A location where the node has no row is a NaN row: it counts
  as a hit when the condition holds for NaN (``!= 5``, ``IS NAN``).

The tests themselves are perflake.query.predicates' (``_test``), on the values DuckDB returns, so a condition
means exactly what it means on one frame.
"""

from __future__ import annotations

import contextlib

import numpy as np
import pandas as pd
import pyarrow as pa

from perflake.engine import sqlfiles
from perflake.query import forest as F
from perflake.query.model import Cond
from perflake.query.predicates import _test

ROWS_PER_BATCH = 1 << 20


def metric_leaf(ev, cond: Cond, mode: str, source, active: np.ndarray) -> np.ndarray:
    """Packed (call path, run) bits of one condition on a metric, for the runs in ``active`` (which have it)."""
    s = ev.s
    runs = active & np.array([cond.attr in m for m in ev.metrics])
    rowwise = np.zeros(s.n_runs, bool)
    if mode in ("any", "all"):
        multi, _ = locations(ev)
        rowwise = runs & multi
    nan_hit = bool(_test(cond, pd.Series([np.nan], dtype=np.float64), source)[0])
    run, rows, value, count = means(ev, cond.attr)
    out = np.zeros_like(s.packed)
    by_mean = runs & ~rowwise
    if by_mean.any():
        keep = by_mean[run]
        hits = _test(cond, pd.Series(value[keep], dtype=np.float64), source)
        out |= F.pack_cells(rows[keep][hits], run[keep][hits], s.n, s.n_runs)
        if nan_hit:  # a node without rows reads NaN
            measured = F.pack_cells(rows, run, s.n, s.n_runs)
            out |= s.packed & ~measured & F.run_row(by_mean)
    if rowwise.any():
        out |= _rowwise(ev, cond, mode, source, rowwise, (run, rows, count), nan_hit)
    return out


def _rowwise(ev, cond, mode, source, runs, counted, nan_hit) -> np.ndarray:
    """Packed bits for the runs ``runs`` with "any"/"all": the condition on every row, then per node."""
    s = ev.s
    _, n_locs = locations(ev)
    seen = np.zeros_like(s.packed)  # any: a row hits; all: a row misses
    with _runs(ev, runs):
        reader = sqlfiles.relation(ev.con, "lake_query_rows", files=ev.metric_files, metric=cond.attr
                                   ).to_arrow_reader(ROWS_PER_BATCH)
        for batch in reader:
            run = batch.column(0).to_numpy().astype(np.int64)
            rows = s.rows_of(batch.column(1).to_numpy())
            value = batch.column(2).to_numpy(zero_copy_only=False)
            hits = _test(cond, pd.Series(value, dtype=np.float64), source)
            pick = hits if mode == "any" else ~hits
            seen |= F.pack_cells(rows[pick], run[pick], s.n, s.n_runs)
    run, rows, count = counted
    full = count == n_locs[run]  # a row at every location: no NaN row
    nan_rows = s.packed & ~F.pack_cells(rows[full], run[full], s.n, s.n_runs)
    if mode == "any":
        out = seen | (nan_rows if nan_hit else 0)
    else:
        out = ~seen & (~nan_rows if not nan_hit else np.full_like(seen, 0xFF))
    return out & s.packed & F.run_row(runs)


def means(ev, metric: str):
    """(run, row, mean, number of rows) per (run, call path) with metrics rows, over the runs having ``metric``."""
    if metric not in ev._means:
        runs = np.array([metric in m for m in ev.metrics])
        with _runs(ev, runs):
            t = sqlfiles.relation(ev.con, "lake_query_means", files=ev.metric_files, metric=metric).to_arrow_table()
        ev._means[metric] = (t.column("run").to_numpy().astype(np.int64), ev.s.rows_of(t.column("node_id").to_numpy()),
                             t.column("value").to_numpy(zero_copy_only=False).astype(np.float64),
                             t.column("n").to_numpy())
    return ev._means[metric]


def locations(ev):
    """Per run: whether its GraphFrame has a rank/thread index (several ranks or threads), and its number of
    (rank, thread) locations (1 for a run without metrics rows: one NaN row per node)."""
    if ev._locations is None:
        t = sqlfiles.relation(ev.con, "lake_query_locations", files=ev.metric_files).to_arrow_table()
        run = t.column("run").to_numpy()
        multi = np.zeros(ev.s.n_runs, bool)
        n_locs = np.ones(ev.s.n_runs, np.int64)
        multi[run] = (t.column("ranks").to_numpy() > 1) | (t.column("threads").to_numpy() > 1)
        n_locs[run] = t.column("locations").to_numpy()
        ev._locations = multi, n_locs
    return ev._locations


@contextlib.contextmanager
def _runs(ev, runs: np.ndarray):
    """``query_runs`` narrowed to the runs ``runs`` (their positions kept) for the statements inside."""
    picked = np.flatnonzero(runs)
    ev.con.register("query_runs", pa.table({"run_id": pa.array([ev.run_ids[i] for i in picked], pa.string()),
                                            "run": pa.array(picked.astype(np.int32)),
                                            "batch": pa.array([ev.batches[i] for i in picked], pa.string())}))
    try:
        yield
    finally:
        ev.con.register("query_runs", pa.table({"run_id": pa.array(ev.run_ids, pa.string()),
                                                "run": pa.array(np.arange(len(ev.run_ids), dtype=np.int32)),
                                                "batch": pa.array(ev.batches, pa.string())}))
