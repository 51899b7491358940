"""update_inclusive_columns: inclusive = own exclusive + all descendants' exclusive, per (node, rank, thread).

Runs ``sql/closure.sql`` and ``sql/inclusive_wide.sql`` (the same files ingest uses) over the GraphFrame's edges
and metrics, and ``sql/inclusive_rows.sql`` to put the values back in the dataframe's row order; a node reachable
by several paths counts once per ancestor (Hatchet's subgraph_sum).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from perflake.catalogs import metric_columns
from perflake.engine import duck, sqlfiles
from perflake.frame.tables import edges, metrics_table
from perflake.ingest.normalize import MAX_DEPTH


def inclusive_name(gf, exc: str) -> str:
    return next((i for i in gf.inc_metrics if i == f"{exc} (inc)"), f"{exc} (inc)")


def update_inclusive_columns(gf) -> None:
    """Recompute every inclusive column of ``gf.dataframe`` from its exclusive column, in place."""
    exc = [m for m in gf.exc_metrics if m in gf.dataframe.columns]
    if not exc:
        return
    inc = [inclusive_name(gf, m) for m in exc]
    df = gf.dataframe
    # names DuckDB keeps apart (it folds case: ``calls`` and ``Calls`` in one table would lose one)
    cols = metric_columns.internal(exc, ("run_id", "node_id", "rank", "thread", "pos"))
    con = duck.connection()
    try:
        rows = _one_run(metrics_table(df, exc))
        rows = rows.rename_columns([cols.get(c, c) for c in rows.column_names])
        rows = rows.append_column("pos", pa.array(np.arange(len(df), dtype=np.int64)))
        con.register("edges_t", _one_run(edges(gf.graph)))
        con.register("metrics_t", rows)
        sqlfiles.materialize(con, "closure_t", "closure", max_depth=MAX_DEPTH)
        con.register("inclusive_v", sqlfiles.relation(con, "inclusive_wide", exc=[cols[e] for e in exc]))
        found = sqlfiles.relation(con, "inclusive_rows").fetchnumpy()
    finally:
        con.close()
    pos = np.asarray(found["pos"], dtype=np.int64)
    for e, name in zip(exc, inc):
        values = np.full(len(df), np.nan)
        values[pos] = np.ma.filled(np.ma.asarray(found[cols[e]], dtype=np.float64), np.nan)  # NULL -> NaN
        df[name] = values
        if name not in gf.inc_metrics:
            gf.inc_metrics.append(name)


def _one_run(table: pa.Table) -> pa.Table:
    """The frame's one run as run 0 (INTEGER) instead of the string "_": the SQL joins on the run, and an
    integer key makes the 10M-row closure join of a 10000 x 1024 frame 25% faster (5.3 -> 3.9 s)."""
    return table.set_column(table.schema.get_field_index("run_id"), "run_id",
                            pa.repeat(pa.scalar(0, pa.int32()), table.num_rows))
