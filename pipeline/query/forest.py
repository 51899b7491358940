"""The query automaton over many runs at once: one forest of call paths, one bit per (call path, run).

Call-path ids are shared by the runs of a lake: the same id has the same parent, depth and frame in every run,
and a run's graph is the part of the union forest its call paths cover.  So a query over N runs need not be
applied N times: every ``(call path, run)`` answer is one bit of a matrix with one row per call path (graph
pre-order of the union) and one column per run, packed 8 runs to a byte (``pack``/``unpack``).

:func:`match` runs the automaton of :func:`perflake.query.matching.compile_automaton` (the same transitions,
guards and accepting states as ``sql/query_match.sql``) over these matrices: forward from the roots one depth
level at a time, then backward from the deepest level, each step a vectorised AND/OR of whole rows.  For every
run it returns exactly the nodes that ``sql/query_match.sql`` returns on that run's own graph, provided each
run's graph is the sub-forest of the union spanned by its call paths (every call path's parent is in the run
too; perflake's ingest guarantees it, the lake query checks it).

:func:`structure_frame` builds the predicate inputs of the union forest exactly as
``GraphFrame.from_tables`` builds a run's frame columns, so that conditions on frame attributes (name, file,
line...) are tested once per call path by the engine's own code (perflake.query.predicates).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from perflake.query.matching import START, compile_automaton

FRAME_COLUMNS = ("name", "file", "module", "line", "end_line")  # what GraphFrame.from_tables makes columns
# (perflake.frame.tables.EXTRA_FRAME_COLUMNS besides name)


def pack(bits: np.ndarray) -> np.ndarray:
    """(rows, runs) booleans -> (rows, ceil(runs / 8)) uint8, run r in bit r % 8 of byte r // 8."""
    return np.packbits(np.asarray(bits, bool), axis=-1, bitorder="little")


def unpack(packed: np.ndarray, n_runs: int) -> np.ndarray:
    """The inverse of :func:`pack`: (rows, n_runs) booleans."""
    return np.unpackbits(packed, axis=-1, count=n_runs, bitorder="little").astype(bool)


DENSE_CELLS = 1 << 26  # up to this many (row, run) cells a boolean matrix is packed; beyond, bits are set in place


def pack_cells(rows: np.ndarray, runs: np.ndarray, n_rows: int, n_runs: int) -> np.ndarray:
    """Packed bits set at the (row, run) cells listed (repetitions allowed), zero elsewhere."""
    if n_rows * n_runs <= DENSE_CELLS:
        dense = np.zeros((n_rows, n_runs), bool)
        dense[rows, runs] = True
        return pack(dense)
    out = np.zeros((n_rows, (n_runs + 7) // 8), np.uint8)
    runs = np.asarray(runs, np.int64)
    np.bitwise_or.at(out, (rows, runs >> 3), (1 << (runs & 7)).astype(np.uint8))
    return out


def bits_at(packed: np.ndarray, rows: np.ndarray, runs: np.ndarray) -> np.ndarray:
    """The bits of ``packed`` at the (row, run) cells listed, as booleans."""
    runs = np.asarray(runs, np.int64)
    return ((packed[rows, runs >> 3] >> (runs & 7).astype(np.uint8)) & 1).astype(bool)


def cells(packed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(rows, runs) of the set bits, sorted by run, then row."""
    r, b = np.nonzero(packed)
    bits = np.unpackbits(packed[r, b][:, None], axis=1, bitorder="little").astype(bool)
    k, bit = np.nonzero(bits)
    rows, runs = r[k], b[k].astype(np.int64) * 8 + bit
    order = np.lexsort((rows, runs))
    return rows[order], runs[order]


def run_row(runs: np.ndarray) -> np.ndarray:
    """A packed row from a boolean per run (to AND with every row of a matrix)."""
    return pack(np.asarray(runs, bool)[None, :])[0]


class Forest:
    """The union forest: ``parent[i]`` is the row of row i's parent (-1: a root); rows in pre-order."""

    def __init__(self, parent: np.ndarray):
        self.parent = np.asarray(parent, np.int64)
        n = len(self.parent)
        self.n = n
        level = np.where(self.parent < 0, 0, -1)
        while (todo := level < 0).any():  # one pass per depth level: parents come first in pre-order anyway
            ready = todo & (level[np.maximum(self.parent, 0)] >= 0)
            if not ready.any():
                raise ValueError("the parent array has a cycle")
            level[ready] = level[self.parent[ready]] + 1
        self.levels = [np.flatnonzero(level == d) for d in range(int(level.max()) + 1 if n else 0)]
        # per level > 0: its rows sorted by parent, and where each parent's run of children starts
        self.groups = [None]
        for rows in self.levels[1:]:
            rows = rows[np.argsort(self.parent[rows], kind="stable")]
            parents = self.parent[rows]
            starts = np.flatnonzero(np.r_[True, parents[1:] != parents[:-1]])
            self.groups.append((rows, parents[starts], starts))

    def children_or(self, packed: np.ndarray) -> np.ndarray:
        """Per row, the OR of its children's rows of ``packed`` (zero for a leaf of the union)."""
        out = np.zeros_like(packed)
        for rows, parents, starts in self.groups[1:]:
            out[parents] = np.bitwise_or.reduceat(packed[rows], starts, axis=0)
        return out

    def leaves(self, present: np.ndarray) -> np.ndarray:
        """Packed: call path i is a leaf of run r's graph (present, and none of its children present)."""
        return present & ~self.children_or(present)


def positions(rows: np.ndarray, runs: np.ndarray) -> np.ndarray:
    """For (row, run) cells (each once; rows in pre-order), each cell's position in its run's pre-order."""
    order = np.lexsort((rows, runs))
    sorted_runs = runs[order]
    first = np.searchsorted(sorted_runs, sorted_runs, side="left")
    pos = np.empty(len(rows), np.int64)
    pos[order] = np.arange(len(rows)) - first
    return pos


def match(forest: Forest, masks: list[np.ndarray], wildcards: list[str]) -> np.ndarray:
    """Packed (row, run) bits of the nodes on a matching path, per run.  ``masks[i]`` (packed, one per expanded
    element): the call paths of each run that satisfy element i (zero where a run lacks the call path);
    ``wildcards[i]``: its quantifier, "." or "*"."""
    auto = compile_automaton(wildcards)
    k, shape = len(wildcards), masks[0].shape
    allowed = []
    for src, dst, elem, guard in zip(auto["t_src"], auto["t_dst"], auto["t_elem"], auto["t_guard"]):
        a = masks[elem] if guard < 0 else masks[elem] & ~masks[guard]
        allowed.append((src, dst, a))
    fwd = [np.zeros(shape, np.uint8) for _ in range(k)]
    for d, rows in enumerate(forest.levels):
        par = forest.parent[rows]
        for src, dst, a in allowed:
            if src == START:
                fwd[dst][rows] |= a[rows]
            elif d > 0:
                fwd[dst][rows] |= a[rows] & fwd[src][par]
    accepting = set(auto["accepting"])
    back = [fwd[s] if s in accepting else np.zeros(shape, np.uint8) for s in range(k)]
    for d in range(len(forest.levels) - 1, 0, -1):  # children at level d pass acceptance up to their parents
        rows, parents, starts = forest.groups[d]
        for src, dst, a in allowed:
            if src == START:
                continue
            hit = a[rows] & back[dst][rows]
            if hit.any():
                back[src][parents] |= np.bitwise_or.reduceat(hit, starts, axis=0) & fwd[src][parents]
    out = np.zeros(shape, np.uint8)
    for b in back:
        out |= b
    return out


class _Frame:
    """A node's frame as the predicate code reads it: ``attrs`` without the missing values (as Frame)."""

    __slots__ = ("attrs",)

    def __init__(self, attrs: dict):
        self.attrs = attrs


class _Node:
    """A call path of the union: what NodeTable reads of a graph node (its frame and id)."""

    __slots__ = ("frame", "node_id")

    def __init__(self, frame: _Frame, node_id: int):
        self.frame, self.node_id = frame, node_id


def frame_ranks(frames: list) -> np.ndarray:
    """Per frame (perflake.frame.graph.Frame), its rank in the order a traversal sorts siblings by
    (perflake.frame.graph.ordered: the frames' sorted (attribute, value) pairs; equal frames share a rank)."""
    from perflake.frame.graph import _text

    distinct = {f._tuple for f in frames}
    try:
        keys = sorted(distinct)
    except TypeError:  # values of different types: ordered() sorts by their text then
        keys = sorted(distinct, key=_text)
    rank = {k: i for i, k in enumerate(keys)}
    return np.fromiter((rank[f._tuple] for f in frames), np.int64, len(frames))


def sibling_order(nodes: pa.Table, frames: list, node_ordering: bool) -> np.ndarray:
    """Per row of ``nodes``, its position key among its siblings in a run's pre-order (the Graph's): by frame
    (unless ``node_ordering``: then as stored), ties by the stored child order (``child_order``, then
    ``child_order_max``: the least and greatest over the runs, perflake.analytics.lake_match checks that they
    order every run alike), then by table order (a lake without child orders: its graphs keep table order)."""
    n = nodes.num_rows
    cols = [np.arange(n)]
    for c in ("child_order_max", "child_order"):
        if c in nodes.column_names:
            cols.append(nodes.column(c).fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64))
    if not node_ordering:
        cols.append(frame_ranks(frames))
    return np.argsort(np.lexsort(cols)) if n else np.zeros(0, np.int64)


class StructureFrame:
    """What the predicate code (perflake.query.predicates.NodeTable) reads of a GraphFrame, for the union of
    the runs' call paths, built without a Graph: ``tables`` (a GraphTables: nodes in pre-order, ids, depth,
    leaves, edges, frame attributes) and ``dataframe`` (one row per node, the frame columns as
    ``GraphFrame.from_tables`` makes them; tests/test_lake_query_runs.py checks both against a real frame).

    ``nodes``: the lake's nodes table of the call paths, sorted by id (a run's table order).  The pre-order is
    the Graph's: roots and siblings in :func:`sibling_order` (``node_ordering``: a node-ordered graph's, as
    Caliper's); ``parent`` gives each pre-order row's parent row (-1: a root, also when its parent is not
    among ``nodes``)."""

    def __init__(self, nodes: pa.Table, node_ordering: bool = False):
        from perflake.frame.graph import Frame
        from perflake.frame.tables import typed_frame_column
        from perflake.query.matching import GraphTables

        n = nodes.num_rows
        ids = nodes.column("node_id").to_numpy(zero_copy_only=False).astype(np.uint64)
        parent_ids = nodes.column("parent_id")
        at = np.minimum(np.searchsorted(ids, parent_ids.fill_null(0).to_numpy().astype(np.uint64)), max(n - 1, 0))
        has = ~parent_ids.is_null().to_numpy(zero_copy_only=False)
        up = np.where(has & (ids[at] == parent_ids.fill_null(0).to_numpy().astype(np.uint64)), at, -1) if n else at
        names = nodes.column("name").to_pylist()
        types = nodes.column("type").to_pylist() if "type" in nodes.column_names else [None] * n
        frames = [Frame._of({"name": a, "type": b}) for a, b in zip(names, types)]  # as Graph.from_nodes_table
        order = np.lexsort((sibling_order(nodes, frames, node_ordering), up)) if n else np.zeros(0, np.int64)
        children: dict[int, list[int]] = {}
        for i in order.tolist():
            children.setdefault(int(up[i]), []).append(i)
        pre, stack = [], list(reversed(children.get(-1, [])))
        while stack:
            i = stack.pop()
            pre.append(i)
            stack.extend(reversed(children.get(i, ())))
        pre = np.array(pre, np.int64)
        row_of = np.empty(n, np.int64)
        row_of[pre] = np.arange(n)
        self.table_rows = pre  # pre-order row -> row of ``nodes``
        self.node_ids = ids[pre]
        self.parent = np.where(up[pre] >= 0, row_of[np.maximum(up[pre], 0)], -1)
        self.depth = nodes.column("depth").to_numpy(zero_copy_only=False).astype(np.int64)[pre]
        self.names = [names[i] for i in pre.tolist()]
        self.frame_rank = frame_ranks(frames)[pre] if n else np.zeros(0, np.int64)  # per pre-order row
        attrs = [frames[i].attrs for i in pre.tolist()]
        order_nodes = np.empty(n, dtype=object)
        order_nodes[:] = [_Node(_Frame(a), int(x)) for a, x in zip(attrs, self.node_ids.tolist())]
        n_children = np.bincount(self.parent[self.parent >= 0], minlength=n)
        child = np.flatnonzero(self.parent >= 0)
        edges = pa.table({"parent_id": pa.array(self.node_ids[self.parent[child]], pa.uint64()),
                          "child_id": pa.array(self.node_ids[child], pa.uint64())})
        self.tables = GraphTables(list(order_nodes), self.node_ids, self.depth, n_children == 0, edges,
                                  frozenset().union(*attrs) if n else frozenset())
        columns = {}
        for c in FRAME_COLUMNS:
            if c == "name" or c in nodes.column_names:
                per_node = np.empty(n, dtype=object)
                per_node[:] = nodes.column(c).take(pa.array(pre)).to_pylist()
                columns[c] = per_node
        index = pd.Index(order_nodes, name="node", dtype=object)
        self.dataframe = pd.DataFrame({c: typed_frame_column(c, v, lambda a: a, index) for c, v in columns.items()},
                                      index=index)
