"""Decoding of HPCToolkit 2021-2022 "sparse" databases: ``profile.db`` (big-endian) and experiment.xml's header.

This module only decodes and checks; :mod:`perflake.readers.hpctoolkit_sparse` builds ProfileRows.  Layout
(HPCToolkit's ``doc/FORMATS.md`` of that time, "profile.db version 4.0", and hpcprof2's writer
``src/lib/profile/sinks/sparsedb.cpp`` / ``src/lib/prof/pms-format.h``); every integer is big-endian, every
structure packed (no padding):

* header: ``magic "HPCPROF-profdb__"``, u8 major, u8 minor, u32 num_prof, u16 num_sec, u64 pi_size,
  u64 pi_ptr, u64 idt_size, u64 idt_ptr (56 bytes; hpcprof2 starts the profile infos at byte 128);
* profile info, 52 bytes each at ``pi_ptr + 52 * index``: u64 id tuple pointer, u64 metadata, u64 spare,
  u64 spare, u64 num_vals, u32 num_nzctxs, u64 offset of the value block; index 0 is the summary profile;
* hierarchical id tuple: u16 length, then per element either 18 bytes (u16 kind, u64 physical id, u64 logical
  id: the FORMATS.md table, 2021-2022) or 10 bytes (u16 kind, u64 index: ``pms-format.h``/``id-tuple.h`` of
  2020).  The width is not recorded anywhere: it is the one for which the tuples tile the id-tuple section
  exactly and every profile's pointer lands on a tuple (both widths agree only when every tuple is empty).
  The kind's top two bits are the id interpretation (``IDTUPLE_GET_INTERPRET``); the kind is ``& 0x3FFF``;
* value block: num_vals x (f64 value, u16 metric id), then (num_nzctxs + 1) x (u32 context id, u64 index of
  the context's first value); the last pair is the end marker ``0x656E6421`` with index num_vals;
* footer: the 8 bytes ``PROFDBft`` (written as a native u64 by hpcprof2, so ``tfBDFORP`` on x86).

Doubts (the spec is terse): the version bytes read ``1.0`` in ``pms-format.h`` and ``4.0`` in FORMATS.md (both
accepted, recorded); the ids of per-thread values are the ``MetricDB`` ids and those of the summary profile the
``PARTIAL`` ids of experiment.xml's MetricTable (hpcprof2's writer; the spec does not say).
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field

import numpy as np

from perflake.errors import ReaderError
from perflake.readers.base import shown
from perflake.readers.hpctoolkit_xml import safe_parser, stream
from perflake.readers.single_file import map_file

PROFDB_MAGIC = b"HPCPROF-profdb__"
CCTDB_MAGIC = b"HPCPROF-cctdb___"
PROFDB_FOOTERS = (b"PROFDBft", b"tfBDFORP")
END_MARKER = 0x656E6421
KIND_MASK = 0x3FFF
_HEADER = struct.Struct(">16sBBIHQQQQ")
_INFO = struct.Struct(">QQQQQIQ")  # 52 bytes
_VALUE = np.dtype([("value", ">f8"), ("metric", ">u2")])  # packed: 10 bytes
_CTX = np.dtype([("ctx", ">u4"), ("start", ">u8")])  # packed: 12 bytes
_ID_RE = re.compile(r"\$(\d+)")


@dataclass
class Profiles:
    """profile.db decoded: one entry per stored value (parallel arrays) and one info dict per profile."""

    version: str
    tuple_width: int
    infos: list[dict]  # index, summary, values, contexts, id_tuple [(kind, interpret, physical, logical)]
    profile: np.ndarray  # int64, profile index of each value
    ctx: np.ndarray  # int64
    metric: np.ndarray  # int64
    value: np.ndarray  # float64


def read_profiles(path: str) -> Profiles:
    """Decode ``profile.db``; a ReaderError naming it on a truncated or damaged file."""
    data = map_file(path)  # mapped: the values are decoded where they lie, nothing is read whole
    if data[:16] != PROFDB_MAGIC:
        raise ReaderError(path, f"not an HPCToolkit sparse profile.db: starts with {shown(data[:16])}, "
                                f"not {PROFDB_MAGIC!r}")
    if len(data) < _HEADER.size + 8 or data[-8:] not in PROFDB_FOOTERS:
        raise ReaderError(path, f"truncated or damaged: the file ({len(data)} bytes) does not end with the "
                                "'PROFDBft' footer")
    end = len(data) - 8
    _, major, minor, n_prof, _n_sec, pi_size, pi_ptr, idt_size, idt_ptr = _HEADER.unpack_from(data)
    if n_prof < 1 or pi_size < n_prof * _INFO.size or pi_ptr + n_prof * _INFO.size > end:
        raise ReaderError(path, f"damaged: {n_prof} profiles, profile info section of {pi_size} bytes at "
                                f"{pi_ptr} (file of {len(data)} bytes)")
    if idt_ptr + idt_size > end:
        raise ReaderError(path, f"damaged: id tuple section of {idt_size} bytes at {idt_ptr} lies past the end "
                                f"of the file ({len(data)} bytes)")
    raw = [_INFO.unpack_from(data, pi_ptr + _INFO.size * i) for i in range(n_prof)]
    width, tuples = _id_tuples(data, idt_ptr, idt_size, [r[0] for r in raw], path)
    infos, profile, ctx, metric, value = [], [], [], [], []
    for i, (p_tuple, _meta, _s1, _s2, n_vals, n_ctx, off) in enumerate(raw):
        block = n_vals * _VALUE.itemsize + (n_ctx + 1) * _CTX.itemsize
        if off + block > end:
            raise ReaderError(path, f"truncated or damaged: profile {i} has {n_vals} values and {n_ctx} contexts "
                                    f"at offset {off}, past the end of the file ({len(data)} bytes)")
        vals = np.frombuffer(data, _VALUE, n_vals, off)
        pairs = np.frombuffer(data, _CTX, n_ctx + 1, off + n_vals * _VALUE.itemsize)
        ids, starts = pairs["ctx"].astype(np.int64), pairs["start"].astype(np.int64)
        if (ids[-1] != END_MARKER or starts[-1] != n_vals or starts[0] != 0
                or (np.diff(starts) < 0).any() or (np.diff(ids[:-1]) <= 0).any()):
            raise ReaderError(path, f"damaged: the context index of profile {i} (at offset "
                                    f"{off + n_vals * _VALUE.itemsize}) is not sorted or has no end marker")
        summary = i == 0 or any(k == 0 for k, *_ in tuples[p_tuple])
        infos.append({"index": i, "summary": summary, "values": int(n_vals), "contexts": int(n_ctx),
                      "id_tuple": tuples[p_tuple]})
        profile.append(np.full(n_vals, i, np.int64))
        ctx.append(np.repeat(ids[:-1], np.diff(starts)))
        metric.append(vals["metric"].astype(np.int64))
        value.append(vals["value"].astype(np.float64))
    cat = lambda parts, t: np.concatenate(parts) if parts else np.zeros(0, t)  # noqa: E731
    return Profiles(f"{major}.{minor}", width, infos, cat(profile, np.int64), cat(ctx, np.int64),
                    cat(metric, np.int64), cat(value, np.float64))


def _id_tuples(data: bytes, ptr: int, size: int, wanted: list[int], path: str) -> tuple[int, dict]:
    """(element width, tuple pointer -> [(kind, interpret, physical, logical)]) of the id tuple section."""
    for width in (18, 10):
        starts, pos, stop = [], ptr, ptr + size
        while pos + 2 <= stop:
            (n,) = struct.unpack_from(">H", data, pos)
            starts.append(pos)
            pos += 2 + width * n
        if pos == stop and set(wanted) <= set(starts):
            break
    else:
        raise ReaderError(path, f"damaged: the id tuple section ({size} bytes at {ptr}) is not a sequence of "
                                "tuples holding every profile's tuple")
    out = {}
    for p in set(wanted):
        (n,) = struct.unpack_from(">H", data, p)
        elems = []
        for j in range(n):
            at = p + 2 + width * j
            if width == 18:
                raw, phys, logical = struct.unpack_from(">HQQ", data, at)
            else:
                raw, phys = struct.unpack_from(">HQ", data, at)
                logical = phys
            elems.append((raw & KIND_MASK, raw >> 14, phys, logical))
        out[p] = elems
    return width, out


def cct_db_status(path: str) -> str:
    """``"ok"`` when ``cct.db`` starts with its magic, ``"missing"``, or what is wrong.  Its values are not
    read (profile.db holds the same values; real cct.db blocks can be zero-filled)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(16)
    except FileNotFoundError:
        return "missing"
    except OSError as exc:
        return f"unreadable: {exc.strerror or exc}"
    return "ok" if head == CCTDB_MAGIC else f"does not start with {CCTDB_MAGIC!r}"


# -- experiment.xml: the header tables and the ids of every context element ---------------------------------


@dataclass
class Header:
    """What the reader needs from experiment.xml beyond the tree (which parse_experiment builds)."""

    version: str | None = None
    program: str | None = None
    id_names: dict = field(default_factory=dict)  # id kind -> name (IdentifierNameTable)
    metrics: dict = field(default_factory=dict)  # MetricTable id -> attributes, with "formulas": {t: frm}
    metric_dbs: list = field(default_factory=list)  # MetricDB attributes
    trace_dbs: list = field(default_factory=list)  # TraceDB attributes
    element_ids: set = field(default_factory=set)  # |i| of every element of the tree (C, PF, Pr, L, S)


def read_header(path: str) -> Header:
    """Stream experiment.xml once; entity declarations and external DTDs are refused (no expansion, no
    external access), as in :mod:`perflake.readers.hpctoolkit_xml`."""
    h, tags, metric = Header(), [], [None]

    def start(tag, attrs):
        parent = tags[-1] if tags else None
        if parent is None:
            if tag != "HPCToolkitExperiment":
                raise ReaderError(path, f"root element is <{tag[:40]}>, not <HPCToolkitExperiment>")
            h.version = attrs.get("version")
        elif tag == "Header":
            h.program = attrs.get("n")
        elif tag == "Identifier" and parent == "IdentifierNameTable":
            h.id_names[_int(path, attrs, "i", tag)] = attrs.get("n", "")
        elif tag == "Metric" and parent == "MetricTable":
            metric[0] = _int(path, attrs, "i", tag)
            h.metrics[metric[0]] = {**attrs, "formulas": {}}
        elif tag == "MetricFormula" and parent == "Metric" and metric[0] is not None:
            h.metrics[metric[0]]["formulas"][attrs.get("t", "")] = attrs.get("frm", "")
        elif tag == "MetricDB":
            h.metric_dbs.append({**attrs, "i": _int(path, attrs, "i", tag)})
        elif tag == "TraceDB":
            h.trace_dbs.append(dict(attrs))
        elif tag == "SecCallPathProfileData":
            p.StartElementHandler = tree_start
        tags.append(tag)

    def tree_start(tag, attrs):
        tags.append(tag)
        if "i" in attrs:
            h.element_ids.add(abs(_int(path, attrs, "i", tag)))

    def end(tag):
        tags.pop()
        if tag == "Metric":
            metric[0] = None
        elif tag == "SecCallPathProfileData":
            p.StartElementHandler = start

    p = safe_parser(path)
    p.StartElementHandler, p.EndElementHandler = start, end
    stream(path, p)
    return h


def _int(path: str, attrs: dict, key: str, tag: str) -> int:
    value = attrs.get(key)
    try:
        out = int(value)
    except (TypeError, ValueError):
        raise ReaderError(path, f"<{tag[:40]}> has {key}={shown(value)}, not an integer") from None
    if abs(out) >= 1 << 63:
        raise ReaderError(path, f"<{tag[:40]}> has {key}={shown(value)}, beyond 64 bits")
    return out


def formula_ids(formula: str) -> list[int]:
    """The metric ids a MetricTable formula refers to (``$256``), in order."""
    return [int(x) for x in _ID_RE.findall(formula or "") if len(x) < 19]
