"""Call-path ids for a graph built by hand (``Graph.from_lists``, ``Node(Frame(...))``), derived when the graph
is handed to a GraphFrame.

A node's id is perflake.identity's id of the frames on its path: the path through which a depth-first walk
from the roots (children in frame order) first reaches it, so a node with several parents (a DAG) and a
node on a cycle get one id each.  The frame attributes that make the id are those of every profile (type,
name, file, line, module; Hatchet's placeholder type ``'None'`` counts as no type), so a hand-built node has
the id the same call path has when read from a literal or a file.  Two nodes of one graph on the same path
(siblings with equal frames, which Hatchet keeps apart and perflake's readers merge) cannot share an id:
the later one in the walk gets ``md5("<id>#<k>")`` (first 8 bytes, little-endian, top bit cleared like every
call-path id: perflake.identity.ID_MASK), the first k that is free.
Nodes that already have an id keep it.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pyarrow as pa

from perflake.frame.graph import Graph, frame_type, ordered
from perflake.identity import ID_MASK, call_path_ids, frame_keys


def _spanning_walk(graph: Graph) -> tuple[list, list[int]]:
    """(nodes in pre-order, index of the node each was first reached from; -1 for a root)."""
    nodes, parent, seen = [], [], set()
    stack = [(root, -1) for root in reversed(ordered(graph.roots))]
    while stack:
        node, up = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        nodes.append(node)
        parent.append(up)
        me = len(nodes) - 1
        stack.extend((c, me) for c in reversed(ordered(node.children)))
    return nodes, parent


def _text(value):
    return None if value is None else str(value)


def _line(value):
    try:
        return None if value is None or isinstance(value, bool) else int(value)
    except (TypeError, ValueError):
        return None


def _salted(node_id: int, k: int) -> int:
    return int.from_bytes(hashlib.md5(f"{node_id}#{k}".encode()).digest()[:8], "little") & ID_MASK


def assign_ids(graph: Graph) -> bool:
    """Give every node of ``graph`` without a call-path id its id (module docstring); True if any was missing."""
    nodes, parent = _spanning_walk(graph)
    if all(n.node_id is not None for n in nodes):
        return False
    frames = pa.table({
        "type": pa.array([frame_type(n.frame) for n in nodes], pa.string()),
        "name": pa.array([_text(n.frame.get("name")) for n in nodes], pa.string()),
        "file": pa.array([_text(n.frame.get("file")) for n in nodes], pa.string()),
        "line": pa.array([_line(n.frame.get("line")) for n in nodes], pa.int64()),
        "module": pa.array([_text(n.frame.get("module")) for n in nodes], pa.string()),
    })
    count = len(nodes)
    ids = call_path_ids(np.zeros(count, np.int32), np.arange(count, dtype=np.int32), np.asarray(parent, np.int32),
                        frame_keys(frames), max(count, 1)).node_id.tolist()
    used = {n.node_id for n in nodes if n.node_id is not None}
    for node, nid in zip(nodes, ids):
        if node.node_id is not None:
            continue
        candidate, k = nid, 0
        while candidate in used:
            k += 1
            candidate = _salted(nid, k)
        used.add(candidate)
        node.node_id = candidate
    return True
