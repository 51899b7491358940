"""A call graph (one node per function, one edge per caller -> callee pair) laid out as the tree perflake stores.

gprof2dot's DOT and cProfile's pstats describe a *call graph*: each function once, with its total (exclusive and
inclusive) cost, and the set of its callers; a function called from two places has two parents, and recursion
makes cycles.  Hatchet keeps that graph as it is (a Node with several parents: ``node.path()`` then raises, and
its ``tree()`` prints a shared function under every caller with the same totals).  perflake's model is a tree
(one parent per node; the call-path id hashes the path), so these readers keep Hatchet's node set and values --
one node per function with the function's own totals, nothing duplicated, every sum still right -- and give
each function exactly one of its real callers as its tree parent:

* a **root** is a function that no *other* function calls (a function called only by itself is a root too:
  Hatchet gives it no root and drops it from the traversal);
* the tree grows from the roots in Prim's greedy order: the heaviest call edge (by its weight: the time the
  callee spent on behalf of that caller, then its call count) from a function already in the tree to one not
  yet in it attaches the callee; ties go to the edge met first in the file.  A function therefore hangs under
  its heaviest caller whenever that caller is reachable from a root, and the tree never loops;
* a cycle that no root reaches (e.g. profiling started inside mutual recursion) gets as root its function with
  the greatest inclusive value (then the first in the file), and grows from there;
* the call edges the tree does not show (second callers, recursive calls, the back edges of cycles) are listed
  in the run metadata under ``call_graph``, so no caller/callee fact of the input is lost.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field

import numpy as np

from perflake.errors import ReaderError
from perflake.readers.limits import MAX_CALL_DEPTH, MAX_EDGES, MAX_NODES  # noqa: F401  (MAX_EDGES: re-exported)

# the most off-tree edges listed in the metadata (their count is always given): a metadata value stays small
MAX_LISTED_EDGES = 10_000


@dataclass
class CallTree:
    """``order[i]``: the function (input index) at local id i, parents first (pre-order from the roots, children
    in input order); ``parent_local[i]``: the local id of its tree parent or -1."""

    order: list[int]
    parent_local: list[int]
    off_tree: list[tuple[int, int]] = field(default_factory=list)  # (caller, callee) input indices
    n_edges: int = 0
    unreached_roots: int = 0  # roots chosen for parts of the graph no root reaches
    depth: int = 0  # frames on the deepest path of the tree


def _number(w) -> float:
    return w if isinstance(w, float) and math.isfinite(w) else (float(w) if isinstance(w, int) else 0.0)


def _weight(w) -> tuple[float, ...]:
    """An edge weight as a tuple compared in order (a number, or a tuple such as (time, calls): ties on time go
    to the edge with more calls)."""
    return tuple(_number(x) for x in w) if isinstance(w, tuple) else (_number(w),)


def heavier(w, than) -> bool:
    """Whether edge weight ``w`` beats ``than`` (as :func:`spanning_tree` compares the weights of a repeated pair)."""
    return _weight(w) > _weight(than)


def check_depth(tree: CallTree, path: str) -> None:
    """A ReaderError naming ``path`` when the tree is deeper than MAX_CALL_DEPTH frames."""
    if tree.depth > MAX_CALL_DEPTH:
        raise ReaderError(path, f"a call path of {tree.depth} frames in the call tree (more than {MAX_CALL_DEPTH}, "
                                "readers/limits.py: MAX_CALL_DEPTH)")


def spanning_tree(n: int, edges: list[tuple[int, int, object]], inclusive: list[float]) -> CallTree:
    """The tree of a call graph of ``n`` functions (module docstring).  ``edges``: (caller, callee, weight) in
    file order (a repeated pair keeps its greatest weight); ``inclusive``: each function's inclusive value (NaN
    when unknown), to choose the root of a part of the graph that no root reaches."""
    best: dict[tuple[int, int], tuple[tuple, int]] = {}
    for seq, (a, b, w) in enumerate(edges):
        w, key = _weight(w), (a, b)
        if key not in best:
            best[key] = (w, seq)
        elif w > best[key][0]:
            best[key] = (w, best[key][1])
    out_edges: list[list[tuple[tuple, int, int]]] = [[] for _ in range(n)]
    called_by_other = [False] * n
    for (a, b), (w, seq) in best.items():
        if a != b:
            out_edges[a].append((w, seq, b))
            called_by_other[b] = True
    parent = [-2] * n  # -2: not in the tree yet
    heap: list[tuple[tuple, int, int, int]] = []

    def attach(v: int, p: int) -> None:
        parent[v] = p
        for w, seq, b in out_edges[v]:
            if parent[b] == -2:
                heapq.heappush(heap, (tuple(-x for x in w), seq, v, b))

    for v in range(n):
        if not called_by_other[v]:
            attach(v, -1)
    unreached = 0
    incl = [x if isinstance(x, float) and math.isfinite(x) else -math.inf for x in inclusive]
    while True:
        while heap:
            _, _, a, b = heapq.heappop(heap)
            if parent[b] == -2:
                attach(b, a)
        left = [v for v in range(n) if parent[v] == -2]
        if not left:
            break
        unreached += 1
        attach(max(left, key=lambda v: (incl[v], -v)), -1)
    children: list[list[int]] = [[] for _ in range(n)]
    for v in range(n):
        if parent[v] >= 0:
            children[parent[v]].append(v)
    order, parent_local, local, depth = [], [], [0] * n, [0] * n
    stack = [v for v in reversed(range(n)) if parent[v] == -1]
    while stack:
        v = stack.pop()
        local[v] = len(order)
        order.append(v)
        parent_local.append(local[parent[v]] if parent[v] >= 0 else -1)
        depth[v] = depth[parent[v]] + 1 if parent[v] >= 0 else 1
        stack.extend(reversed(children[v]))
    off = [(a, b) for (a, b), _ in sorted(best.items(), key=lambda kv: kv[1][1]) if parent[b] != a or a == b]
    return CallTree(order, parent_local, off, len(best), unreached, max(depth, default=0))


def metadata(tree: CallTree, labels: list[str]) -> dict:
    """The ``call_graph`` run metadata: edge counts and the call edges the tree does not show, as [caller, callee]
    labels (at most MAX_LISTED_EDGES of them)."""
    return {"call_graph": {
        "layout": "one node per function under its heaviest caller reachable from a root (perflake.readers.call_graph)",
        "functions": len(tree.order),
        "call_edges": tree.n_edges,
        "edges_not_in_tree": len(tree.off_tree),
        "roots_for_unreached_cycles": tree.unreached_roots,
        "edges_not_in_tree_list": [[labels[a], labels[b]] for a, b in tree.off_tree[:MAX_LISTED_EDGES]],
    }}


def local_ids(tree: CallTree) -> np.ndarray:
    """``out[function index]`` = its local id."""
    out = np.empty(len(tree.order), np.int32)
    out[np.asarray(tree.order, dtype=np.int64)] = np.arange(len(tree.order), dtype=np.int32)
    return out
