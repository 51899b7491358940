"""The string dialect (Cypher-like), parsed by a small recursive-descent parser into the query model.

::

    MATCH (".", p)->("*")->(2, q)
    WHERE p."name" =~ "MPI_.*" AND (q."time (inc)" > 5 OR NOT q IS LEAF)

``MATCH`` lists the elements ``(quantifier, variable)``, ``(quantifier)`` or ``(variable)`` (quantifier ``"."``)
joined by ``->``.  ``WHERE`` is a boolean expression (``NOT`` > ``AND`` > ``OR``, parentheses) over conditions
``var."attr" <op>`` with ``= <string|number>``, ``STARTS WITH``, ``ENDS WITH``, ``CONTAINS``, ``=~ <regex>``
(``re.match``: anchored at the start only, as in Hatchet), ``< <= > >= <number>``, ``IS [NOT] NAN|INF|NONE``,
and ``var IS [NOT] LEAF``; the attribute may be Hatchet's ``var.("name")`` or ``var.("level 1", "level 2")``
(a column of several levels).  The conditions on one variable form that element's predicate.  A condition tests
one node, so ``p... OR q...`` cannot mean "either node": without parentheses it is read as Hatchet reads it,
each variable's conditions grouped in their written order with their own AND/OR and the variables' predicates
all required (``p.a OR p.b AND q.c`` is ``(p.a OR p.b) AND q.c``: :func:`_per_variable`); inside parentheses
(a perflake extension, where the grouping is explicit) it is an error.  Keywords are case-insensitive.
Compound queries: ``{MATCH ...} OR {MATCH ...}`` or ``MATCH ... WHERE {cond} AND {cond}`` with
``AND``/``OR``/``XOR``, applied left to right.
Every error is an InvalidQueryPath (Hatchet's class for a query it cannot parse; a QueryError) whose ``position``
is the offending token's offset; a condition that does not fit its attribute's values (``> 5`` on a string) is an
InvalidQueryFilter when the query is applied.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from perflake.errors import InvalidQueryPath, QueryError
from perflake.query.model import TRUE, And, Cond, Element, Not, Or, Query
from perflake.query.tokens import KEYWORDS, Token, one_line, tokenize  # noqa: F401  (KEYWORDS, Token: re-exported)

# -- parser ------------------------------------------------------------------------------------------------------
_COMPARE = {"<": "<", "<=": "<=", ">": ">", ">=": ">="}
_STRING_OPS = {"STARTS": "starts", "ENDS": "ends", "CONTAINS": "contains"}


@dataclass(frozen=True)
class _Leaf:
    var: str
    var_pos: int
    cond: Cond


def _strip(node):
    """Replace _Leaf wrappers by their Cond."""
    if isinstance(node, _Leaf):
        return node.cond
    if isinstance(node, Not):
        return Not(_strip(node.arg))
    return type(node)(tuple(_strip(a) for a in node.args))


def _leaves(node) -> list[_Leaf]:
    if isinstance(node, _Leaf):
        return [node]
    if isinstance(node, Not):
        return _leaves(node.arg)
    return [x for a in node.args for x in _leaves(a)]


class _Parser:
    def __init__(self, text: str, mode):
        self.text, self.line, self.mode = text, one_line(text), mode
        self.tokens = tokenize(text)
        self.i = 0

    # -- token helpers --------------------------------------------------------------------------------------
    @property
    def tok(self) -> Token:
        return self.tokens[self.i]

    def error(self, message: str, tok: Token | None = None):
        tok = tok or self.tok
        return InvalidQueryPath(message, query=self.line, position=tok.pos)

    def at(self, kind: str, text: str | None = None) -> bool:
        return self.tok.kind == kind and (text is None or self.tok.text == text)

    def take(self, kind: str, text: str | None = None, what: str | None = None) -> Token:
        if not self.at(kind, text):
            wanted = what or (repr(text) if text else kind)
            raise self.error(f"expected {wanted}, found {self.tok.describe()}")
        self.i += 1
        return self.tokens[self.i - 1]

    def setop(self) -> str | None:
        if self.at("kw") and self.tok.text in ("AND", "OR", "XOR"):
            self.i += 1
            return self.tokens[self.i - 1].text
        return None

    # -- queries --------------------------------------------------------------------------------------------
    def parse(self):
        result = self.compound_or_query()
        if not self.at("end"):
            raise self.error(f"unexpected {self.tok.describe()} after the end of the query")
        return result

    def compound_or_query(self):
        if not self.at("punct", "{"):
            return self.query()
        result = self.braced(self.compound_or_query)
        while (op := self.setop()) is not None:
            result = _combine(op, result, self.braced(self.compound_or_query))
        return result

    def braced(self, inner):
        self.take("punct", "{")
        out = inner()
        self.take("punct", "}", what="'}'")
        return out

    def query(self):
        self.take("kw", "MATCH", what="MATCH")
        path, variables = self.path()
        if not self.at("kw", "WHERE"):
            return self.build(path, variables, None)
        self.i += 1
        if not self.at("punct", "{"):
            return self.build(path, variables, *self.where())
        result = self.build(path, variables, *self.braced(self.where))
        while (op := self.setop()) is not None:
            result = _combine(op, result, self.build(path, variables, *self.braced(self.where)))
        return result

    def where(self):
        """(the WHERE expression, whether it used parentheses)."""
        self.grouped = False
        return self.or_expr(), self.grouped

    def path(self):
        nodes, variables = [], {}
        while True:
            self.take("punct", "(", what="'(' starting a query node")
            quant, var = ".", None
            if self.at("name"):
                var = self.take("name")
            else:
                quant = self.quantifier()
                if self.at("punct", ","):
                    self.i += 1
                    var = self.take("name", what="a variable name")
            if var is not None:
                if var.text in variables:
                    raise self.error(f"variable {var.text!r} is already used", var)
                variables[var.text] = len(nodes)
            nodes.append(quant)
            self.take("punct", ")", what="')'")
            if not self.at("punct", "->"):
                return nodes, variables
            self.i += 1

    def quantifier(self):
        tok = self.tok
        if tok.kind == "string" and tok.value in (".", "*", "+"):
            self.i += 1
            return tok.value
        if tok.kind == "number" and isinstance(tok.value, int) and tok.value >= 1:
            self.i += 1
            return tok.value
        raise self.error(f"expected a quantifier (\".\", \"*\", \"+\" or an integer >= 1) or a variable, "
                         f"found {tok.describe()}")

    def build(self, quantifiers, variables, where, grouped: bool = False) -> "StringQuery":
        preds: dict[str, list] = {}
        if where is not None:
            for leaf in _leaves(where):
                if leaf.var not in variables:
                    raise InvalidQueryPath(f"variable {leaf.var!r} is not declared in MATCH", query=self.line,
                                     position=leaf.var_pos)
            conjuncts = list(where.args) if isinstance(where, And) else [where]
            mixed = [c for c in conjuncts if len({leaf.var for leaf in _leaves(c)}) > 1]
            if mixed and not grouped:  # p... OR q... without parentheses: Hatchet's reading, per variable
                conjuncts = _per_variable(where)
            for c in conjuncts:
                leaves = _leaves(c)
                names = list(dict.fromkeys(leaf.var for leaf in leaves))
                if len(names) > 1:
                    other = next(leaf for leaf in leaves if leaf.var != names[0])
                    raise InvalidQueryPath(f"conditions on different variables ({names[0]!r}, {other.var!r}) joined by "
                                     f"OR inside parentheses: a condition can only test one node",
                                     query=self.line, position=other.var_pos)
                preds.setdefault(names[0], []).append(_strip(c))
        elements = []
        for i, quant in enumerate(quantifiers):
            var = next((v for v, j in variables.items() if j == i), None)
            ps = preds.get(var, [])
            elements.append(Element(quant, TRUE if not ps else ps[0] if len(ps) == 1 else And(tuple(ps))))
        return StringQuery._from_elements(elements, self.line, self.mode)

    # -- conditions -----------------------------------------------------------------------------------------
    def or_expr(self):
        args = [self.and_expr()]
        while self.at("kw", "OR"):
            self.i += 1
            args.append(self.and_expr())
        return args[0] if len(args) == 1 else Or(tuple(args))

    def and_expr(self):
        args = [self.not_expr()]
        while self.at("kw", "AND"):
            self.i += 1
            args.append(self.not_expr())
        flat = [x for a in args for x in (a.args if isinstance(a, And) else (a,))]
        return flat[0] if len(flat) == 1 else And(tuple(flat))

    def not_expr(self):
        if self.at("kw", "NOT"):
            self.i += 1
            return Not(self.not_expr())
        if self.at("punct", "("):
            self.i += 1
            self.grouped = True
            inner = self.or_expr()
            self.take("punct", ")", what="')'")
            return inner
        return self.condition()

    def condition(self) -> _Leaf:
        var = self.take("name", what="a condition (var.\"attribute\" ...)")
        if self.at("kw", "IS"):
            op_tok = self.take("kw")
            negate = self.at("kw", "NOT") and self.take("kw")
            self.take("kw", "LEAF", what="LEAF (or '.' and an attribute)")
            return _Leaf(var.text, var.pos, Cond(None, "is_not_leaf" if negate else "is_leaf", None, op_tok.pos))
        self.take("punct", ".", what="'.' and an attribute")
        return _Leaf(var.text, var.pos, self.operation(self.attribute(), self.tok))

    def attribute(self):
        """``"name"`` (or a bare name or number), or Hatchet's ``("name")`` / ``("level 1", "level 2", ...)``:
        a parenthesised list names a column of several levels (a tuple), or with one item that item."""
        if not self.at("punct", "("):
            prop = self.tok
            if prop.kind not in ("string", "name", "number"):
                raise self.error(f"expected an attribute name, found {prop.describe()}")
            self.i += 1
            return str(prop.value)
        self.i += 1
        ids = []
        while True:
            prop = self.tok
            if prop.kind not in ("string", "number"):
                raise self.error(f"expected a quoted attribute name or an integer, found {prop.describe()}")
            self.i += 1
            ids.append(prop.value)
            if not self.at("punct", ","):
                break
            self.i += 1
        self.take("punct", ")", what="')'")
        return str(ids[0]) if len(ids) == 1 else tuple(ids)

    def operation(self, attr: str, op: Token) -> Cond:
        self.i += 1
        if op.kind == "punct" and op.text == "=":
            val = self.tok
            if val.kind == "string":
                self.i += 1
                return Cond(attr, "str==", val.value, op.pos)
            num = self.take("number", what="a string or a number")
            if attr == "depth" and num.value == -1:
                return Cond(None, "is_leaf", None, op.pos)
            return Cond(attr, "==", num.value, op.pos)
        if op.kind == "punct" and op.text == "=~":
            val = self.take("string", what="a quoted regular expression")
            try:
                re.compile(val.value)
            except re.error as exc:
                raise self.error(f"bad regular expression: {exc}", val) from None
            return Cond(attr, "regex", val.value, op.pos)
        if op.kind == "punct" and op.text in _COMPARE:
            return Cond(attr, _COMPARE[op.text], self.take("number", what="a number").value, op.pos)
        if op.kind == "kw" and op.text in _STRING_OPS:
            if op.text != "CONTAINS":
                self.take("kw", "WITH", what="WITH")
            return Cond(attr, _STRING_OPS[op.text], self.take("string", what="a quoted string").value, op.pos)
        if op.kind == "kw" and op.text == "IS":
            negate = self.at("kw", "NOT") and self.take("kw")
            what = self.tok
            if not (what.kind == "kw" and what.text in ("NAN", "INF", "NONE")):
                raise self.error(f"expected NAN, INF or NONE, found {what.describe()}")
            self.i += 1
            return Cond(attr, f"is_{'not_' if negate else ''}{what.text.lower()}", None, op.pos)
        raise self.error(f"expected an operator (=, =~, <, <=, >, >=, STARTS WITH, ENDS WITH, CONTAINS, IS), "
                         f"found {op.describe()}", op)


def _per_variable(where) -> list:
    """Hatchet's reading of a WHERE clause without parentheses that joins conditions on different variables with
    OR: the conditions are taken in their written order, each with the AND/OR written before it, and grouped by
    variable; each variable's sequence (its first connective dropped) is read with AND before OR, and the
    variables' predicates must all hold -- ``p.a OR p.b AND q.c`` is ``(p.a OR p.b) AND q.c``."""
    groups = list(where.args) if isinstance(where, Or) else [where]
    sequence = []  # (connective or None, item)
    for g, group in enumerate(groups):
        items = list(group.args) if isinstance(group, And) else [group]
        for k, item in enumerate(items):
            sequence.append(("OR" if g and not k else "AND" if k else None, item))
    by_var: dict[str, list] = {}
    for conn, item in sequence:
        by_var.setdefault(_leaves(item)[0].var, []).append([conn, item])
    out = []
    for items in by_var.values():
        ors, current = [], []
        for k, (conn, item) in enumerate(items):
            if k and conn == "OR":
                ors.append(current)
                current = []
            current.append(item)
        ors.append(current)
        ands = [a[0] if len(a) == 1 else And(tuple(a)) for a in ors]
        out.append(ands[0] if len(ands) == 1 else Or(tuple(ands)))
    return out


def _combine(op: str, left, right):
    from perflake.query.compound import ConjunctionQuery, DisjunctionQuery, ExclusiveDisjunctionQuery

    cls = {"AND": ConjunctionQuery, "OR": DisjunctionQuery, "XOR": ExclusiveDisjunctionQuery}[op]
    return cls(left, right)


class StringQuery(Query):
    """A string-dialect query without curly-brace compounds (use :func:`parse_string_dialect` for those)."""

    def __init__(self, text: str, multi_index_mode: str | None = None):
        super().__init__(multi_index_mode)
        parsed = parse_string_dialect(text, multi_index_mode)
        if not isinstance(parsed, StringQuery):
            raise InvalidQueryPath("this query combines sub-queries with {...}: build it with parse_string_dialect()",
                             query=one_line(text), position=0)
        self.elements, self.source = parsed.elements, parsed.source

    @classmethod
    def _from_elements(cls, elements, source: str, mode) -> "StringQuery":
        q = cls.__new__(cls)
        Query.__init__(q, mode)
        q.elements, q.source = list(elements), source
        return q


def parse_string_dialect(text: str, multi_index_mode: str | None = None):
    """A :class:`StringQuery`, or a compound query when ``text`` combines ``{...}`` regions."""
    if not isinstance(text, str):
        raise QueryError(f"a string-dialect query is a str, not {type(text).__name__}")
    return _Parser(text, multi_index_mode).parse()
