"""Caliper's ``Node order``: the order in which a program first entered each region, as the frames' order.

Caliper's hatchet-region-profile / hatchet-sample-profile configs record ``min#min#aggregate.slot`` (alias
``Node order``) per region: the aggregation slot a region got when it was first seen, i.e. program order.  Hatchet
orders each node's children by it (``node_ordering=True``, its default) and drops the column.  The readers do the
same by emitting their frames in that order: siblings sorted by Node order, parents before children, so the order
is the frames' ``local_id`` order that the rest of perflake keeps as the children's order; the column itself is
then dropped (its information is the order).

Rules: a frame's key is the smallest Node order of its rows; a frame without one (an ancestor without records, a
statement or kernel child the reader adds) takes the smallest key of its descendants, and one with none at all
comes after its keyed siblings.  Equal keys (files with duplicate node orders) keep the file's order.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

NODE_ORDER_COLUMNS = ("Node order", "min#min#aggregate.slot")
# run metadata of a json-split file laid out in Node order (a .cali file's graph is node-ordered anyway: Hatchet's
# .cali reader orders by creation without Node order, its json reader by frame)
NODE_ORDER_KEY = "caliper.node_order"


def frame_keys(n_frames: int, row_local: np.ndarray, row_order: np.ndarray) -> np.ndarray:
    """Per frame: the smallest Node order among its rows (NaN skipped), +inf when it has none."""
    keys = np.full(n_frames, np.inf)
    valid = ~np.isnan(row_order)
    np.minimum.at(keys, row_local[valid], row_order[valid])
    return keys


def new_positions(parent: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """new position of each frame (parents before children; siblings by key, then by old position), for frames
    whose parents precede them (``parent[i] < i``, -1 for a root)."""
    n = len(parent)
    below = keys.copy()
    for i in range(n - 1, -1, -1):  # children first: the smallest key in each subtree
        p = parent[i]
        if p >= 0 and below[i] < below[p]:
            below[p] = below[i]
    effective = np.where(np.isfinite(keys), keys, below)
    by_parent = np.lexsort((np.arange(n), effective, parent))  # grouped by parent, sorted within each group
    starts = np.searchsorted(parent[by_parent], np.arange(-1, n), side="left")
    ends = np.searchsorted(parent[by_parent], np.arange(-1, n), side="right")
    out = np.empty(n, np.int64)
    stack = list(by_parent[starts[0]:ends[0]][::-1])  # the roots
    pos = 0
    while stack:
        i = int(stack.pop())
        out[i] = pos
        pos += 1
        stack.extend(by_parent[starts[i + 1]:ends[i + 1]][::-1].tolist())
    return out


def hatchet_numbers(parent: np.ndarray, row_frame) -> np.ndarray:
    """Hatchet's ``nid`` of each frame of a ``.cali`` file (float, NaN for a frame no record reaches): its
    native reader numbers nodes as it meets them, record after record -- a record's missing ancestors first,
    nearest first, then the record's own node -- and a node without parent takes two numbers (the second when
    it is a record's own node, the first when it is created as an ancestor)."""
    num = np.full(len(parent), -1, np.int64)
    nxt = 0
    for f in row_frame:
        f = int(f)
        if num[f] >= 0:
            continue
        p = int(parent[f])
        while p >= 0 and num[p] < 0:
            num[p] = nxt
            nxt += 1 + (parent[p] < 0)
            p = int(parent[p])
        nxt += parent[f] < 0
        num[f] = nxt
        nxt += 1
    return np.where(num >= 0, num, np.nan).astype(np.float64)


def reorder(frames: pa.Table, row_local: np.ndarray, row_order: np.ndarray,
            numbers: np.ndarray | None = None) -> tuple[pa.Table, np.ndarray, np.ndarray | None]:
    """``frames`` re-laid in Node order, each row's new local id, and ``numbers`` (one per frame) in the new
    order."""
    n = frames.num_rows
    parent = frames.column("parent_local").to_numpy().astype(np.int64)
    new = new_positions(parent, frame_keys(n, row_local.astype(np.int64), row_order))
    old_at = np.argsort(new)
    moved = frames.take(pa.array(old_at))
    old_parent = parent[old_at]
    new_parent = np.where(old_parent >= 0, new[np.maximum(old_parent, 0)], -1).astype(np.int32)
    moved = moved.set_column(moved.schema.get_field_index("local_id"), "local_id",
                             pa.array(np.arange(n, dtype=np.int32)))
    moved = moved.set_column(moved.schema.get_field_index("parent_local"), "parent_local", pa.array(new_parent))
    return moved, new[row_local].astype(np.int32), None if numbers is None else np.asarray(numbers)[old_at]
