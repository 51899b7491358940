r"""Predicates evaluated for all nodes at once: one boolean per node of the graph (pre-order positions).

The inputs are the dataframe's columns plus ``depth``, ``node_id`` and ``_hatchet_nid`` (Hatchet's meaning: the
node's number, its position in the graph's pre-order unless a view numbered it otherwise), ``callpath_id``
(perflake's 64-bit call-path id), ``is_leaf`` and the frame attributes that are not columns (``type``).  How a
node with several rows (ranks, threads) is read:

* ``"off"`` (default, Hatchet's): one row per node; a frame indexed by node plus rank/thread is refused
  (MultiIndexModeMismatch, raised by the engine, as Hatchet's dialects refuse it);
* ``"mean"`` (perflake's, the lake's and CLI's default): one value per node, the mean over its rows for numeric
  columns (NaN skipped, Hatchet's ``drop_index_levels()`` default) and the first non-missing value for the others;
* ``"any"`` / ``"all"``: each condition is tested on every row, then reduced per node with any / all (per
  condition, before NOT/AND/OR, as Hatchet's dialects do).  A node without rows satisfies neither.

A predicate that names an attribute the data does not have matches no node (Hatchet's KeyError -> False).
Conditions of the wrong type (``STARTS WITH`` on a number, ``> 5`` on a string) raise QueryError at the token.
Python callables (:class:`~perflake.query.model.Call`) are called once per node, with the row (a Series) or,
for a dataframe indexed by node plus rank/thread, the DataFrame of the node's rows, as Hatchet does.

Regular expressions (``=~``, object-dialect strings) are matched by RE2 (pyarrow's ``match_substring_regex``),
whose time is linear in the text: a query such as ``=~ "(a+)+$"`` cannot backtrack for minutes over a long
name as Python's ``re`` would.  The pattern keeps Python's meaning: ``re.match`` semantics (anchored at the
start; ``fullregex`` is ``re.match(value + r"\Z")``); ``\Z``, ``\uXXXX``, ``\N{...}``, ``{,n}`` and the
Unicode-aware ``\d \w \s`` (RE2's are ASCII-only) are translated.  Left as RE2 reads them: ``$`` matches only
at the very end (Python's also before a final newline) and ``\b``, ``\W``/``\S`` inside ``[...]`` are ASCII.
A pattern with constructs RE2 does not have (look-around such as Hatchet's ``^((?!MPID).)*``, back-references,
possessive quantifiers, ``(?x)``...) is matched by the ``regex`` module with Python ``re`` semantics, once per
distinct value, within a time limit (REGEX_SECONDS): past it, a QueryError instead of a hang.
"""

from __future__ import annotations

import operator
import re
import time
import unicodedata
from functools import cached_property

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pandas.api import types as ptypes

from perflake.errors import InvalidQueryFilter, QueryError
from perflake.query.model import AUTO_OP, INVALID_OP, NUMERIC_OPS, STRING_OPS, And, Call, Cond, Not, Or, conds
from perflake.query.object_dialect import comparison_cond

_NUM = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt,
        ">=": operator.ge}
_NUMERIC_KINDS = ("integer", "floating", "mixed-integer-float", "decimal", "boolean")


def _kind(s: pd.Series) -> str:
    """"num", "str", "none" (every value missing) or "mixed"."""
    if ptypes.is_bool_dtype(s) or ptypes.is_numeric_dtype(s):
        return "num"
    inferred = ptypes.infer_dtype(s, skipna=True)
    if inferred == "string":
        return "str"
    if inferred in _NUMERIC_KINDS:
        return "num"
    return "none" if inferred == "empty" else "mixed"


class NodeTable:
    """The predicate inputs of one GraphFrame (``tables``: engine.GraphTables of its graph) in one mode."""

    def __init__(self, gf, tables, mode: str):
        self.gf, self.tables, self.mode = gf, tables, mode
        self.n = len(tables.nodes)
        df = gf.dataframe
        self.multi = isinstance(df.index, pd.MultiIndex)
        self.codes = _row_positions(df.index, tables.node_ids)
        self._cache: dict = {}

    def has(self, attr: str) -> bool:
        return (attr in ("depth", "node_id", "_hatchet_nid", "callpath_id", "is_leaf")
                or attr in self.gf.dataframe.columns or attr in self.tables.frame_attrs)

    def values(self, attr: str) -> tuple[pd.Series, bool]:
        """(values, per_row): per node (length n) or, in "any"/"all" mode, per dataframe row."""
        key = ("values", attr)
        if key not in self._cache:
            self._cache[key] = self._values(attr)
        return self._cache[key]

    def _values(self, attr: str):
        t = self.tables
        if attr == "depth":
            return pd.Series(t.depth), False
        if attr in ("node_id", "_hatchet_nid"):
            # Hatchet's node numbers: the pre-order position, or the number a view gave (HPCToolkit's ctx ids)
            return pd.Series(np.fromiter((n._hatchet_nid for n in t.nodes), np.int64, self.n)), False
        if attr == "callpath_id":
            return pd.Series(t.node_ids), False
        if attr == "is_leaf":
            return pd.Series(t.is_leaf), False
        df = self.gf.dataframe
        if attr not in df.columns:
            return pd.Series([n.frame.attrs.get(attr) for n in t.nodes], dtype=object), False
        col = df[attr].reset_index(drop=True)
        per_row = self.mode in ("any", "all") and self.multi
        if per_row and (per_node := self._frame_column(attr, col)) is not None:
            return per_node, False
        if not ptypes.is_numeric_dtype(col) and not ptypes.is_bool_dtype(col):
            col = col.astype(object)
        if per_row:
            return col, True
        valid = self.valid
        grouped = col[valid].groupby(self.codes[valid], sort=False)
        if not self.multi:
            per_node = grouped.first()
        elif ptypes.is_bool_dtype(col) or not ptypes.is_numeric_dtype(col):
            per_node = grouped.first()
        else:
            per_node = grouped.mean()
        return per_node.reindex(range(self.n)), False

    def _frame_column(self, attr: str, col: pd.Series) -> pd.Series | None:
        """A frame attribute's column (name, file...) per node, when every row holds its node's frame value
        (as GraphFrame.from_tables builds it; a user may have changed it): testing 1,000 nodes instead of
        256,000 rows gives the same any/all answer.  A node without rows gets None (no string test passes),
        as a node without rows has no hit.  None when the column differs from the frames anywhere."""
        if attr not in self.tables.frame_attrs or ptypes.is_numeric_dtype(col) or ptypes.is_bool_dtype(col):
            return None
        values = np.empty(self.n, dtype=object)
        values[:] = [n.frame.attrs.get(attr) for n in self.tables.nodes]
        if not _same_as_frames(col, values, self.codes, self.valid):
            return None
        values[self.rows_per_node == 0] = None
        return pd.Series(values, dtype=object)

    def reduce(self, hits: np.ndarray) -> np.ndarray:
        """Per-row booleans -> per-node booleans with this table's mode ("any" or "all")."""
        valid = self.valid
        if self.mode == "any":
            return np.bincount(self.codes[hits & valid], minlength=self.n) > 0
        return (self.rows_per_node > 0) & (np.bincount(self.codes[~hits & valid], minlength=self.n) == 0)

    @cached_property
    def valid(self) -> np.ndarray:
        """Rows whose node is in the graph."""
        return self.codes >= 0

    @cached_property
    def rows_per_node(self) -> np.ndarray:
        return np.bincount(self.codes[self.valid], minlength=self.n)


def _same_as_frames(col: pd.Series, values: np.ndarray, codes: np.ndarray, valid: np.ndarray) -> bool:
    """Whether every row of ``col`` (rows with ``valid``) holds ``values[codes]``, its node's frame value.
    String columns are compared in Arrow (10M rows in ~0.15 s) without making a Python object per row."""
    strings = all(v is None or isinstance(v, str) for v in values)
    if strings and ptypes.is_string_dtype(col) and col.dtype != object:
        rows = pa.array(col.array)
        if not valid.all():
            rows = rows.filter(pa.array(valid))
        expected = pa.array(values, rows.type).take(pa.array(codes[valid]))
        same = pc.or_(pc.fill_null(pc.equal(rows, expected), False),
                      pc.and_(pc.is_null(rows), pc.is_null(expected)))
        return bool(pc.all(same).as_py() is not False)
    rows = col.to_numpy(dtype=object)[valid]
    return bool(np.array_equal(rows, values[codes[valid]]))  # identical objects compare fast


def _row_positions(index: pd.Index, node_ids: np.ndarray) -> np.ndarray:
    """The pre-order position of each dataframe row's node (-1: not in the graph), matched by call-path id."""
    if isinstance(index, pd.MultiIndex):
        level = index.names.index("node")
        nodes, codes = index.levels[level], np.asarray(index.codes[level])
    else:
        nodes, codes = index, np.arange(len(index))
    ids = np.fromiter((getattr(x, "node_id", 0) for x in nodes), np.uint64, len(nodes))
    order = np.argsort(node_ids, kind="stable")
    found = np.searchsorted(node_ids[order], ids).clip(0, max(len(node_ids) - 1, 0))
    pos = np.where(node_ids[order][found] == ids, order[found], -1) if len(node_ids) else np.full(len(ids), -1)
    return np.where(codes >= 0, pos[codes], -1) if len(pos) else np.full(len(codes), -1)


def _fail(cond: Cond, message: str, source: str | None):
    """A condition that cannot be tested on its attribute's values (Hatchet's InvalidQueryFilter)."""
    if source is None:
        return InvalidQueryFilter(f"query element {cond.pos}: {message}", position=cond.pos)
    return InvalidQueryFilter(message, query=source, position=cond.pos)


def _leaf(cond: Cond, table: NodeTable, source: str | None) -> np.ndarray:
    if cond.op in ("is_leaf", "is_not_leaf"):
        leaf = table.tables.is_leaf
        return leaf.copy() if cond.op == "is_leaf" else ~leaf
    s, per_row = table.values(cond.attr)
    hits = _test(cond, s, source)
    return table.reduce(hits) if per_row else hits


def _test(cond: Cond, s: pd.Series, source) -> np.ndarray:
    kind, op = _kind(s), cond.op
    if op == INVALID_OP:
        raise _fail(cond, f"the value for {cond.attr!r} must be a number, a string or a list of them, not "
                          f"{type(cond.value).__name__}", source)
    if op == AUTO_OP:  # object dialect: a regex for strings, a comparison string for numbers
        if kind == "num":
            cond = comparison_cond(cond.attr, cond.value, cond.pos)
            op = cond.op
        else:
            op = "fullregex"
    if op in NUMERIC_OPS:
        if kind not in ("num", "none", "mixed"):
            raise _fail(cond, f"{cond.attr!r} holds strings: {op} {cond.value!r} needs a numeric attribute", source)
        num = s if kind == "num" else pd.to_numeric(s, errors="coerce")
        return np.asarray(_NUM[op](num.to_numpy(), cond.value), dtype=bool)
    if op in STRING_OPS:
        if kind == "num":
            raise _fail(cond, f"{cond.attr!r} is numeric: a string test needs a string attribute", source)
        # test each distinct value once (names repeat for every rank and thread), then map back by code
        codes, uniques = pd.factorize(s, use_na_sentinel=True)
        u = pd.Series(np.asarray(uniques, dtype=object), dtype=object)
        strs = u.str
        v = cond.value
        out = {"str==": lambda: u == v,
               "starts": lambda: strs.startswith(v, na=False),
               "ends": lambda: strs.endswith(v, na=False),
               "contains": lambda: strs.contains(v, regex=False, na=False),
               "regex": lambda: _re2_match(u, v, cond, source),
               "fullregex": lambda: _re2_match(u, v + r"\Z", cond, source)}[op]
        per_value = np.asarray(out(), dtype=bool)
        return np.where(codes >= 0, per_value[np.maximum(codes, 0)] if len(per_value) else False, False)
    if op in ("is_nan", "is_not_nan", "is_inf", "is_not_inf"):  # only numbers are NaN or infinite
        hit = np.zeros(len(s), bool)
        if kind == "num":
            arr = s.to_numpy(dtype=float, na_value=np.nan)
            hit = np.isnan(arr) if "nan" in op else np.isinf(arr)
        return ~hit if "_not_" in op else hit
    if op in ("is_none", "is_not_none"):  # a missing string is None; a numeric NaN is not None
        hit = np.zeros(len(s), bool) if kind == "num" else np.asarray(s.isna(), dtype=bool)
        return ~hit if op == "is_not_none" else hit
    raise _fail(cond, f"unknown operation {op!r}", source)


# inside [...] each ends with a class escape, so that a following "-" stays a literal "-" as in Python
_CLASS_ESCAPES = {"d": r"\p{Nd}", "D": r"\P{Nd}", "w": r"_\p{L}\p{N}", "s": r"\x{1c}-\x{1f}\x{85}\v\p{Z}\s"}
_ESCAPES = {"d": r"\p{Nd}", "D": r"\P{Nd}", "w": r"[\p{L}\p{N}_]", "W": r"[^\p{L}\p{N}_]",
            "s": r"[\s\v\p{Z}\x{1c}-\x{1f}\x{85}]", "S": r"[^\s\v\p{Z}\x{1c}-\x{1f}\x{85}]", "Z": r"\z"}
_UNICODE_ESCAPE = re.compile(r"u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|N\{([^}]*)\}")
REGEX_SECONDS = 5.0  # time limit of one backtracking match over all distinct values
_EMPTY_MIN = re.compile(r"\{,(\d*)\}")


def python_to_re2(pattern: str) -> str:
    """A Python ``re`` pattern rewritten for RE2 with the same meaning (see the module docstring)."""
    out, i, n, klass = [], 0, len(pattern), None  # klass: index where the current [...] content starts
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            e = pattern[i + 1]
            u = _UNICODE_ESCAPE.match(pattern, i + 1)
            if u:
                code = u.group(1) or u.group(2) or f"{ord(unicodedata.lookup(u.group(3))):x}"
                out.append(r"\x{" + code + "}")
                i = u.end()
                continue
            out.append((_CLASS_ESCAPES if klass is not None else _ESCAPES).get(e, "\\" + e))
            i += 2
            continue
        if klass is None:
            if c == "[":
                klass = i + 1 + (pattern.startswith("^", i + 1))
            elif c == "{" and (m := _EMPTY_MIN.match(pattern, i)) and m.group(1):
                out.append("{0," + m.group(1) + "}")
                i = m.end()
                continue
        elif c == "]" and i > klass:
            klass = None
        out.append(c)
        i += 1
    return "".join(out)


def _re2_match(values: pd.Series, pattern: str, cond: Cond, source) -> np.ndarray:
    """``re.match(pattern, value)`` for each value (False for a non-string), evaluated by RE2 in linear time."""
    try:
        re.compile(pattern)
    except re.error as exc:
        raise _fail(cond, f"bad regular expression {cond.value!r}: {exc}", source) from None
    texts = [x.encode("utf-8", "replace").decode() if isinstance(x, str) else None for x in values]
    try:
        hits = pc.match_substring_regex(pa.array(texts, pa.string()), pattern="^(?:" + python_to_re2(pattern) + ")")
    except pa.ArrowInvalid:
        return _backtracking_match(texts, pattern, cond, source)
    return hits.fill_null(False).to_numpy(zero_copy_only=False)


def _backtracking_match(texts: list[str | None], pattern: str, cond: Cond, source) -> np.ndarray:
    """RE2 has no look-around, back-references or possessive quantifiers: such a pattern is matched by the
    ``regex`` module (Python ``re`` semantics) once per distinct string (None never matches), spread back to
    every position, within REGEX_SECONDS in all, so that a catastrophic pattern stays a clear error."""
    import regex

    codes, uniques = pd.factorize(pd.Series(texts, dtype=object), use_na_sentinel=True)
    compiled = regex.compile(pattern, flags=regex.VERSION0)
    deadline = time.monotonic() + REGEX_SECONDS
    hit = np.zeros(len(uniques), bool)
    try:
        for i, text in enumerate(uniques):
            hit[i] = compiled.match(text, timeout=max(deadline - time.monotonic(), 1e-3)) is not None
    except TimeoutError:
        raise _fail(cond, f"regular expression {cond.value!r} took more than {REGEX_SECONDS:g} s (a pattern RE2 "
                          "cannot run is matched by backtracking; simplify it)", source) from None
    return np.where(codes >= 0, hit[np.maximum(codes, 0)], False)


def evaluate(pred, table: NodeTable, source: str | None = None) -> np.ndarray:
    """One boolean per node (pre-order position) for a predicate tree or a Python callable."""
    if isinstance(pred, Call):
        return _call(pred.fn, table)
    if any(c.attr is not None and not table.has(c.attr) for c in conds(pred)):
        return np.zeros(table.n, bool)
    return _tree(pred, table, source)


def _tree(pred, table, source) -> np.ndarray:
    if isinstance(pred, Cond):
        return _leaf(pred, table, source)
    if isinstance(pred, Not):
        return ~_tree(pred.arg, table, source)
    if isinstance(pred, And):
        out = np.ones(table.n, bool)
        for a in pred.args:
            out &= _tree(a, table, source)
        return out
    if isinstance(pred, Or):
        out = np.zeros(table.n, bool)
        for a in pred.args:
            out |= _tree(a, table, source)
        return out
    raise QueryError(f"not a predicate: {pred!r}")


def _call(fn, table: NodeTable) -> np.ndarray:
    """A Python predicate, called per node as Hatchet calls it."""
    df = table.gf.dataframe
    out = np.zeros(table.n, bool)
    if table.multi:  # the DataFrame of the node's rows, full index kept (Hatchet's dframe.xs(node))
        for i, rows in df.groupby(table.codes, sort=False):
            if i >= 0:
                out[i] = bool(fn(rows))
    else:  # the node's row as a Series named by the node (Hatchet's dframe.loc[node])
        for i, (_, row) in zip(table.codes, df.iterrows()):
            if i >= 0:
                out[i] = bool(fn(row))
    return out
