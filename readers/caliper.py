"""Caliper native ``.cali`` files (one file is one run).

Format reference: ``shared/docs/formats.md`` section 4; the parsing is in :mod:`perflake.readers.cali_format`.

Tree.  The values of the *nested* attributes (``region``, ``function``, ``loop``, ``annotation``,
``mpi.function``, ``cupti.runtimeAPI``, ... and an attribute literally named ``path``) on a record's context
chain form its call path; each element is a frame whose ``name`` is the value and whose ``type`` is the
attribute name.  Frames are created in file order, so parents precede children.  GPU activity records get a
child frame (``kernel``: the ``cupti.kernel.name``; ``memcpy``) as in Hatchet's reader (4.7); a sampler record
gets a child ``function`` frame named by ``source.function#cali.sampler.pc`` with the file, line and module of
the sample (Hatchet replaces the last path element by that name instead).  A hidden nested attribute makes no
frame (caliper-reader leaves hidden attributes out of a record and its ``path``).  A 2016 stream (Caliper 1.x:
no ``globals`` record, no NESTED attribute; :mod:`perflake.readers.cali_legacy`) has its context tree as the
call path: the annotation attributes' nodes (``main``, ``iteration``, ...) become frames, where caliper-reader
gives no ``path`` and Hatchet drops every record.

Records.  As in Hatchet: a record without any nested attribute (time outside all regions) and a record of a
Spot channel other than ``regionprofile`` (time series) are not profile rows and are skipped.  Rows are per
rank when a record carries ``mpi.rank`` (else rank 0); thread is always 0 (no sample has thread data).  Rows
of one node and rank are summed by normalisation, as Hatchet sums them.

Metrics.  Every non-hidden int/uint/double value attribute is a float64 column named as Hatchet names it: its
``attribute.alias`` (``Min time/rank``, ``Total time``, ``Node order``, ``BlockSize``...), else
``sum#time.duration`` -> ``time`` and ``inclusive#sum#time.duration`` -> ``time (inc)``, else the attribute
name; one column per attribute name, however many node ids a stream gives it (several process streams in one
file).  Units come from ``attribute.unit`` (2016: ``time.unit``; ``*.ns`` attributes: ``nsec``); they are not
converted (B.21).
Roles (Hatchet calls everything without ``inclusive``/``(inc)`` in its name exclusive):

* inclusive: the name contains ``inclusive`` or ``(inc)``.  ``inclusive#X`` pairs with ``X`` (derived by
  normalisation when absent).  A statistic over ranks of an inclusive time (Spot's ``min/max/avg/sum#inclusive
  #...``: ``Min/Max/Avg time/rank``, ``Total time``) is inclusive with ``pair=None``: it is shown as the
  inclusive value it is, but nothing is derived from it and nothing sums it up the tree (B.19: Hatchet lists
  them as exclusive);
* exclusive: per-region sums (``sum#...``, ``scale#...``) and raw ``*.duration`` values; Spot's ``Total time
  (exc)`` (``sum#scale#sum#time.duration.ns``, in seconds) pairs with ``Total time``, nothing is derived;
* other: counts (``count``, ``*.count``), iteration numbers, ``min#``/``max#``/``avg#``/``any#`` statistics,
  anything else.  ``Node order`` (``min#min#aggregate.slot``) is not a column: as Hatchet orders children by it
  and drops it, the frames are laid out in it (siblings by Node order: readers/node_order.py).  Hatchet lists lulesh's
  ``min/max/avg#time.duration`` and ``count`` as exclusive.  Infinite values become NaN.

Run metadata = the ``globals`` records, typed by Caliper type (int/uint -> int, double -> float), then by Adiak
type (``set of ...`` and ``[a,b]`` values -> lists; a declared string stays a string, unlike Hatchet which
turns ``omp_version`` 4.5 into a float); ``launchdate`` is the epoch-seconds int the file holds.  A 2016
stream has no ``globals`` record: its run metadata are the process-scope and GLOBAL attributes its records
reference (``cali.caliper.version``).

Deviations from Hatchet (formats.md Appendix B): B.17 without Node order, sibling order is file order, as
Hatchet's in effect;
B.18 ancestors without records are nodes with NaN values (Hatchet gives them no row); B.19 Spot statistics are
inclusive; B.20 ``spot.channel`` and other strings are not columns; the frame type is the attribute name
(Hatchet: always ``function``).  Each frame's Hatchet ``nid`` (its native reader's numbering,
node_order.hatchet_numbers) is handed over as ``frame_numbers``: a GraphFrame read from the file shows it.
"""

from __future__ import annotations

import os
from array import array

import numpy as np
import pyarrow as pa

from perflake.errors import ReaderError
from perflake.readers.base import INT32_MAX, check_frames, line_number, shown
from perflake.readers.cali_format import NAME_ATTR, PROP_ATTR, TYPE_ATTR, CaliFile, globals_of, parse
from perflake.readers.cali_legacy import is_frame, is_legacy, record_globals
from perflake.readers.limits import MAX_CALL_DEPTH, MAX_FRAME_TEXT, MAX_NODES
from perflake.readers.node_order import NODE_ORDER_COLUMNS, hatchet_numbers, reorder
from perflake.readers.single_file import SingleFileReader, file_head
from perflake.vocabulary import EXCLUSIVE, FRAME_SCHEMA, INCLUSIVE, OTHER, Metric, ProfileRows

_RENAME = {
    "sum#time.duration": "time",
    "sum#avg#sum#time.duration": "time",
    "inclusive#sum#time.duration": "time (inc)",
    "sum#avg#inclusive#sum#time.duration": "time (inc)",
}
_SAMPLER_FN, _SAMPLER_LOC, _SAMPLER_MOD = ("source.function#cali.sampler.pc", "sourceloc#cali.sampler.pc",
                                           "module#cali.sampler.pc")
# attributes that steer the tree or the location rather than becoming columns
_EXTRAS = frozenset({"mpi.rank", "spot.channel", "cupti.activity.kind", "cupti.kernel.name",
                     _SAMPLER_FN, _SAMPLER_LOC, _SAMPLER_MOD})
_NO_EXTRAS: dict = {}


class _Tree:
    """Frames keyed by (parent, type, name, file, line, module); ids in creation order.  A frame beyond a limit
    (limits.py: deeper than MAX_CALL_DEPTH, more than MAX_NODES frames, a name or file longer than
    MAX_FRAME_TEXT bytes) is a ReaderError naming ``source``, raised when it would be made."""

    def __init__(self, source: str):
        self.source = source
        self.ids: dict[tuple, int] = {}
        self.keys: list[tuple] = []
        self.depth: list[int] = []
        self._grafted: dict[tuple[int, int], int] = {}

    def child(self, parent: int, type_: str, name: str, file=None, line=None, module=None) -> int:
        key = (parent, type_, name, file, line, module)
        fid = self.ids.get(key)
        if fid is None:
            depth = self.depth[parent] + 1 if parent >= 0 else 1
            if depth > MAX_CALL_DEPTH or len(self.keys) >= MAX_NODES:
                what = f"a call path deeper than {MAX_CALL_DEPTH} frames" if depth > MAX_CALL_DEPTH else \
                    f"more than {MAX_NODES} call-tree nodes"
                raise ReaderError(self.source, f"{what} (limit)")
            for text in (name, file, module):
                if text is not None and len(text) > MAX_FRAME_TEXT // 4:
                    n = len(text.encode("utf-8", "surrogatepass"))
                    if n > MAX_FRAME_TEXT:
                        raise ReaderError(self.source, f"a frame name or file of {n} bytes (limit {MAX_FRAME_TEXT}): "
                                                       f"{shown(text[:40])}")
            fid = self.ids[key] = len(self.keys)
            self.keys.append(key)
            self.depth.append(depth)
        return fid

    def graft(self, base: int, frame: int) -> int:
        """``frame``'s path re-created below ``base`` (a record referencing two nested chains); remembered, as
        records repeat the same pair of chains and a path can be thousands of frames long."""
        got = self._grafted.get((base, frame))
        if got is not None:
            return got
        key_in, path = (base, frame), []
        while frame >= 0:
            key = self.keys[frame]
            path.append(key[1:])
            frame = key[0]
        for key in reversed(path):
            base = self.child(base, *key)
        self._grafted[key_in] = base
        return base

    def prune(self, row_frame: list[int]) -> list[int]:
        """Drop frames no row lies at or below (a skipped Spot time-series record's: Hatchet has no such node)."""
        used = np.zeros(len(self.keys), dtype=bool)
        for frame in set(row_frame):
            while frame >= 0 and not used[frame]:
                used[frame], frame = True, self.keys[frame][0]
        if used.all():
            return row_frame
        new_id = np.cumsum(used) - 1
        self.depth = [d for d, u in zip(self.depth, used) if u]  # a kept frame's ancestors are kept
        self.keys = [(int(new_id[k[0]]) if k[0] >= 0 else -1, *k[1:]) for k, u in zip(self.keys, used) if u]
        self.ids, self._grafted = {k: i for i, k in enumerate(self.keys)}, {}
        return new_id[np.asarray(row_frame, dtype=np.int64)].tolist()

    def table(self) -> pa.Table:
        n = len(self.keys)
        cols = list(zip(*self.keys)) if n else [()] * 6
        return pa.table(
            {
                "local_id": pa.array(np.arange(n, dtype=np.int32)),
                "parent_local": pa.array(np.asarray(cols[0], dtype=np.int32)),
                "name": pa.array(cols[2], pa.string()),
                "type": pa.array(cols[1], pa.string()),
                "file": pa.array(cols[3], pa.string()),
                "line": pa.array(cols[4], pa.int64()),
                "end_line": pa.nulls(n, pa.int64()),
                "module": pa.array(cols[5], pa.string()),
            },
            schema=FRAME_SCHEMA,
        )


class _Signature:
    """What the attribute ids of one ``attr=`` list mean, and the rows that use that list."""

    __slots__ = ("attrs", "extras", "metric_pos", "cols", "rows", "numbers")

    def __init__(self, attrs, extras, metric_pos):
        self.attrs = attrs
        self.extras = extras  # ((position, extra name), ...)
        self.metric_pos = metric_pos  # positions of the metric attributes
        self.cols = None  # their metric columns, assigned by the first kept record
        self.rows = array("q")  # the rows of its kept records
        self.numbers = array("d")  # their metric values, row after row (parsed as each record is added)


class _Builder:
    """Walks the records of one file: frames, rows, metric values (grouped by attr= list)."""

    def __init__(self, cf: CaliFile):
        self.cf = cf
        self.legacy = is_legacy(cf)  # a 2016 stream: the context tree is the call path (cali_legacy)
        self.tree = _Tree(cf.path)
        self.context: dict[int, tuple[int, dict]] = {-1: (-1, _NO_EXTRAS)}  # node -> (frame, extras)
        self.signatures: dict[tuple, _Signature] = {}
        self.col_of: dict[str, int] = {}  # metric attribute name -> column
        self.metric_attrs: list = []
        self.row_frame: list[int] = []
        self.row_rank = array("i")

    def node(self, nid: int) -> tuple[int, dict]:
        """(frame, extras) of a context node: its nested ancestors as a frame path, its extra attributes."""
        got = self.context.get(nid)
        if got is not None:
            return got
        nodes, pending = self.cf.nodes, []
        while nid not in self.context:
            pending.append(nid)
            nid = nodes[nid][2]
        frame, extras = self.context[nid]
        for n in reversed(pending):
            aid, value, _ = nodes[n]
            if aid not in (NAME_ATTR, TYPE_ATTR, PROP_ATTR):
                attr = self.cf.attribute(aid)
                if (attr.is_nested or attr.name == "path") and not attr.is_hidden:
                    frame = self.tree.child(frame, attr.name, value)
                elif attr.name in _EXTRAS:
                    extras = {**extras, attr.name: value}
                elif self.legacy and is_frame(attr):
                    frame = self.tree.child(frame, attr.name, value)
            self.context[n] = (frame, extras)
        return frame, extras

    def _signature(self, attrs: tuple) -> _Signature:
        extras, metric_pos = [], []
        for pos, aid in enumerate(attrs):
            attr = self.cf.attribute(aid)
            if attr.name in _EXTRAS:
                extras.append((pos, attr.name))
            elif attr.is_value and attr.is_numeric and not attr.is_hidden:
                metric_pos.append(pos)
        sig = self.signatures[attrs] = _Signature(attrs, tuple(extras), metric_pos)
        return sig

    def add(self, lineno: int, refs: tuple, attrs: tuple, values: list) -> None:
        frame, extras = self.node(refs[0]) if len(refs) == 1 else (-1, _NO_EXTRAS)
        if len(refs) > 1:
            for ref in refs:
                f, e = self.node(ref)
                if f >= 0:
                    frame = f if frame < 0 else self.tree.graft(frame, f)
                if e:
                    extras = {**extras, **e}
        sig = self.signatures.get(attrs) or self._signature(attrs)
        if sig.extras:
            extras = {**extras, **{name: values[pos] for pos, name in sig.extras}}
        channel = extras.get("spot.channel")
        if frame < 0 or (channel is not None and channel != "regionprofile"):
            return
        rank = 0
        if extras:
            frame = self._leaf(frame, extras)
            rank = extras.get("mpi.rank", 0)
            if rank != 0:
                try:
                    rank = int(rank) if len(rank) < 20 else -1
                except ValueError:
                    raise self.cf.error(lineno, f"mpi.rank {shown(rank)} is not an integer") from None
                if not 0 <= rank <= INT32_MAX:
                    problem = f"mpi.rank {shown(extras['mpi.rank'])} is not a rank (0 to {INT32_MAX})"
                    raise self.cf.error(lineno, problem)
        if sig.cols is None:
            sig.cols = [self._column(attrs[pos]) for pos in sig.metric_pos]
        if sig.cols:
            try:
                sig.numbers.extend([float(values[pos]) for pos in sig.metric_pos])
            except ValueError:
                pos = next(p for p in sig.metric_pos if not _is_number(values[p]))
                name = self.cf.attribute(attrs[pos]).name
                raise self.cf.error(lineno, f"value {shown(values[pos])} of {name[:80]} is not a number") from None
        sig.rows.append(len(self.row_frame))
        self.row_frame.append(frame)
        self.row_rank.append(rank)

    def _column(self, aid: int) -> int:
        """The column of a metric attribute: one per name (a stream that re-defines an attribute, or several
        process streams in one file, may define one name under several ids; caliper-reader keys by name)."""
        attr = self.cf.attribute(aid)
        col = self.col_of.get(attr.name)
        if col is None:
            col = self.col_of[attr.name] = len(self.metric_attrs)
            self.metric_attrs.append(attr)
        return col

    def _leaf(self, frame: int, extras: dict) -> int:
        kind = extras.get("cupti.activity.kind")
        if kind == "kernel" and "cupti.kernel.name" in extras:
            frame = self.tree.child(frame, "kernel", extras["cupti.kernel.name"])
        elif kind == "memcpy":
            frame = self.tree.child(frame, "memcpy", "memcpy")
        if _SAMPLER_FN in extras:
            file, _, line = extras.get(_SAMPLER_LOC, "").rpartition(":")
            line_no = line_number(line)
            frame = self.tree.child(frame, "function", extras[_SAMPLER_FN], file or None, line_no,
                                    extras.get(_SAMPLER_MOD))
        return frame

    def matrix(self) -> np.ndarray:
        """rows x metric columns, float64, NaN where a record has no value."""
        out = np.full((len(self.row_frame), len(self.metric_attrs)), np.nan)
        for sig in self.signatures.values():
            if not sig.rows or not sig.cols:
                continue
            numbers = np.frombuffer(sig.numbers, np.float64).reshape(len(sig.rows), len(sig.cols))
            out[np.frombuffer(sig.rows, np.int64)[:, None], np.asarray(sig.cols)[None, :]] = numbers
            sig.numbers = sig.rows = None  # done with: memory for the next signature
        out[np.isinf(out)] = np.nan
        return out


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _metric_name(attr) -> str:
    return attr.meta.get("attribute.alias") or _RENAME.get(attr.name, attr.name)


def _role(native: str, name: str) -> str:
    ops = native.split("#")
    base = ops[-1]
    if "inclusive" in native or "(inc)" in name:
        return INCLUSIVE
    if base == "count" or base.endswith((".count", "aggregate.slot")) or "iteration" in base:
        return OTHER
    if ops[0] in ("sum", "scale") and len(ops) > 1:
        return EXCLUSIVE
    if len(ops) == 1 and ".duration" in base and not base.startswith("timeseries."):
        return EXCLUSIVE
    return OTHER


def _metrics(attrs: list) -> list[Metric]:
    """Names (unique), roles, units and pairs of the metric attributes (see the module docstring)."""
    names: list[str] = []
    for attr in attrs:
        name = _metric_name(attr)
        if name in names:
            name = attr.name if attr.name not in names else f"{attr.name} ({attr.id})"
        names.append(name)
    roles = [_role(attr.name, name) for attr, name in zip(attrs, names)]
    exclusive = {attr.name: name for attr, name, role in zip(attrs, names, roles) if role == EXCLUSIVE}
    inclusive_of = {attr.name.replace("inclusive#", "", 1): name for attr, name, role in zip(attrs, names, roles)
                    if role == INCLUSIVE and "inclusive#" in attr.name}
    out = []
    for attr, name, role in zip(attrs, names, roles):
        unit = _unit(attr)
        pair = None
        if role == EXCLUSIVE:  # Spot: sum#scale#sum#time.duration.ns (scaled to sec) ~ sum#sum#time.duration
            unscaled = attr.name.replace("scale#", "", 1).removesuffix(".ns") if "scale#" in attr.name else None
            pair = inclusive_of.get(attr.name) or inclusive_of.get(unscaled)
            pair = pair if pair is None or _unit(attr) == _unit(attrs[names.index(pair)]) else None
        elif role == INCLUSIVE and "inclusive#" in attr.name:
            # inclusive#X pairs with X (derived when absent); a statistic of one (min#inclusive#...) with none
            stripped = attr.name.replace("inclusive#", "", 1)
            pair = exclusive.get(stripped)
            if pair is None and attr.name.startswith("inclusive#"):
                pair = _RENAME.get(stripped, stripped)
        out.append(Metric(name, role, unit, pair))
    return out


def _unit(attr) -> str | None:  # attribute.unit; time.unit in 2016 streams (cali_legacy); *.ns count ns
    return (attr.meta.get("attribute.unit") or attr.meta.get("time.unit")
            or ("nsec" if attr.name.endswith(".ns") else None))


class Reader(SingleFileReader):
    kind = "caliper"
    version = "1"

    @staticmethod
    def sniff(path: str) -> bool:
        return file_head(path, 6) == b"__rec="

    def read(self, path: str) -> ProfileRows:
        path = os.fspath(path)
        if os.path.isdir(path):
            raise ReaderError(path, "a Caliper .cali profile is a file, not a directory")
        cf = parse(path)
        b = _Builder(cf)
        for record in cf.records:
            try:
                b.add(*record)
            except ReaderError as exc:  # a problem found while resolving the record's nodes: name its line
                raise cf.at_line(record[0], exc) from None
        if not b.row_frame:
            raise ReaderError(path, f"none of the {len(cf.records)} ctx records lies inside a region")
        metrics = _metrics(b.metric_attrs)
        matrix = b.matrix()
        b.row_frame = b.tree.prune(b.row_frame)
        frames, row_frame = b.tree.table(), np.asarray(b.row_frame, dtype=np.int32)
        numbers = hatchet_numbers(frames.column("parent_local").to_numpy(), b.row_frame)
        order = next((i for i, (m, a) in enumerate(zip(metrics, b.metric_attrs))
                      if m.name in NODE_ORDER_COLUMNS or a.name in NODE_ORDER_COLUMNS), None)
        if order is not None:  # Caliper's Node order: the frames are laid out in it, the column is dropped
            frames, row_frame, numbers = reorder(frames, row_frame, matrix[:, order], numbers)
            metrics = metrics[:order] + metrics[order + 1:]
            matrix = np.delete(matrix, order, axis=1)
        values = {
            "local_id": pa.array(row_frame),
            "rank": pa.array(np.asarray(b.row_rank, dtype=np.int32)),
            "thread": pa.array(np.zeros(len(b.row_frame), dtype=np.int32)),
        }
        for i, m in enumerate(metrics):
            values[m.name] = pa.array(matrix[:, i])
        metadata = record_globals(cf, _EXTRAS) if b.legacy else globals_of(cf)
        return ProfileRows(
            format=self.kind,
            source=path,
            frames=check_frames(path, frames),
            values=pa.table(values),
            metrics=metrics,
            metadata=metadata,
            reader_version=self.version,
            frame_numbers=numbers,
        )
