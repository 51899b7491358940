"""Hatchet-shaped graph objects: Frame, Node, Graph.  Built once from the nodes table; never mutated after.

A Node's identity is its call-path id (``node.node_id``, from ``perflake.identity``); ``_hatchet_nid``
is its pre-order position, as in Hatchet.
"""

from __future__ import annotations

from typing import Iterator

import numpy as np
import pyarrow as pa

FRAME_KEYS = ("name", "type", "file", "line", "module")


class Frame:
    """The attributes that identify one call-path element (name, type, and file/line/module when known)."""

    __slots__ = ("attrs", "_tuple")

    def __init__(self, attrs: dict | None = None, **kwargs):
        merged = dict(attrs or {}, **kwargs)
        self.attrs = {k: v for k, v in merged.items() if v is not None}
        self._tuple = tuple(sorted((k, str(v)) for k, v in self.attrs.items()))

    @property
    def tuple_repr(self) -> tuple:
        return self._tuple

    def __getitem__(self, key):
        return self.attrs[key]

    def get(self, key, default=None):
        return self.attrs.get(key, default)

    def values(self, keys):
        return tuple(self.attrs.get(k) for k in keys) if isinstance(keys, (list, tuple)) else self.attrs.get(keys)

    def __eq__(self, other):
        return isinstance(other, Frame) and self._tuple == other._tuple

    def __lt__(self, other):
        return self._tuple < other._tuple

    def __hash__(self):
        return hash(self._tuple)

    def __repr__(self):
        return f"Frame({self.attrs!r})"


class Node:
    __slots__ = ("frame", "node_id", "depth", "parents", "children", "_hatchet_nid")

    def __init__(self, frame: Frame, node_id: int, depth: int = 0):
        self.frame = frame
        self.node_id = node_id
        self.depth = depth
        self.parents: list[Node] = []
        self.children: list[Node] = []
        self._hatchet_nid = -1

    @property
    def callpath_id(self) -> int:
        """perflake's call-path id (the same call path has it in every run); ``node_id`` is the same number."""
        return self.node_id

    def traverse(self, order: str = "pre", attrs=None, visited=None) -> Iterator:
        """Depth-first walk from this node (children in Hatchet's order); each node once."""
        visited = set() if visited is None else visited
        stack = [(self, False)]
        while stack:
            node, expanded = stack.pop()
            if order == "post" and expanded:
                yield node if attrs is None else node.frame.values(attrs)
                continue
            if id(node) in visited:
                continue
            visited.add(id(node))
            if order == "pre":
                yield node if attrs is None else node.frame.values(attrs)
            else:
                stack.append((node, True))
            stack.extend((c, False) for c in reversed(node.children))

    def path(self) -> tuple["Node", ...]:
        """The nodes from the root to this node (the first parent at each step)."""
        out, node = [], self
        while node is not None:
            out.append(node)
            node = node.parents[0] if node.parents else None
        return tuple(reversed(out))

    def __hash__(self):
        return hash(self.node_id)

    def __eq__(self, other):
        return isinstance(other, Node) and self.node_id == other.node_id

    def __lt__(self, other):
        return self._hatchet_nid < other._hatchet_nid

    def __repr__(self):
        return f"Node({self.frame.attrs!r})"

    def __str__(self):
        return str(self.frame.get("name"))


def _sort_key(node: Node):
    return node.frame.tuple_repr


class Graph:
    """Roots plus pre-order traversal.  ``len(graph)`` is the number of nodes."""

    def __init__(self, roots: list[Node]):
        self.roots = sorted(roots, key=_sort_key)
        self._nodes = list(self.traverse())
        for i, node in enumerate(self._nodes):
            node._hatchet_nid = i

    def traverse(self, order: str = "pre", attrs=None) -> Iterator:
        visited: set = set()
        for root in self.roots:
            yield from root.traverse(order=order, attrs=attrs, visited=visited)

    def __iter__(self):
        return iter(self._nodes)

    def __len__(self):
        return len(self._nodes)

    def node_by_id(self) -> dict[int, Node]:
        return {n.node_id: n for n in self._nodes}

    # -- Hatchet's graph comparison and set operations (see perflake.frame.graph_ops) ------------------------
    def __eq__(self, other):
        from perflake.frame.graph_ops import equal

        return isinstance(other, Graph) and equal(self, other)

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        from perflake.frame.graph_ops import structure_hash

        return structure_hash(self)

    def union(self, other: "Graph", old_to_new: dict | None = None) -> "Graph":
        """A new graph holding the call paths of both (neither input is changed)."""
        from perflake.frame.graph_ops import union

        return union(self, other, old_to_new)

    def copy(self, old_to_new: dict | None = None) -> "Graph":
        """A deep copy (new Node objects, same call-path ids)."""
        from perflake.frame.graph_ops import copy

        return copy(self, old_to_new)

    @classmethod
    def from_nodes_table(cls, nodes: pa.Table, frame_columns=("name", "type")) -> "Graph":
        """Build from a nodes table (node_id, parent_id, depth, frame columns) in one pass."""
        cols = {c: nodes.column(c).to_pylist() for c in frame_columns if c in nodes.column_names}
        ids = nodes.column("node_id").to_numpy(zero_copy_only=False).astype(np.uint64)
        parents = nodes.column("parent_id").to_pylist()
        depth = nodes.column("depth").to_pylist()
        by_id = {}
        for i, nid in enumerate(ids.tolist()):
            by_id[nid] = Node(Frame({c: cols[c][i] for c in cols}), nid, depth[i])
        roots = []
        for i, nid in enumerate(ids.tolist()):
            node, pid = by_id[nid], parents[i]
            parent = by_id.get(pid) if pid is not None else None
            if parent is None:
                roots.append(node)
            else:
                node.parents.append(parent)
                parent.children.append(node)
        for node in by_id.values():
            if len(node.children) > 1:
                node.children.sort(key=_sort_key)
        return cls(roots)
