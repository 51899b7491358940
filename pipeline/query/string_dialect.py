"""The string dialect (Cypher-like), parsed by a small recursive-descent parser into the query model.

::

    MATCH (".", p)->("*")->(2, q)
    WHERE p."name" =~ "MPI_.*" AND (q."time (inc)" > 5 OR NOT q IS LEAF)

``MATCH`` lists the elements ``(quantifier, variable)``, ``(quantifier)`` or ``(variable)`` (quantifier ``"."``)
joined by ``->``.  ``WHERE`` is a boolean expression (``NOT`` > ``AND`` > ``OR``, parentheses) over conditions
``var."attr" <op>`` with ``= <string|number>``, ``STARTS WITH``, ``ENDS WITH``, ``CONTAINS``, ``=~ <regex>``
(``re.match``: anchored at the start only, as in Hatchet), ``< <= > >= <number>``, ``IS [NOT] NAN|INF|NONE``,
and ``var IS [NOT] LEAF``.  The conditions on one variable form that element's predicate; conditions on
different variables can only be joined by a top-level ``AND`` (QueryError otherwise: Hatchet silently reads
``p... OR q...`` as AND).  Keywords are case-insensitive.  Compound queries: ``{MATCH ...} OR {MATCH ...}``
or ``MATCH ... WHERE {cond} AND {cond}`` with ``AND``/``OR``/``XOR``, applied left to right.
Every error is a QueryError whose ``position`` is the offending token's offset.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from perflake.errors import QueryError
from perflake.query.model import TRUE, And, Cond, Element, Not, Or, Query

# -- tokens: keywords, names, quoted strings, numbers, punctuation, each with its offset ---------------------
KEYWORDS = frozenset(("MATCH", "WHERE", "AND", "OR", "XOR", "NOT", "IS", "NAN", "INF", "NONE", "LEAF", "STARTS",
                      "ENDS", "WITH", "CONTAINS"))
_PUNCT = ("->", "=~", "<=", ">=", "=", "<", ">", "(", ")", ",", ".", "{", "}")
_NUMBER = re.compile(r"-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ESCAPES = {'"': '"', "'": "'", "\\": "\\"}


@dataclass(frozen=True)
class Token:
    kind: str  # "kw", "name", "string", "number", "punct", "end"
    text: str  # the keyword upper-cased, the punctuation, the name, or the source text of a string/number
    value: object
    pos: int

    def describe(self) -> str:
        return "the end of the query" if self.kind == "end" else repr(self.text)


def one_line(text: str) -> str:
    """The query with line breaks and tabs as spaces, so that a caret under an offset lines up."""
    return re.sub(r"[\r\n\t\f\v]", " ", text)


def _string(text: str, start: int) -> tuple[str, int]:
    quote, i, out = text[start], start + 1, []
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            out.append(_ESCAPES.get(nxt, "\\" + nxt))  # other escapes (\d, \w, ...) are kept for regexes
            i += 2
        elif ch == quote:
            return "".join(out), i + 1
        else:
            out.append(ch)
            i += 1
    raise QueryError("unterminated string", query=one_line(text), position=start)


def tokenize(text: str) -> list[Token]:
    """All tokens of ``text`` followed by an ``end`` token; QueryError at the first character that starts none."""
    tokens, i, n = [], 0, len(text)
    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
            continue
        if ch in "\"'":
            value, end = _string(text, i)
            tokens.append(Token("string", text[i:end], value, i))
            i = end
            continue
        if text.startswith("->", i):
            tokens.append(Token("punct", "->", None, i))
            i += 2
            continue
        m = _NUMBER.match(text, i)
        if m and (ch.isdigit() or ch == "-" or (ch == "." and m.end() > i + 1)):
            raw = m.group()
            value = int(raw) if re.fullmatch(r"-?\d+", raw) else float(raw)
            tokens.append(Token("number", raw, value, i))
            i = m.end()
            continue
        m = _NAME.match(text, i)
        if m:
            word = m.group()
            if word.upper() in KEYWORDS:
                tokens.append(Token("kw", word.upper(), word, i))
            else:
                tokens.append(Token("name", word, word, i))
            i = m.end()
            continue
        for p in _PUNCT:
            if text.startswith(p, i):
                tokens.append(Token("punct", p, None, i))
                i += len(p)
                break
        else:
            raise QueryError(f"unexpected character {ch!r}", query=one_line(text), position=i)
    tokens.append(Token("end", "", None, n))
    return tokens


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
        return QueryError(message, query=self.line, position=tok.pos)

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
            return self.build(path, variables, self.or_expr())
        result = self.build(path, variables, self.braced(self.or_expr))
        while (op := self.setop()) is not None:
            result = _combine(op, result, self.build(path, variables, self.braced(self.or_expr)))
        return result

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

    def build(self, quantifiers, variables, where) -> "StringQuery":
        preds: dict[str, list] = {}
        if where is not None:
            conjuncts = list(where.args) if isinstance(where, And) else [where]
            for c in conjuncts:
                leaves = _leaves(c)
                names = list(dict.fromkeys(leaf.var for leaf in leaves))
                for leaf in leaves:
                    if leaf.var not in variables:
                        raise QueryError(f"variable {leaf.var!r} is not declared in MATCH", query=self.line,
                                         position=leaf.var_pos)
                if len(names) > 1:
                    other = next(leaf for leaf in leaves if leaf.var != names[0])
                    raise QueryError(f"conditions on different variables ({names[0]!r}, {other.var!r}) can only be "
                                     f"joined by a top-level AND", query=self.line, position=other.var_pos)
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
        prop = self.tok
        if prop.kind not in ("string", "name", "number"):
            raise self.error(f"expected an attribute name, found {prop.describe()}")
        self.i += 1
        return _Leaf(var.text, var.pos, self.operation(str(prop.value), self.tok))

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
            raise QueryError("this query combines sub-queries with {...}: build it with parse_string_dialect()",
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
