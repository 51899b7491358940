"""Two GraphFrames on one graph (Hatchet's ``unify``), deep copies, and the one-sided-node marks of arithmetic.

``unify(gf, other)`` (in place on both, as Hatchet): both frames get the union of their graphs (a *new* graph;
the old ones are not touched, so frames that shared them are unaffected), their dataframes are re-pointed at
the union's nodes, and ``gf`` gets a row (NaN values) for every node it lacked, at each of its locations.
Like Hatchet, ``gf.dataframe`` then has a ``_missing_node`` column: 0 for a node of both graphs, 1 for a
node only in ``gf``'s graph ("left"), 2 only in ``other``'s ("right"); ``tree()`` marks them with ◀ / ▶.
perflake stores that column as a categorical of those integers (``== 1`` works as in Hatchet) so that it is
never taken for a metric by squash or arithmetic.

``mark_one_sided(result, left_graph, right_graph)`` puts the same column on the result of an arithmetic
operation.  Unlike
Hatchet, arithmetic leaves both operands untouched (Hatchet unifies them as a side effect).

``deepcopy(gf)``: new graph (new Node objects, same call-path ids), a deep copy of the dataframe re-pointed
at the new nodes, copied lists and metadata: nothing is shared with ``gf``.
"""

from __future__ import annotations

import copy as _copy

import numpy as np
import pandas as pd

from perflake.frame import graph_ops
from perflake.frame.tables import locations, node_ids

MISSING = "_missing_node"
LEFT, RIGHT = 1, 2


def reindex_nodes(df: pd.DataFrame, by_id: dict) -> pd.DataFrame:
    """``df`` (not copied) with its ``node`` index values replaced by ``by_id[node.node_id]``."""
    index = df.index
    if isinstance(index, pd.MultiIndex):
        level = index.names.index("node")
        fresh = pd.Index([by_id[n.node_id] for n in index.levels[level]], dtype=object)
        out = df.copy(deep=False)
        out.index = index.set_levels(fresh, level=level, verify_integrity=False)
        return out
    codes, uniques = pd.factorize(index)
    fresh = np.empty(len(uniques), dtype=object)
    fresh[:] = [by_id[n.node_id] for n in uniques]
    out = df.copy(deep=False)
    out.index = pd.Index(fresh[codes], name="node", dtype=object)
    return out


def deepcopy(gf):
    """A GraphFrame sharing nothing with ``gf`` (module docstring)."""
    graph = graph_ops.copy(gf.graph)
    df = reindex_nodes(gf.dataframe.copy(deep=True), graph_ops.by_id(graph))
    return type(gf)(graph, df, list(gf.exc_metrics), list(gf.inc_metrics), gf.default_metric,
                    _copy.deepcopy(gf.metadata))


def _graph_ids(graph) -> np.ndarray:
    return np.fromiter((n.node_id for n in graph.traverse()), np.uint64)


def sides(ids: np.ndarray, left_ids: np.ndarray, right_ids: np.ndarray) -> pd.Categorical:
    """0 / 1 (left only) / 2 (right only) for each id, as a categorical."""
    in_left, in_right = np.isin(ids, left_ids), np.isin(ids, right_ids)
    codes = np.where(in_left & ~in_right, LEFT, np.where(in_right & ~in_left, RIGHT, 0))
    return pd.Categorical(codes, categories=[0, LEFT, RIGHT])


def mark_one_sided(result, left_graph, right_graph):
    """Add ``_missing_node`` to ``result.dataframe``, the frame of an operation between frames on
    ``left_graph`` and ``right_graph`` (nothing when both are one graph); returns ``result``."""
    if left_graph is not right_graph:
        result.dataframe[MISSING] = sides(node_ids(result.dataframe), _graph_ids(left_graph), _graph_ids(right_graph))
    return result


def _missing_rows(gf, union_nodes: list, have: np.ndarray) -> pd.DataFrame:
    """NaN rows for the union's nodes that ``gf.dataframe`` lacks, one per location of ``gf``."""
    df = gf.dataframe
    ids = np.fromiter((n.node_id for n in union_nodes), np.uint64, len(union_nodes))
    lacking = [n for n, hit in zip(union_nodes, np.isin(ids, have)) if not hit]
    names = [n for n in df.index.names if n != "node"]
    if not lacking:
        return df.iloc[:0]
    if names:
        locs = df.index.droplevel("node").unique()
        tuples = [(n, *(loc if isinstance(loc, tuple) else (loc,))) for n in lacking for loc in locs]
        index = pd.MultiIndex.from_tuples(tuples, names=["node", *names])
    else:
        index = pd.Index(lacking, name="node", dtype=object)
    out = pd.DataFrame(index=index, columns=df.columns)
    for c in df.columns:
        out[c] = out[c].astype(df[c].dtype) if pd.api.types.is_float_dtype(df[c]) else out[c].astype(object)
    if "name" in out.columns:
        out["name"] = [n.frame.get("name") for n in index.get_level_values("node")]
    return out


def unify(gf, other) -> None:
    """Give ``gf`` and ``other`` one (new) union graph; ``gf`` gains rows for nodes it lacked (module docstring)."""
    if gf.graph is other.graph:
        return
    union = graph_ops.union(gf.graph, other.graph)
    by_id = graph_ops.by_id(union)
    left_ids, right_ids = _graph_ids(gf.graph), _graph_ids(other.graph)
    own = reindex_nodes(gf.dataframe, by_id).drop(columns=[MISSING], errors="ignore")
    gf.dataframe = own
    extra = _missing_rows(gf, list(union), node_ids(own))
    merged = pd.concat([own, extra]) if len(extra) else own.copy()
    position = {id(n): i for i, n in enumerate(union)}
    rank, thread = locations(merged)
    order = np.lexsort((thread, rank, [position[id(n)] for n in merged.index.get_level_values("node")]))
    merged = merged.iloc[order]
    merged[MISSING] = sides(node_ids(merged), left_ids, right_ids)
    gf.dataframe = merged[[MISSING, *[c for c in merged.columns if c != MISSING]]]
    other.dataframe = reindex_nodes(other.dataframe.copy(), by_id)
    gf.graph = other.graph = union
