"""Compound queries: set operations on the node sets of sub-queries (Hatchet's new- and old-style names).

``q1 & q2`` intersects, ``q1 | q2`` unites, ``q1 ^ q2`` takes the symmetric difference (folded left to right
for more than two, as Hatchet does) and ``~q`` takes every node of the graph that ``q`` does not return.
A sub-query may be a query object, an object-dialect list or a string-dialect string.
"""

from __future__ import annotations

import numpy as np

from perflake.errors import BadNumberNaryQueryArgs
from perflake.query.model import AbstractQuery


class CompoundQuery(AbstractQuery):
    """Base class: holds the sub-queries (already converted to query objects); ``apply(gf)`` as every query."""

    min_args, max_args = 2, None

    def __init__(self, *queries, multi_index_mode: str | None = None):
        from perflake.query.matching import to_query

        if len(queries) == 1 and isinstance(queries[0], tuple):
            queries = queries[0]
        n = len(queries)
        if n < self.min_args or (self.max_args is not None and n > self.max_args):
            want = self.min_args if self.max_args == self.min_args else f"{self.min_args} or more"
            raise BadNumberNaryQueryArgs(f"{type(self).__name__} takes {want} sub-queries, got {n}")
        self.subqueries = [to_query(q, multi_index_mode) for q in queries]

    def combine(self, results: list[np.ndarray], all_ids: np.ndarray) -> np.ndarray:
        """Combine the sub-queries' node-id arrays (sorted, unique) into this query's."""
        raise NotImplementedError

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(map(repr, self.subqueries))})"


def _fold(op, results: list[np.ndarray]) -> np.ndarray:
    """``op`` over the sub-queries' arrays, left to right (as Hatchet folds its n-ary compounds)."""
    out = results[0]
    for r in results[1:]:
        out = op(out, r, assume_unique=True)
    return out


class ConjunctionQuery(CompoundQuery):
    """Nodes returned by every sub-query."""

    def combine(self, results, all_ids):
        return _fold(np.intersect1d, results)


class DisjunctionQuery(CompoundQuery):
    """Nodes returned by any sub-query."""

    def combine(self, results, all_ids):
        return np.unique(np.concatenate(results))


class ExclusiveDisjunctionQuery(CompoundQuery):
    """Symmetric difference, folded left to right (a node returned by an odd number of sub-queries)."""

    def combine(self, results, all_ids):
        return _fold(np.setxor1d, results)


class NegationQuery(CompoundQuery):
    """Every node of the graph that the single sub-query does not return."""

    min_args = max_args = 1

    def combine(self, results, all_ids):
        return np.setdiff1d(all_ids, results[0], assume_unique=True)


# Hatchet's old-style names for the same classes (NaryQuery: the base of its old-style compounds)
NaryQuery = CompoundQuery
AndQuery = IntersectionQuery = ConjunctionQuery
OrQuery = UnionQuery = DisjunctionQuery
XorQuery = SymDifferenceQuery = ExclusiveDisjunctionQuery
NotQuery = NegationQuery
