"""Caliper native ``.cali`` text: lines -> context-tree nodes, attributes, snapshot records, globals.

Format reference: ``shared/docs/formats.md`` section 4.  This module only parses; ``readers/caliper.py`` turns
the result into perflake's frames and values.

* one record per ``\\n``-terminated line, comma-separated fields ``key=v1=v2...``; a backslash makes the next
  character literal and ``\\n`` is a newline (4.1).  Lines without a backslash (nearly all) are split with
  ``str.split``; only escaped lines go through a tokenizer;
* ``__rec=node`` adds a node (id, attribute id, value, parent) of the metadata/context tree; ``__rec=ctx`` is a
  snapshot record (``ref`` node ids plus immediate ``attr``/``data`` pairs); ``__rec=globals`` the run metadata
  (4.2).  Nodes 0-11 are the predefined bootstrap nodes;
* an attribute is a node whose attribute is 8 (``cali.attribute.name``); its ancestors give its type (the type
  node at the top), its property flags (the nearest ancestor of attribute 10) and its metadata such as
  ``attribute.alias``, ``attribute.unit`` or ``adiak.type`` (every other ancestor).

Node ids are bound while the stream is read, as Caliper's own reader (caliper-reader, the ``caliperreader``
package; its ``MetadataDB.import_node`` replaces the node of an id) binds them:

* a node id defined again with *other* content is re-bound: records and nodes after the new definition mean
  the new node, records and children before it keep the old one.  Old streams do this: Caliper 1.x (2016)
  predefined nodes 0-10 only, so its first own node is 11 (newer readers predefine 11 as the ``ptr`` type),
  and several process streams in one file (``cat``) re-use each other's ids.  The same content written again
  (2016 streams write nodes 0-10 themselves) changes nothing;
* a node's parent is the node bound to the parent id when the node is defined; a node's *attribute* is the
  node bound to the attribute id when a record first uses the node (caliper-reader resolves it lazily), so an
  attribute may be defined after nodes of it (2016 streams write the ``time.unit=usec`` metadata node before
  the ``time.unit`` attribute); nodes no record uses are resolved at the end;
* an ``attr=`` id of a record means the latest *attribute* defined under that id (caliper-reader's
  ``attributes_by_id``, updated by attribute definitions only).

Caliper's C++ reader (``CaliperMetadataDB::merge_node``) resolves a node's attribute and parent when the node
is defined and maps file ids to ids of its own; its ``idmap.insert`` keeps the first mapping of a file id, so
which definition later references see depends on its own numbering.  perflake follows caliper-reader.  The
binding itself is :class:`perflake.readers.cali_bindings.Bindings`.

Memory: the file is read in blocks cut at line ends, never whole (:mod:`perflake.readers.cali_blocks`); what
is kept is the context tree (``nodes``) and the records, stored compactly.  Limits
(:mod:`perflake.readers.limits`), refused as soon as they are seen: a line longer than ``cali_blocks.MAX_LINE``
bytes (found after reading at most that plus one block of it), a node or global value longer than
``MAX_ATTRIBUTE_TEXT`` bytes, more than ``MAX_NODES`` nodes.

Any violation (unknown record kind, a reference to a node that is not defined when it is needed, a parent
defined after its child, unequal ``attr``/``data`` lists, a last line without its newline) raises
:class:`perflake.errors.ReaderError` naming the file and line.  (caliper-reader makes a node whose parent is
not yet defined a root; Caliper's C++ reader drops it: perflake refuses the stream.)
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from perflake.errors import ReaderError
from perflake.readers.base import shown
from perflake.readers.cali_bindings import FRESH, INV_ID, NAME_ATTR, Bindings
from perflake.readers.cali_bindings import values as _values
from perflake.readers.cali_blocks import Records, check_value, line_blocks
from perflake.readers.limits import MAX_FRAME_TEXT, MAX_NODES

ASVALUE, HIDDEN, NESTED, GLOBAL = 1, 128, 256, 512
TYPE_ATTR, PROP_ATTR = 9, 10
_TYPES = ("usr", "int", "uint", "string", "addr", "double", "bool", "type")
BOOTSTRAP = {i: (TYPE_ATTR, t, -1) for i, t in enumerate(_TYPES)}
BOOTSTRAP.update({
    8: (NAME_ATTR, "cali.attribute.name", 3),
    9: (NAME_ATTR, "cali.attribute.type", 7),
    10: (NAME_ATTR, "cali.attribute.prop", 1),
    11: (TYPE_ATTR, "ptr", -1),
})
_TOKEN = re.compile(r"\\(.?)|([,=])|([^\\,=]+)", re.S)
# the usual node line (ids of up to 18 digits: longer ones take the careful path)
_NODE = re.compile(r"__rec=node,id=(\d{1,18}),attr=(\d{1,18}),data=([^,=\\]*)(?:,parent=(\d{1,18}))?")
_INT = re.compile(r"[+-]?\d+")
_FLOAT = re.compile(r"[+-]?(\d+(?:\.\d*)?|\.\d+)([eE][+-]?\d+)?")  # unambiguous: linear on long digit runs


@dataclass(frozen=True)
class Attribute:
    id: int
    name: str
    type: str
    prop: int
    meta: dict = field(default_factory=dict, compare=False)

    @property
    def is_value(self) -> bool:
        return bool(self.prop & ASVALUE)

    @property
    def is_hidden(self) -> bool:
        return bool(self.prop & HIDDEN)

    @property
    def is_nested(self) -> bool:
        return bool(self.prop & NESTED)

    @property
    def is_numeric(self) -> bool:
        return self.type in ("int", "uint", "double")  # not addr: an address is no measurement


def split_escaped(line: str) -> list[list[str]]:
    """Fields of a line that contains backslashes, each as [key, value, ...] with escapes resolved."""
    fields, cur, buf = [], [], []
    for m in _TOKEN.finditer(line):
        group = m.lastindex
        if group == 1:
            c = m.group(1)
            buf.append("\n" if c == "n" else c)
        elif group == 2:
            cur.append("".join(buf))
            buf = []
            if m.group(2) == ",":
                fields.append(cur)
                cur = []
        else:
            buf.append(m.group(3))
    cur.append("".join(buf))
    fields.append(cur)
    return fields


class CaliFile:
    """The parsed content of one ``.cali`` file."""

    def __init__(self, path: str):
        self.path = path
        self.nodes: dict[int, tuple[int, str, int]] = dict(BOOTSTRAP)  # id -> (attribute id, value, parent id)
        self.records = Records()  # ctx records: (line, refs, attrs, values) when iterated
        self.globals = Records()
        self.redefined = 0  # node definitions that re-bound an id already defined differently
        self.origin: dict[int, tuple[int, int]] = {}  # internal id of a re-definition -> (file id, line)
        self._attrs: dict[int, Attribute] = {}

    def error(self, line: int | None, problem: str) -> ReaderError:
        return ReaderError(self.path, f"line {line}: {problem}" if line else problem)

    def at_line(self, line: int, exc: ReaderError) -> ReaderError:
        """``exc`` (found while resolving the record of ``line``) with that line, unless it names one."""
        return exc if exc.problem.startswith("line ") else self.error(line, exc.problem)

    def file_id(self, nid: int) -> int:
        """The id the file gives node ``nid`` (an internal id from :data:`FRESH` up is a re-definition)."""
        return self.origin[nid][0] if nid >= FRESH else nid

    def describe(self, nid: int) -> str:
        """``nid`` as the file names it, e.g. ``12`` or ``12 (as re-defined at line 40)``."""
        if nid >= FRESH:
            fid, line = self.origin[nid]
            return f"{fid} (as re-defined at line {line})"
        return shown(nid)

    def attribute(self, aid: int) -> Attribute:
        """The attribute defined by node ``aid`` (type, properties, metadata from its ancestors).

        The attributes of the metadata on its ancestors are resolved first, with an explicit stack: a chain
        of attributes described by attributes may be as long as the file, deeper than Python's recursion."""
        attr = self._attrs.get(aid)
        if attr is not None:
            return attr
        stack, open_ = [aid], set()  # depth-first; open_: attributes waiting for their own metadata attributes
        while stack:
            cur = stack[-1]
            if cur in self._attrs:
                stack.pop()
                continue
            node = self.nodes.get(cur)
            if node is None or node[0] != NAME_ATTR:
                raise self.error(None, f"node {self.describe(cur)} is used as an attribute but does not define one")
            needed = [a for a in self._metadata_attrs(node) if a not in self._attrs]
            if needed:
                if cur in open_ or open_.intersection(needed):  # impossible after parse(): defined before use
                    raise self.error(None, f"attribute node {self.describe(cur)} is described by itself (a cycle)")
                open_.add(cur)
                stack += needed
                continue
            typ, prop, meta = "usr", None, {}
            parent = node[2]
            while parent >= 0:
                pattr, pvalue, parent = self.nodes[parent]
                if pattr == TYPE_ATTR:
                    typ = pvalue
                elif pattr == PROP_ATTR:
                    if prop is None:
                        prop = int(pvalue) if _INT.fullmatch(pvalue) and len(pvalue) < 20 else 0
                elif pattr != NAME_ATTR:
                    meta.setdefault(self._attrs[pattr].name, pvalue)
            self._attrs[cur] = Attribute(self.file_id(cur), node[1], typ, prop or 0, meta)
            stack.pop()
            open_.discard(cur)
        return self._attrs[aid]

    def _metadata_attrs(self, node: tuple) -> list[int]:
        """Attribute ids of the metadata nodes among ``node``'s ancestors."""
        out, parent = [], node[2]
        while parent >= 0:
            pattr, _, parent = self.nodes[parent]
            if pattr not in (TYPE_ATTR, PROP_ATTR, NAME_ATTR):
                out.append(pattr)
        return out


def _fields(line: str) -> tuple[str | None, dict]:
    """(record kind, {key: raw value}) of one line; a raw value is the text after ``key=`` (``v1=v2``), or,
    for a line with escapes, the tuple of its unescaped values."""
    if "\\" in line:
        fields = split_escaped(line)
        head = fields[0]
        kind = head[1] if head[0] == "__rec" and len(head) == 2 else None
        return kind, {f[0]: tuple(f[1:]) for f in fields[1:]}
    parts = line.split(",")
    head = parts[0]
    kind = head[6:] if head.startswith("__rec=") and "=" not in head[6:] else None
    rec = {}
    for part in parts[1:]:
        key, _, rest = part.partition("=")
        rec[key] = rest
    return kind, rec


def _one(cf: CaliFile, lineno: int, rec: dict, key: str) -> str:
    raw = rec[key]
    values = _values(raw)
    if len(values) != 1:
        raise cf.error(lineno, f"{key}= of a node record holds {len(values)} values, expected 1")
    return values[0]


def parse(path: str) -> CaliFile:
    """Parse ``path``: nodes, records and globals, with node ids bound as Caliper's readers bind them.

    A node id defined again with other content is re-bound (module docstring); a node's attribute may be
    defined after the node (resolved when a record first uses the node, else at the end).  Any reference to a
    node that is not defined by then raises ReaderError with the line."""
    cf = CaliFile(path)
    b = Bindings(cf)
    node_line, nodes, remap = _NODE.fullmatch, cf.nodes, b.remap
    most = MAX_NODES + len(BOOTSTRAP)
    lineno = 0
    for lines in line_blocks(path):
        if isinstance(lines, str):  # the end: the text after the last newline
            if lines:
                raise cf.error(lineno + 1, f"truncated: the last line has no newline ({lines[:60]!r})")
            break
        for line in lines:
            lineno += 1
            m = node_line(line)
            if m is not None:  # the usual node line: a first definition whose attribute and parent are defined
                nid, aid, value, parent = m.groups()
                nid, aid, parent = int(nid), int(aid), int(parent) if parent else -1
                if nid not in nodes and aid in nodes and (parent < 0 or parent in nodes):
                    if len(value) > MAX_FRAME_TEXT:
                        check_value(cf, lineno, value)
                    nodes[nid] = (aid, value, remap.get(parent, parent) if remap else parent)
                    continue
            if not line:
                continue
            _record(cf, b, lineno, line)
        if len(nodes) > most:
            raise cf.error(lineno, f"more than {MAX_NODES} context-tree nodes (limit)")
    if not cf.records and not cf.globals:
        raise cf.error(None, "no ctx or globals record: an empty or truncated file")
    b.finish()
    return cf


def _record(cf: CaliFile, b: Bindings, lineno: int, line: str) -> None:
    """One line other than a usual node line: a ctx or globals record, or a node needing care."""
    nodes = cf.nodes
    kind, rec = _fields(line)
    if kind == "ctx" or kind == "globals":
        ref_text = rec.get("ref")
        refs = b.refs(lineno, ref_text) if ref_text is not None else ()
        attrs = b.attrs(lineno, rec["attr"]) if "attr" in rec else ()
        raw = rec.get("data")
        n = 0 if raw is None else raw.count("=") + 1 if isinstance(raw, str) else len(raw)
        if len(attrs) != n:
            raise cf.error(lineno, f"{len(attrs)} attr ids but {n} data values")
        if kind == "globals":
            for value in _values(raw) if raw is not None else ():
                check_value(cf, lineno, value)
        as_written = isinstance(ref_text, str) and not b.remap and max(refs) < 1 << 63
        (cf.records if kind == "ctx" else cf.globals).append(lineno, refs, attrs, raw,
                                                               ref_text if as_written else None)
    elif kind == "node":
        try:
            nid, aid = int(_one(cf, lineno, rec, "id")), int(_one(cf, lineno, rec, "attr"))
            parent = int(_one(cf, lineno, rec, "parent")) if "parent" in rec else -1
            value = _one(cf, lineno, rec, "data")
        except (KeyError, ValueError):
            problem = f"a node record needs integer id, attr and a data field: {line[:80]!r}"
            raise cf.error(lineno, problem) from None
        if min(nid, aid, parent + 1) < 0:
            raise cf.error(lineno, f"a node record holds a negative id: {shown(line[:80])}")
        if nid >= INV_ID:
            raise cf.error(lineno, f"node id {shown(nid)} is out of range (Caliper ids are below 2**64 - 1)")
        if parent >= 0 and parent not in nodes:
            problem = f"node {shown(nid)} refers to node {shown(parent)}, which is not defined before it"
            raise cf.error(lineno, problem)
        check_value(cf, lineno, value)
        b.define(lineno, nid, aid, value, parent)
    elif kind is None:
        raise cf.error(lineno, f"a record must start with __rec=<kind>, found {line[:60]!r}")
    else:
        raise cf.error(lineno, f"unknown record kind __rec={shown(kind)} (expected node, ctx or globals)")


# -- run metadata ------------------------------------------------------------------------------------------


def guess(text: str):
    """int, else float, else the string (for values whose type the file does not declare)."""
    t = text.strip()
    if _INT.fullmatch(t) and len(t) < 4300:  # Python refuses longer decimal conversions
        return int(t)
    if _FLOAT.fullmatch(t) and math.isfinite(f := float(t)):  # 1e999 stays text: JSON has no infinity
        return f
    return text


def typed(attr: Attribute, text: str):
    """A global's value as a Python value: by Caliper type, then by Adiak type (lists for ``set of``...)."""
    if attr.type in ("int", "uint", "addr"):
        return guess(text)
    if attr.type == "double":
        try:
            value = float(text)
        except ValueError:
            return text
        return value if math.isfinite(value) else text  # nan, inf: kept as written (JSON has neither)
    if attr.type == "bool":
        return text.strip().lower() in ("true", "1")
    adiak = attr.meta.get("adiak.type", "")
    bracketed = len(text) >= 2 and text[0] in "[{(" and text[-1] == {"[": "]", "{": "}", "(": ")"}[text[0]]
    if bracketed or adiak.startswith(("set of", "list of", "tuple", "array")):
        inner = text[1:-1] if bracketed else text
        items = inner.split(",") if inner else []
        element = adiak.split(" of ", 1)[1] if " of " in adiak else "string"
        if element in ("int", "unsigned int", "long", "unsigned long", "double", "float"):
            return [guess(i) for i in items]
        return items
    if adiak:
        return text  # declared string, path, version, ... stays a string (e.g. omp_version "4.5")
    return guess(text)


def globals_of(cf: CaliFile) -> dict:
    """Every ``globals`` record expanded (reference chains plus immediate pairs), values typed.

    An attribute found more than once becomes a list of its values, root first (formats.md 4.3).  A pair
    (attribute, value) that an earlier ``globals`` record gave already adds nothing: several process streams in
    one file repeat the same run metadata (Caliper's C++ reader merges equal global entries; caliper-reader
    keeps the last record only)."""
    out: dict = {}

    def add(aid: int, value: str) -> None:
        attr = cf.attribute(aid)
        if attr.is_hidden or (attr.name, value) in earlier:
            return
        pairs.add((attr.name, value))
        v = typed(attr, value)
        if attr.name in out:
            prev = out[attr.name]
            out[attr.name] = (prev if isinstance(prev, list) and attr.name in multi else [prev]) + [v]
            multi.add(attr.name)
        else:
            out[attr.name] = v

    multi: set[str] = set()
    earlier: set[tuple[str, str]] = set()
    for line, refs, attrs, values in cf.globals:
        pairs: set[tuple[str, str]] = set()
        try:
            for ref in refs:
                chain = []
                while ref >= 0:
                    aid, value, ref = cf.nodes[ref]
                    if aid not in (NAME_ATTR, TYPE_ATTR, PROP_ATTR):
                        chain.append((aid, value))
                for aid, value in reversed(chain):
                    add(aid, value)
            for aid, value in zip(attrs, values):
                add(aid, value)
        except ReaderError as exc:
            raise cf.at_line(line, exc) from None
        earlier |= pairs
    return out
