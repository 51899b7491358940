"""A query element's predicate as a callable on one node's data: Hatchet's ``query.query_pattern`` view.

Hatchet stores a query as a list of ``(quantifier, predicate)`` where the predicate is a Python callable taking a
node's dataframe row (a Series; the DataFrame of the node's rows when the frame is indexed by node plus
rank/thread) and returning a bool; scripts and tests call those callables on rows (or plain dicts) themselves.
perflake evaluates the dialects' predicates vectorised over all nodes (perflake.query.predicates); this module
wraps a predicate tree so that it can also be called on one row, with the same rules:

* a condition on an attribute the row does not have makes the whole predicate False (Hatchet's KeyError);
* ``depth``, ``node_id``/``_hatchet_nid``, ``callpath_id``, ``IS LEAF`` and frame attributes that are no
  column (``type``) are read from the node when the row carries it (a Series named by its node, the node
  index level of a DataFrame); from a plain dict only as its keys;
* several rows (a DataFrame): each condition is tested on every row, then reduced with "all" when the query's
  ``multi_index_mode`` is "all", on the mean of numeric columns with "mean", and with "any" for "any"; with
  "off" (Hatchet's default) a DataFrame is refused as Hatchet refuses it: MultiIndexModeMismatch (object
  dialect), InvalidQueryFilter (string dialect);
* a wrong type (``STARTS WITH`` on a number, ``> 5`` on a string) raises InvalidQueryFilter, as when applied.

A base-syntax predicate (a Python callable) is returned as it is.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from perflake.errors import InvalidQueryFilter, MultiIndexModeMismatch
from perflake.query.model import And, Call, Cond, Not, Or, conds

NODE_VALUES = ("depth", "node_id", "_hatchet_nid", "callpath_id")


def row_callable(pred, mode: str | None = None, source: str | None = None):
    """``pred`` (a predicate tree or a Call) as a callable on one node's row."""
    if isinstance(pred, Call):
        return pred.fn
    return RowPredicate(pred, mode, source)


class RowPredicate:
    """Callable: ``RowPredicate(tree)(row) -> bool`` (module docstring)."""

    def __init__(self, pred, mode: str | None = None, source: str | None = None):
        self.pred, self.mode, self.source = pred, mode, source

    def __repr__(self):
        return f"RowPredicate({self.pred!r})"

    def __call__(self, row) -> bool:
        if isinstance(row, pd.DataFrame) and self.mode in (None, "off"):  # Hatchet's "off": one row per node only
            if self.source is not None:  # its string dialect compares whole columns and fails on the truth value
                raise InvalidQueryFilter("Type mismatch in filter: a node with several rows needs "
                                         'multi_index_mode "any", "all" or "mean"')
            raise MultiIndexModeMismatch('multi_index_mode="off" cannot test a node with several rows: use "any", '
                                         '"all" or "mean"')
        rows, node = _rows_and_node(row)
        try:
            values = {c.attr: _values(c.attr, rows, node) for c in conds(self.pred) if c.attr is not None}
        except KeyError:
            return False
        return bool(self._eval(self.pred, values, node, len(rows)))

    def _eval(self, pred, values: dict, node, n: int) -> bool:
        if isinstance(pred, Cond):
            return self._leaf(pred, values, node, n)
        if isinstance(pred, Not):
            return not self._eval(pred.arg, values, node, n)
        if isinstance(pred, And):
            return all(self._eval(a, values, node, n) for a in pred.args)
        if isinstance(pred, Or):
            return any(self._eval(a, values, node, n) for a in pred.args)
        raise TypeError(f"not a predicate: {pred!r}")

    def _leaf(self, cond: Cond, values: dict, node, n: int) -> bool:
        from perflake.query.predicates import _test

        if cond.op in ("is_leaf", "is_not_leaf"):
            leaf = node is not None and not getattr(node, "children", [])
            return leaf if cond.op == "is_leaf" else (node is not None and not leaf)
        s = values[cond.attr]
        if len(s) > 1 and self.mode == "mean" and pd.api.types.is_numeric_dtype(s):
            s = pd.Series([s.mean()])
        hits = np.asarray(_test(cond, s, self.source), dtype=bool)
        if len(hits) == 0:
            return False
        return bool(hits.all() if self.mode == "all" else hits.any())


def _rows_and_node(row):
    """(a DataFrame of the row(s), the node or None) for a dict, a Series or a DataFrame."""
    if isinstance(row, pd.DataFrame):
        node = None
        if "node" in (row.index.names or []) and len(row):
            node = row.index.get_level_values("node")[0]
        return row.reset_index(drop=True), node
    if isinstance(row, pd.Series):
        node = row.name if hasattr(row.name, "frame") else None
        return pd.DataFrame([row.to_dict()]), node
    if isinstance(row, dict):
        return pd.DataFrame([row]), None
    raise TypeError(f"a query predicate takes a node's row (dict, Series or DataFrame), not {type(row).__name__}")


def _values(attr, rows: pd.DataFrame, node) -> pd.Series:
    """The attribute's values over the rows (one per row), or KeyError when there are none."""
    if attr in rows.columns:
        col = rows[attr]
        return col if pd.api.types.is_numeric_dtype(col) else col.infer_objects()
    if node is None:
        raise KeyError(attr)
    if attr == "depth":
        return pd.Series([node.depth])
    if attr in ("node_id", "_hatchet_nid"):
        return pd.Series([node._hatchet_nid])
    if attr == "callpath_id":
        return pd.Series([node.node_id], dtype=object if node.node_id is None else np.uint64)
    if isinstance(attr, str) and attr in node.frame.attrs:
        return pd.Series([node.frame.attrs[attr]], dtype=object)
    raise KeyError(attr)
