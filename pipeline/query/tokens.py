"""Tokens of the string dialect (perflake.query.string_dialect): keywords, names, quoted strings, numbers and
punctuation, each with its offset in the query text.  A character that starts no token is an InvalidQueryPath
(Hatchet's error for a query it cannot parse) whose ``position`` is its offset."""

from __future__ import annotations

import re
from dataclasses import dataclass

from perflake.errors import InvalidQueryPath

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
    raise InvalidQueryPath("unterminated string", query=one_line(text), position=start)


def tokenize(text: str) -> list[Token]:
    """All tokens of ``text`` followed by an ``end`` token; InvalidQueryPath at the first character that starts none."""
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
            raise InvalidQueryPath(f"unexpected character {ch!r}", query=one_line(text), position=i)
    tokens.append(Token("end", "", None, n))
    return tokens
