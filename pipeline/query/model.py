"""The one query model every dialect parses into.

A query is a sequence of *elements* ``(quantifier, predicate)``.  A quantifier is ``"."`` (one node), ``"*"``
(zero or more), ``"+"`` (one or more) or an integer ``n >= 1`` (exactly n); ``expanded()`` rewrites ``"+"`` as
``"."`` then ``"*"`` and ``n`` as n ``"."`` (as Hatchet does), so the engine only sees ``"."`` and ``"*"``.

A predicate is either a Python callable (the base syntax, :class:`Query` / :class:`QueryMatcher`), applied per
node, or a small boolean tree of :class:`Cond` leaves (the dialects), evaluated vectorised over all nodes at once
(``perflake/query/predicates.py``).

Base syntax: ``QueryMatcher().match(".", lambda row: row["name"] == "main").rel("*", lambda row: row["time"] > 5)``;
each predicate is called once per node with the node's dataframe row (a Series named by the node) or, when the
dataframe is indexed by node plus rank/thread, with the DataFrame of the node's rows, as Hatchet does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from perflake.errors import InvalidMultiIndexMode, InvalidQueryFilter, InvalidQueryPath

# "off", "any", "all": Hatchet's; "mean": perflake's, each node's mean over its rows (the lake's and CLI's default)
MULTI_INDEX_MODES = ("off", "any", "all", "mean")

# Cond.op values; the dialects only ever build these
NUMERIC_OPS = ("==", "!=", "<", "<=", ">", ">=")
STRING_OPS = ("str==", "starts", "ends", "contains", "regex", "fullregex")
UNARY_OPS = ("is_nan", "is_not_nan", "is_inf", "is_not_inf", "is_none", "is_not_none", "is_leaf", "is_not_leaf")
AUTO_OP = "auto"  # object dialect: a regex for a string column, "<op> <number>" for a numeric one, decided per column
INVALID_OP = "invalid"  # object dialect: a value of no usable type, refused when the query is applied


@dataclass(frozen=True)
class Cond:
    """One condition on one attribute of a node.  ``pos`` locates it in the query (character offset in a
    string-dialect query, element index in an object-dialect one) for error messages."""

    attr: str | tuple | None
    op: str
    value: object = None
    pos: int | None = None


@dataclass(frozen=True)
class Not:
    arg: object


@dataclass(frozen=True)
class And:
    args: tuple = ()


@dataclass(frozen=True)
class Or:
    args: tuple = ()


TRUE = And(())


@dataclass(frozen=True)
class Call:
    """A Python predicate: called with the node's dataframe row (a Series) or, for a dataframe indexed by node
    plus rank/thread, with the DataFrame of the node's rows, exactly as Hatchet calls base-syntax predicates."""

    fn: Callable


def conds(pred) -> list[Cond]:
    """Every Cond leaf of a predicate tree."""
    if isinstance(pred, Cond):
        return [pred]
    if isinstance(pred, Not):
        return conds(pred.arg)
    if isinstance(pred, (And, Or)):
        return [c for a in pred.args for c in conds(a)]
    return []


@dataclass(frozen=True)
class Element:
    quantifier: object
    predicate: object = TRUE


def check_quantifier(q, where: str, *, query: str | None = None, position: int | None = None):
    """Return ``q`` if it is a valid quantifier, else raise QueryError naming ``where``."""
    if isinstance(q, bool) or not (q in (".", "*", "+") or (isinstance(q, int) and q >= 1)):
        raise InvalidQueryPath(f"{where}: quantifier must be '.', '*', '+' or an integer >= 1, not {q!r}",
                         query=query, position=position)
    return q


def _as_predicate(predicate):
    if predicate is None:
        return TRUE
    if isinstance(predicate, (Cond, Not, And, Or, Call)):
        return predicate
    if callable(predicate):
        return Call(predicate)
    raise InvalidQueryFilter(f"a predicate must be callable, not {type(predicate).__name__}")


class AbstractQuery:
    """Base class of every query object (Hatchet's name for its old-style base): ``q.apply(gf)`` returns the Nodes
    (graph pre-order) on the paths ``q`` matches in ``gf``."""

    def apply(self, gf, *, multi_index_mode: str = "off") -> list:
        from perflake.query.matching import apply

        return apply(gf, self, multi_index_mode=multi_index_mode)

    # -- set operators (compound queries: perflake.query.compound) ----------------------------------------------
    def __and__(self, other):
        from perflake.query.compound import ConjunctionQuery

        return ConjunctionQuery(self, other)

    def __or__(self, other):
        from perflake.query.compound import DisjunctionQuery

        return DisjunctionQuery(self, other)

    def __xor__(self, other):
        from perflake.query.compound import ExclusiveDisjunctionQuery

        return ExclusiveDisjunctionQuery(self, other)

    def __invert__(self):
        from perflake.query.compound import NegationQuery

        return NegationQuery(self)


class Query(AbstractQuery):
    """A path query (Hatchet's base syntax): ``Query().match(".", pred).rel("*").rel(2, other)``.

    Predicates are callables taking the node's row.  ``multi_index_mode`` (``"off"``, ``"any"``, ``"all"``,
    ``"mean"``) is how the dialects' conditions treat a node with several rows; ``None`` leaves it to the caller
    of the engine.
    """

    def __init__(self, multi_index_mode: str | None = None):
        if multi_index_mode is not None and multi_index_mode not in MULTI_INDEX_MODES:
            raise InvalidMultiIndexMode(f"multi_index_mode must be one of {MULTI_INDEX_MODES}, not "
                                        f"{multi_index_mode!r}")
        self.elements: list[Element] = []
        self.multi_index_mode = multi_index_mode
        self.source: str | None = None  # the query text (string dialect), for error messages

    # -- building -------------------------------------------------------------------------------------------
    def match(self, quantifier=".", predicate=None) -> "Query":
        """Start the query (discarding any earlier elements) with one element."""
        self.elements = []
        return self._add(quantifier, predicate)

    def rel(self, quantifier=".", predicate=None) -> "Query":
        """Append one element: the next nodes down the path."""
        if not self.elements:
            raise InvalidQueryPath("a query must start with match() before rel()")
        return self._add(quantifier, predicate)

    relation = rel

    def _add(self, quantifier, predicate) -> "Query":
        check_quantifier(quantifier, f"query element {len(self.elements)}")
        self.elements.append(Element(quantifier, _as_predicate(predicate)))
        return self

    # -- reading --------------------------------------------------------------------------------------------
    def expanded(self) -> list[tuple[str, object]]:
        """The elements with ``"+"`` and integers rewritten to ``"."`` and ``"*"`` (Hatchet's expansion)."""
        out = []
        for el in self.elements:
            if el.quantifier == "+":
                out += [(".", el.predicate), ("*", el.predicate)]
            elif isinstance(el.quantifier, int):
                out += [(".", el.predicate)] * el.quantifier
            else:
                out.append((el.quantifier, el.predicate))
        return out

    @property
    def query_pattern(self) -> list[tuple[str, Callable]]:
        """Hatchet's view of the query: the expanded elements as ``(quantifier, predicate)`` with ``"."`` or
        ``"*"`` and a callable taking one node's row (a dict, a Series, or the DataFrame of its rows) and
        returning a bool (perflake.query.row_predicate)."""
        from perflake.query.row_predicate import row_callable

        return [(q, row_callable(p, self.multi_index_mode, self.source)) for q, p in self.expanded()]

    def __len__(self):
        return len(self.expanded())

    def __iter__(self):
        return iter(self.expanded())

    def __repr__(self):
        body = ", ".join(f"({e.quantifier!r}, {e.predicate!r})" for e in self.elements)
        return f"{type(self).__name__}([{body}])"


class QueryMatcher(Query):
    """Hatchet's old-style base syntax (``wildcard_spec``, ``filter_func``); ``QueryMatcher(list)`` parses an
    object-dialect query."""

    def __init__(self, query=None, multi_index_mode: str | None = None):
        super().__init__(multi_index_mode)
        if query is not None:
            from perflake.query.object_dialect import parse_object_dialect

            if not isinstance(query, list):
                raise InvalidQueryPath(f"QueryMatcher takes an object-dialect list, not {type(query).__name__}")
            self.elements = parse_object_dialect(query)

    def match(self, wildcard_spec=".", filter_func=None) -> "QueryMatcher":
        return super().match(wildcard_spec, filter_func)

    def rel(self, wildcard_spec=".", filter_func=None) -> "QueryMatcher":
        return super().rel(wildcard_spec, filter_func)

    relation = rel
