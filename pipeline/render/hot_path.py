"""The hot path of a run: from a start node, follow the child with the largest inclusive metric.

Semantics of Hatchet's ``GraphFrame.hot_path(start_node=None, metric=None, threshold=0.5)`` (the Chopper API of
the hatchet/hatchet fork; llnl-hatchet 2026.2.0 has no hot path):

* ranks and threads are first reduced per node with the mean (Chopper calls ``drop_index_levels()``);
  ``aggregate`` picks another reduction, ``aggregate=None`` one location (``rank``, ``thread``);
* the start is the root with the largest value unless ``start_node`` is given;
* at each step the child with the largest value is appended (the first such child on ties); if its value is
  below ``threshold`` times its parent's, the walk stops *after* appending it (the node where the cost
  spreads out is part of the path), otherwise it goes on from that child, until a leaf;
* the result is the list of nodes from the start node to the hot node.

perflake's choices: the default metric is the inclusive partner of ``default_metric`` (Chopper uses
``default_metric`` as is, for HPCToolkit an exclusive ``time`` on which a hot path means little); NaN counts
as 0; ``start_node`` may also be a frame name (the first node of that name in pre-order).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from perflake.errors import RenderError
from perflake.frame.node_values import inclusive_metric, node_values


def _start(gf, start_node, value) -> object:
    if start_node is None:
        return max(gf.graph.roots, key=value)
    if isinstance(start_node, str):
        for node in gf.graph:
            if node.frame.get("name") == start_node:
                return node
        raise RenderError(f"no node named {start_node!r} in this frame")
    by_id = gf.graph.node_by_id()
    if getattr(start_node, "node_id", None) not in by_id:
        raise RenderError(f"start node {start_node!r} is not a node of this frame")
    return by_id[start_node.node_id]


def _values(gf, metric, rank, thread, aggregate):
    metric = inclusive_metric(gf, metric)
    raw = node_values(gf, metric, rank=rank, thread=thread, aggregate=aggregate)
    values = np.where(np.isfinite(raw), raw, 0.0)
    index = {id(n): i for i, n in enumerate(gf.graph)}
    return metric, (lambda node: float(values[index[id(node)]]))


def hot_path(gf, start_node=None, metric: str | None = None, threshold: float = 0.5, *,
             aggregate: str | None = "mean", rank: int = 0, thread: int = 0) -> list:
    """Nodes from ``start_node`` along the largest child while it keeps ``threshold`` of its parent's value.

    Parameters
    ----------
    start_node : a Node of ``gf.graph``, a frame name, or None for the root with the largest value.
    metric : the metric to follow (its inclusive partner when it has one; default: ``default_metric``'s).
    threshold : stop after the first child whose value is below ``threshold`` x its parent's (Hatchet: 0.5).
    aggregate : ``mean`` (Hatchet's), ``sum``, ``min``, ``max`` over locations, or None for ``rank``/``thread``.
    """
    _, value = _values(gf, metric, rank, thread, aggregate)
    node = _start(gf, start_node, value)
    path = [node]
    while node.children:
        child = max(node.children, key=value)
        path.append(child)
        if value(child) < threshold * value(node):
            break
        node = child
    return path


def hot_path_table(gf, path: list, metric: str | None = None, *, aggregate: str | None = "mean", rank: int = 0,
                   thread: int = 0) -> pd.DataFrame:
    """One row per node of ``path``: depth, name, the metric, its share of the parent's and of the start's."""
    metric, value = _values(gf, metric, rank, thread, aggregate)
    values = np.array([value(n) for n in path])
    with np.errstate(divide="ignore", invalid="ignore"):
        of_parent = np.concatenate([[100.0], 100.0 * values[1:] / values[:-1]]) if len(path) else values
        of_start = 100.0 * values / values[0] if len(path) else values
    return pd.DataFrame({"depth": [n.depth for n in path], "name": [str(n.frame.get("name")) for n in path],
                         metric: values, "% of parent": of_parent, "% of start": of_start})
