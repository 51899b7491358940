"""Comparison of two runs or two groups of runs, and Hatchet's arithmetic between GraphFrames.

``compare(lake, a, b)``: ``a`` and ``b`` are each a run (id or unique prefix) or a list of runs.  The
value of a side at a call path is the mean over the side's runs of each run's value, a run's value being
its mean over locations (rank >= 0, every thread) where the node has a value -- the ``mean`` of
perflake.analytics.ensemble with the two sides as two groups (runs where the path is absent do not count; ``runs_a``
/ ``runs_b`` say how many did).  Union semantics: a path of one side only is kept, NaN on the other side,
``status`` 'only a' / 'only b'.  ``diff = b - a``, ``ratio = b / a``, ``speedup = a / b``; biggest
regressions (largest ``diff``) first, one-sided paths last.

``add / sub / mul / div`` (+ ``iadd``... in place) combine two GraphFrames per (call path, rank, thread)
and metric with a full outer join on call-path ids (sql/compare_arith.sql); the result's graph is the union
of both call-path sets, built from tables (sql/compare_union_nodes.sql, GraphFrame.from_tables), no Python
graph union.  By default the values follow Hatchet exactly (its ``DataFrame.update`` of the left operand with
``op(left, right)``): IEEE results (x / 0 is inf, 0 / 0 NaN), and where that result is NaN -- a node or rank
of the left operand only, or 0 / 0 -- the left value is kept, so a node only in the right operand is NaN.
``fill_value=None`` gives plain IEEE results with a missing side as NaN; a number fills missing sides with it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from perflake.analytics import selection
from perflake.analytics.ensemble import group_stats
from perflake.catalogs import metric_columns
from perflake.engine import sqlfiles
from perflake.errors import LakeError
from perflake.frame.graph import frame_type
from perflake.frame.tables import FRAME_COLUMNS, metric_roles, metrics_table, node_ids


def _side(run_or_runs) -> list[str]:
    return [run_or_runs] if isinstance(run_or_runs, str) else list(run_or_runs)


def compare(lake, a, b, *, metric: str = "time", scheduler=None) -> pd.DataFrame:
    """Per call path: a, b, runs_a, runs_b, diff, ratio, speedup, status (module docstring)."""
    side_a, side_b = _side(a), _side(b)
    if not side_a or not side_b:
        raise LakeError("compare needs at least one run on each side")
    sel = selection.select(lake, runs=side_a + side_b)
    rows = selection.with_metric(sel, metric)
    groups = []
    for group_id, side in enumerate((side_a, side_b)):
        ids = selection.resolve_ids(sel.catalog, side)
        missing = sorted(set(ids) - set(rows["run_id"]))
        if missing:
            raise LakeError(f"run {missing[0]} has no metric {metric!r}")
        groups.append(rows[rows["run_id"].isin(ids)].assign(group_id=group_id))
    groups = pd.concat(groups, ignore_index=True)
    with selection.session(lake) as con:
        stats = group_stats(lake, groups, metric, stats=("count", "mean"), scheduler=scheduler, con=con)
        with sqlfiles.scope(con, tables={"group_stats_t": stats}) as cur:
            out = sqlfiles.relation(cur, "compare_groups").df()
        nodes = selection.union_nodes(lake, groups["run_id"], groups["batch"].unique(), con=con).to_pandas()
    out = out.merge(nodes, on="node_id", how="left")
    return out[["node_id", "name", "path", "a", "b", "runs_a", "runs_b", "diff", "ratio", "speedup", "status"]]


def nodes_table(gf) -> pa.Table:
    """The GraphFrame's call paths as a nodes table (first parent of each node; file/line/module from the
    node's first row in the dataframe) -- the shape GraphFrame.from_tables takes back."""
    nodes = list(gf.graph.traverse())
    ids = [n.node_id for n in nodes]
    df = gf.dataframe
    present = [c for c in FRAME_COLUMNS if c in df.columns]
    first = df[present].groupby(node_ids(df), sort=False).first().reindex(ids) if present else pd.DataFrame(index=ids)
    data = {"node_id": pa.array(ids, pa.uint64()),
            "parent_id": pa.array([n.parents[0].node_id if n.parents else None for n in nodes], pa.uint64()),
            "depth": pa.array([n.depth for n in nodes], pa.int32()),
            "name": pa.array([n.frame.get("name") for n in nodes], pa.string()),
            "type": pa.array([frame_type(n.frame) for n in nodes], pa.string())}
    for c, kind in (("file", pa.string()), ("line", pa.int64()), ("end_line", pa.int64()), ("module", pa.string())):
        values = first[c].tolist() if c in first else [None] * len(ids)
        data[c] = pa.array([_attr(v, kind) for v in values], kind)
    return pa.table(data)


def _attr(value, kind):
    """A frame attribute as the nodes table types it: None when missing or of the wrong kind."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return None
    if kind == pa.string():
        return value if isinstance(value, str) else None
    return None if isinstance(value, str) else int(value)


def _arith(gf1, gf2, op: str, fill_value):
    keep_left = isinstance(fill_value, str) and fill_value == "default"  # Hatchet's update semantics
    fill = None if keep_left else fill_value
    info = [m for m in metric_roles(gf1) if m.name in gf2.dataframe.columns]
    names = [m.name for m in info]
    if not names:
        raise ValueError("the GraphFrames have no metric column in common")
    levels1, levels2 = list(gf1.dataframe.index.names), list(gf2.dataframe.index.names)
    if set(levels1) != set(levels2):  # else a frame averaged over ranks would be matched with rank 0 alone
        raise ValueError(f"the GraphFrames are indexed differently, ({', '.join(map(str, levels1))}) and "
                         f"({', '.join(map(str, levels2))}): call drop_index_levels() on both or on neither")
    # DuckDB folds column names' case: metrics such as calls and Calls get distinct columns inside the statement
    keys = ("run_id", "node_id", "rank", "thread")
    cols = metric_columns.internal(names, (*keys, "side", "metric", "value"))
    left, right = (metrics_table(gf.dataframe, names) for gf in (gf1, gf2))
    left, right = (t.rename_columns([*keys, *(cols[c] for c in t.column_names[4:])]) for t in (left, right))
    tables = {"left_t": left, "right_t": right, "nodes_left": nodes_table(gf1), "nodes_right": nodes_table(gf2)}
    with sqlfiles.scope(tables=tables) as con:
        sqlfiles.materialize(con, "metric_long", "compare_arith", metrics=[cols[n] for n in names], op=op,
                             fill=None if fill is None else float(fill), keep_left=keep_left)
        wide = sqlfiles.relation(con, "pivot_metrics").to_arrow_table()
        nodes = sqlfiles.relation(con, "compare_union_nodes").to_arrow_table()
    back = {c: n for n, c in cols.items()}
    wide = wide.rename_columns([c if c in keys else back.get(c, c) for c in wide.column_names])
    for name in names:  # a metric with no value at all is missing from the pivot
        if name not in wide.column_names:
            wide = wide.append_column(name, pa.nulls(len(wide), pa.float64()))
    return type(gf1).from_tables(nodes, wide, info, dict(gf1.metadata))


def add(gf1, gf2, *, fill_value="default"):
    """gf1 + gf2 per (call path, rank, thread) and shared metric; one-sided values count as 0."""
    return _arith(gf1, gf2, "add", fill_value)


def sub(gf1, gf2, *, fill_value="default"):
    """gf1 - gf2 per (call path, rank, thread) and shared metric; one-sided values count as 0."""
    return _arith(gf1, gf2, "sub", fill_value)


def mul(gf1, gf2, *, fill_value="default"):
    """gf1 * gf2 per (call path, rank, thread) and shared metric; NaN where one side lacks the value."""
    return _arith(gf1, gf2, "mul", fill_value)


def div(gf1, gf2, *, fill_value="default"):
    """gf1 / gf2 per (call path, rank, thread) and shared metric; NaN where one side lacks it or gf2 is 0."""
    return _arith(gf1, gf2, "div", fill_value)


def _inplace(gf1, result):
    """Make ``gf1`` the result (new graph and dataframe objects; nothing another frame shares is mutated)."""
    gf1.graph, gf1.dataframe = result.graph, result.dataframe
    gf1.exc_metrics, gf1.inc_metrics, gf1.default_metric = result.exc_metrics, result.inc_metrics, result.default_metric
    return gf1


def iadd(gf1, gf2, *, fill_value="default"):
    return _inplace(gf1, add(gf1, gf2, fill_value=fill_value))


def isub(gf1, gf2, *, fill_value="default"):
    return _inplace(gf1, sub(gf1, gf2, fill_value=fill_value))


def imul(gf1, gf2, *, fill_value="default"):
    return _inplace(gf1, mul(gf1, gf2, fill_value=fill_value))


def idiv(gf1, gf2, *, fill_value="default"):
    return _inplace(gf1, div(gf1, gf2, fill_value=fill_value))
