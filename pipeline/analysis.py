"""Per-rank imbalance and two-run comparison over the lake (the SQL lives in sql/imbalance.sql and
sql/compare_runs.sql; this module picks files from the catalog and binds parameters)."""

from __future__ import annotations

import duckdb
import pandas as pd

from perflake import sqlfiles
from perflake.errors import LakeError
from perflake.normalize import MAX_DEPTH


def _session(lake, rows: list[dict]):
    cat = lake.catalog()
    con = duckdb.connect()
    if not cat.local:
        con.register_filesystem(cat.fs)
    batches = [r["batch"] for r in rows]
    run_ids = [r["run_id"] for r in rows]
    sqlfiles.materialize(con, "callpaths_t", "callpaths", files=cat.files("nodes", batches), run_ids=run_ids,
                         max_depth=MAX_DEPTH)
    return con, cat.files("metrics", batches), run_ids


def _check_metric(rows: list[dict], metric: str) -> None:
    for r in rows:
        names = [m["name"] for m in r["metrics"]]
        if metric not in names:
            raise LakeError(f"run {r['run_id']} has no metric {metric!r} (it has: {', '.join(names)})")


def imbalance(lake, runs=None, *, metric: str = "time", top: int | None = None) -> pd.DataFrame:
    """Per call path of each run: mean/min/max/std over ranks and threads, max/mean, the rank holding the max."""
    rows = [lake.resolve(r) for r in runs] if runs else lake.catalog().runs().to_pylist()
    if not rows:
        raise LakeError(f"{lake.root}: the lake has no runs")
    _check_metric(rows, metric)
    con, files, run_ids = _session(lake, rows)
    try:
        df = sqlfiles.relation(con, "imbalance", files=files, run_ids=run_ids, metrics=[metric]).df()
    finally:
        con.close()
    return df.head(top) if top else df


def compare(lake, run_a: str, run_b: str, *, metric: str = "time") -> pd.DataFrame:
    """Per call path: mean of ``metric`` in each run, difference, ratio, and which side has it."""
    rows = [lake.resolve(run_a), lake.resolve(run_b)]
    _check_metric(rows, metric)
    con, files, run_ids = _session(lake, rows)
    try:
        return sqlfiles.relation(con, "compare_runs", files=files, run_a=run_ids[0], run_b=run_ids[1],
                                 metric=metric).df()
    finally:
        con.close()
