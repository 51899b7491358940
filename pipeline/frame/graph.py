"""Hatchet-shaped graph objects: Frame, Node, Graph, with Hatchet's API (hatchet/frame.py, node.py, graph.py).

**Identity.**  A Node of a graph perflake built carries its call-path id (``node.node_id``, also
``node.callpath_id``; defined by perflake.identity).  A node built by hand (``Node(Frame(name="a"))``,
``Node.from_lists``, ``Graph.from_lists``) has none (``node_id`` is None) until its graph is handed to a
GraphFrame, which derives the ids from the frames on each node's path (perflake.frame.graph_ids).
``_hatchet_nid`` is the node's position in the graph's pre-order traversal, as in Hatchet; ``_depth`` (also
``depth``) its depth.  Nodes hash by ``_hatchet_nid``, as Hatchet's (so sets and dicts of nodes iterate as
in Hatchet), and are equal when their numbers and their call-path ids are (a node built by hand, without an
id: the numbers, Hatchet's rule, so ``gf.dataframe.loc[Node(None, hnid=5)]`` finds node 5): nodes of two
graphs are equal when they hold the same call path at the same position -- a copy's nodes equal the
original's; to match call paths across graphs, compare ``node_id``s.

**Order.**  ``node.children`` and ``graph.roots`` keep the order of the input (the profile's order as the
reader met it, the literal's, the lists'), as Hatchet's do.  A traversal visits children sorted by frame, as
Hatchet's ``traverse`` does (ties keep the input order), and ``_hatchet_nid`` numbers that traversal.  A graph
with ``node_ordering`` (Hatchet's flag; perflake sets it on graphs read from Caliper files, whose readers lay the
children out in Caliper's ``Node order``, readers/node_order.py) is walked in the children's own order instead,
as Hatchet's ``node_order_traverse`` walks them; ``node_order_traverse()`` visits children by ``_hatchet_nid``.

A Graph is fixed once built: ``len``, ``iter`` and pre-order ``traverse()`` use the order computed at
construction or by the last ``enumerate_traverse()`` (call it after changing links by hand, as in Hatchet).
"""

from __future__ import annotations

from functools import total_ordering
from typing import TYPE_CHECKING, Iterator

from perflake.errors import MultiplePathError  # noqa: F401  (Hatchet's hatchet.node.MultiplePathError)

if TYPE_CHECKING:
    import pyarrow as pa

FRAME_KEYS = ("name", "type", "file", "line", "module")
NO_TYPE = "None"  # what Hatchet's Frame puts under "type" when it is given none


@total_ordering
class Frame:
    """The attributes that identify one call-path element.  ``Frame({"name": "f"}, file="a.c")`` or keywords;
    a None value is left out; without a ``type`` the frame's type is the text ``'None'`` (as in Hatchet)."""

    __slots__ = ("attrs", "_tuple")

    def __init__(self, attrs: dict | None = None, **kwargs):
        merged = {k: v for k, v in dict(attrs or {}, **kwargs).items() if v is not None}
        if not merged:
            raise ValueError("Frame must be constructed with attributes!")
        merged.setdefault("type", NO_TYPE)
        self.attrs = merged
        self._tuple = tuple(sorted(merged.items()))

    @classmethod
    def _of(cls, attrs: dict) -> "Frame":
        """A frame of ``attrs`` (a dict the caller gives away) without the keyword merging: the bulk path."""
        frame = cls.__new__(cls)
        attrs = {k: v for k, v in attrs.items() if v is not None}
        attrs.setdefault("type", NO_TYPE)
        frame.attrs, frame._tuple = attrs, tuple(sorted(attrs.items()))
        return frame

    @property
    def tuple_repr(self) -> tuple:
        """The (attribute, value) pairs sorted by attribute: what frames are compared and hashed by."""
        return self._tuple

    def __getitem__(self, key):
        return self.attrs[key]

    def get(self, key, default=None):
        return self.attrs.get(key, default)

    def values(self, keys):
        return tuple(self.attrs.get(k) for k in keys) if isinstance(keys, (list, tuple)) else self.attrs.get(keys)

    def copy(self) -> "Frame":
        return Frame(dict(self.attrs))

    def __eq__(self, other):
        return self._tuple == other._tuple if isinstance(other, Frame) else NotImplemented

    def __lt__(self, other):
        if not isinstance(other, Frame):
            return NotImplemented
        try:
            return self._tuple < other._tuple
        except TypeError:  # values of different types under one attribute: compare their texts
            return _text(self._tuple) < _text(other._tuple)

    def __hash__(self):
        return hash(self._tuple)

    def __str__(self):
        return "{%s}" % ", ".join(f"'{k}': '{v}'" for k, v in self._tuple)

    def __repr__(self):
        return f"Frame({self})"


def _text(pairs: tuple) -> tuple:  # a sort key that never compares values of different types
    return tuple((k, str(v)) for k, v in pairs)


def frame_type(frame: Frame):
    """The frame's type, None for Hatchet's placeholder ``'None'`` (what perflake stores as a missing type)."""
    kind = frame.get("type")
    return None if kind == NO_TYPE else kind


def ordered(nodes) -> list:
    """``nodes`` in traversal order: sorted by frame, ties in their given order (Hatchet's ``traversal_order``)."""
    if len(nodes) < 2:
        return list(nodes)
    try:
        return sorted(nodes, key=lambda n: n.frame._tuple)
    except TypeError:
        return sorted(nodes, key=lambda n: _text(n.frame._tuple))


def by_number(nodes) -> list:
    """``nodes`` by ``_hatchet_nid`` (Hatchet's ``node_traversal_order``), ties in their given order."""
    return sorted(nodes, key=node_number) if len(nodes) > 1 else list(nodes)


def as_given(nodes) -> list:
    """``nodes`` in their stored order (the input's: Caliper's Node order for a node-ordered graph)."""
    return list(nodes)


def stored_preorder(graph) -> Iterator:
    """Every node of ``graph`` once, depth-first, roots and children in their stored order (how Hatchet's squash
    walks the old graph, so the kept nodes' children come out in that order)."""
    return _walk(list(graph.roots), "pre", None, set(), as_given)


def frame_preorder(graph) -> list:
    """Every node of ``graph`` once in pre-order, roots and children sorted by frame (Hatchet's ``traverse`` of a
    graph that is not node-ordered: the numbering Hatchet gives a graph it reads from JSON)."""
    return list(_walk(ordered(graph.roots), "pre", None, set(), ordered))


def node_number(node) -> int:
    return node._hatchet_nid  # Hatchet's console renderer orders siblings and roots by it


def traversal_order(node):
    """Hatchet's sort key of traversals: the frame, then the node's number."""
    return (node.frame, node._hatchet_nid)


def _walk(starts, order: str, attrs, visited, sort=ordered) -> Iterator:
    """Depth-first from ``starts`` (each node once), children in traversal order (``sort``: :func:`ordered`,
    :func:`by_number` or :func:`as_given`); ``visited`` is a set of ``id(node)`` or, as in Hatchet, a dict
    counting how often each node was reached."""
    if order not in ("pre", "post"):
        raise ValueError("order must be one of 'pre' or 'post'")
    counting = isinstance(visited, dict)
    stack = [(n, False) for n in reversed(starts)]
    while stack:
        node, done = stack.pop()
        if done:
            yield node if attrs is None else node.frame.values(attrs)
            continue
        key = id(node)
        if key in visited:
            if counting:
                visited[key] += 1
            continue
        if counting:
            visited[key] = 1
        else:
            visited.add(key)
        if order == "pre":
            yield node if attrs is None else node.frame.values(attrs)
        else:
            stack.append((node, True))
        stack.extend((c, False) for c in reversed(sort(node.children)))


@total_ordering
class Node:
    """One call-path element: ``Node(frame, parent=None, hnid=-1, depth=-1)`` as in Hatchet (``parent`` is only
    recorded in ``parents``; Hatchet's builders also call ``parent.add_child``).  ``node_id``: the call-path id."""

    __slots__ = ("frame", "node_id", "depth", "parents", "children", "_hatchet_nid")

    def __init__(self, frame_obj: Frame, parent: "Node | None" = None, hnid: int = -1, depth: int = -1, *,
                 node_id: int | None = None):
        self.frame = frame_obj
        self.node_id = node_id
        self.depth = depth
        self._hatchet_nid = hnid
        self.parents: list[Node] = []
        self.children: list[Node] = []
        if parent is not None:
            self.add_parent(parent)

    @property
    def callpath_id(self) -> int | None:
        """perflake's call-path id (the same call path has it in every run); ``node_id`` is the same number."""
        return self.node_id

    @property
    def _depth(self) -> int:
        return self.depth

    @_depth.setter
    def _depth(self, value: int) -> None:
        self.depth = value

    def add_parent(self, node: "Node") -> None:
        if not isinstance(node, Node):
            raise TypeError(f"a parent must be a Node, not {type(node).__name__}")
        self.parents.append(node)

    def add_child(self, node: "Node") -> None:
        if not isinstance(node, Node):
            raise TypeError(f"a child must be a Node, not {type(node).__name__}")
        self.children.append(node)

    def traverse(self, order: str = "pre", attrs=None, visited=None) -> Iterator:
        """Depth-first walk from this node, children sorted by frame, each node once (``visited``: see _walk)."""
        return _walk([self], order, attrs, {} if visited is None else visited)

    def node_order_traverse(self, order: str = "pre", attrs=None, visited=None) -> Iterator:
        """Depth-first walk from this node, children by ``_hatchet_nid`` (Hatchet's ``node_order_traverse``)."""
        return _walk([self], order, attrs, {} if visited is None else visited, by_number)

    def paths(self) -> list[tuple["Node", ...]]:
        """Every path from a root to this node, as tuples of nodes (one per parent, in the parents' order)."""
        out, stack = [], [(self, (self,))]
        while stack:
            node, suffix = stack.pop()
            up = [p for p in node.parents if not any(p is q for q in suffix)]  # a cycle is not walked twice
            if not up:
                out.append(suffix)
            stack.extend((p, (p,) + suffix) for p in reversed(up))
        return out

    def path(self, attrs=None) -> tuple["Node", ...]:
        """The one path from a root to this node; MultiplePathError when it has several (``paths()``)."""
        paths = self.paths()
        if len(paths) > 1:
            raise MultiplePathError(f"Node has more than one path: {paths}")
        return paths[0]

    def dag_equal(self, other: "Node", vs: set | None = None, vo: set | None = None) -> bool:
        """True when the graphs below this node and ``other`` have the same structure and frames (Hatchet's;
        see perflake.frame.graph_ops.dag_equal)."""
        from perflake.frame.graph_ops import dag_equal

        return dag_equal(self, other, vs, vo)

    def copy(self) -> "Node":
        """A node with a copy of this frame and no links, number or id (Hatchet's ``Node.copy``)."""
        return Node(self.frame.copy())

    @classmethod
    def from_lists(cls, lists) -> "Node":
        """Nodes from nested lists: ``["a", ["b", "d"], "c"]`` is a with children b (child d) and c; a Node
        in the lists is used as it is (so one Node in two places makes a DAG)."""

        def build(spec, parent):
            if isinstance(spec, (list, tuple)):
                if not spec or not isinstance(spec[0], (str, Node)):
                    raise ValueError(f"a list must start with a name or a Node: {spec!r}")
                node = spec[0] if isinstance(spec[0], Node) else cls(Frame(name=spec[0]))
                for child in spec[1:]:
                    build(child, node)
            elif isinstance(spec, str):
                node = cls(Frame(name=spec))
            elif isinstance(spec, Node):
                node = spec
            else:
                raise ValueError(f"Argument must be str, list, or Node: {spec!r}")
            if parent is not None:
                node.add_parent(parent)
                parent.add_child(node)
            return node

        return build(lists, None)

    def __hash__(self):
        return hash(self._hatchet_nid)

    def __eq__(self, other):
        if not isinstance(other, Node):
            return NotImplemented
        if self._hatchet_nid != other._hatchet_nid:
            return False
        if self.node_id is None or other.node_id is None:  # one built by hand: Hatchet's rule, the numbers
            return True  # (``gf.dataframe.loc[Node(None, hnid=5)]`` finds node 5, as in Hatchet)
        return self.node_id == other.node_id

    def __lt__(self, other):
        return self._hatchet_nid < other._hatchet_nid if isinstance(other, Node) else NotImplemented

    def __repr__(self):
        return "Node({%s})" % ", ".join(f"{k!r}: {v!r}" for k, v in sorted(self.frame.attrs.items()))

    def __str__(self):
        return str(self.frame)


class Graph:
    """Roots (in the input's order) and the nodes below them.  ``len(graph)`` is the number of nodes."""

    def __init__(self, roots, node_ordering: bool = False):
        if roots is None:
            raise ValueError("Graph() requires a list of roots")
        self.roots = list(roots)
        self.node_ordering = node_ordering
        self._nodes: list[Node] = []
        self._with_ids = False
        self._number()
        if any(n.depth < 0 for n in self._nodes):
            self.enumerate_depth()

    def _sort(self):
        """How a traversal orders roots and children: by frame, or as stored for a node-ordered graph."""
        return as_given if self.node_ordering else ordered

    def _number(self) -> None:
        self._with_ids = False
        sort = self._sort()
        self._nodes = list(_walk(sort(self.roots), "pre", None, set(), sort))
        for i, node in enumerate(self._nodes):
            node._hatchet_nid = i

    def enumerate_traverse(self) -> None:
        """Number the nodes in pre-order (``_hatchet_nid``) and set their depths, after links changed."""
        self._number()
        self.enumerate_depth()

    def enumerate_depth(self) -> None:
        """Depth of every node: roots 0, a child one below the parent it is first reached from."""
        seen: set = set()
        for root in self.roots:
            root.depth = 0
            stack = [iter(root.children)]
            parents = [root]
            while stack:
                for child in stack[-1]:
                    if id(child) in seen:
                        continue
                    seen.add(id(child))
                    child.depth = parents[-1].depth + 1
                    stack.append(iter(child.children))
                    parents.append(child)
                    break
                else:
                    stack.pop()
                    parents.pop()

    def traverse(self, order: str = "pre", attrs=None, visited=None) -> Iterator:
        """Every node once, depth-first from the roots in frame order (as Hatchet's ``Graph.traverse``; in the
        stored order for a node-ordered graph, as Hatchet's ``traverse`` then is its ``node_order_traverse``)."""
        if order == "pre" and visited is None:
            if attrs is None:
                return iter(self._nodes)
            return (n.frame.values(attrs) for n in self._nodes)
        sort = self._sort()
        return _walk(sort(self.roots), order, attrs, {} if visited is None else visited, sort)

    def node_order_traverse(self, order: str = "pre", attrs=None, visited=None) -> Iterator:
        """Every node once, depth-first, roots and children by ``_hatchet_nid`` (Hatchet's
        ``node_order_traverse``: for a node-ordered graph the same walk as ``traverse``)."""
        return _walk(by_number(self.roots), order, attrs, {} if visited is None else visited, by_number)

    def is_tree(self) -> bool:
        """One root and every node reached once."""
        if len(self.roots) > 1:
            return False
        visited: dict = {}
        for _ in _walk(self.roots, "pre", None, visited):
            pass
        return all(v == 1 for v in visited.values())

    def __iter__(self):
        return iter(self._nodes)

    def __len__(self):
        return len(self._nodes)

    def node_by_id(self) -> dict[int, Node]:
        return {n.node_id: n for n in self._nodes}

    def has_ids(self) -> bool:
        """True when every node has a call-path id (a graph perflake built, or one handed to a GraphFrame)."""
        if not self._with_ids:  # ids are only ever added: a True answer stays true
            self._with_ids = all(n.node_id is not None for n in self._nodes)
        return self._with_ids

    # -- Hatchet's graph comparison and set operations (see perflake.frame.graph_ops) ------------------------
    def __eq__(self, other):
        from perflake.frame.graph_ops import equal

        return isinstance(other, Graph) and equal(self, other)

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash((len(self), len(self.roots)))

    def union(self, other: "Graph", old_to_new: dict | None = None) -> "Graph":
        """A new graph holding the call paths of both (neither input is changed)."""
        from perflake.frame.graph_ops import union

        return union(self, other, old_to_new)

    def copy(self, old_to_new: dict | None = None) -> "Graph":
        """A deep copy (new Node and Frame objects, same ids, numbers, links and order)."""
        from perflake.frame.graph_ops import copy

        return copy(self, old_to_new)

    @staticmethod
    def from_lists(*roots) -> "Graph":
        """A graph with one root per argument, each built by ``Node.from_lists``."""
        if not all(isinstance(r, (list, tuple)) for r in roots):
            raise ValueError(f"All arguments to Graph.from_lists() must be lists: {roots!r}")
        graph = Graph([Node.from_lists(r) for r in roots])
        graph.enumerate_traverse()
        return graph

    @classmethod
    def from_nodes_table(cls, nodes: pa.Table, frame_columns=("name", "type"), node_ordering: bool = False) -> "Graph":
        """Build from a nodes table (node_id, parent_id, depth, frame columns, and ``child_order``: a node's
        position among its parent's children, or among the roots); see perflake.frame.graph_ops.from_nodes_table."""
        from perflake.frame.graph_ops import from_nodes_table

        return from_nodes_table(nodes, frame_columns, cls, node_ordering)
