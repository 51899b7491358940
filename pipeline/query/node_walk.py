"""Hatchet's query engine one node at a time: the step methods of ``hatchet.query.engine.QueryEngine``.

perflake answers a query vectorised (perflake.query.matching: predicates over all nodes at once, the path pattern
as an automaton in SQL).  Scripts and tests written against Hatchet also drive its engine by hand, step by step,
on a graph's nodes; :class:`NodeWalk` gives those steps with Hatchet's results:

* ``search_cache``: node number (``_hatchet_nid``) -> the positions of the expanded query elements whose
  predicate the node's row satisfies; ``_cache_node(node, query, dframe)`` fills it for one node (the row is
  ``dframe.loc[node]``, or all the node's rows of a (node, rank[, thread]) frame);
* ``_match_1(query, dframe, node, i)``: ``[[child], ...]`` for each child (in traversal order) that satisfies
  element ``i``, None when none does;
* ``_match_0_or_more(query, dframe, node, i)``: the paths starting at ``node`` that a ``"*"`` element ``i``
  covers before the element after it applies: ``[[]]`` when ``node`` already satisfies element ``i + 1``;
  ``node`` prepended to its children's paths when it satisfies ``i`` (a leaf only ends a path when ``i`` is the
  last element); ``[[]]`` for a node satisfying neither when ``i`` is the last element; None otherwise.  A
  node's paths are distinct, in no particular order (as Hatchet's, which go through a set);
* ``_match_pattern(query, dframe, root, i)``: every full match starting at ``root``, which satisfied element
  ``i`` (the elements after ``i`` are walked; after a leading ``"*"``, the pattern again from element 0), None
  when there is none; consecutive equal matches are kept once;
* ``_apply_impl(query, dframe, node, visited, matches)``: the depth-first search from ``node`` collecting the
  matches of every node where the pattern can start.

The elements are ``query.query_pattern`` (Hatchet's expanded ``(quantifier, callable)`` view).  These steps are
slow (a predicate call per node and element) and meant for such scripts; ``QueryEngine.apply`` stays vectorised.
"""

from __future__ import annotations

import pandas as pd

from perflake.errors import InvalidQueryFilter
from perflake.frame.graph import ordered


class NodeWalk:
    """The step methods and the per-node cache of Hatchet's QueryEngine (module docstring)."""

    def __init__(self):
        self.search_cache: dict = {}
        self._patterns: dict = {}

    def reset_cache(self) -> None:
        self.search_cache = {}
        self._patterns = {}

    def _pattern(self, query) -> list:
        key = id(query)
        if key not in self._patterns:
            self._patterns[key] = (query, list(query.query_pattern))  # keeps query alive: ids stay unique
        return self._patterns[key][1]

    def _satisfied(self, node, query, dframe) -> list:
        if node._hatchet_nid not in self.search_cache:
            self._cache_node(node, query, dframe)
        return self.search_cache[node._hatchet_nid]

    def _cache_node(self, node, query, dframe) -> None:
        if isinstance(dframe.index, pd.MultiIndex):
            row = dframe.xs(node, level="node", drop_level=False)
        else:
            row = dframe.loc[node]
        self.search_cache[node._hatchet_nid] = [i for i, (_, test) in enumerate(self._pattern(query)) if test(row)]

    def _match_1(self, query, dframe, node, idx):
        self._satisfied(node, query, dframe)
        found = [[child] for child in ordered(node.children) if idx in self._satisfied(child, query, dframe)]
        return found or None

    def _match_0_or_more(self, query, dframe, node, wcard_idx):
        hits = self._satisfied(node, query, dframe)
        last = wcard_idx == len(self._pattern(query)) - 1
        if wcard_idx + 1 in hits:
            return [[]]
        if wcard_idx not in hits:
            return [[]] if last else None
        if not node.children:
            return [[node]] if last else None
        tails = set()
        for child in ordered(node.children):
            tails.update(tuple(p) for p in self._match_0_or_more(query, dframe, child, wcard_idx) or ())
        return [[node, *t] for t in tails] or None

    def _match_pattern(self, query, dframe, pattern_root, match_idx):
        pattern = self._pattern(query)
        idx = 0 if pattern[match_idx][0] == "*" else match_idx + 1
        matches = [[pattern_root]]
        for i in range(idx, len(pattern)):
            quantifier = pattern[i][0]
            if quantifier not in (".", "*"):
                raise InvalidQueryFilter('Query wildcards must (internally) be one of "." or "*"')
            grown = []
            for m in matches:
                for tail in self._tails(query, dframe, m[-1], i, quantifier):
                    if not grown or grown[-1] != m + tail:
                        grown.append(m + tail)
            if not grown:
                return None
            matches = grown
        return matches

    def _tails(self, query, dframe, node, i, quantifier) -> list:
        """What element ``i`` adds after ``node`` on a match: a list of paths (possibly ``[]``, the empty one)."""
        if quantifier == ".":
            return self._match_1(query, dframe, node, i) or []
        if not node.children:
            return [[]]
        out = []
        for child in ordered(node.children):
            out.extend(self._match_0_or_more(query, dframe, child, i) or [])
        return out

    def _apply_impl(self, query, dframe, node, visited, matches) -> None:
        stack = [node]
        while stack:
            node = stack.pop()
            if node is None or node._hatchet_nid in visited:
                continue
            hits = self._satisfied(node, query, dframe)
            if self._pattern(query)[0][0] == "*" and 1 in hits:
                matches.extend(self._match_pattern(query, dframe, node, 1) or [])
            if 0 in hits:
                matches.extend(self._match_pattern(query, dframe, node, 0) or [])
            visited.add(node._hatchet_nid)
            stack.extend(reversed(ordered(node.children)))
