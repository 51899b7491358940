"""Folded stacks (``to_flamegraph``) and Graphviz DOT (``to_dot``) of a GraphFrame, as Hatchet writes them.

Also the per-node value lookup that every view of a GraphFrame shares (:func:`per_node`, :func:`node_values`):
one value per call-path node, either at one location (``rank``, ``thread``: Hatchet's selection, by default
rank 0 / thread 0, ignored when the frame has no such index level) or aggregated over all locations
(``aggregate="sum" | "mean" | "min" | "max"``, NaN skipped; rank -1, a summary profile rather than a rank, is
left out of the aggregate of a metric that has values at real ranks).

Hatchet's ``GraphFrame.to_flamegraph(metric, name, rank, thread, threshold)`` (llnl-hatchet 2026.2.0) writes one
line per node in pre-order, ``root; child; node value``: frame names joined by ``"; "`` (semicolon *and*
space), then the node's own value at (rank, thread) rounded with Python's ``round`` (an integer, ties to
even).  ``threshold`` is accepted and ignored, by Hatchet as here.  perflake differs on purpose in two places:
the default metric is the *exclusive* counterpart of ``default_metric`` (flamegraph.pl sums the lines of a
stack's descendants itself, so inclusive values would be counted twice; Hatchet uses ``default_metric`` as is,
which for TAU is ``time (inc)``), and a value that was not measured (NaN) is written as 0 where Hatchet fails.

Hatchet's ``to_dot`` writes a ``strict digraph``: one ``"<nid>" [color=..., label=...]`` line per node whose
value is at least ``threshold`` times the largest value, coloured by matplotlib's ``Reds`` colour map between
the smallest and largest value, then one ``"<parent>" -> "<child>"`` line per edge to such a child.  Here the
colour scale spans the values drawn (Hatchet's spans every row of the column, all ranks), children come in
perflake's child order, NaN counts as 0 and quotes in names are escaped.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from perflake.errors import RenderError
from perflake.frame_tables import metric_roles, node_ids

AGGREGATES = ("sum", "mean", "min", "max")
HATCHET_SEPARATOR = "; "


# -- metric names ---------------------------------------------------------------------------------------------
def exclusive_metric(gf, metric: str | None) -> str | None:
    """``metric`` itself, unless it is an inclusive metric whose exclusive partner ``X`` of ``X (inc)`` exists."""
    metric = metric or gf.default_metric
    if metric in gf.inc_metrics and metric.endswith(" (inc)") and metric[: -len(" (inc)")] in gf.exc_metrics:
        return metric[: -len(" (inc)")]
    return metric


def inclusive_metric(gf, metric: str | None) -> str | None:
    """``metric`` itself, unless it is an exclusive metric whose inclusive partner ``X (inc)`` exists."""
    metric = metric or gf.default_metric
    if metric in gf.exc_metrics and f"{metric} (inc)" in gf.inc_metrics:
        return f"{metric} (inc)"
    return metric


def metric_names(gf) -> list[str]:
    """The frame's numeric metric columns (frame attributes such as ``line`` left out)."""
    return [m.name for m in metric_roles(gf)]


# -- per-node values --------------------------------------------------------------------------------------------
def _level(df: pd.DataFrame, name: str) -> np.ndarray | None:
    return df.index.get_level_values(name).to_numpy() if name in df.index.names else None


def per_node(gf, metrics: list[str], *, rank: int = 0, thread: int = 0, aggregate: str | None = None) -> pd.DataFrame:
    """One row per node present in the dataframe (index: call-path id, ascending), one column per metric."""
    df = gf.dataframe
    for m in metrics:
        if m not in df.columns or not pd.api.types.is_numeric_dtype(df[m]):
            raise RenderError(f"no metric {m!r} in this frame (metrics: {', '.join(metric_names(gf)) or 'none'})")
    if aggregate is not None and aggregate not in AGGREGATES:
        raise RenderError(f"unknown aggregate {aggregate!r} (choose from {', '.join(AGGREGATES)})")
    mask = np.ones(len(df), dtype=bool)
    if aggregate is None:
        for name, want in (("rank", rank), ("thread", thread)):
            values = _level(df, name)
            if values is not None:
                if not (values == want).any():
                    raise RenderError(f"{name} {want} is not in this frame ({name}s {values.min()}..{values.max()})")
                mask &= values == want
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


# -- folded stacks ------------------------------------------------------------------------------------------------
def _rounded(value: float) -> int:
    return round(float(value)) if np.isfinite(value) else 0


def to_flamegraph(gf, metric: str | None = None, name: str = "name", rank: int = 0, thread: int = 0,
                  threshold: float = 0.0, *, aggregate: str | None = None, sep: str = HATCHET_SEPARATOR) -> str:
    """Folded stacks for flamegraph.pl: ``a; b; c value`` per node (see the module docstring).

    Parameters
    ----------
    metric : exclusive metric to write (default: the exclusive partner of ``gf.default_metric``).
    name : the column whose text names a frame.
    rank, thread : the location written (Hatchet's selection); ignored when ``aggregate`` is given.
    threshold : accepted for Hatchet compatibility and ignored, as Hatchet does.
    aggregate : ``"sum"``, ``"mean"``, ``"min"`` or ``"max"`` over all locations instead of one location.
    sep : between frame names; Hatchet's ``"; "`` by default, ``";"`` is flamegraph.pl's own convention.
    """
    del threshold
    metric = metric or exclusive_metric(gf, None)
    values = node_values(gf, metric, rank=rank, thread=thread, aggregate=aggregate)
    labels = node_labels(gf, name)
    nodes = list(gf.graph)
    position = {id(n): i for i, n in enumerate(nodes)}
    stacks: dict[int, str] = {}

    def stack(node) -> str:  # the first-parent path, as Hatchet's Node.path(); memoised, no recursion
        chain = []
        while node is not None and id(node) not in stacks:
            chain.append(node)
            node = node.parents[0] if node.parents else None
        text = stacks[id(node)] if node is not None else None
        for n in reversed(chain):
            label = labels[position[id(n)]]
            text = label if text is None else f"{text}{sep}{label}"
            stacks[id(n)] = text
        return text

    return "".join(f"{stack(n)} {_rounded(values[i])}\n" for i, n in enumerate(nodes))


# -- DOT ------------------------------------------------------------------------------------------------------
def _dot_text(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ")


def to_dot(gf, metric: str | None = None, name: str = "name", rank: int = 0, thread: int = 0,
           threshold: float = 0.0, *, aggregate: str | None = None) -> str:
    """The graph in Graphviz DOT, as Hatchet's ``to_dot`` (see the module docstring)."""
    from matplotlib import colormaps
    from matplotlib.colors import rgb2hex

    metric = metric or gf.default_metric
    raw = node_values(gf, metric, rank=rank, thread=thread, aggregate=aggregate)
    values = np.where(np.isfinite(raw), raw, 0.0)
    labels = node_labels(gf, name)
    nodes = list(gf.graph)
    position = {id(n): i for i, n in enumerate(nodes)}
    lo, hi = (float(values.min()), float(values.max())) if len(values) else (0.0, 0.0)
    reds = colormaps["Reds"]
    kept = values >= threshold * hi
    node_lines, edge_lines, shown = [], [], set()
    todo = [(root, None) for root in reversed(gf.graph.roots)]
    while todo:
        node, parent = todo.pop()
        i = position[id(node)]
        if parent is not None:
            edge_lines.append(f'"{parent}" -> "{i}";\n')
        if not kept[i] or i in shown:
            continue
        shown.add(i)
        colour = rgb2hex(reds((values[i] - lo) / (hi - lo) if hi > lo else 0.0))
        node_lines.append(f'"{i}" [color="{colour}", label="{_dot_text(labels[i])}" shape=oval];\n')
        todo.extend((c, i) for c in reversed(node.children) if kept[position[id(c)]])
    header = ("strict digraph {\ngraph [bgcolor=transparent];\nnode [penwidth=4, shape=circle];\n"
              "edge [penwidth=2];\n\n")
    return header + "".join(node_lines) + "\n" + "".join(edge_lines) + "\n}\n"
