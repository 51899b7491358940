"""Format-independent model of synthetic HPC call-path profiles.

Everything here is deterministic given ``seed``: the same arguments always give
the same tree and the same numbers, on any platform (only numpy's PCG64 stream
and ``zlib.crc32`` are used).
"""
from __future__ import annotations

import bisect
import math
import zlib
from dataclasses import dataclass

import numpy as np

from .names import (
    FRAME_NAMES,
    MPI,
    MPI_NAMES,
    ROOT_NAME,
    SOLVER,
    SOLVER_NAMES,
    SOLVER_STEMS,
    STD,
    STD_NAMES,
    category,
    source_location,
)


# --------------------------------------------------------------------------- tree
@dataclass
class CallTree:
    """A call tree in pre-order (parents always before their children)."""

    names: list[str]
    parent: np.ndarray  # int64, -1 for the root
    file: list[str]
    line: np.ndarray  # int64
    depth: np.ndarray  # int64, root has depth 0

    def __len__(self) -> int:
        return len(self.names)

    @property
    def n_nodes(self) -> int:
        return len(self.names)

    @property
    def max_depth(self) -> int:
        return int(self.depth.max())

    def path(self, i: int) -> tuple[str, ...]:
        """Tuple of names from the root down to node ``i``."""
        out = []
        while i >= 0:
            out.append(self.names[i])
            i = int(self.parent[i])
        return tuple(reversed(out))

    def paths(self) -> list[tuple[str, ...]]:
        res: list[tuple[str, ...]] = []
        for i, p in enumerate(self.parent.tolist()):
            res.append((self.names[i],) if p < 0 else res[p] + (self.names[i],))
        return res

    def children(self) -> list[list[int]]:
        kids: list[list[int]] = [[] for _ in self.names]
        for i, p in enumerate(self.parent.tolist()):
            if p >= 0:
                kids[p].append(i)
        return kids

    def subtree_size(self) -> np.ndarray:
        """Number of nodes in each node's subtree (pre-order: subtree of i is i..i+size-1)."""
        return inclusive_from_exclusive(self, np.ones(len(self), dtype=np.int64))


def inclusive_from_exclusive(tree: CallTree, exclusive: np.ndarray) -> np.ndarray:
    """Own value plus the sum over all descendants, level by level (exact for integers)."""
    inc = np.array(exclusive, copy=True)
    for d in range(tree.max_depth, 0, -1):
        idx = np.flatnonzero(tree.depth == d)
        np.add.at(inc, tree.parent[idx], inc[idx])
    return inc


def _from_parents(names: list[str], parent: list[int]) -> CallTree:
    """Build a CallTree in pre-order from nodes listed parents-first."""
    n = len(names)
    kids: list[list[int]] = [[] for _ in range(n)]
    for i in range(1, n):
        kids[parent[i]].append(i)
    order: list[int] = []
    stack = [0]
    while stack:
        i = stack.pop()
        order.append(i)
        stack.extend(reversed(kids[i]))
    new_of = np.empty(n, dtype=np.int64)
    new_of[np.asarray(order)] = np.arange(n)
    par = np.full(n, -1, dtype=np.int64)
    depth = np.zeros(n, dtype=np.int64)
    new_names = [names[i] for i in order]
    for j, i in enumerate(order[1:], start=1):
        par[j] = new_of[parent[i]]
        depth[j] = depth[par[j]] + 1
    locs = [source_location(nm) for nm in new_names]
    return CallTree(new_names, par, [f for f, _, _ in locs],
                    np.array([ln for _, ln, _ in locs], dtype=np.int64), depth)


class _NamePicker:
    """Zipf-weighted name choice with distinct siblings and no recursion."""

    def __init__(self, rng: np.random.Generator, n_nodes: int):
        self.rng = rng
        extra = max(0, n_nodes // 15 - len(SOLVER_NAMES))
        solver = SOLVER_NAMES + [f"{SOLVER_STEMS[k % len(SOLVER_STEMS)]}_{k // len(SOLVER_STEMS)}"
                                 for k in range(extra)]
        self.pools = {MPI: MPI_NAMES, SOLVER: solver, STD: STD_NAMES}
        self.cum = {}
        for cat, pool in self.pools.items():
            w = 1.0 / np.arange(1, len(pool) + 1) ** 0.7
            self.cum[cat] = np.cumsum(w / w.sum()).tolist()
        self._u: list[float] = []

    def uniform(self) -> float:
        if not self._u:
            self._u = self.rng.random(4096).tolist()
        return self._u.pop()

    def pick(self, parent_name: str, forbidden) -> str:
        u = self.uniform()
        if parent_name == ROOT_NAME:
            cat = MPI if u < 0.15 else SOLVER
        else:
            cat = MPI if u < 0.30 else (STD if u < 0.45 else SOLVER)
        pool, cum = self.pools[cat], self.cum[cat]
        for _ in range(12):
            name = pool[min(bisect.bisect(cum, self.uniform()), len(pool) - 1)]
            if name not in forbidden:
                return name
        for name in pool:
            if name not in forbidden:
                return name
        k = 0
        while f"compute_kernel_x{k}" in forbidden:
            k += 1
        return f"compute_kernel_x{k}"


def _forbidden(names, parent, kid_names, p) -> set:
    """Names a new child of ``p`` may not take: its siblings' and its ancestors'."""
    out = set(kid_names[p])
    while p >= 0:
        out.add(names[p])
        p = parent[p]
    return out


def _add_child(picker, names, parent, depth, kid_names, p: int) -> str:
    """Append a new child of ``p`` (a name neither its siblings nor its ancestors have) to the parallel lists."""
    name = picker.pick(names[p], _forbidden(names, parent, kid_names, p))
    names.append(name)
    parent.append(p)
    depth.append(depth[p] + 1)
    kid_names.append(set())
    kid_names[p].add(name)
    return name


def _max_depth_for(n: int) -> int:
    return int(np.clip(round(2.6 * math.log2(max(n, 2)) - 6), 3, 30))


def make_tree(n_nodes: int, *, seed: int) -> CallTree:
    """Random call tree of ``n_nodes`` nodes rooted at ``main``.

    Parents are drawn by preferential attachment (weight grows with the number of
    children and with depth) mixed with chain growth (wrapper-like call chains),
    up to a depth cap growing with log(n) (20 for 1000 nodes, 30 at most).
    MPI and ``std::`` functions are leaves.
    """
    if n_nodes < 1:
        raise ValueError("n_nodes must be >= 1")
    rng = np.random.default_rng(seed)
    picker = _NamePicker(rng, n_nodes)
    cap = _max_depth_for(n_nodes)
    names, parent, depth = [ROOT_NAME], [-1], [0]
    kid_names: list[set] = [set()]
    tickets = [0]
    last_inner = 0
    framed = n_nodes >= 3
    if framed:
        names += [FRAME_NAMES[0]]
        parent += [0]
        depth += [1]
        kid_names += [set()]
        kid_names[0].update(FRAME_NAMES)
    for i in range(len(names), n_nodes - framed):
        if i < 6:  # a few top-level phases (setup, time loop, output ...)
            p = 0
        elif picker.uniform() < 0.3 and depth[last_inner] < cap:
            p = last_inner
        else:
            p = tickets[int(picker.uniform() * len(tickets))]
        name = _add_child(picker, names, parent, depth, kid_names, p)
        tickets.append(p)
        if category(name) == SOLVER and depth[i] < cap:
            tickets.extend([i] * (1 + depth[i] // 3))
            last_inner = i
    if framed:
        names.append(FRAME_NAMES[1])
        parent.append(0)
    return _from_parents(names, parent)


def perturb(tree: CallTree, *, seed: int, fraction: float = 0.03) -> CallTree:
    """Another run of the same application: drop a few small subtrees, add a few leaves.

    About ``fraction * n`` nodes change (at least one dropped and one added when the
    tree has a droppable node); all other call paths stay identical.
    """
    rng = np.random.default_rng(seed)
    n = len(tree)
    budget = max(2, int(round(fraction * n)))
    size = tree.subtree_size()
    drop = np.zeros(n, dtype=bool)
    n_drop = 0
    for i in rng.permutation(np.arange(2, n)).tolist() if n > 2 else []:
        if n_drop >= budget // 2:
            break
        if (size[i] <= 5 and not drop[i] and n_drop + size[i] <= budget
                and tree.names[i] not in FRAME_NAMES):
            drop[i:i + size[i]] = True  # pre-order: the subtree is contiguous
            n_drop += int(size[i])
    keep = np.flatnonzero(~drop)
    new_of = np.full(n, -1, dtype=np.int64)
    new_of[keep] = np.arange(len(keep))
    names = [tree.names[i] for i in keep.tolist()]
    parent = [-1] + new_of[tree.parent[keep[1:]]].tolist()
    kid_names: list[set] = [set() for _ in names]
    for i in range(1, len(names)):
        kid_names[parent[i]].add(names[i])
    depth = tree.depth[keep].tolist()
    cap = max(_max_depth_for(n), tree.max_depth)
    inner = [i for i, nm in enumerate(names) if category(nm) == SOLVER and depth[i] < cap]
    inner = inner or [0]
    picker = _NamePicker(rng, n)
    for _ in range(max(1, budget - n_drop)):
        p = inner[int(rng.integers(len(inner)))]
        _add_child(picker, names, parent, depth, kid_names, p)
    return _from_parents(names, parent)


# --------------------------------------------------------------------------- metrics
@dataclass
class Metrics:
    """Per-node, per-column values; column ``c = rank * n_threads + thread``."""

    exclusive: np.ndarray  # int64 [n_nodes, n_cols], microseconds, >= 1
    inclusive: np.ndarray  # int64 [n_nodes, n_cols] = exclusive + all descendants'
    calls: np.ndarray  # int64 [n_nodes], >= 1, same on every rank/thread
    subrs: np.ndarray  # int64 [n_nodes], sum of the children's calls
    n_ranks: int
    n_threads: int
    regions: list[tuple[int, str, float]]  # (subtree root node, kind, factor)


def _path_hashes(tree: CallTree, salt: int) -> np.ndarray:
    h = np.zeros(len(tree), dtype=np.uint64)
    hl = [0] * len(tree)
    for i, p in enumerate(tree.parent.tolist()):
        hl[i] = zlib.crc32(tree.names[i].encode(), salt & 0xFFFFFFFF if p < 0 else hl[p])
    h[:] = hl
    return h


def _hash_uniform(h: np.ndarray, k: int) -> np.ndarray:
    """Deterministic uniforms in (0, 1) from hashes (splitmix64 finaliser)."""
    x = h + np.uint64((0x9E3779B97F4A7C15 * (k + 1)) & 0xFFFFFFFFFFFFFFFF)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    x = x ^ (x >> np.uint64(31))
    return ((x >> np.uint64(11)).astype(np.float64) + 0.5) / float(1 << 53)


def make_metrics(tree: CallTree, n_ranks: int, *, seed: int, n_threads: int = 1,
                 app_seed: int | None = None) -> Metrics:
    """Exclusive/inclusive time (µs) and call counts for every node and rank/thread.

    Base cost and calls of a node depend only on its call path and ``app_seed``
    (defaults to ``seed``), so runs of one application agree on them; ``seed`` drives
    the per-rank noise (a few %) and 2-5 imbalanced subtrees (2-10x on some ranks).
    """
    n, n_cols = len(tree), n_ranks * n_threads
    rng = np.random.default_rng(seed)
    h = _path_hashes(tree, seed if app_seed is None else app_seed)
    u1, u2, u3, u4 = (_hash_uniform(h, k) for k in range(4))
    z = np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)
    cats = np.array([category(nm) for nm in tree.names])
    mu = np.where(cats == MPI, math.log(3000.0), np.where(cats == STD, math.log(300.0), math.log(2000.0)))
    base = np.exp(mu + 1.6 * z)
    mult = np.where(u3 < 0.7, 1, np.where(u3 < 0.95, 2 + (u4 * 15).astype(np.int64),
                                          17 + (u4 * 184).astype(np.int64)))
    mult[0] = 1
    calls = np.ones(n, dtype=np.int64)
    for d in range(1, tree.max_depth + 1):
        idx = np.flatnonzero(tree.depth == d)
        calls[idx] = np.minimum(calls[tree.parent[idx]] * mult[idx], 1_000_000)
    subrs = np.zeros(n, dtype=np.int64)
    np.add.at(subrs, tree.parent[1:], calls[1:])
    base = np.maximum(base, 0.2 * calls)

    rank_speed = 1.0 + 0.01 * rng.standard_normal(n_ranks)
    factor = np.repeat(rank_speed, n_threads)[None, :] * np.clip(
        1.0 + 0.03 * rng.standard_normal((n, n_cols)), 0.85, 1.15)
    size = tree.subtree_size()
    regions: list[tuple[int, str, float]] = []
    if n_ranks > 1 and n > 1:
        base_inc = inclusive_from_exclusive(tree, base)
        # regions are mid-sized subtrees (never the whole program), heavier ones likelier
        cand = np.flatnonzero((tree.depth >= 1) & (size <= max(2, n // 10)))
        w = base_inc[cand] / base_inc[cand].sum()
        taken = np.zeros(n, dtype=bool)
        ranks = np.arange(n_ranks)
        target = int(rng.integers(2, 6))
        for r in rng.choice(cand, size=min(len(cand), 4 * target), replace=False, p=w).tolist():
            if len(regions) >= target:
                break
            if taken[r:r + size[r]].any():
                continue
            f = float(rng.uniform(2.0, 10.0))
            kind = "slow_ranks" if not regions else str(rng.choice(["slow_ranks", "linear", "slow_node"]))
            if kind == "slow_ranks":
                slow = rng.choice(n_ranks, size=max(1, n_ranks // 16), replace=False)
                rf = np.where(np.isin(ranks, slow), f, 1.0)
            elif kind == "linear":
                rf = 1.0 + (f - 1.0) * ranks / (n_ranks - 1)
            else:
                block = min(16, max(1, n_ranks // 4))  # the ranks of one slow compute node
                start = int(rng.integers(0, n_ranks // block)) * block
                rf = np.where((ranks >= start) & (ranks < start + block), f, 1.0)
            factor[r:r + size[r]] *= np.repeat(rf, n_threads)[None, :]
            taken[r:r + size[r]] = True
            regions.append((r, kind, round(f, 3)))
    exclusive = np.maximum(np.rint(base[:, None] * factor), 1).astype(np.int64)
    return Metrics(exclusive, inclusive_from_exclusive(tree, exclusive), calls, subrs,
                   n_ranks, n_threads, regions)
