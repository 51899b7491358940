"""One value per call-path node of a GraphFrame: the lookup every view of a frame shares (folded stacks,
DOT, flame graphs, flat profiles, hot paths).

:func:`per_node` / :func:`node_values` give either the value at one location (``rank``, ``thread``: Hatchet's
selection, by default rank 0 / thread 0, ignored when the frame has no such index level) or an aggregate over
all locations (``aggregate="sum" | "mean" | "min" | "max"``, NaN skipped; rank -1, a summary profile rather than
a rank, is left out of the aggregate of a metric that has values at real ranks).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from perflake.errors import RenderError
from perflake.frame.tables import exclusive_partner, inclusive_partner, metric_roles, node_ids

AGGREGATES = ("sum", "mean", "min", "max")


# -- metric names ---------------------------------------------------------------------------------------------
def exclusive_metric(gf, metric: str | None) -> str | None:
    """``metric`` itself, unless it is an inclusive metric whose exclusive partner exists (``X`` of ``X (inc)`` or
    of ``inclusive#X``)."""
    metric = metric or gf.default_metric
    return (exclusive_partner(gf, metric) if metric in gf.inc_metrics else None) or metric


def inclusive_metric(gf, metric: str | None) -> str | None:
    """``metric`` itself, unless it is an exclusive metric whose inclusive partner exists (``X (inc)`` or
    ``inclusive#X``)."""
    metric = metric or gf.default_metric
    return (inclusive_partner(gf, metric) if metric in gf.exc_metrics else None) or metric


def metric_names(gf) -> list[str]:
    """The frame's numeric metric columns (frame attributes such as ``line`` left out)."""
    return [m.name for m in metric_roles(gf)]


# -- per-node values --------------------------------------------------------------------------------------------
def _level(df: pd.DataFrame, name: str) -> np.ndarray | None:
    return df.index.get_level_values(name).to_numpy() if name in df.index.names else None


def location_mask(df: pd.DataFrame, rank: int = 0, thread: int = 0) -> np.ndarray:
    """The rows of ``df`` at (rank, thread), over the levels it has; a RenderError when one it has lacks the value."""
    mask = np.ones(len(df), dtype=bool)
    for name, want in (("rank", rank), ("thread", thread)):
        values = _level(df, name)
        if values is not None:
            if len(values) and not (values == want).any():
                raise RenderError(f"{name} {want} is not in this frame ({name}s {values.min()}..{values.max()})")
            mask &= values == want
    return mask


def per_node(gf, metrics: list[str], *, rank: int = 0, thread: int = 0, aggregate: str | None = None) -> pd.DataFrame:
    """One row per node present in the dataframe (index: call-path id, ascending), one column per metric."""
    df = gf.dataframe
    for m in metrics:
        if m not in df.columns or not pd.api.types.is_numeric_dtype(df[m]):
            raise RenderError(f"no metric {m!r} in this frame (metrics: {', '.join(metric_names(gf)) or 'none'})")
    if aggregate is not None and aggregate not in AGGREGATES:
        raise RenderError(f"unknown aggregate {aggregate!r} (choose from {', '.join(AGGREGATES)})")
    mask = location_mask(df, rank, thread) if aggregate is None else np.ones(len(df), dtype=bool)
    table = {m: df[m].to_numpy(dtype=np.float64, na_value=np.nan)[mask] for m in metrics}
    ranks = _level(df, "rank")
    if aggregate is not None and ranks is not None and (ranks < 0).any():
        summary = ranks < 0
        for m, v in table.items():
            if np.isfinite(v[~summary]).any():  # the metric has real ranks: the summary row is not one of them
                table[m] = np.where(summary, np.nan, v)
    grouped = pd.DataFrame(table).groupby(node_ids(df)[mask], sort=True)
    how = aggregate or "sum"  # one row per node at one location: any reduction returns it
    out = grouped.sum(min_count=1) if how == "sum" else getattr(grouped, how)()
    out.index = out.index.astype(np.uint64)
    return out


def _graph_ids(gf) -> np.ndarray:
    return np.fromiter((n.node_id for n in gf.graph), dtype=np.uint64, count=len(gf.graph))


def align(values: pd.Series, order: np.ndarray, fill=np.nan) -> np.ndarray:
    """``values`` (indexed by ascending call-path id) at the ids ``order``; ``fill`` where absent."""
    ids = values.index.to_numpy(np.uint64)
    numeric = pd.api.types.is_numeric_dtype(values.dtype)
    out = np.full(len(order), fill, dtype=np.float64 if numeric else object)
    if len(ids):
        pos = np.minimum(np.searchsorted(ids, order), len(ids) - 1)
        hit = ids[pos] == order
        out[hit] = values.to_numpy(dtype=np.float64 if numeric else object)[pos[hit]]
    return out


def node_values(gf, metric: str, *, rank: int = 0, thread: int = 0, aggregate: str | None = None) -> np.ndarray:
    """The metric of every node of ``gf.graph`` in pre-order (``list(gf.graph)``); NaN where not measured."""
    table = per_node(gf, [metric], rank=rank, thread=thread, aggregate=aggregate)
    return align(table[metric], _graph_ids(gf))


def node_labels(gf, column: str = "name") -> list[str]:
    """The ``column`` text of every node of ``gf.graph`` in pre-order (from the dataframe, else the frame)."""
    df = gf.dataframe
    nodes = list(gf.graph)
    if column in df.columns:
        first = pd.Series(df[column].to_numpy(dtype=object)).groupby(node_ids(df), sort=True).first()
        first.index = first.index.astype(np.uint64)
        texts = align(first, _graph_ids(gf), fill=None)
    elif column in ("name", "type"):
        texts = [None] * len(nodes)
    else:
        raise RenderError(f"no column {column!r} in this frame (columns: {', '.join(map(str, df.columns))})")
    return [str(t) if t is not None else str(n.frame.get(column)) for t, n in zip(texts, nodes)]
