"""update_inclusive_columns: inclusive = own exclusive + all descendants' exclusive, per (node, rank, thread).

Runs ``sql/closure.sql`` and ``sql/inclusive_wide.sql`` (the same files ingest uses) over the GraphFrame's edges
and metrics; a node reachable by several paths counts once per ancestor (Hatchet's subgraph_sum).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from perflake import duck, sqlfiles
from perflake.frame_tables import edges, locations, metrics_table, node_ids
from perflake.normalize import MAX_DEPTH


def inclusive_name(gf, exc: str) -> str:
    return next((i for i in gf.inc_metrics if i == f"{exc} (inc)"), f"{exc} (inc)")


def update_inclusive_columns(gf) -> None:
    """Recompute every inclusive column of ``gf.dataframe`` from its exclusive column, in place."""
    exc = [m for m in gf.exc_metrics if m in gf.dataframe.columns]
    if not exc:
        return
    inc = [inclusive_name(gf, m) for m in exc]
    df = gf.dataframe
    con = duck.connection()
    try:
        con.register("edges_t", edges(gf.graph))
        con.register("metrics_t", metrics_table(df, exc))
        sqlfiles.materialize(con, "closure_t", "closure", max_depth=MAX_DEPTH)
        wide = sqlfiles.relation(con, "inclusive_wide", exc=exc).df()
    finally:
        con.close()
    rank, thread = locations(df)
    keys = pd.MultiIndex.from_arrays([node_ids(df), rank, thread], names=["node_id", "rank", "thread"])
    wide = wide.astype({"node_id": np.uint64, "rank": np.int32, "thread": np.int32}).set_index(["node_id", "rank", "thread"])
    aligned = wide.reindex(keys)
    for e, name in zip(exc, inc):
        df[name] = aligned[e].to_numpy()
        if name not in gf.inc_metrics:
            gf.inc_metrics.append(name)
