"""The DOT language (Graphviz, https://graphviz.org/doc/info/lang.html) read into nodes and edges.

Enough of the grammar for any DOT file, not only gprof2dot's: comments (``//``, ``/* */``, ``#`` lines),
IDs (names, numerals, quoted strings joined by ``+``, HTML strings ``<...>``), ``strict``, several graphs in a
file (merged, as Hatchet's pydot reader does), graph/node/edge attribute statements (ignored: defaults carry no
profile values), ``ID = ID`` statements, node ports (``a:p:n``, dropped), edge chains ``a -> b -> c`` and
subgraphs (their statements are read; an edge to or from a whole subgraph is refused: no profiler writes one).
An undirected ``graph`` is refused: a call graph is directed.  Anything else is a ReaderError naming the file
and the line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from perflake.errors import ReaderError
from perflake.readers.base import shown

_TOKEN = re.compile(
    r"""(?P<skip>\s+|//[^\n]*|/\*.*?\*/|(?<![^\n])\#[^\n]*)
      |(?P<str>"[^"\\]*(?:\\.[^"\\]*)*")  # unrolled: no regex stack per character of a huge string
      |(?P<arrow>->|--)
      |(?P<num>-?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?))
      |(?P<id>[A-Za-z_\u0080-\U0010ffff][A-Za-z_0-9\u0080-\U0010ffff]*)
      |(?P<punct>[{}\[\]=;,:+<])""",
    re.S | re.X,
)
_ESCAPE = re.compile(r"\\(.)|\\\n", re.S)
_KEYWORDS = {"node", "edge", "graph", "digraph", "subgraph", "strict"}
MAX_NESTING = 100


@dataclass
class DotGraph:
    nodes: dict[str, dict[str, str]] = field(default_factory=dict)  # ID -> attributes, in order of first mention
    edges: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)


def _unescape(text: str) -> str:
    """A quoted string's content: ``\\"`` and ``\\\\`` decoded, ``\\n``/``\\l``/``\\r`` as line breaks (Graphviz's
    label escapes), ``\\t`` a tab, a backslash-newline removed, other escapes kept as written."""
    def one(m: re.Match) -> str:
        c = m.group(1)
        if c is None:
            return ""
        return {'"': '"', "\\": "\\", "n": "\n", "l": "\n", "r": "\n", "t": "\t"}.get(c, "\\" + c)

    return _ESCAPE.sub(one, text)


def _tokens(text: str, path: str) -> list[tuple[str, str, int]]:
    """(kind, text, offset) of every token; kinds: id (names, numerals, strings, HTML), kw, arrow, punct."""
    out, pos, n = [], 0, len(text)
    while pos < n:
        m = _TOKEN.match(text, pos)
        if m is None:
            raise ReaderError(path, f"not DOT: unexpected {shown(text[pos:pos + 20])} "
                                    f"on line {text.count(chr(10), 0, pos) + 1}")
        kind, value = m.lastgroup, m.group()
        if kind == "punct" and value == "<":  # an HTML string: up to the matching '>'
            depth, end = 0, pos
            while end < n:
                c = text[end]
                depth += c == "<"
                depth -= c == ">"
                end += 1
                if depth == 0:
                    break
            if depth:
                raise ReaderError(path, "not DOT: an HTML string is not closed "
                                        f"(line {text.count(chr(10), 0, pos) + 1})")
            out.append(("id", text[pos + 1:end - 1], pos))
            pos = end
            continue
        if kind == "str":
            if out and out[-1][0] == "+" and len(out) > 1 and out[-2][0] == "qstr":  # "a" + "b"
                out.pop()
                prev = out.pop()
                out.append(("qstr", prev[1] + _unescape(value[1:-1]), prev[2]))
            else:
                out.append(("qstr", _unescape(value[1:-1]), pos))
        elif kind == "id" and value.lower() in _KEYWORDS:
            out.append(("kw", value.lower(), pos))
        elif kind in ("id", "num"):
            out.append(("id", value, pos))
        elif kind in ("arrow", "punct"):
            out.append(("+" if value == "+" else kind, value, pos))
        pos = m.end()
    return [("id", v, p) if k == "qstr" else (k, v, p) for k, v, p in out]


class _Parser:
    def __init__(self, tokens, text: str, path: str):
        self.t, self.i, self.text, self.path = tokens, 0, text, path
        self.graph = DotGraph()

    def fail(self, what: str):
        pos = self.t[self.i][2] if self.i < len(self.t) else len(self.text)
        raise ReaderError(self.path, f"not DOT: {what} on line {self.text.count(chr(10), 0, pos) + 1}")

    def peek(self, k: int = 0):
        return self.t[self.i + k] if self.i + k < len(self.t) else ("end", "", len(self.text))

    def take(self, kind: str, value: str | None = None) -> str:
        tk = self.peek()
        if tk[0] != kind or (value is not None and tk[1] != value):
            self.fail(f"expected {value or kind}, found {shown(tk[1]) if tk[0] != 'end' else 'the end of the file'}")
        self.i += 1
        return tk[1]

    def parse(self) -> DotGraph:
        while self.peek()[0] != "end":
            if self.peek() == ("kw", "strict", self.peek()[2]):
                self.i += 1
            kw = self.take("kw")
            if kw == "graph":
                self.fail("an undirected graph (a call graph is a digraph)")
            if kw != "digraph":
                self.fail(f"expected digraph, found {shown(kw)}")
            if self.peek()[0] == "id":
                self.i += 1
            self.take("punct", "{")
            self.stmts(1)
        return self.graph

    def stmts(self, depth: int) -> None:
        if depth > MAX_NESTING:
            self.fail(f"subgraphs nested more than {MAX_NESTING} deep")
        while True:
            kind, value, _ = self.peek()
            if kind == "end":
                self.fail("a '{' is not closed")
            if (kind, value) == ("punct", "}"):
                self.i += 1
                return
            if (kind, value) == ("punct", ";"):
                self.i += 1
                continue
            self.stmt(depth)

    def stmt(self, depth: int) -> None:
        kind, value, _ = self.peek()
        if kind == "kw" and value in ("graph", "node", "edge"):
            self.i += 1
            self.attrs()
            return
        if (kind == "kw" and value == "subgraph") or (kind, value) == ("punct", "{"):
            if kind == "kw":
                self.i += 1
                if self.peek()[0] == "id":
                    self.i += 1
            self.take("punct", "{")
            self.stmts(depth + 1)
            if self.peek()[0] == "arrow":
                self.fail("an edge from a subgraph")
            return
        if self.peek(1)[:2] == ("punct", "="):
            self.take("id")
            self.i += 1
            self.take("id")
            return
        chain = [self.node_id()]
        while self.peek()[0] == "arrow":
            self.i += 1
            if self.peek()[0] != "id":
                self.fail("an edge to a subgraph" if self.peek()[1] in ("{", "subgraph")
                          else "an edge without a target")
            chain.append(self.node_id())
        attrs = self.attrs()
        if len(chain) == 1:
            self.graph.nodes[chain[0]].update(attrs)
        for a, b in zip(chain, chain[1:]):
            self.graph.edges.append((a, b, attrs))

    def node_id(self) -> str:
        name = self.take("id")
        for _ in range(2):  # a port (":port" or ":port:compass"): not part of the node's identity
            if self.peek()[:2] == ("punct", ":"):
                self.i += 1
                self.take("id")
        self.graph.nodes.setdefault(name, {})
        return name

    def attrs(self) -> dict[str, str]:
        out: dict[str, str] = {}
        while self.peek()[:2] == ("punct", "["):
            self.i += 1
            while self.peek()[:2] != ("punct", "]"):
                key = self.take("id") if self.peek()[0] == "id" else self.take("kw")
                if self.peek()[:2] == ("punct", "="):
                    self.i += 1
                    out[key] = self.take("id")
                else:
                    out[key] = "true"
                if self.peek()[:2] in (("punct", ","), ("punct", ";")):
                    self.i += 1
            self.i += 1
        return out


def parse_dot(text: str, path: str) -> DotGraph:
    """The nodes and edges of the DOT ``text`` (from file ``path``, named in errors)."""
    return _Parser(_tokens(text, path), text, path).parse()
