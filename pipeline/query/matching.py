"""Apply a query to a GraphFrame: predicates vectorised per node, path matching in SQL (sql/query_match.sql).

1. Every element's predicate is evaluated for all nodes at once (``predicates.py``) into a table
   ``query_matches(node_id, elem)``.
2. The quantifier sequence is compiled to a tiny automaton (:func:`compile_automaton`): a state is the element the
   last node of the path was consumed by; a transition ``src -> dst`` consumes a node matching element ``dst``,
   after skipping the zero-length stars between ``src`` and ``dst`` (the epsilon-closure, done here).
3. ``sql/query_match.sql`` walks (node, state) pairs forward from every possible start node along the graph's
   edges and backward from the accepting pairs, in DuckDB; the nodes on matching paths come back.

Semantics (Hatchet 2026.2.0's, checked against it on random trees): a match is a downward parent -> child chain
that may start at any node; the result is the set of all nodes on all matches.  A ``"*"`` element never consumes
a node that matches the element after it (Hatchet stops a star at the first such node), except the very first
node of a match.  Deviation: for two consecutive stars Hatchet looks only one element ahead and its result can
depend on siblings; here stars compose as in a regular expression (with the rule above).
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass

import duckdb
import numpy as np
import pyarrow as pa

from perflake.engine import resources, sqlfiles
from perflake.errors import InvalidMultiIndexMode, MultiIndexModeMismatch, QueryError
from perflake.query.compound import CompoundQuery
from perflake.query.model import MULTI_INDEX_MODES, Query, conds
from perflake.query.node_walk import NodeWalk
from perflake.query.predicates import NodeTable, evaluate

START = -1
_LOCAL = threading.local()  # one in-memory DuckDB connection per thread, reused across queries


def _connection() -> duckdb.DuckDBPyConnection:
    con = getattr(_LOCAL, "con", None)
    if con is None:
        con = _LOCAL.con = duckdb.connect(config=resources.duckdb_config(share=2))
    return con


@dataclass
class GraphTables:
    """Columns of one (immutable) graph, in pre-order: built once per graph and cached."""

    nodes: list
    node_ids: np.ndarray
    depth: np.ndarray
    is_leaf: np.ndarray
    edges: pa.Table
    frame_attrs: frozenset


_TABLES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def graph_tables(graph) -> GraphTables:
    cached = _TABLES.get(graph)
    if cached is not None:
        return cached
    nodes = list(graph.traverse())
    n = len(nodes)
    ids = np.fromiter((x.node_id for x in nodes), np.uint64, n)
    n_children = np.fromiter((len(x.children) for x in nodes), np.int64, n)
    child_ids = np.fromiter((c.node_id for x in nodes for c in x.children), np.uint64, int(n_children.sum()))
    edges = pa.table({"parent_id": pa.array(np.repeat(ids, n_children), pa.uint64()),
                      "child_id": pa.array(child_ids, pa.uint64())})
    out = GraphTables(nodes, ids, np.fromiter((x.depth for x in nodes), np.int64, n), n_children == 0, edges,
                      frozenset().union(*(x.frame.attrs for x in nodes)) if nodes else frozenset())
    _TABLES[graph] = out
    return out


def compile_automaton(wildcards: list[str]) -> dict:
    """Bound parameters of sql/query_match.sql for an expanded quantifier sequence of "." and "*"."""
    k = len(wildcards)

    def stars(a: int, b: int) -> bool:  # elements a..b-1 may all match zero nodes
        return all(wildcards[x] == "*" for x in range(a, b))

    def guard(j: int) -> int:  # a star does not consume a node that matches the next element
        return j + 1 if wildcards[j] == "*" and j + 1 < k else -1

    trans = [(START, j, j, -1) for j in range(k) if stars(0, j)]  # the first node of a match: no guard
    for i in range(k):
        for j in range(i, k):
            if (j > i or wildcards[i] == "*") and stars(i + 1, j):
                trans.append((i, j, j, guard(j)))
    src, dst, elem, grd = (list(x) for x in zip(*trans))
    return {"t_src": src, "t_dst": dst, "t_elem": elem, "t_guard": grd, "start": START,
            "accepting": [i for i in range(k) if stars(i + 1, k)]}


def to_query(obj, multi_index_mode: str | None = None):
    """A query object from a query object, an object-dialect list or a string-dialect string."""
    if isinstance(obj, (Query, CompoundQuery)):
        return obj
    if isinstance(obj, list):
        from perflake.query.object_dialect import ObjectQuery

        return ObjectQuery(obj, multi_index_mode)
    if isinstance(obj, str):
        from perflake.query.string_dialect import parse_string_dialect

        return parse_string_dialect(obj, multi_index_mode)
    raise QueryError(f"not a query: {type(obj).__name__} (use a list, a string or a query object)")


class _Run:
    """One application of a (possibly compound) query to one GraphFrame."""

    def __init__(self, gf, mode: str, con):
        self.gf, self.mode, self.con = gf, mode, con
        self.tables = graph_tables(gf.graph)
        self.sorted_ids = np.sort(self.tables.node_ids)
        self._node_tables: dict[str, NodeTable] = {}

    def node_table(self, mode: str) -> NodeTable:
        if mode not in self._node_tables:
            self._node_tables[mode] = NodeTable(self.gf, self.tables, mode)
        return self._node_tables[mode]

    def ids(self, query) -> np.ndarray:
        """Sorted unique node ids the query returns."""
        if isinstance(query, CompoundQuery):
            return query.combine([self.ids(q) for q in query.subqueries], self.sorted_ids)
        return self.path_ids(query)

    def path_ids(self, query: Query) -> np.ndarray:
        elements = query.expanded()
        if not elements:
            raise QueryError("an empty query matches nothing: give at least one element")
        mode = query.multi_index_mode or self.mode
        table = self.node_table(mode)
        if mode == "off" and table.multi and any(conds(pred) for _, pred in elements):
            raise MultiIndexModeMismatch(
                'multi_index_mode="off" cannot test conditions on a frame with several rows per node (indexed by '
                f'{", ".join(map(str, self.gf.dataframe.index.names))}): use "any" or "all" (Hatchet\'s), "mean" '
                "(perflake's: each node's mean), or drop_index_levels() first")
        masks: dict[int, np.ndarray] = {}
        node_col, elem_col = [], []
        for i, (_, pred) in enumerate(elements):
            if id(pred) not in masks:
                masks[id(pred)] = evaluate(pred, table, query.source)
            hit = self.tables.node_ids[masks[id(pred)]]
            node_col.append(hit)
            elem_col.append(np.full(len(hit), i, np.int32))
        matches = pa.table({"node_id": pa.array(np.concatenate(node_col), pa.uint64()),
                            "elem": pa.array(np.concatenate(elem_col), pa.int32())})
        if matches.num_rows == 0:
            return np.empty(0, np.uint64)
        params = compile_automaton([w for w, _ in elements])
        with sqlfiles.scope(self.con, tables={"query_matches": matches, "query_edges": self.tables.edges}) as cur:
            found = sqlfiles.relation(cur, "query_match", **params).fetchnumpy()["node_id"]
        return np.unique(np.asarray(found, np.uint64))


def match_node_ids(gf, query, *, multi_index_mode: str = "off", con: duckdb.DuckDBPyConnection | None = None):
    """The call-path ids (numpy uint64, graph pre-order) of every node on a path that ``query`` matches.

    ``query``: an object-dialect list, a string-dialect string, or a query object (``Query``, ``QueryMatcher``,
    ``ObjectQuery``, ``StringQuery``, compound).  ``multi_index_mode`` ("off", "any", "all", "mean") says how
    conditions read a node with several rows, unless the query object was built with its own mode; "off" (Hatchet's
    default) refuses a frame with several rows per node (MultiIndexModeMismatch), "mean" reads each node's mean.
    """
    if multi_index_mode not in MULTI_INDEX_MODES:
        raise InvalidMultiIndexMode(f"multi_index_mode must be one of {MULTI_INDEX_MODES}, not {multi_index_mode!r}")
    q = to_query(query)
    run = _Run(gf, multi_index_mode, con or _connection())
    found = run.ids(q)
    ids = run.tables.node_ids
    return ids[np.isin(ids, found)]


class _GraphAndRows:
    """What the engine reads of a GraphFrame: its graph and its dataframe."""

    def __init__(self, graph, dataframe):
        self.graph, self.dataframe = graph, dataframe


class QueryEngine(NodeWalk):
    """Hatchet's engine object: ``QueryEngine().apply(query, graph, dframe)`` returns the matched Nodes
    (vectorised); Hatchet's step methods and ``search_cache`` come from perflake.query.node_walk."""

    def apply(self, query, graph, dframe, multi_index_mode: str = "off") -> list:
        self.reset_cache()
        return apply(_GraphAndRows(graph, dframe), query, multi_index_mode=multi_index_mode)


def apply(gf, query, *, multi_index_mode: str = "off", con: duckdb.DuckDBPyConnection | None = None) -> list:
    """The Nodes (graph pre-order) on every path that ``query`` matches; see :func:`match_node_ids`."""
    ids = match_node_ids(gf, query, multi_index_mode=multi_index_mode, con=con)
    tables = graph_tables(gf.graph)
    keep = np.isin(tables.node_ids, ids)
    return [node for node, k in zip(tables.nodes, keep) if k]
