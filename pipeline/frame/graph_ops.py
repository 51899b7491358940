"""Whole-graph operations: structural equality, union and copy of :class:`perflake.frame.graph.Graph` objects.

A Node's identity is its call-path id, so two graphs are equal when they hold the same parent -> child links
between the same ids (plus the same roots), whatever objects carry them: the test is a set comparison, not a
parallel walk.  ``union`` and ``copy`` build new Node objects and never touch the nodes of their inputs (a
graph may be shared by several GraphFrames, Hatchet's immutable-graph rule).  Hatchet compares and merges
graphs by frames along the paths; for perflake's call-path trees that is the same thing, because an id is
derived from exactly those frames.
"""

from __future__ import annotations

from perflake.frame.graph import Frame, Graph, Node


def links(graph: Graph) -> frozenset:
    """Every (parent id, child id) link of ``graph``, roots as (None, root id)."""
    out = set()
    for node in graph.traverse():
        if not node.parents:
            out.add((None, node.node_id))
        out.update((p.node_id, node.node_id) for p in node.parents)
    return frozenset(out)


def equal(a: Graph, b: Graph) -> bool:
    """Same nodes (by call-path id) with the same links; object identity is not required."""
    if a is b:
        return True
    return len(a) == len(b) and links(a) == links(b)


def structure_hash(graph: Graph) -> int:
    """A hash that agrees with :func:`equal` (equal graphs have the same roots and size)."""
    return hash((len(graph), frozenset(r.node_id for r in graph.roots)))


def _sort_key(node: Node):
    return node.frame.tuple_repr


def _build(frames: dict, depth: dict, edges) -> tuple[Graph, dict]:
    """New nodes for ``frames`` (id -> Frame) linked by ``edges`` ((parent id | None, child id) pairs)."""
    nodes = {nid: Node(Frame(dict(frame.attrs)), nid, depth.get(nid, 0)) for nid, frame in frames.items()}
    seen = set()
    for parent, child in edges:
        if parent is None or (parent, child) in seen:
            continue
        seen.add((parent, child))
        nodes[parent].children.append(nodes[child])
        nodes[child].parents.append(nodes[parent])
    for node in nodes.values():
        if len(node.children) > 1:
            node.children.sort(key=_sort_key)
    return Graph([n for n in nodes.values() if not n.parents]), nodes


def union(a: Graph, b: Graph, old_to_new: dict | None = None) -> Graph:
    """A new graph with the nodes and links of both (a call path of either side appears once).

    ``old_to_new``, when given, receives old node -> new node for the nodes of both inputs (Hatchet's
    argument of the same name).
    """
    frames, depth, edges = {}, {}, []
    for graph in (a, b):
        for node in graph.traverse():
            frames.setdefault(node.node_id, node.frame)
            depth[node.node_id] = min(depth.get(node.node_id, node.depth), node.depth)
            edges.extend((p.node_id, node.node_id) for p in node.parents)
    out, by_id = _build(frames, depth, edges)
    if old_to_new is not None:
        for graph in (a, b):
            old_to_new.update((n, by_id[n.node_id]) for n in graph.traverse())
    return out


def copy(graph: Graph, old_to_new: dict | None = None) -> Graph:
    """A deep copy: new Node and Frame objects, same ids, links and order."""
    frames = {n.node_id: n.frame for n in graph.traverse()}
    depth = {n.node_id: n.depth for n in graph.traverse()}
    edges = [(p.node_id, n.node_id) for n in graph.traverse() for p in n.parents]
    out, by_id = _build(frames, depth, edges)
    if old_to_new is not None:
        old_to_new.update((n, by_id[n.node_id]) for n in graph.traverse())
    return out


def by_id(graph: Graph) -> dict:
    """node id -> node of ``graph``."""
    return {n.node_id: n for n in graph.traverse()}
