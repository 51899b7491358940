"""Byte encoders of the HPCToolkit v4 files (``meta.db``, ``profile.db``, ``cct.db``) for the v4 writer.

Layouts, field by field, from HPCToolkit's ``FORMATS.md`` (major version 4, the copy in
``shared/data/hpctoolkit-gamess``): little-endian, 16-byte common header ``HPCTOOLKIT`` + format id + version 4.0,
(size, pointer) pairs of the sections, an 8-byte footer; every structure at its documented alignment, every
string inside the section the spec puts it in (Hatchet's reader relies on that for the metrics and identifier
names).  ``layout="2022-pre"`` writes the earlier layout of an hpcprof pre-release of 2022 (HPCToolkit's
``src/lib/prof-lean/formats/metadb.[ch]``/``profiledb.[ch]`` of that year, also version 4.0): metric / scope /
summary records of 24 / 24 / 16 bytes, a ``{szRoots, pRoots}`` context tree of ordinary contexts (the entry
points are placeholder functions ``<program root>`` / ``<thread root>`` or an unknown function), contexts of
``0x18 + 8 * nFlexWords`` bytes without ``propagation``, profile infos of 40 bytes without ``flags``.
``cct.db`` has one layout.

The model arrives as a :class:`perflake.generators.hpctoolkit_v4.V4Plan`; values are integer microseconds,
written as seconds (``value / 1e6``).  No value of 0 is written (HPCToolkit stores none).
"""
from __future__ import annotations

import struct
from collections import deque

import numpy as np

ID_KINDS = ["SUMMARY", "NODE", "RANK", "THREAD", "GPUDEVICE", "GPUCONTEXT", "GPUSTREAM", "CORE"]
NODE, RANK, THREAD = 1, 2, 3
METRIC = "REALTIME (sec)"
# propMetricId (per-thread profiles, cct.db) and statMetricId (sum over threads, summary profile) per scope;
# the statMetricIds differ from the propMetricIds on purpose: a reader must key the summary by statMetricId
SCOPES = [("point", 1, 255, 0, 5), ("function", 3, 0, 1, 4), ("execution", 2, 255, 2, 3)]
PRE_SCOPES = ("point", "function", "execution")
_VAL = np.dtype([("m", "<u2"), ("v", "<f8")])  # profile.db {Val}: 10 bytes, packed
_CIDX = np.dtype([("c", "<u4"), ("s", "<u8")])  # profile.db {Idx}: 12 bytes
_PVAL = np.dtype([("p", "<u4"), ("v", "<f8")])  # cct.db {Val}: 12 bytes
_MIDX = np.dtype([("m", "<u2"), ("s", "<u8")])  # cct.db {Idx}: 10 bytes
_LEX = {"function": 0, "loop": 1, "line": 2, "instruction": 3}


class Buf:
    """A growing file image: appended pieces at chosen alignments, patched in place by offset."""

    def __init__(self, header: int):
        self.b = bytearray(header)

    def align(self, a: int) -> int:
        self.b += bytes(-len(self.b) % a)
        return len(self.b)

    def put(self, data: bytes, a: int = 1) -> int:
        off = self.align(a)
        self.b += data
        return off

    def cstr(self, text: str) -> int:
        return self.put(text.encode("utf-8") + b"\0")

    def set(self, fmt: str, off: int, *vals) -> None:
        struct.pack_into("<" + fmt, self.b, off, *vals)

    def finish(self, fmt: bytes, sections: list[tuple[int, int]], footer: bytes) -> bytes:
        self.b[:16] = b"HPCTOOLKIT" + fmt + bytes([4, 0])
        for i, (start, end) in enumerate(sections):
            self.set("QQ", 0x10 + 16 * i, end - start, start)
        self.b += footer
        return bytes(self.b)


def _strings(buf: Buf, texts) -> dict[str, int]:
    out: dict[str, int] = {}
    for t in texts:
        if t not in out:
            out[t] = buf.cstr(t)
    return out


def meta_db(plan, *, layout: str, title: str, description: str, file_paths: dict[str, tuple[str, int]]) -> bytes:
    """meta.db; ``file_paths``: original path -> (path as stored, flags) (bit 0: copied into the database)."""
    pre = layout == "2022-pre"
    buf = Buf(0x90)
    secs = []
    # General Properties
    start = buf.align(8)
    buf.put(bytes(16))
    buf.set("QQ", start, buf.cstr(title), buf.cstr(description))
    secs.append((start, len(buf.b)))
    # Identifier Names
    start = buf.align(8)
    buf.put(bytes(16))
    names = buf.put(bytes(8 * len(ID_KINDS)), 8)
    for i, k in enumerate(ID_KINDS):
        buf.set("Q", names + 8 * i, buf.cstr(k))
    buf.set("QB", start, names, len(ID_KINDS))
    secs.append((start, len(buf.b)))
    secs.append(_metrics_pre(buf) if pre else _metrics(buf))
    # Common String Table: modules, files, functions (and the entry points' pretty names)
    start = buf.align(8)
    fn_keys = list(dict.fromkeys(plan.functions()))
    if pre:
        fn_keys += [(n, None, 0, None, 0) for n in ("<program root>", "<thread root>")]
    s_mod = _strings(buf, plan.modules())
    s_file = _strings(buf, [file_paths[f][0] for f in plan.files()])
    s_fn = _strings(buf, [k[0] for k in fn_keys])
    s_entry = _strings(buf, [] if pre else [plan.name[i] for i in plan.entries()])
    secs.append((start, len(buf.b)))
    p_mod = _table(buf, secs, [struct.pack("<I4xQ", 0, s_mod[m]) for m in plan.modules()])
    p_file = _table(buf, secs, [struct.pack("<I4xQ", file_paths[f][1], s_file[file_paths[f][0]]) for f in plan.files()])
    mod_ptr = {m: p_mod + 16 * i for i, m in enumerate(plan.modules())}
    file_ptr = {f: p_file + 16 * i for i, f in enumerate(plan.files())}
    p_fn = _table(buf, secs, [struct.pack("<QQQQII", s_fn[n], mod_ptr.get(m, 0), off, file_ptr.get(f, 0), ln, 0)
                              for n, m, off, f, ln in fn_keys], size=40)
    fn_ptr = {k: p_fn + 40 * i for i, k in enumerate(fn_keys)}
    start = buf.align(8)
    _context_tree(buf, plan, pre, fn_ptr, mod_ptr, file_ptr, s_entry)
    sections = secs[:3] + [(start, len(buf.b))] + secs[3:]
    return buf.finish(b"meta", sections, b"_meta.db")


def _metrics(buf: Buf) -> tuple[int, int]:
    """The 4.0 Performance Metrics section: header, scopes, metric, its instantiations and summaries, strings."""
    start = buf.align(8)
    buf.put(bytes(0x20))
    p_scopes = buf.put(bytes(16 * len(SCOPES)), 8)
    p_metric = buf.put(bytes(32), 8)
    p_insts = buf.put(bytes(16 * len(SCOPES)), 8)
    p_sums = buf.put(bytes(24 * len(SCOPES)), 8)
    formula = buf.cstr("$$")
    buf.set("QQQHH", p_metric, buf.cstr(METRIC), p_insts, p_sums, len(SCOPES), len(SCOPES))
    for i, (name, typ, index, prop, stat) in enumerate(SCOPES):
        ps = p_scopes + 16 * i
        buf.set("QBB", ps, buf.cstr(name), typ, index)
        buf.set("QH", p_insts + 16 * i, ps, prop)
        buf.set("QQBxH", p_sums + 24 * i, ps, formula, 0, stat)
    buf.set("QIBBB", start, p_metric, 1, 32, 16, 24)
    buf.set("QHB", start + 0x10, p_scopes, len(SCOPES), 16)
    return start, len(buf.b)


def _metrics_pre(buf: Buf) -> tuple[int, int]:
    """The 2022 pre-release Performance Metrics section: {MD} 24, {PS} 24 (its name is the scope), {SS} 16."""
    ids = {name: (prop, stat) for name, _t, _i, prop, stat in SCOPES}
    start = buf.align(8)
    buf.put(bytes(0x10))
    p_metric = buf.put(bytes(24), 8)
    p_scopes = buf.put(bytes(24 * len(PRE_SCOPES)), 8)
    p_sums = buf.put(bytes(16 * len(PRE_SCOPES)), 8)
    formula = buf.cstr("$$")
    buf.set("QH6xQ", p_metric, buf.cstr(METRIC), len(PRE_SCOPES), p_scopes)
    for i, name in enumerate(PRE_SCOPES):
        prop, stat = ids[name]
        buf.set("QHH4xQ", p_scopes + 24 * i, buf.cstr(name), 1, prop, p_sums + 16 * i)
        buf.set("QBxH", p_sums + 16 * i, formula, 0, stat)
    buf.set("QIBBB", start, p_metric, 1, 24, 24, 16)
    return start, len(buf.b)


def _table(buf: Buf, secs: list, records: list[bytes], size: int = 16) -> int:
    """A Load Modules / Source Files / Functions section: {pArray, u32 n, u16 szRecord} + the records."""
    start = buf.align(8)
    buf.put(bytes(16))
    ptr = buf.put(b"".join(records), 8)
    buf.set("QIH", start, ptr, len(records), size)
    secs.append((start, len(buf.b)))
    return ptr


def _context_tree(buf: Buf, plan, pre: bool, fn_ptr, mod_ptr, file_ptr, s_entry) -> None:
    """Context Tree section: the entry points (4.0) or root contexts (2022-pre), then one child array per
    context with children, breadth first.  Elided contexts are not written; their children (none here) would
    move up.  ``propagation`` bit 0 (the function scope's propagationIndex) is set on lexical children."""
    kids = plan.children(written_only=True)
    start = len(buf.b)
    roots = plan.entries()
    if pre:
        buf.put(bytes(16))
    else:
        buf.put(bytes(11))
        p_entries = buf.put(bytes(32 * len(roots)), 8)
        buf.set("QHB", start, p_entries, len(roots), 32)

    def record(i: int) -> bytes:
        kind = plan.kind[i]
        words, flags = [], 0
        if kind == "entry":  # 2022-pre: a root context of its placeholder function (none: unknown entry)
            fn = {1: "<program root>", 2: "<thread root>"}.get(plan.entry_kind[i])
            if fn:
                words, flags = [fn_ptr[(fn, None, 0, None, 0)]], 1
            lex, rel = 0, 1
        else:
            lex, rel = _LEX[kind], int(plan.relation[i])
            if kind == "function" and plan.name[i] is not None:
                words, flags = [fn_ptr[plan.function_key(i)]], 1
            if kind in ("line", "loop"):
                words += [file_ptr[plan.file[i]], int(plan.line[i])]
                flags |= 2
            if kind in ("loop", "instruction"):
                words += [mod_ptr[plan.module[i]], int(plan.offset[i])]
                flags |= 4
        fixed = struct.pack("<QQIBBBB", 0, 0, int(plan.ctx_id[i]), flags, rel, lex, len(words))
        if not pre:
            fixed += struct.pack("<H6x", int(rel == 0))
        return fixed + struct.pack(f"<{len(words)}Q", *words)

    queue = deque([("roots", roots)] if pre else [(("entry", j), kids[r]) for j, r in enumerate(roots)])
    pos: dict[int, int] = {}  # context -> offset of its record
    while queue:
        owner, members = queue.popleft()
        recs = [record(i) for i in members]
        off = buf.put(b"".join(recs), 8) if recs else 0
        size = sum(map(len, recs))
        if owner == "roots":
            buf.set("QQ", start, size, off)
        elif isinstance(owner, tuple):
            r = roots[owner[1]]
            buf.set("QQIH2xQ", p_entries + 32 * owner[1], size, off, int(plan.ctx_id[r]), plan.entry_kind[r],
                    s_entry[plan.name[r]])
        elif recs:
            buf.set("QQ", pos[owner], size, off)
        for i, rec in zip(members, recs):
            pos[i] = off
            off += len(rec)
            queue.append((i, kids[i]))


def _id_tuple(rank: int, thread: int, ranks_per_node: int) -> bytes:
    node = rank // ranks_per_node
    host = 0x7F000101 + 977 * node
    return struct.pack("<H6xBxHIQBxHIQBxHIQ", 3, NODE, 1, node, host, RANK, 0, rank, rank, THREAD, 0, thread, thread)


def _block(ctx_ids: np.ndarray, vals: np.ndarray, metric_ids: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Profile-major sparse block of ``vals`` [contexts (sorted by ctxId), metrics (sorted by id)] in µs."""
    nz = vals != 0
    n_per = nz.sum(axis=1)
    keep = n_per > 0
    rows, cols = np.nonzero(nz)
    v = np.empty(rows.size, _VAL)
    v["m"] = np.asarray(metric_ids, np.uint16)[cols]
    v["v"] = vals[rows, cols] / 1e6
    idx = np.empty(int(keep.sum()), _CIDX)
    idx["c"] = ctx_ids[keep]
    idx["s"] = np.concatenate([[0], np.cumsum(n_per[keep])[:-1]]) if idx.size else []
    return v, idx


def profile_db(plan, *, layout: str, ranks_per_node: int) -> bytes:
    """profile.db: the summary profile (sums over all threads, statMetricIds) first, then one profile per
    (rank, thread) in ``plan.profile_order`` (propMetricIds); ctxId 0 holds each profile's execution total."""
    pre = layout == "2022-pre"
    sz = 40 if pre else 48
    point, function, execution = plan.scopes()
    order = np.argsort(plan.ctx_id, kind="stable")
    ids = np.r_[0, plan.ctx_id[order]].astype(np.uint32)
    total = execution[plan.entries()].sum(axis=0)
    n_prof = 1 + len(plan.profile_order)
    buf = Buf(0x30)
    p_infos = buf.put(bytes(16 + sz * n_prof), 8)
    p_prof = p_infos + 16
    buf.set("QIB", p_infos, p_prof, n_prof, sz)
    infos_end = len(buf.b)
    tuples_start = buf.align(8)
    p_tuple = []
    for col in plan.profile_order:
        rank, thread = plan.locations[col]
        p_tuple.append(buf.put(_id_tuple(rank, thread, ranks_per_node), 8))
    tuples_end = len(buf.b)
    for j in range(n_prof):
        if j == 0:  # summary: sum over every thread, columns in statMetricId order (execution 3, function 4, point 5)
            m = np.column_stack([execution.sum(1), function.sum(1), point.sum(1)])[order]
            m = np.vstack([[total.sum(), 0, 0], m])
            mids = [s[4] for s in (SCOPES[2], SCOPES[1], SCOPES[0])]
        else:
            c = plan.profile_order[j - 1]
            m = np.vstack([[0, 0, total[c]], np.column_stack([point[:, c], function[:, c], execution[:, c]])[order]])
            mids = [s[3] for s in SCOPES]
        vals, idx = _block(ids, m, mids)
        p_vals = buf.put(vals.tobytes(), 8)
        p_idx = buf.put(idx.tobytes(), 4)
        rec = struct.pack("<QQI4xQQ", vals.size, p_vals, idx.size, p_idx, 0 if j == 0 else p_tuple[j - 1])
        buf.b[p_prof + sz * j: p_prof + sz * j + len(rec)] = rec
        if not pre:
            buf.set("I", p_prof + sz * j + 0x28, int(j == 0))
    return buf.finish(b"prof", [(p_infos, infos_end), (tuples_start, tuples_end)], b"_prof.db")


def cct_db(plan) -> bytes:
    """cct.db: one context-major block per ctxId 0..max (empty ones too), values by propMetricId then profIndex;
    per-thread profiles only (the summary is not in cct.db)."""
    point, function, execution = plan.scopes()
    cols = np.asarray(plan.profile_order)
    n_ids = int(plan.ctx_id.max()) + 1
    cube = np.zeros((n_ids, 3, cols.size), np.int64)  # [ctxId, metric (propMetricId 0, 1, 2), profIndex - 1]
    for k, scope in enumerate((point, function, execution)):
        cube[plan.ctx_id, k] = scope[:, cols]
    cube[0, 2] = execution[plan.entries()].sum(axis=0)[cols]
    buf = Buf(0x20)
    start = buf.put(bytes(16 + 32 * n_ids), 8)
    p_ctxs = start + 16
    buf.set("QIB", start, p_ctxs, n_ids, 32)
    end = len(buf.b)
    prof_index = np.arange(1, cols.size + 1, dtype=np.uint32)
    infos = np.zeros(n_ids, np.dtype([("n", "<u8"), ("pv", "<u8"), ("nm", "<u2"), ("x", "<u2"), ("y", "<u4"),
                                      ("pm", "<u8")]))
    for cid in range(n_ids):
        block = cube[cid]
        nz = block != 0
        per_metric = nz.sum(axis=1)
        ms = np.flatnonzero(per_metric)
        v = np.empty(int(per_metric.sum()), _PVAL)
        mrow, pcol = np.nonzero(nz)
        v["p"], v["v"] = prof_index[pcol], block[mrow, pcol] / 1e6
        mi = np.empty(ms.size, _MIDX)
        mi["m"], mi["s"] = ms, np.concatenate([[0], np.cumsum(per_metric[ms])[:-1]]) if ms.size else []
        p_vals = buf.put(v.tobytes(), 4)
        p_mi = buf.put(mi.tobytes(), 2)
        infos[cid] = (v.size, p_vals, ms.size, 0, 0, p_mi)
    buf.b[p_ctxs:p_ctxs + 32 * n_ids] = infos.tobytes()
    return buf.finish(b"ctxt", [(start, end)], b"__ctx.db")
