"""The object dialect: a query as a Python list (Hatchet's high-level API).

Each list item is an element: ``(quantifier, {attr: value, ...})``, a bare dict (quantifier ``"."``) or a bare
quantifier (predicate always true).  In a dict, all ``attr: value`` pairs must hold (AND); a value is

* a number: equality with a numeric attribute (``{"depth": -1}`` means "is a leaf", as in Hatchet);
* a string: for a string attribute, a regex matched as Hatchet does (``re.match(value + r"\\Z", text)``, i.e.
  anchored at both ends except across a top-level ``|``); for a numeric attribute, a comparison
  ``"<op> <number>"`` with op one of ``< <= == != <> > >=`` (``"> 10"``, ``"<= 5"``, ``"== nan"``);
* a list or tuple of the above: all must hold;
* anything else is refused with InvalidQueryFilter when the query is applied (as Hatchet refuses it).

An attribute is a column name, or a tuple naming a column of a dataframe whose columns have several levels
(Thicket's); a tuple of one name is that name.

Attributes are the dataframe's columns plus ``depth``, ``node_id`` (perflake's 64-bit call-path id) and
``is_leaf``.  Errors name the element by its index (``QueryError.position``).
"""

from __future__ import annotations

import math
import re
from numbers import Real

from perflake.errors import InvalidQueryFilter, InvalidQueryPath
from perflake.query.model import AUTO_OP, INVALID_OP, TRUE, And, Cond, Element, Query, check_quantifier

_COMPARISON = re.compile(r"^\s*(<=|>=|==|!=|<>|<|>)\s*(.*?)\s*$")
NODE_NUMERIC = ("depth", "node_id", "_hatchet_nid", "callpath_id")


def parse_comparison(text: str) -> tuple[str, float] | None:
    """``"> 10"`` -> ``(">", 10.0)``; ``None`` when ``text`` is not a comparison with a number."""
    m = _COMPARISON.match(text)
    if not m:
        return None
    raw = m.group(2).lower().removeprefix("np.").removeprefix("numpy.")
    try:
        value = float(raw)
    except ValueError:
        return None
    return ("!=" if m.group(1) == "<>" else m.group(1)), value


def comparison_cond(attr: str, text: str, pos) -> Cond:
    """A Cond for ``attr <op> number`` from a comparison string; QueryError when it is not one."""
    parsed = parse_comparison(text)
    if parsed is None:
        raise InvalidQueryFilter(f"query element {pos}: {attr!r} is numeric, so {text!r} must be a comparison such as "
                         f"'> 10' (one of < <= == != <> > >= followed by a number)", position=pos)
    op, value = parsed
    if math.isnan(value) and op in ("==", "!="):
        return Cond(attr, "is_nan" if op == "==" else "is_not_nan", None, pos)
    return Cond(attr, op, value, pos)


def _single(attr: str, value, pos) -> Cond:
    if isinstance(value, Real):
        if attr == "depth" and value == -1:
            return Cond(None, "is_leaf", None, pos)
        return Cond(attr, "==", value, pos)
    if isinstance(value, str):
        if attr in NODE_NUMERIC:
            return comparison_cond(attr, value, pos)
        return Cond(attr, AUTO_OP, value, pos)
    return Cond(attr, INVALID_OP, value, pos)  # refused when applied, as Hatchet refuses it (InvalidQueryFilter)


def predicate_from_dict(filters: dict, pos: int):
    """The AND of one dict's conditions."""
    out = []
    for key, value in filters.items():
        attr = key[0] if isinstance(key, (tuple, list)) and len(key) == 1 else key
        if isinstance(attr, list):
            attr = tuple(attr)
        if not (isinstance(attr, str) or (isinstance(attr, tuple) and attr)):  # a tuple names a MultiIndex column
            raise InvalidQueryFilter(f"query element {pos}: attribute names must be strings (or tuples naming a "
                                     f"column of several levels), not {key!r}", position=pos)
        values = value if isinstance(value, (list, tuple)) else [value]
        if not values:
            raise InvalidQueryFilter(f"query element {pos}: empty list of conditions for {attr!r}", position=pos)
        out += [_single(attr, v, pos) for v in values]
    return TRUE if not out else out[0] if len(out) == 1 else And(tuple(out))


def parse_object_dialect(query) -> list[Element]:
    """The elements of an object-dialect query; QueryError (position = element index) when malformed."""
    if not isinstance(query, list):
        raise InvalidQueryPath(f"an object-dialect query is a list, not {type(query).__name__}")
    if not query:
        raise InvalidQueryPath("an object-dialect query needs at least one element")
    elements = []
    for i, item in enumerate(query):
        where = f"query element {i}"
        if isinstance(item, dict):
            elements.append(Element(".", predicate_from_dict(item, i)))
        elif isinstance(item, (str, int)) and not isinstance(item, bool):
            elements.append(Element(check_quantifier(item, where, position=i), TRUE))
        elif isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], dict):
            elements.append(Element(check_quantifier(item[0], where, position=i), predicate_from_dict(item[1], i)))
        else:
            raise InvalidQueryPath(f"{where}: expected a dict, a quantifier or a (quantifier, dict) tuple, got "
                                   f"{item!r}",
                             position=i)
    return elements


class ObjectQuery(Query):
    """An object-dialect query: ``ObjectQuery([{"name": "solvers"}, ("*", {"time (inc)": "> 10"})])``."""

    def __init__(self, query, multi_index_mode: str | None = None):
        super().__init__(multi_index_mode)
        self.elements = parse_object_dialect(query)
        self.source_object = query
