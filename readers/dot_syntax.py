"""The DOT language (Graphviz, https://graphviz.org/doc/info/lang.html) read into nodes and edges.

Enough of the grammar for any DOT file, not only gprof2dot's: comments (``//``, ``/* */``, ``#`` lines),
IDs (names, numerals, quoted strings joined by ``+``, HTML strings ``<...>``), ``strict``, several graphs in a
file (merged, as Hatchet's pydot reader does), graph/node/edge attribute statements (ignored: defaults carry no
profile values), ``ID = ID`` statements, node ports (``a:p:n``, dropped), edge chains ``a -> b -> c`` and
subgraphs (their statements are read; an edge to or from a whole subgraph is refused: no profiler writes one).
An undirected ``graph`` is refused: a call graph is directed.  Anything else is a ReaderError naming the file
and the line.

The file is read a block at a time (a 2 GB file that is not DOT is refused at its first token) and the
statements are handed over as they are parsed: memory follows the graph, not the file.  Limits
(readers/limits.py): a quoted string, an HTML string or a comment at most MAX_ATTRIBUTE_TEXT bytes, a node ID at
most MAX_FRAME_TEXT, at most MAX_NODES nodes.
"""

from __future__ import annotations

import codecs
import re
from collections import deque
from dataclasses import dataclass, field

from perflake.errors import ReaderError
from perflake.readers.base import shown
from perflake.readers.limits import MAX_ATTRIBUTE_TEXT, MAX_FRAME_TEXT, MAX_NODES

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
_BLOCK = 1 << 20  # bytes read at a time
_LONGEST = MAX_ATTRIBUTE_TEXT + 2  # characters of one token (a quoted string with its quotes)


@dataclass
class DotGraph:
    nodes: dict[str, dict[str, str]] = field(default_factory=dict)  # ID -> attributes, in order of first mention
    index: dict[str, int] = field(default_factory=dict)  # ID -> its position in ``nodes``
    edges: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)  # (tail, head, attributes)


def _unescape(text: str) -> str:
    """A quoted string's content: ``\\"`` and ``\\\\`` decoded, ``\\n``/``\\l``/``\\r`` as line breaks (Graphviz's
    label escapes), ``\\t`` a tab, a backslash-newline removed, other escapes kept as written."""
    def one(m: re.Match) -> str:
        c = m.group(1)
        if c is None:
            return ""
        return {'"': '"', "\\": "\\", "n": "\n", "l": "\n", "r": "\n", "t": "\t"}.get(c, "\\" + c)

    return _ESCAPE.sub(one, text)


class _Text:
    """The file's text (UTF-8, a byte order mark dropped), decoded a block at a time into ``buf``."""

    def __init__(self, path: str, text: str | None = None):
        self.path = path
        self.buf, self.pos, self.line, self.eof, self.read_bytes = "", 0, 1, False, 0
        if text is not None:  # the whole text at once
            self.fh, self.buf, self.eof = None, text, True
            return
        try:
            self.fh = open(path, "rb")
        except OSError as exc:
            raise ReaderError(path, exc.strerror or str(exc)) from None
        self.decoder = codecs.getincrementaldecoder("utf-8-sig")()

    def more(self) -> bool:
        """Read another block (the text before ``pos`` but its last character dropped); False at the end."""
        if self.eof:
            return False
        try:
            data = self.fh.read(_BLOCK)
        except OSError as exc:
            raise ReaderError(self.path, exc.strerror or str(exc)) from None
        if not data and not self.read_bytes:
            raise ReaderError(self.path, "an empty file")
        pending = len(self.decoder.getstate()[0])
        try:
            text = self.decoder.decode(data, final=not data)
        except UnicodeDecodeError as exc:
            raise ReaderError(self.path, f"not UTF-8 text (byte {self.read_bytes - pending + exc.start})") from None
        self.read_bytes += len(data)
        self.eof = not data
        cut = max(self.pos - 1, 0)  # one character kept: '#' starts a comment only at the start of a line
        self.buf, self.pos = self.buf[cut:] + text, self.pos - cut
        return True

    def close(self) -> None:
        if self.fh is not None:
            self.fh.close()


def _tokens(src: _Text):
    """(kind, text, line) of every token; kinds: id (names, numerals, strings, HTML), kw, arrow, punct, '+'."""
    held: list = []  # a quoted string, then a '+': "a" + "b" is one string
    while True:
        tok = _next(src)
        if tok is None:
            break
        kind, value, line = tok
        if kind == "str":
            value = _unescape(value[1:-1])
            if len(held) == 2:
                held = [("qstr", held[0][1] + value, held[0][2])]
                continue
            yield from (("id", v, ln) if k == "qstr" else (k, v, ln) for k, v, ln in held)
            held = [("qstr", value, line)]
            continue
        if held and kind == "+" and len(held) == 1:
            held.append(tok)
            continue
        yield from (("id", v, ln) if k == "qstr" else (k, v, ln) for k, v, ln in held)
        held = []
        yield tok
    yield from (("id", v, ln) if k == "qstr" else (k, v, ln) for k, v, ln in held)


def _next(src: _Text):
    """The next token but white space and comments, or None at the end of the text."""
    while True:
        while src.pos >= len(src.buf):
            if not src.more():
                return None
        buf, pos = src.buf, src.pos
        m = _TOKEN.match(buf, pos)
        if not src.eof and (m is None or m.end() == len(buf)):  # the token may go on in the next block
            if m is not None and m.lastgroup == "skip" and buf[pos].isspace():
                pass  # white space: the rest of it is skipped next
            elif m is not None or buf[pos] == '"' or buf.startswith("/*", pos) or len(buf) - pos < 64:
                if len(buf) - pos > _LONGEST:
                    raise ReaderError(src.path, f"a DOT token or comment of more than {MAX_ATTRIBUTE_TEXT} characters "
                                                f"on line {src.line} (readers/limits.py: MAX_ATTRIBUTE_TEXT)")
                src.more()
                continue
        if m is None:
            while len(src.buf) - src.pos < 20 and src.more():  # the 20 characters the message shows
                pass
            shown_text = shown(src.buf[src.pos:src.pos + 20])
            raise ReaderError(src.path, f"not DOT: unexpected {shown_text} on line {src.line}")
        kind, value, line = m.lastgroup, m.group(), src.line
        if len(value) > _LONGEST and not value[0].isspace():  # white space alone may be long
            raise ReaderError(src.path, f"a DOT token or comment of more than {MAX_ATTRIBUTE_TEXT} characters "
                                        f"on line {line} (readers/limits.py: MAX_ATTRIBUTE_TEXT)")
        src.pos = m.end()
        if kind == "skip" or kind == "str":
            src.line += value.count("\n")
        if kind == "skip":
            continue
        if kind == "punct" and value == "<":  # an HTML string: up to the matching '>'
            src.pos = pos
            return _html(src, line)
        if kind == "id" and value.lower() in _KEYWORDS:
            return "kw", value.lower(), line
        if kind in ("id", "num"):
            return "id", value, line
        if kind in ("arrow", "punct"):
            return ("+" if value == "+" else kind), value, line
        return kind, value, line


def _html(src: _Text, line: int):
    """The HTML string at ``src.pos`` (its '<'), up to the matching '>'."""
    depth, k = 0, 0  # characters scanned
    while True:
        buf, start = src.buf, src.pos
        while start + k < len(buf):
            c = buf[start + k]
            depth += c == "<"
            depth -= c == ">"
            k += 1
            if depth == 0:
                if k > _LONGEST:
                    break
                value = buf[start + 1:start + k - 1]
                src.pos = start + k
                src.line += value.count("\n")
                return "id", value, line
        if k > _LONGEST:  # checked at the end of each block: the cost stays bounded
            raise ReaderError(src.path, f"an HTML string of more than {MAX_ATTRIBUTE_TEXT} characters on line {line} "
                                        "(readers/limits.py: MAX_ATTRIBUTE_TEXT)")
        if not src.more():
            raise ReaderError(src.path, f"not DOT: an HTML string is not closed (line {line})")


class _Parser:
    def __init__(self, src: _Text, on_edge=None, keep: frozenset | None = None):
        self.src, self.path, self.tokens, self.ahead = src, src.path, _tokens(src), deque()
        self.graph = DotGraph()
        self.on_edge = on_edge
        self.keep = keep

    def fail(self, what: str):
        raise ReaderError(self.path, f"not DOT: {what} on line {self.peek()[2]}")

    def peek(self, k: int = 0):
        while len(self.ahead) <= k:
            tok = next(self.tokens, None)
            if tok is None:
                return "end", "", self.src.line
            self.ahead.append(tok)
        return self.ahead[k]

    def skip(self) -> None:
        self.peek()
        if self.ahead:
            self.ahead.popleft()

    def take(self, kind: str, value: str | None = None) -> str:
        tk = self.peek()
        if tk[0] != kind or (value is not None and tk[1] != value):
            self.fail(f"expected {value or kind}, found {shown(tk[1]) if tk[0] != 'end' else 'the end of the file'}")
        self.skip()
        return tk[1]

    def parse(self) -> DotGraph:
        while self.peek()[0] != "end":
            if self.peek()[:2] == ("kw", "strict"):
                self.skip()
            kw = self.take("kw")
            if kw == "graph":
                self.fail("an undirected graph (a call graph is a digraph)")
            if kw != "digraph":
                self.fail(f"expected digraph, found {shown(kw)}")
            if self.peek()[0] == "id":
                self.skip()
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
                self.skip()
                return
            if (kind, value) == ("punct", ";"):
                self.skip()
                continue
            self.stmt(depth)

    def stmt(self, depth: int) -> None:
        kind, value, _ = self.peek()
        if kind == "kw" and value in ("graph", "node", "edge"):
            self.skip()
            self.attrs()
            return
        if (kind == "kw" and value == "subgraph") or (kind, value) == ("punct", "{"):
            if kind == "kw":
                self.skip()
                if self.peek()[0] == "id":
                    self.skip()
            self.take("punct", "{")
            self.stmts(depth + 1)
            if self.peek()[0] == "arrow":
                self.fail("an edge from a subgraph")
            return
        if self.peek(1)[:2] == ("punct", "="):
            self.take("id")
            self.skip()
            self.take("id")
            return
        chain = [self.node_id()]
        while self.peek()[0] == "arrow":
            self.skip()
            if self.peek()[0] != "id":
                self.fail("an edge to a subgraph" if self.peek()[1] in ("{", "subgraph")
                          else "an edge without a target")
            chain.append(self.node_id())
        attrs = self.attrs()
        if len(chain) == 1:
            self.graph.nodes[chain[0]].update(attrs if self.keep is None else
                                              {k: v for k, v in attrs.items() if k in self.keep})
        index = self.graph.index
        for a, b in zip(chain, chain[1:]):
            if self.on_edge is None:
                self.graph.edges.append((a, b, attrs))
            else:
                self.on_edge(index[a], index[b], attrs)

    def node_id(self) -> str:
        name = self.take("id")
        for _ in range(2):  # a port (":port" or ":port:compass"): not part of the node's identity
            if self.peek()[:2] == ("punct", ":"):
                self.skip()
                self.take("id")
        if name not in self.graph.index:
            if len(name) > MAX_FRAME_TEXT // 4 and len(name.encode("utf-8", "surrogatepass")) > MAX_FRAME_TEXT:
                self.fail(f"a node ID of more than {MAX_FRAME_TEXT} bytes (readers/limits.py: MAX_FRAME_TEXT)")
            if len(self.graph.index) >= MAX_NODES:
                self.fail(f"more than {MAX_NODES} nodes (readers/limits.py: MAX_NODES)")
            self.graph.index[name] = len(self.graph.index)
            self.graph.nodes[name] = {}
        return name

    def attrs(self) -> dict[str, str]:
        out: dict[str, str] = {}
        while self.peek()[:2] == ("punct", "["):
            self.skip()
            while self.peek()[:2] != ("punct", "]"):
                key = self.take("id") if self.peek()[0] == "id" else self.take("kw")
                if self.peek()[:2] == ("punct", "="):
                    self.skip()
                    out[key] = self.take("id")
                else:
                    out[key] = "true"
                if self.peek()[:2] in (("punct", ","), ("punct", ";")):
                    self.skip()
            self.skip()
        return out


def parse_dot(text: str, path: str) -> DotGraph:
    """The nodes and edges of the DOT ``text`` (from file ``path``, named in errors)."""
    return _Parser(_Text(path, text)).parse()


def read_dot(path: str, on_edge=None, keep=None) -> DotGraph:
    """The nodes and edges of the DOT file ``path`` (named in errors), read a block at a time.  ``on_edge(tail,
    head, attributes)``, when given, takes each edge as it is parsed (tail and head: positions in ``nodes``)
    instead of ``edges``; ``keep``: the node attributes to keep (all when None)."""
    src = _Text(path)
    try:
        return _Parser(src, on_edge, None if keep is None else frozenset(keep)).parse()
    finally:
        src.close()
