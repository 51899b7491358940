"""Sums over descendants and exclusive-from-inclusive columns, with Hatchet's names and arguments:
``subtree_sum``, ``subgraph_sum`` and ``generate_exclusive_columns`` (all in place on ``gf.dataframe``, per
(node, rank, thread), as Hatchet computes them).

Everything runs on a (node x location) matrix per column (:class:`perflake.frame.node_matrix.NodeMatrix`): a
subtree sum folds children into parents level by level (one ``np.add.at`` per tree level, not one Python step
per node), an exclusive column is the inclusive one minus the scattered sum of the children's.

Semantics, as observed on llnl-hatchet 2026.2.0:

- ``subtree_sum(columns, out_columns=None, function=sum(min_count=1))``: a node's value combined with its
  children's results; NaN is skipped and a node with nothing measured below it stays NaN.  On a DAG a shared
  node counts once per path (Hatchet: "only correct for trees").  ``function`` may be any associative
  reduction of a DataFrame's rows; sum, max and min (``np.sum``, ``"max"``, ``lambda x: x.max()`` is generic)
  are vectorised, other callables are called once per node on a (node + children) x locations DataFrame.
- ``subgraph_sum``: the same over the *set* of descendants, each counted once; equal to ``subtree_sum`` on a
  tree (perflake's call trees always are; DAGs come from ``groupby_aggregate``).
- ``generate_exclusive_columns(inc_metrics=None)``: for every inclusive metric without an exclusive partner,
  ``own - sum of the children's`` (NaN children skipped, a NaN own value stays NaN).  ``X (inc)`` gives ``X``;
  any other inclusive name ``Y`` gives ``Y (exc)``.  ``inc_metrics`` restricts the candidates.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from perflake.frame.node_matrix import NodeMatrix

_NAMED = {np.sum: "sum", np.nansum: "sum", sum: "sum", np.max: "max", np.nanmax: "max", max: "max",
          np.min: "min", np.nanmin: "min", min: "min"}


def _kind(function) -> str | None:
    """'sum' / 'max' / 'min' for the reductions done with numpy; None for any other callable."""
    if function is None:
        return "sum"
    if isinstance(function, str):
        if function not in ("sum", "max", "min"):
            raise ValueError(f"unknown reduction {function!r} (use 'sum', 'max', 'min' or a callable)")
        return function
    try:
        return _NAMED.get(function)
    except TypeError:  # an unhashable callable
        return None


def _columns(gf, columns, out_columns) -> tuple[list[str], list[str]]:
    cols = list(gf.exc_metrics) if columns is None else [columns] if isinstance(columns, str) else list(columns)
    outs = cols if out_columns is None else [out_columns] if isinstance(out_columns, str) else list(out_columns)
    if len(outs) != len(cols):
        raise ValueError(f"{len(cols)} columns but {len(outs)} out_columns")
    missing = [c for c in cols if c not in gf.dataframe.columns]
    if missing:
        raise KeyError(f"no column {missing[0]!r} in the dataframe")
    return cols, outs


def _reduce(block: np.ndarray, kind: str | None, function) -> np.ndarray:
    """Reduce the rows of ``block`` (rows x locations) to one row."""
    if kind == "sum":
        found = ~np.isnan(block)
        return np.where(found.any(axis=0), np.where(found, block, 0.0).sum(axis=0), np.nan)
    if kind == "max":
        return np.fmax.reduce(block, axis=0)
    if kind == "min":
        return np.fmin.reduce(block, axis=0)
    result = function(pd.DataFrame(block))
    return np.asarray(result, dtype=np.float64).reshape(block.shape[1])


def _fold(nm: NodeMatrix, values: np.ndarray, kind: str | None, function) -> np.ndarray:
    """Each node combined with its children's results, bottom-up (tree semantics)."""
    if kind == "sum":
        found = ~np.isnan(values)
        total, count = np.where(found, values, 0.0), found.astype(np.int64)
        for idx in nm.levels():
            np.add.at(total, nm.parent[idx], total[nm.child[idx]])
            np.add.at(count, nm.parent[idx], count[nm.child[idx]])
        return np.where(count > 0, total, np.nan)
    out = values.copy()
    if kind in ("max", "min"):
        ufunc = np.fmax if kind == "max" else np.fmin
        for idx in nm.levels():
            ufunc.at(out, nm.parent[idx], out[nm.child[idx]])
        return out
    kids = [[] for _ in nm.nodes]
    for p, c in zip(nm.parent.tolist(), nm.child.tolist()):
        kids[p].append(c)
    for i in np.argsort(nm.heights(), kind="stable").tolist():  # leaves first
        out[i] = _reduce(np.vstack([out[i], *[out[c] for c in kids[i]]]), None, function)
    return out


def _descendant_sets(nm: NodeMatrix) -> list[list[int]]:
    """Each node's descendants (itself included), each once, for DAGs."""
    kids = [[] for _ in nm.nodes]
    for p, c in zip(nm.parent.tolist(), nm.child.tolist()):
        kids[p].append(c)
    sets: list[set] = [set() for _ in nm.nodes]
    for i in np.argsort(nm.heights(), kind="stable").tolist():
        sets[i] = {i}.union(*(sets[c] for c in kids[i]))
    return [sorted(s) for s in sets]


def subtree_sum(gf, columns, out_columns=None, function=None) -> None:
    """For every row, ``out_columns`` = ``function`` over the row's node and all its descendants (in place)."""
    cols, outs = _columns(gf, columns, out_columns)
    nm, kind = NodeMatrix(gf), _kind(function)
    results = {out: nm.rows(_fold(nm, nm.matrix(gf.dataframe[c].to_numpy(np.float64, na_value=np.nan)), kind,
                                  function)) for c, out in zip(cols, outs)}
    for out, values in results.items():
        gf.dataframe[out] = values


def subgraph_sum(gf, columns, out_columns=None, function=None) -> None:
    """As :func:`subtree_sum`, but a descendant reachable by several paths counts once."""
    nm = NodeMatrix(gf)
    if nm.is_tree():
        return subtree_sum(gf, columns, out_columns, function)
    cols, outs = _columns(gf, columns, out_columns)
    kind, members = _kind(function), _descendant_sets(nm)
    results = {}
    for c, out in zip(cols, outs):
        values = nm.matrix(gf.dataframe[c].to_numpy(np.float64, na_value=np.nan))
        summed = np.vstack([_reduce(values[m], kind, function) for m in members])
        results[out] = nm.rows(summed)
    for out, values in results.items():
        gf.dataframe[out] = values
    return None


def exclusive_name(inc: str) -> str:
    """``X (inc)`` -> ``X``; any other inclusive name ``Y`` -> ``Y (exc)`` (Hatchet's naming)."""
    return inc[: -len("(inc)")].rstrip() if inc.endswith("(inc)") else f"{inc} (exc)"


def generate_exclusive_columns(gf, inc_metrics=None) -> None:
    """Exclusive columns for inclusive metrics that have none: own value minus the children's (in place)."""
    wanted = gf.inc_metrics if inc_metrics is None else [inc_metrics] if isinstance(inc_metrics, str) else inc_metrics
    todo = [m for m in wanted if m in gf.inc_metrics and m in gf.dataframe.columns
            and exclusive_name(m) not in gf.exc_metrics]
    if not todo:
        return
    nm = NodeMatrix(gf)
    for inc in todo:
        values = nm.matrix(gf.dataframe[inc].to_numpy(np.float64, na_value=np.nan))
        children = np.zeros_like(values)
        np.add.at(children, nm.parent, np.nan_to_num(values[nm.child], nan=0.0))
        gf.dataframe[exclusive_name(inc)] = nm.rows(values - children)
        gf.exc_metrics.append(exclusive_name(inc))
