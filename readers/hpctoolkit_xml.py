"""Safe, streaming parse of an HPCToolkit ``experiment.xml`` (formats.md 1.4, 1.5, 1.7).

The file is fed to expat in 1 MiB chunks; nothing is kept of an element once its end tag is seen, so memory
grows with the calling-context tree (what the reader returns anyway), never with the document.

Safety: the embedded DTD of real databases (``<!ELEMENT>``/``<!ATTLIST>`` declarations) is accepted, but any
``<!ENTITY>`` declaration (internal, external, parameter or unparsed) and any external DTD (``SYSTEM``/``PUBLIC``)
raise a :class:`ReaderError` at once, so there is no entity expansion (billion laughs), no file or network
access.  References to undeclared entities are expat errors, also reported as ReaderError.

Limits (:mod:`perflake.readers.limits`), each refused with one ReaderError as soon as it is exceeded: an XML
token (a tag with its attributes, a text run) longer than :data:`MAX_TOKEN` (checked after every chunk fed, so
a 50 MB attribute costs about its first MiB), a name, file or module longer than ``MAX_FRAME_TEXT`` bytes, a
frame deeper than ``MAX_CALL_DEPTH`` (elements nested deeper than :data:`MAX_NESTING`), more than ``MAX_NODES``
frames.

Tree building (who becomes a node, how it is named):

* ``PF`` / ``Pr`` -> a ``function`` frame named after the procedure; a ``PF`` whose XML parent is a call
  site ``C`` with a non-zero line gets Hatchet's ``<call line>:<name>`` prefix.  Only call-site lines are used as
  prefixes (Hatchet also uses a parent PF's or loop's line: formats.md B.3).  A ``Pr`` with an empty name is
  skipped, its children hang under the nearest kept ancestor.
* ``C`` is not a node: it gives its callee's name prefix and nothing else.
* ``L`` -> a ``loop`` frame ``Loop@<basename(file)>:<line>``.
* ``S`` -> a ``statement`` frame ``<basename(file)>:<line>`` whose file is the one of its *enclosing*
  PF/Pr/L (Hatchet takes the most recently visited one in document order, formats.md B.1).
* ``<unknown file>...`` / ``<unknown load module>`` become a null file/module and line 0 a null line; names keep
  Hatchet's spelling (``<unknown file>:0``).

For every statement the parser records its innermost enclosing PF/Pr/L scope (``stmt_owner``), and for every
scope the next enclosing one up to its procedure frame (``scope_parent``): the chains of scopes the reader needs
to make HPCToolkit's nested exclusive values additive, in memory linear in the tree (a list of every enclosing
scope per statement would grow with the square of the nesting depth).

With ``values=True`` the inline summary values are kept too: every ``<M n= v=>`` child of a PF/Pr/L/S that is a
node becomes one (node, metric, value) triple (``value_node``/``value_metric``/``value``, metric by its position
in ``value_ids``); values on call sites, skipped ``Pr`` and unknown elements are not kept (a call site's value
is its callee's: the parent's own cost comes out of the inclusive values, see hpctoolkit_summary).  A database
written with metric-db output off has no ``<MetricDB>``: ``require_metric_dbs=False`` accepts it.
"""

from __future__ import annotations

import os
import re
from array import array
from dataclasses import dataclass, field
from xml.parsers import expat

from perflake.errors import ReaderError
from perflake.readers.base import shown
from perflake.readers.limits import MAX_ATTRIBUTE_TEXT, MAX_CALL_DEPTH, MAX_FRAME_TEXT, MAX_NODES

CHUNK = 1 << 20
# the longest XML token (a tag with its attributes, a text run) a file may hold: one attribute value at its limit
# plus room for the rest of the tag; expat holds a token whole until it ends, so a longer one is refused as the
# file is fed, before it is complete (at most this plus one CHUNK is ever buffered)
MAX_TOKEN = MAX_ATTRIBUTE_TEXT + MAX_FRAME_TEXT
# XML elements nest deeper than the frames they make (a call site C around each procedure frame, M and A
# elements): a document nested deeper than this holds a call path deeper than MAX_CALL_DEPTH
MAX_NESTING = 4 * MAX_CALL_DEPTH
TYPES = ("function", "loop", "statement")  # ParsedExperiment.type codes
FUNCTION, LOOP, STATEMENT = range(3)
_INT_RE = re.compile(r"^\s*(-?\d+)(?:\s*-\s*(-?\d+))?\s*$")


@dataclass
class ParsedExperiment:
    """What the reader needs from experiment.xml: frames as parallel columns, parents before children.

    Numbers are kept in compact arrays (a line or end line of 0 means unknown) and names are de-duplicated,
    so memory stays a small multiple of the number of nodes.
    """

    version: str | None = None
    program: str | None = None
    profile_name: str | None = None
    info: dict = field(default_factory=dict)  # Header / SecHeader Info NV pairs
    metric_dbs: list[dict] = field(default_factory=list)  # MetricDB attributes
    metric_table: dict = field(default_factory=dict)  # MetricTable id -> name
    metric_units: dict = field(default_factory=dict)  # MetricTable name -> Info NV "units"
    totals: dict = field(default_factory=dict)  # MetricTable id -> summary value of the implicit root
    metric_attrs: dict = field(default_factory=dict)  # MetricTable id -> every attribute of its <Metric>
    trace_dbs: list[dict] = field(default_factory=list)  # TraceDB attributes
    parent: array = field(default_factory=lambda: array("i"))
    name: list[str] = field(default_factory=list)
    type: array = field(default_factory=lambda: array("b"))  # index into TYPES
    file: list[str | None] = field(default_factory=list)
    line: array = field(default_factory=lambda: array("q"))
    end_line: array = field(default_factory=lambda: array("q"))
    module: list[str | None] = field(default_factory=list)
    xml_id: array = field(default_factory=lambda: array("q"))  # CCT id ``i`` (metric-db row = id - 1), 0 when absent
    stmt_node: array = field(default_factory=lambda: array("i"))  # statement nodes
    stmt_owner: array = field(default_factory=lambda: array("i"))  # their innermost PF/Pr/L, -1 for none
    scope_node: array = field(default_factory=lambda: array("i"))  # PF/Pr/L nodes
    scope_parent: array = field(default_factory=lambda: array("i"))  # the next enclosing one up to the PF, or -1
    # inline summary values (parse_experiment(values=True) only): one entry per <M> of a node
    value_node: array = field(default_factory=lambda: array("i"))
    value_metric: array = field(default_factory=lambda: array("i"))  # index into value_ids
    value: array = field(default_factory=lambda: array("d"))
    value_ids: list[str] = field(default_factory=list)  # MetricTable ids (the M's n), in order of appearance
    values_unknown_metric: int = 0  # <M> of a node whose n is not in the MetricTable (not kept)


def _lines(value: str | None) -> tuple[int, int]:
    """``l`` attribute -> (first line, last line); 0 for unknown (HPCToolkit's own "0", absent, garbage, or a
    number beyond int64)."""
    if value is not None and value.isascii() and value.isdigit() and len(value) < 19:
        return int(value), 0
    m = _INT_RE.match(value or "")
    if not m or len(m.group(1)) > 18 or len(m.group(2) or "") > 18:
        return 0, 0
    return max(int(m.group(1)), 0), max(int(m.group(2) or 0), 0)


def _prefix_line(value: str | None) -> str | None:
    m = _INT_RE.match(value or "")
    return m.group(1) if m and len(m.group(1)) < 19 and int(m.group(1)) != 0 else None


class _Handler:
    """expat callbacks; ``ctx`` stack entries are (parent node, scope file, innermost scope of the chain or -1,
    call-site line, the element's own node or -1)."""

    def __init__(self, path: str, values: bool = False):
        self.path = path
        self.values = values
        self.value_index: dict[str, int] = {}
        self.out = ParsedExperiment()
        self.tables: dict[str, dict[str, str]] = {"LoadModule": {}, "File": {}, "Procedure": {}}
        self.tags: list[str] = []
        self.ctx: list[tuple] = []
        self.parser = None  # the expat parser: its handlers switch inside SecCallPathProfileData
        self.seen_root = False
        self.metric_name: str | None = None  # MetricTable Metric being read (for its units)
        self.base: dict[str, str] = {}  # basename cache
        self.names: dict[str, str] = {}  # one string object per distinct name
        self.known: dict[str | None, str | None] = {None: None}  # file/module -> itself, or None if "<unknown ..."
        self.depth = array("i")  # frames from the root, per node (limits.MAX_CALL_DEPTH)

    # -- elements --------------------------------------------------------------------------------------
    def start(self, tag: str, attrs: dict):
        tags = self.tags
        if not self.seen_root:
            if tag != "HPCToolkitExperiment":
                raise ReaderError(self.path, f"root element is <{tag[:40]}>, not <HPCToolkitExperiment>")
            self.seen_root = True
            self.out.version = attrs.get("version")
        elif tag in self.tables and tags and tags[-1] == tag + "Table":
            self.tables[tag][attrs.get("i", "")] = self._text(tag, attrs.get("n", ""))
        elif tag == "MetricDB":
            self.out.metric_dbs.append(dict(attrs))
        elif tag == "Metric" and tags and tags[-1] == "MetricTable":
            self.metric_name = attrs.get("n")
            self.out.metric_table[attrs.get("i")] = self.metric_name
            self.out.metric_attrs[attrs.get("i")] = dict(attrs)
        elif tag == "TraceDB":
            self.out.trace_dbs.append(dict(attrs))
        elif tag == "NV":
            self._nv(attrs)
        elif tag == "SecCallPathProfileData":  # the tree: expat calls _cct/_end_cct directly until its end tag
            self.ctx.append((-1, None, -1, None, -1))
            self.parser.StartElementHandler, self.parser.EndElementHandler = self._cct, self._end_cct
        elif tag == "Header":
            self.out.program = attrs.get("n")
        elif tag == "SecCallPathProfile":
            self.out.profile_name = attrs.get("n")
        tags.append(tag)

    def end(self, tag: str):
        self.tags.pop()
        if tag == "Metric":
            self.metric_name = None

    def _end_cct(self, _tag: str):
        ctx = self.ctx
        ctx.pop()
        if not ctx:  # </SecCallPathProfileData>
            self.tags.pop()
            self.parser.StartElementHandler, self.parser.EndElementHandler = self.start, self.end

    def _nv(self, attrs):
        owner = self.tags[-2] if len(self.tags) >= 2 else None
        value = attrs.get("v") or ""
        if len(value) > MAX_ATTRIBUTE_TEXT // 4 and len(value.encode("utf-8", "surrogatepass")) > MAX_ATTRIBUTE_TEXT:
            raise ReaderError(self.path, f"the value of <NV n={shown(attrs.get('n'))[:40]}> holds more than "
                                         f"{MAX_ATTRIBUTE_TEXT} bytes (limit)")
        if self.metric_name is not None and owner == "Metric" and attrs.get("n") == "units":
            self.out.metric_units[self.metric_name] = attrs.get("v")
        elif owner in ("Header", "SecHeader") and attrs.get("n"):
            self.out.info[attrs["n"]] = attrs.get("v")

    def _basename(self, file: str | None) -> str:
        if file is None:
            return "<unknown file>"
        b = self.base.get(file)
        if b is None:
            b = self.base[file] = os.path.basename(file) or file
        return b

    def _lookup(self, table: str, key: str | None) -> str | None:
        """A table id, or (DTD: "a string or an id") the literal string itself."""
        if key is None:
            return None
        return self.tables[table].get(key, key)

    def _text(self, what: str, text: str) -> str:
        """``text`` (a name, file or module); a ReaderError when it exceeds MAX_FRAME_TEXT bytes."""
        if len(text) > MAX_FRAME_TEXT // 4 and len(text.encode("utf-8", "surrogatepass")) > MAX_FRAME_TEXT:
            raise ReaderError(self.path, f"a {what} name of {len(text.encode('utf-8', 'surrogatepass'))} bytes "
                                         f"(limit {MAX_FRAME_TEXT}): {shown(text[:40])}")
        return text

    def _known(self, value: str | None) -> str | None:
        try:
            return self.known[value]
        except KeyError:
            self._text("file or module", value)
            known = self.known[value] = None if value.startswith(("<unknown file>", "<unknown load module>")) else value
            return known

    def _node(self, tag, parent, name, kind, file, lines, module, attrs) -> int:
        o = self.out
        nid = len(o.parent)
        depth = self.depth[parent] + 1 if parent >= 0 else 1
        if depth > MAX_CALL_DEPTH:
            raise ReaderError(self.path, f"a call path deeper than {MAX_CALL_DEPTH} frames (limit), at <{tag}> "
                                         f"number {nid + 1}")
        if nid >= MAX_NODES:
            raise ReaderError(self.path, f"more than {MAX_NODES} call-tree nodes (limit)")
        self.depth.append(depth)
        try:
            o.xml_id.append(int(attrs.get("i", 0)))
        except (ValueError, OverflowError):  # not a number, or not an int64
            problem = f"<{tag}> has an id i={shown(attrs.get('i'))} that is not a 64-bit integer"
            raise ReaderError(self.path, problem) from None
        o.parent.append(parent)
        known = self.names.get(name)
        o.name.append(known if known is not None else self.names.setdefault(name, self._text(tag, name)))
        o.type.append(kind)
        o.file.append(self._known(file))
        o.line.append(lines[0])
        o.end_line.append(lines[1])
        o.module.append(self._known(module))
        return nid

    def _scope(self, nid: int, up: int) -> None:
        self.out.scope_node.append(nid)
        self.out.scope_parent.append(up)

    def _value(self, node: int, attrs: dict) -> None:
        """Keep the summary value of an ``<M>`` child of ``node``."""
        metric, text = attrs.get("n", ""), attrs.get("v")
        if metric not in self.out.metric_table:
            self.out.values_unknown_metric += 1
            return
        try:
            value = float(text)
        except (TypeError, ValueError):
            raise ReaderError(self.path, f"<M n={shown(metric)} v={shown(text)}>: the value is not a number") from None
        k = self.value_index.get(metric)
        if k is None:
            k = self.value_index[metric] = len(self.out.value_ids)
            self.out.value_ids.append(metric)
        self.out.value_node.append(node)
        self.out.value_metric.append(k)
        self.out.value.append(value)

    def _cct(self, tag: str, attrs: dict):
        parent, sfile, owner, cline, me = ctx = self.ctx[-1]
        if len(self.ctx) > MAX_NESTING:
            raise ReaderError(self.path, f"elements nested more than {MAX_NESTING} deep: a call path deeper than "
                                         f"{MAX_CALL_DEPTH} frames (limit)")
        if tag == "M":
            if len(self.ctx) == 1:  # summary values of the implicit root (node id 1)
                self.out.totals[attrs.get("n", "")] = attrs.get("v")
            elif self.values and me >= 0:
                self._value(me, attrs)
            self.ctx.append(ctx)
        elif tag == "S":
            nid = self._node(tag, parent, f"{self._basename(sfile)}:{attrs.get('l', '0')}", STATEMENT, sfile,
                             _lines(attrs.get("l")), None, attrs)
            self.out.stmt_node.append(nid)
            self.out.stmt_owner.append(owner)
            self.ctx.append((nid, sfile, owner, None, nid))
        elif tag == "C":
            self.ctx.append((parent, sfile, -1, _prefix_line(attrs.get("l")), -1))
        elif tag in ("PF", "Pr"):
            name = self._lookup("Procedure", attrs.get("n")) or ""
            file = self._lookup("File", attrs.get("f"))
            if tag == "Pr" and not name:
                self.ctx.append((parent, file or sfile, owner, None, -1))
                return
            if tag == "PF" and cline is not None:
                name = f"{cline}:{name}"
            nid = self._node(tag, parent, name, FUNCTION, file, _lines(attrs.get("l")),
                             self._lookup("LoadModule", attrs.get("lm")), attrs)
            self._scope(nid, -1 if tag == "PF" else owner)  # a procedure frame starts a chain
            self.ctx.append((nid, file, nid, None, nid))
        elif tag == "L":
            file = self._lookup("File", attrs.get("f")) or sfile
            nid = self._node(tag, parent, f"Loop@{self._basename(file)}:{attrs.get('l', '0')}", LOOP, file,
                             _lines(attrs.get("l")), None, attrs)
            self._scope(nid, owner)
            self.ctx.append((nid, file, nid, None, nid))
        else:  # A and anything unknown: transparent
            self.ctx.append((parent, sfile, owner, cline, -1))


def safe_parser(path: str) -> expat.XMLParserType:
    """An expat parser that refuses every entity declaration and any external DTD with a ReaderError naming
    ``path`` (module docstring, "Safety"); the caller sets its element handlers."""

    def refuse(name, *_):
        raise ReaderError(path, f"entity declaration <!ENTITY {str(name)[:40]} ...> refused (no entity expansion)")

    def doctype(_name, sysid, pubid, _has_internal):
        if sysid or pubid:
            raise ReaderError(path, f"external DTD {shown(sysid or pubid)} refused (no external resources)")

    p = expat.ParserCreate()
    p.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    p.StartDoctypeDeclHandler = doctype
    p.EntityDeclHandler = p.UnparsedEntityDeclHandler = refuse
    p.ExternalEntityRefHandler = lambda *a: refuse(a[0] or "?")
    return p


def stream(path: str, p: expat.XMLParserType) -> None:
    """Feed the file ``path`` to ``p`` in CHUNK pieces; a ReaderError naming it when it cannot be read, is not
    well-formed XML or holds a token longer than MAX_TOKEN (expat buffers a token until its end: the bytes fed
    past the start of the last event it reported are that token)."""
    try:
        with open(path, "rb") as fh:
            fed = 0
            while chunk := fh.read(CHUNK):
                p.Parse(chunk, False)
                fed += len(chunk)
                if fed - p.CurrentByteIndex > MAX_TOKEN:
                    raise ReaderError(path, f"an XML tag or text of more than {MAX_TOKEN} bytes at byte "
                                            f"{p.CurrentByteIndex} (limit: attribute values of at most "
                                            f"{MAX_ATTRIBUTE_TEXT} bytes)")
            p.Parse(b"", True)
    except OSError as exc:
        raise ReaderError(path, f"cannot read: {exc.strerror or exc}") from None
    except expat.ExpatError as exc:
        raise ReaderError(path, f"malformed XML at line {exc.lineno}, column {exc.offset}: "
                                f"{expat.ErrorString(exc.code)}") from None


def parse_experiment(path: str, *, values: bool = False, require_metric_dbs: bool = True) -> ParsedExperiment:
    """Stream-parse ``path`` (experiment.xml); raise ReaderError naming it on malformed or hostile input.

    ``values``: also keep the inline ``<M>`` summary values of every node (see the module docstring).
    ``require_metric_dbs``: refuse a file without ``<MetricDB>`` entries (a database whose values are all in
    metric-db files); False for a database written with metric-db output off."""
    h = _Handler(path, values)
    p = h.parser = safe_parser(path)
    p.StartElementHandler = h.start
    p.EndElementHandler = h.end
    try:
        stream(path, p)
    finally:
        h.parser = None  # the parser's handlers are h's methods: no cycle left behind
    if not h.seen_root:
        raise ReaderError(path, "no <HPCToolkitExperiment> element")
    if require_metric_dbs and not h.out.metric_dbs:
        raise ReaderError(path, "no <MetricDB> entries: not a database written by hpcprof")
    return h.out
