"""Whole-graph operations: structural equality, union and copy of :class:`perflake.frame.graph.Graph` objects.

Graphs perflake built (every node has a call-path id) are compared and merged by id: two graphs are equal
when they hold the same parent -> child links between the same ids (plus the same roots), whatever objects
carry them -- a set comparison, not a parallel walk.  Hatchet compares and merges graphs by frames along the
paths; for perflake's call-path trees that is the same thing, because an id is derived from exactly those
frames.  Graphs built by hand (nodes without ids: ``Graph.from_lists``, ``Node(Frame(...))``) are compared
and merged by frames, as Hatchet does: children matched by frame, a node shared by several parents (a DAG)
matched once.  ``union`` and ``copy`` build new Node objects and never touch the nodes of their inputs (a
graph may be shared by several GraphFrames, Hatchet's immutable-graph rule).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from perflake.frame.graph import Frame, Graph, Node, ordered


def links(graph: Graph) -> frozenset:
    """Every (parent id, child id) link of ``graph``, roots as (None, root id)."""
    out = set()
    for node in graph.traverse():
        if not node.parents:
            out.add((None, node.node_id))
        out.update((p.node_id, node.node_id) for p in node.parents)
    return frozenset(out)


def equal(a: Graph, b: Graph) -> bool:
    """Same nodes (by call-path id) with the same links; by frames (Hatchet's ``==``) when a node has no id."""
    if a is b:
        return True
    if len(a) != len(b):
        return False
    if a.has_ids() and b.has_ids():
        return links(a) == links(b)
    if len(a.roots) != len(b.roots):
        return False
    seen_a, seen_b = set(), set()
    for x, y in zip(sorted(a.roots, key=lambda n: n.frame), sorted(b.roots, key=lambda n: n.frame)):
        if x.frame != y.frame or not x.dag_equal(y, seen_a, seen_b):
            return False
    return True


def dag_equal(a: Node, b: Node, vs: set | None = None, vo: set | None = None) -> bool:
    """True when the graphs below ``a`` and ``b`` have the same structure and frames: children matched in frame
    order, a node met again (DAG) on one side met again on the other.  ``vs``/``vo`` hold the ``id()`` of the
    nodes seen on each side (Hatchet uses ``_hatchet_nid``, which is -1 on nodes not yet numbered)."""
    vs = set() if vs is None else vs
    vo = set() if vo is None else vo
    vs.add(id(a))
    vo.add(id(b))
    first = _child_pairs(a, b)
    if first is None:
        return False
    stack = [iter(first)]  # one iterator per level: the recursion of Hatchet's dag_equal, without recursing
    while stack:
        for x, y in stack[-1]:
            if x.frame != y.frame:
                return False
            seen_x, seen_y = id(x) in vs, id(y) in vo
            if seen_x != seen_y:
                return False
            if seen_x:
                continue
            vs.add(id(x))
            vo.add(id(y))
            pairs = _child_pairs(x, y)
            if pairs is None:
                return False
            stack.append(iter(pairs))
            break
        else:
            stack.pop()
    return True


def _child_pairs(a: Node, b: Node):
    """The children of ``a`` and ``b`` paired in frame order; None when their numbers differ."""
    if len(a.children) != len(b.children):
        return None
    return list(zip(sorted(a.children, key=lambda n: n.frame), sorted(b.children, key=lambda n: n.frame)))


def structure_hash(graph: Graph) -> int:
    """A hash that agrees with :func:`equal` (equal graphs have the same size and number of roots)."""
    return hash((len(graph), len(graph.roots)))


def _build(frames: dict, depth: dict, edges, node_ordering: bool = False) -> tuple[Graph, dict]:
    """New nodes for ``frames`` (id -> Frame) linked by ``edges`` ((parent id | None, child id) pairs); children
    in frame order, or in the edges' order for a node-ordered graph."""
    nodes = {nid: Node(Frame(dict(frame.attrs)), depth=depth.get(nid, 0), node_id=nid) for nid, frame in frames.items()}
    seen = set()
    for parent, child in edges:
        if parent is None or (parent, child) in seen:
            continue
        seen.add((parent, child))
        nodes[parent].children.append(nodes[child])
        nodes[child].parents.append(nodes[parent])
    sort = (lambda kids: kids) if node_ordering else ordered
    for node in nodes.values():
        if len(node.children) > 1:
            node.children = sort(node.children)
    return Graph(sort([n for n in nodes.values() if not n.parents]), node_ordering=node_ordering), nodes


def union(a: Graph, b: Graph, old_to_new: dict | None = None) -> Graph:
    """A new graph with the nodes and links of both (a call path of either side appears once); children in
    frame order, as Hatchet's union makes them -- for two node-ordered graphs (Caliper's), a node-ordered graph
    with ``a``'s order first, then ``b``'s nodes that ``a`` lacks.

    ``old_to_new``, when given, receives old node -> new node for the nodes of both inputs (Hatchet's
    argument of the same name).
    """
    if not (a.has_ids() and b.has_ids()):
        return _union_by_frames(a, b, old_to_new)
    frames, depth, edges = {}, {}, []
    for graph in (a, b):
        for node in graph.traverse():
            frames.setdefault(node.node_id, node.frame)
            depth[node.node_id] = min(depth.get(node.node_id, node.depth), node.depth)
            edges.extend((p.node_id, node.node_id) for p in node.parents)
    out, by_id = _build(frames, depth, edges, bool(a.node_ordering and b.node_ordering))
    if old_to_new is not None:
        for graph in (a, b):
            old_to_new.update((n, by_id[n.node_id]) for n in graph.traverse())
    return out


def _union_by_frames(a: Graph, b: Graph, old_to_new: dict | None) -> Graph:
    """Hatchet's union of graphs without ids: roots, then children of matched nodes, matched by frame."""
    made: dict[int, Node] = {}  # id(old node) -> new node

    def merge(left, right, parent: Node | None) -> list[Node]:
        left, right = ordered(left), ordered(right)
        out: list[Node] = []
        i = j = 0
        while i < len(left) or j < len(right):
            x = left[i] if i < len(left) else None
            y = right[j] if j < len(right) else None
            if y is None or (x is not None and x.frame < y.frame):
                pair, i = (x, None), i + 1
            elif x is None or y.frame < x.frame:
                pair, j = (None, y), j + 1
            else:
                pair, i, j = (x, y), i + 1, j + 1
            olds = [o for o in pair if o is not None]
            new = next((made[id(o)] for o in olds if id(o) in made), None)
            fresh = [o for o in olds if id(o) not in made]
            if new is None:
                new = Node(olds[0].frame.copy())
            for o in fresh:
                made[id(o)] = new
            kids = [o.children if o is not None and any(o is f for f in fresh) else [] for o in pair]
            if kids[0] or kids[1]:  # a node met before (a DAG) is linked again, not expanded again
                merge(kids[0], kids[1], new)
            if parent is not None:
                parent.children.append(new)
                new.parents.append(parent)
            out.append(new)
        return out

    graph = Graph(merge(a.roots, b.roots, None))
    if old_to_new is not None:
        for g in (a, b):
            old_to_new.update((n, made[id(n)]) for n in g.traverse())
    return graph


def copy(graph: Graph, old_to_new: dict | None = None) -> Graph:
    """A deep copy: new Node and Frame objects with the same ids, numbers, depths, links and order."""
    nodes = list(graph.traverse())
    new = {id(n): Node(n.frame.copy(), hnid=n._hatchet_nid, depth=n.depth, node_id=n.node_id) for n in nodes}
    for n in nodes:
        m = new[id(n)]
        m.parents = [new[id(p)] for p in n.parents if id(p) in new]
        m.children = [new[id(c)] for c in n.children if id(c) in new]
    out = Graph([new[id(r)] for r in graph.roots], node_ordering=getattr(graph, "node_ordering", False))
    if old_to_new is not None:
        old_to_new.update((n, new[id(n)]) for n in nodes)
    return out


def by_id(graph: Graph) -> dict:
    """node id -> node of ``graph``."""
    return {n.node_id: n for n in graph.traverse()}


def from_nodes_table(nodes: pa.Table, frame_columns=("name", "type"), cls=Graph, node_ordering: bool = False) -> Graph:
    """A graph of a nodes table (node_id, parent_id, depth, frame columns, ``child_order``) in one pass.  Without
    child orders (a lake written before schema 3, a table made from GraphFrames) siblings are in frame order.
    ``node_ordering``: the graph is walked in that stored order (see perflake.frame.graph)."""
    cols = {c: nodes.column(c).to_pylist() for c in frame_columns if c in nodes.column_names}
    ids = nodes.column("node_id").to_numpy(zero_copy_only=False).astype(np.uint64).tolist()
    parents = nodes.column("parent_id").to_pylist()
    depth = nodes.column("depth").to_pylist()
    rows = None
    if "child_order" in nodes.column_names and nodes.column("child_order").null_count == 0:
        rows = np.argsort(nodes.column("child_order").to_numpy(), kind="stable").tolist()
    by_id = {}
    for i, nid in enumerate(ids):
        by_id[nid] = Node(Frame._of({c: cols[c][i] for c in cols}), depth=depth[i], node_id=nid)
    roots = []
    for i in range(len(ids)) if rows is None else rows:  # appended in child order: each list comes out in order
        node, pid = by_id[ids[i]], parents[i]
        parent = by_id.get(pid) if pid is not None else None
        if parent is None:
            roots.append(node)
        else:
            node.parents.append(parent)
            parent.children.append(node)
    if rows is None:
        for node in by_id.values():
            if len(node.children) > 1:
                node.children = ordered(node.children)
        roots = ordered(roots)
    return cls(roots, node_ordering=node_ordering)
