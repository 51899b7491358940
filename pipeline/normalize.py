"""ProfileRows (a reader's output) -> the canonical tables: nodes, edges, metrics.

This is where call-path ids are attached (``sql/normalize_nodes.sql`` defines them) and where a missing
inclusive or exclusive metric is derived, once, in SQL.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import duckdb
import pyarrow as pa

from perflake import sqlfiles
from perflake.errors import ReaderError
from perflake.readers.base import EXCLUSIVE, INCLUSIVE, Metric, ProfileRows

MAX_DEPTH = 10_000


@dataclass
class Normalized:
    """One run in canonical form (no run_id column yet)."""

    nodes: pa.Table  # node_id, parent_id, depth, name, type, file, line, end_line, module
    edges: pa.Table  # parent_id, child_id
    metrics: pa.Table  # node_id, rank, thread, <metric columns>
    metric_info: list[Metric]
    ranks: int
    threads: int


def _complete_metrics(metrics: list[Metric]) -> tuple[list[Metric], list[tuple[str, str]], list[tuple[str, str]]]:
    """Add the missing half of every exclusive/inclusive pair; return (metrics, to_inclusive, to_exclusive)."""
    names = {m.name for m in metrics}
    out, to_inc, to_exc = [], [], []
    for m in metrics:
        out.append(m)
        if m.role == EXCLUSIVE:
            inc = m.pair or f"{m.name} (inc)"
            if inc not in names:
                to_inc.append((m.name, inc))
                out.append(Metric(inc, INCLUSIVE, m.unit, m.name))
                out[-2] = replace(m, pair=inc)
        elif m.role == INCLUSIVE and m.pair and m.pair not in names:
            to_exc.append((m.name, m.pair))
            out.append(Metric(m.pair, EXCLUSIVE, m.unit, m.name))
    return out, to_inc, to_exc


def _derive(con, name: str, pairs: list[tuple[str, str]], **extra) -> None:
    """Run sql/<name>.sql for ``pairs`` (source, target) and merge the pivoted result into metrics_t."""
    src, dst = [p[0] for p in pairs], [p[1] for p in pairs]
    params = {"exc": src, "inc": dst} if name == "inclusive" else {"inc": src, "exc": dst}
    sqlfiles.materialize(con, "metric_long", name, **params)
    sqlfiles.materialize(con, "derived_t", "pivot_metrics")
    sqlfiles.materialize(con, "metrics_t", "merge_metrics")


def normalize(rows: ProfileRows, con: duckdb.DuckDBPyConnection | None = None) -> Normalized:
    """Attach call-path ids, merge identical call paths, derive missing exclusive/inclusive metrics."""
    own = con is None
    con = con or duckdb.connect()
    try:
        con.register("frames_in", rows.frames)
        con.register("values_in", rows.values)
        sqlfiles.materialize(con, "local_nodes", "normalize_nodes", max_depth=MAX_DEPTH)
        reached = con.table("local_nodes").aggregate("count(*)").fetchall()[0][0]
        if reached != rows.frames.num_rows:
            raise ReaderError(
                rows.source,
                f"{rows.frames.num_rows - reached} nodes are not reachable from a root (a parent cycle, or deeper than {MAX_DEPTH})",
            )
        sqlfiles.materialize(con, "nodes_t", "nodes_distinct")
        names = [m.name for m in rows.metrics]
        sqlfiles.materialize(con, "metrics_t", "normalize_metrics", metrics=names)
        edges = sqlfiles.relation(con, "edges_from_nodes").to_arrow_table()
        metric_info, to_inc, to_exc = _complete_metrics(rows.metrics)
        if to_inc:
            con.register("edges_t", edges)
            sqlfiles.materialize(con, "closure_t", "closure", max_depth=MAX_DEPTH)
            _derive(con, "inclusive", to_inc)
        if to_exc:
            con.register("edges_t", edges)
            _derive(con, "exclusive", to_exc)
        order = ["node_id", "rank", "thread"] + [m.name for m in metric_info]
        metrics = con.table("metrics_t").to_arrow_table().select(order)
        ranks, threads = sqlfiles.relation(con, "location_counts").fetchall()[0]
        nodes = con.table("nodes_t").to_arrow_table()
        return Normalized(nodes, edges, metrics, metric_info, int(ranks), int(threads))
    finally:
        for name in ("frames_in", "values_in", "edges_t"):
            try:
                con.unregister(name)
            except Exception:
                pass
        if own:
            con.close()
