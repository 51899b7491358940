"""Binary sections of HPCToolkit v4 databases (``meta.db``, ``profile.db``): bounds-checked and little-endian.

Format reference: ``shared/docs/formats.md`` section 2 and the database's own ``FORMATS.md`` (major
version 4).  Every structure array is strided by the size the file records (``szMetric``, ``szProfile``, ...),
never by a hard-coded size, and every pointer is checked against the file size, so a truncated or damaged
file raises :class:`perflake.errors.ReaderError` naming the file, the structure and the offset.

Memory: each file is mapped, never read whole; structures are decoded where they lie, so a reader's memory
grows with the context tree and the values it returns, and a damaged file (a wrong magic, a section past the
end) is refused before any of it is read.  Limits (:mod:`perflake.readers.limits`): a string longer than
``MAX_FRAME_TEXT`` bytes (function, file and module names) or ``MAX_ATTRIBUTE_TEXT`` (titles, metric names,
...) is refused after looking that far for its NUL; a context tree deeper than ``MAX_CALL_DEPTH`` or with more
than ``MAX_NODES`` contexts is refused as soon as the walk meets the excess.

**Layout variants.**  Databases of an hpcprof pre-release of 2022 say 4.0 too but have an earlier layout; they
are recognised by their structure sizes and decoded with :mod:`perflake.readers.hpctoolkit_v4_pre2022` (version
``4.0 (2022 pre-release layout)``).  Any other structure smaller than its 4.0 size is a ReaderError naming the file.

This module only decodes; :mod:`perflake.readers.hpctoolkit_v4` turns the result into ProfileRows.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

import numpy as np

from perflake.errors import ReaderError
from perflake.readers.hpctoolkit_v4_pre2022 import (
    PRE_2022,
    PRE_METRIC_SIZES,
    PRE_PROFILE_SIZE,
    metrics_pre_2022,
    pre_2022_entry,
    pre_2022_flags,
)
from perflake.readers.limits import MAX_ATTRIBUTE_TEXT, MAX_CALL_DEPTH, MAX_FRAME_TEXT, MAX_NODES
from perflake.readers.single_file import map_file

MAGIC = b"HPCTOOLKIT"
FORMAT_IDS = (b"meta", b"prof", b"ctxt", b"trce")
FOOTERS = {b"meta": b"_meta.db", b"prof": b"_prof.db", b"ctxt": b"__ctx.db"}
MAJOR = 4
LEXICAL = {0: "function", 1: "loop", 2: "line", 3: "instruction"}
HAS_FUNCTION, HAS_SRCLOC, HAS_POINT = 1, 2, 4
_VALUE = np.dtype([("metric", "<u2"), ("value", "<f8")])  # packed: 10 bytes
_CTX_INDEX = np.dtype([("ctx", "<u4"), ("start", "<u8")])  # packed: 12 bytes


def format_id(path: str) -> bytes | None:
    """The 4-byte format id of an HPCToolkit v4 file (``b"meta"``, ...), or None when it is not one."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(14)
    except OSError:
        return None
    return head[10:14] if len(head) == 14 and head[:10] == MAGIC else None


class Blob:
    """The bytes of one ``*.db`` file (mapped) with bounds-checked accessors; errors name the file."""

    def __init__(self, path: str, fmt: bytes):
        self.path = path
        self.data = map_file(path)
        n = len(self.data)
        if n < 16 or self.data[:10] != MAGIC:
            raise ReaderError(path, "not an HPCToolkit database file: it does not start with 'HPCTOOLKIT'")
        got = self.data[10:14]
        if got != fmt:
            raise ReaderError(path, f"wrong HPCToolkit file kind {got!r} at bytes 10-13, expected {fmt!r}")
        self.major, self.minor = self.data[14], self.data[15]
        if self.major != MAJOR:
            raise ReaderError(path, f"HPCToolkit database version {self.major}.{self.minor} is not supported (4.x)")
        footer = FOOTERS.get(fmt)
        if footer and self.data[-8:] != footer:
            raise ReaderError(
                path, f"truncated or damaged: the file ({n} bytes) does not end with the {footer.decode()!r} footer"
            )

    def need(self, off: int, size: int, what: str) -> None:
        if off < 0 or size < 0 or off + size > len(self.data):
            raise ReaderError(
                self.path,
                f"truncated or damaged: {what} at offset {off} ({size} bytes) lies past the end of the file "
                f"({len(self.data)} bytes)",
            )

    def unpack(self, fmt: str, off: int, what: str) -> tuple:
        self.need(off, struct.calcsize(fmt), what)
        return struct.unpack_from(fmt, self.data, off)

    def section(self, index: int, what: str) -> tuple[int, int]:
        """(size, pointer) of header section ``index`` (0-based), checked to lie inside the file."""
        size, ptr = self.unpack("<QQ", 0x10 + 16 * index, f"header entry of the {what} section")
        self.need(ptr, size, f"{what} section")
        return size, ptr

    def cstr(self, ptr: int, what: str, limit: int = MAX_ATTRIBUTE_TEXT) -> str | None:
        """A NUL-terminated UTF-8 string (None for a null pointer) of at most ``limit`` bytes; invalid bytes
        become U+FFFD."""
        if ptr == 0:
            return None
        self.need(ptr, 1, what)
        end = self.data.find(b"\0", ptr, ptr + limit + 1)
        if end < 0:
            if ptr + limit < len(self.data):
                raise ReaderError(self.path, f"{what} at offset {ptr} is longer than {limit} bytes (limit)")
            raise ReaderError(self.path, f"truncated or damaged: {what} at offset {ptr} has no terminating NUL")
        return self.data[ptr:end].decode("utf-8", errors="replace")

    def array(self, dtype: np.dtype, off: int, count: int, what: str) -> np.ndarray:
        self.need(off, dtype.itemsize * count, what)
        return np.frombuffer(self.data, dtype=dtype, count=count, offset=off)

    def records(self, fmt: str, ptr: int, count: int, stride: int, what: str, size: int = 0,
                layout: str = "v4.0") -> list[tuple]:
        """``count`` structures of layout ``fmt`` at ``ptr`` strided by the file's own ``stride``, which must be
        at least the structure's documented ``size`` (FORMATS.md's END row; default: the size of ``fmt``)."""
        size = max(size, struct.calcsize(fmt))
        if stride < size and count:
            raise ReaderError(self.path, f"{what}: recorded structure size {stride} is below the {size} bytes of "
                                         f"{layout}")
        self.need(ptr, stride * count, f"{what} array")
        return [struct.unpack_from(fmt, self.data, ptr + i * stride) for i in range(count)]


@dataclass
class Contexts:
    """The context tree in preorder (parents first), one list entry per entry point or context."""

    ctx_id: list[int] = field(default_factory=list)
    parent: list[int] = field(default_factory=list)  # index in these lists, -1 for an entry point
    kind: list[str] = field(default_factory=list)  # entry, function, loop, line, instruction
    relation: list[int] = field(default_factory=list)  # 0 lexical, 1 call, 2 inlined call; -1 entry point
    entry_kind: list[int] = field(default_factory=list)  # entryPoint enum for entry points, -1 otherwise
    name: list[str | None] = field(default_factory=list)  # pretty name of an entry point
    function: list[int] = field(default_factory=list)  # pointers into meta.db (0 = absent)
    file: list[int] = field(default_factory=list)
    line: list[int | None] = field(default_factory=list)
    module: list[int] = field(default_factory=list)
    offset: list[int | None] = field(default_factory=list)

    def add(self, ctx_id, parent, kind, relation, entry_kind=-1, name=None, function=0, file=0, line=None,
            module=0, offset=None) -> int:
        for col, v in zip(
            (self.ctx_id, self.parent, self.kind, self.relation, self.entry_kind, self.name, self.function,
             self.file, self.line, self.module, self.offset),
            (ctx_id, parent, kind, relation, entry_kind, name, function, file, line, module, offset),
        ):
            col.append(v)
        return len(self.ctx_id) - 1


@dataclass
class Meta:
    title: str | None
    description: str | None
    kinds: list[str]
    metrics: list[dict]  # {name, scopes: [{scope, type, index, prop_id}],
    #                       summaries: [{scope, type, index, formula, combine, stat_id}]}
    modules: dict[int, str]
    files: dict[int, str]
    functions: dict[int, tuple]  # pointer -> (name, module pointer, offset, file pointer, line)
    contexts: Contexts
    version: str
    file_flags: dict[int, int] = field(default_factory=dict)  # source file pointer -> flags (bit 0: copied)


def _strings(b: Blob, ptrs, what: str) -> list[str | None]:
    return [b.cstr(p, what) for p in ptrs]


def _metrics(b: Blob) -> tuple[list[dict], bool]:
    """The metric descriptions and whether the section has the 2022 pre-release layout."""
    _, sec = b.section(2, "performance metrics")
    p_metrics, n_metrics, sz_metric, sz_inst, sz_summary = b.unpack("<QIBBB", sec, "metrics section header")
    if (sz_metric, sz_inst, sz_summary) == PRE_METRIC_SIZES:
        return metrics_pre_2022(b, p_metrics, n_metrics, sz_metric, sz_inst, sz_summary), True
    descriptions = b.records("<QQQHH", p_metrics, n_metrics, sz_metric, "metric descriptions", 32)
    p_scopes, n_scopes, sz_scope = b.unpack("<QHB", sec + 0x10, "metrics section header")
    scopes = {}
    for i, (p_name, typ, index) in enumerate(b.records("<QBB", p_scopes, n_scopes, sz_scope, "propagation scopes",
                                                       16)):
        scopes[p_scopes + i * sz_scope] = {"scope": b.cstr(p_name, "scope name"), "type": typ, "index": index}

    def scope(ptr: int) -> dict:
        if ptr not in scopes:
            raise ReaderError(b.path, f"damaged: a metric refers to an unlisted propagation scope at offset {ptr}")
        return scopes[ptr]

    out = []
    for p_name, p_insts, p_sums, n_insts, n_sums in descriptions:
        insts = b.records("<QH", p_insts, n_insts, sz_inst, "propagated sub-metrics", 16)
        insts = [{**scope(ps), "prop_id": mid} for ps, mid in insts]
        sums = [
            {**scope(ps), "formula": b.cstr(pf, "summary formula"), "combine": comb, "stat_id": sid}
            for ps, pf, comb, sid in b.records("<QQBxH", p_sums, n_sums, sz_summary, "summary statistics", 24)
        ]
        out.append({"name": b.cstr(p_name, "metric name"), "scopes": insts, "summaries": sums})
    return out, False


def _table(b: Blob, index: int, what: str, fmt: str, size: int) -> tuple[int, int, list[tuple]]:
    _, sec = b.section(index, what)
    ptr, count, stride = b.unpack("<QIH", sec, f"{what} section header")
    return ptr, stride, b.records(fmt, ptr, count, stride, what, size)


def _context_tree(b: Blob, pre_2022: bool = False, functions: dict | None = None) -> Contexts:
    size, sec = b.section(3, "context tree")
    out = Contexts()
    limit = sec + size

    def check_array(ptr: int, nbytes: int, whose: str) -> None:
        if nbytes and (ptr < sec or ptr + nbytes > limit):
            raise ReaderError(
                b.path, f"damaged: children of {whose} at offset {ptr} ({nbytes} bytes) are outside the tree section"
            )

    stack = []  # (array start, array end, parent index)
    if pre_2022:  # {szRoots, pRoots}: the roots are ordinary contexts, 0x18 bytes + flex words, no propagation
        sz_roots, p_roots = b.unpack("<QQ", sec, "context tree section header")
        check_array(p_roots, sz_roots, "the global context")
        stack.append((p_roots, p_roots + sz_roots, -1))
        head, n_roots = 24, 0
    else:
        p_entries, n_entries, sz_entry = b.unpack("<QHB", sec, "context tree section header")
        entries = b.records("<QQIH2xQ", p_entries, n_entries, sz_entry, "entry points", 32)
        stack += reversed(entries)  # 5-tuples: each entry point is recorded when its turn comes (tree order)
        head, n_roots = 32, n_entries
    max_items = size // head + n_roots
    depth = []  # contexts from the entry point, per context (limits.MAX_CALL_DEPTH)
    data = b.data
    while stack:
        item = stack.pop()
        if len(item) == 5:  # an entry point: record it, then walk its children
            sz, ptr, ctx_id, kind, p_name = item
            me = out.add(ctx_id, -1, "entry", -1, entry_kind=kind, name=b.cstr(p_name, "entry point name"))
            depth.append(1)
            check_array(ptr, sz, f"entry point {ctx_id}")
            stack.append((ptr, ptr + sz, me))
            continue
        ptr, end, parent = item
        if ptr >= end:
            continue
        if end - ptr < head:
            raise ReaderError(b.path, f"damaged: context array ends inside a context at offset {ptr}")
        sz, p_children, ctx_id, flags, relation, lexical, n_flex = struct.unpack_from("<QQIBBBB", data, ptr)
        step = head + 8 * n_flex
        if ptr + step > end:
            raise ReaderError(b.path, f"damaged: context {ctx_id} at offset {ptr} ({step} bytes) runs past its array")
        words = struct.unpack_from(f"<{n_flex}Q", data, ptr + head)
        if pre_2022 and n_flex and not flags:  # an early 2022 writer left flags 0: the word count tells
            flags = pre_2022_flags(n_flex, lexical)
        w = 0
        fields = {}
        try:
            if flags & HAS_FUNCTION:
                fields["function"] = words[w]
                w += 1
            if flags & HAS_SRCLOC:
                fields["file"] = words[w]
                fields["line"] = words[w + 1] & 0xFFFFFFFF  # a u32 in the first half of its word
                w += 2
            if flags & HAS_POINT:
                fields["module"], fields["offset"] = words[w], words[w + 1]
                w += 2
        except IndexError:
            raise ReaderError(b.path, f"damaged: context {ctx_id} has flags {flags} but {n_flex} flex words") from None
        entry = pre_2022_entry(lexical, fields, functions or {}) if parent < 0 else None
        if entry:  # a pre-release root that hpcprof 4.0 writes as an entry point
            me = out.add(ctx_id, -1, "entry", -1, entry_kind=entry[0], name=entry[1])
            depth.append(1)
        else:
            kind = LEXICAL.get(lexical, f"lexical type {lexical}")
            me = out.add(ctx_id, parent, kind, relation, **fields)
            depth.append(depth[parent] + 1 if parent >= 0 else 1)
            if depth[-1] > MAX_CALL_DEPTH:
                raise ReaderError(b.path, f"a call path deeper than {MAX_CALL_DEPTH} contexts (limit), at context "
                                          f"{ctx_id}")
        if me >= MAX_NODES:
            raise ReaderError(b.path, f"more than {MAX_NODES} contexts in the context tree (limit)")
        if len(out.ctx_id) > max_items:
            raise ReaderError(b.path, "damaged: the context tree has more contexts than its section holds (a cycle?)")
        stack.append((ptr + step, end, parent))
        check_array(p_children, sz, f"context {ctx_id}")
        stack.append((p_children, p_children + sz, me))
    return out


def read_meta(path: str) -> Meta:
    b = Blob(path, b"meta")
    _, gen = b.section(0, "general properties")
    p_title, p_desc = b.unpack("<QQ", gen, "general properties")
    _, ids = b.section(1, "identifier names")
    pp_names, n_kinds = b.unpack("<QB", ids, "identifier names header")
    kind_ptrs = [r[0] for r in b.records("<Q", pp_names, n_kinds, 8, "identifier names")]
    p_mod, sz_mod, mods = _table(b, 5, "load modules", "<I4xQ", 16)
    modules = {p_mod + i * sz_mod: b.cstr(p, "module path", MAX_FRAME_TEXT) for i, (_, p) in enumerate(mods)}
    p_file, sz_file, fils = _table(b, 6, "source files", "<I4xQ", 16)
    files = {p_file + i * sz_file: b.cstr(p, "file path", MAX_FRAME_TEXT) for i, (_, p) in enumerate(fils)}
    file_flags = {p_file + i * sz_file: flags for i, (flags, _) in enumerate(fils)}
    p_fn, sz_fn, fns = _table(b, 7, "functions", "<QQQQI", 40)
    functions = {
        p_fn + i * sz_fn: (b.cstr(pn, "function name", MAX_FRAME_TEXT), pm, off, pf, line)
        for i, (pn, pm, off, pf, line) in enumerate(fns)
    }
    metrics, pre_2022 = _metrics(b)
    return Meta(
        title=b.cstr(p_title, "title"),
        description=b.cstr(p_desc, "description"),
        kinds=_strings(b, kind_ptrs, "identifier name"),
        metrics=metrics,
        modules=modules,
        files=files,
        functions=functions,
        contexts=_context_tree(b, pre_2022, functions),
        version=f"{b.major}.{b.minor}" + (f" ({PRE_2022})" if pre_2022 else ""),
        file_flags=file_flags,
    )


@dataclass
class Profiles:
    """Every value of profile.db as flat arrays (one entry per stored value), plus each profile's header."""

    infos: list[dict]  # {index, summary, id_tuple: [(kind, flags, logical, physical)]}
    profile: np.ndarray  # int32 profile index of each value
    ctx: np.ndarray  # uint32 ctxId
    metric: np.ndarray  # uint16 metric id (statMetricId in summary profiles, propMetricId otherwise)
    value: np.ndarray  # float64
    version: str


def _id_tuple(b: Blob, ptr: int, index: int) -> list[tuple]:
    if ptr == 0:
        return []
    (n,) = b.unpack("<H", ptr, f"identifier tuple of profile {index}")
    b.need(ptr + 8, 16 * n, f"identifier tuple of profile {index}")
    return [struct.unpack_from("<BxHIQ", b.data, ptr + 8 + 16 * i) for i in range(n)]


def read_profiles(path: str) -> Profiles:
    b = Blob(path, b"prof")
    _, sec = b.section(0, "profile infos")
    p_prof, n_prof, sz_prof = b.unpack("<QIB", sec, "profile infos header")
    pre_2022 = sz_prof == PRE_PROFILE_SIZE
    if pre_2022:  # no flags: the first profile is the summary
        records = [(*r, int(i == 0)) for i, r in enumerate(b.records("<QQI4xQQ", p_prof, n_prof, sz_prof,
                                                                         "profile infos"))]
    else:
        records = b.records("<QQI4xQQI", p_prof, n_prof, sz_prof, "profile infos", 48)
    infos, parts = [], []
    for i, (n_vals, p_vals, n_ctx, p_idx, p_tuple, flags) in enumerate(records):
        vals = b.array(_VALUE, p_vals, n_vals, f"values of profile {i}")
        idx = b.array(_CTX_INDEX, p_idx, n_ctx, f"context index of profile {i}")
        starts = idx["start"].astype(np.int64)
        if (n_ctx == 0 and n_vals) or n_ctx and (starts[0] != 0 or np.any(np.diff(starts) < 0) or starts[-1] > n_vals):
            raise ReaderError(path, f"damaged: context index of profile {i} does not partition its {n_vals} values")
        if n_ctx > 1 and np.any(np.diff(idx["ctx"].astype(np.int64)) <= 0):
            raise ReaderError(path, f"damaged: context ids of profile {i} are not sorted")
        counts = np.diff(np.append(starts, n_vals))
        infos.append({"index": i, "summary": bool(flags & 1), "values": n_vals, "id_tuple": _id_tuple(b, p_tuple, i)})
        parts.append((np.full(n_vals, i, np.int32), np.repeat(idx["ctx"], counts), vals["metric"], vals["value"]))
    if not infos:
        raise ReaderError(path, "damaged: no profiles (not even the summary profile)")
    cat = [np.concatenate([p[k] for p in parts]) if parts else np.empty(0) for k in range(4)]
    value = cat[3].astype(np.float64)
    if np.isinf(value).any():  # an infinity is no measurement (damaged file): NaN, stored as null
        value = np.where(np.isinf(value), np.nan, value)
    version = f"{b.major}.{b.minor}" + (f" ({PRE_2022})" if pre_2022 else "")
    return Profiles(infos, cat[0], cat[1].astype(np.uint32), cat[2].astype(np.uint16), value, version)
