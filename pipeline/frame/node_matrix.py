"""A GraphFrame's rows laid out as a (graph node x location) matrix, plus the graph's links as index arrays.

Operations that combine a node's value with its children's (subtree sums, exclusive from inclusive values)
become a handful of numpy calls over whole columns: ``matrix(values)`` scatters a dataframe column into the
matrix (NaN where a node has no row at a location), ``rows(matrix)`` gathers it back in the dataframe's row
order.  Nodes are in the graph's pre-order; locations are the distinct (rank, thread) pairs of the frame.
"""

from __future__ import annotations

import numpy as np

from perflake.frame.tables import locations, node_ids


class NodeMatrix:
    def __init__(self, gf):
        nodes = list(gf.graph)
        ids = np.fromiter((n.node_id for n in nodes), np.uint64, len(nodes))
        sorter = np.argsort(ids)
        row_ids = node_ids(gf.dataframe)
        at = np.minimum(np.searchsorted(ids, row_ids, sorter=sorter), max(len(ids) - 1, 0))
        if len(row_ids) and (not len(ids) or (ids[sorter[at]] != row_ids).any()):
            raise ValueError("the dataframe has rows for nodes that are not in the graph")
        self.row_node = sorter[at] if len(row_ids) else np.zeros(0, np.int64)
        rank, thread = locations(gf.dataframe)
        keys = (rank.astype(np.int64) << 32) | (thread.astype(np.int64) & 0xFFFFFFFF)
        uniq, self.row_loc = np.unique(keys, return_inverse=True)
        self.shape = (len(nodes), max(len(uniq), 1))
        position = {id(n): i for i, n in enumerate(nodes)}
        pairs = [(i, position[id(c)]) for i, n in enumerate(nodes) for c in n.children]
        self.parent = np.fromiter((p for p, _ in pairs), np.int64, len(pairs))
        self.child = np.fromiter((c for _, c in pairs), np.int64, len(pairs))
        self.nodes = nodes

    def matrix(self, values) -> np.ndarray:
        """A dataframe column (in row order) as a node x location matrix; NaN where there is no row."""
        out = np.full(self.shape, np.nan)
        out[self.row_node, self.row_loc] = np.asarray(values, dtype=np.float64)
        return out

    def rows(self, matrix: np.ndarray) -> np.ndarray:
        """The matrix back in the dataframe's row order."""
        return matrix[self.row_node, self.row_loc]

    def is_tree(self) -> bool:
        """No node has more than one parent."""
        return len(np.unique(self.child)) == len(self.child)

    def heights(self) -> np.ndarray:
        """Longest distance from each node down to a leaf (children always have a smaller height).

        Relaxed over all links at once, one round per level; raises ValueError for a cycle.
        """
        height = np.zeros(len(self.nodes), dtype=np.int64)
        for _ in range(len(self.nodes) + 1):
            new = height.copy()
            np.maximum.at(new, self.parent, height[self.child] + 1)
            if np.array_equal(new, height):
                return height
            height = new
        raise ValueError("the graph has a cycle: sums over descendants are not defined")

    def levels(self):
        """Link index arrays grouped by the parent's height, lowest first: folding children into parents in
        this order sees every child complete before its parents use it (trees and DAGs alike)."""
        if not len(self.parent):
            return []
        ph = self.heights()[self.parent]
        order = np.argsort(ph, kind="stable")
        cuts = np.flatnonzero(np.diff(ph[order])) + 1
        return np.split(order, cuts)
