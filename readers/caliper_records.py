"""A ``caliperreader.CaliperReader`` object that has read a ``.cali`` file, as ProfileRows (Hatchet's
``from_caliperreader(reader)``).

caliper-reader hands over the file's contents already expanded: one dict per snapshot record, and the run's
``globals``.  The rules are those of the ``.cali`` reader (:mod:`perflake.readers.caliper`): the call path is the
record's ``path`` (the values of its nested attributes, root first); each element is a frame whose type is its
nested attribute's name, found by matching the path against the record's nested attributes in order (the record
keeps each attribute's values root first; when two nested attributes hold the same value at the same depth, the
one that appears first in the record is taken); GPU activity and sampler records get their child frame;
``mpi.rank`` is the rank; records outside every region or of a Spot channel other than ``regionprofile`` are
skipped; numeric value attributes are the metrics, named, typed and paired as by the ``.cali`` reader; ``Node
order`` lays out the frames (:mod:`perflake.readers.node_order`).  caliper-reader gives a 2016 stream no ``path``:
such an object is refused (read the file by its path instead).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from perflake.errors import ReaderError
from perflake.readers.base import INT32_MAX, ProfileRows, check_frames, line_number, shown
from perflake.readers.cali_format import NESTED, Attribute, typed
from perflake.readers.caliper import _EXTRAS, _SAMPLER_FN, _SAMPLER_LOC, _SAMPLER_MOD, _metrics, _Tree
from perflake.readers.node_order import NODE_ORDER_COLUMNS, hatchet_numbers, reorder

SOURCE = "<caliperreader.CaliperReader>"
_META = ("attribute.alias", "attribute.unit", "time.unit", "adiak.type")


def is_caliper_reader(obj) -> bool:
    """True for an object shaped as caliper-reader's CaliperReader (records, globals, attribute())."""
    return all(hasattr(obj, a) for a in ("records", "globals", "attribute", "attributes"))


class _Attributes:
    """caliper-reader's attributes as the .cali reader's Attribute objects (name, type, properties, metadata)."""

    def __init__(self, cr):
        self.cr = cr
        self.by_name: dict[str, Attribute | None] = {}

    def __call__(self, name: str) -> Attribute | None:
        if name not in self.by_name:
            try:
                a = self.cr.attribute(name)
            except KeyError:
                self.by_name[name] = None
                return None
            meta = {k: a.get(k) for k in _META if a.get(k) is not None}
            self.by_name[name] = Attribute(len(self.by_name), name, a.attribute_type() or "", a.prop, meta)
        return self.by_name[name]


def _as_list(value) -> list:
    return value if isinstance(value, list) else [value]


def _path_types(record: dict, path: list, attr) -> list[str]:
    """The nested attribute of each element of ``path`` (the record's nested values, matched in order)."""
    queues = [(name, _as_list(v)) for name, v in record.items()
              if name != "path" and (a := attr(name)) is not None and a.prop & NESTED]
    pos = {name: 0 for name, _ in queues}
    out = []
    for value in path:
        for name, values in queues:
            if pos[name] < len(values) and values[pos[name]] == value:
                pos[name] += 1
                out.append(name)
                break
        else:
            out.append("path")  # not found among the record's nested attributes (a caliper-reader oddity)
    return out


def read_caliper_reader(cr) -> ProfileRows:
    """ProfileRows of the records a CaliperReader object holds."""
    attr = _Attributes(cr)
    tree = _Tree(SOURCE)
    frames_of: dict[tuple, int] = {}
    row_frame, row_rank, row_values = [], [], []
    metric_names: list[str] = []
    for n, record in enumerate(cr.records):
        path = record.get("path")
        if path is None:
            continue
        path = _as_list(path)
        channel = record.get("spot.channel")
        if channel is not None and channel != "regionprofile":
            continue
        key = tuple(path), tuple(sorted(k for k in record if attr(k) is not None and attr(k).prop & NESTED))
        frame = frames_of.get(key)
        if frame is None:
            frame = -1
            for value, kind in zip(path, _path_types(record, path, attr)):
                frame = tree.child(frame, kind, str(value))
            frames_of[key] = frame
        frame = _leaf(tree, frame, record)
        rank = record.get("mpi.rank", 0)
        try:
            rank = int(rank)
        except (TypeError, ValueError):
            raise ReaderError(SOURCE, f"record {n}: mpi.rank {shown(rank)} is not an integer") from None
        if not 0 <= rank <= INT32_MAX:
            raise ReaderError(SOURCE, f"record {n}: mpi.rank {shown(rank)} is not a rank (0 to {INT32_MAX})")
        values = {}
        for name, value in record.items():
            a = attr(name)
            if a is None or name in _EXTRAS or not a.is_value or not a.is_numeric or a.is_hidden:
                continue
            try:
                values[name] = float(value)
            except (TypeError, ValueError):
                raise ReaderError(SOURCE, f"record {n}: value {shown(value)} of {name[:80]} is not a number") from None
            if name not in metric_names:
                metric_names.append(name)
        row_frame.append(frame)
        row_rank.append(rank)
        row_values.append(values)
    if not row_frame:
        raise ReaderError(SOURCE, f"none of the {len(cr.records)} records has a call path inside a region (a 2016 "
                                  "stream has none in caliper-reader: read the file by its path)")
    attrs = [attr(name) for name in metric_names]
    metrics = _metrics(attrs)
    matrix = np.array([[v.get(name, np.nan) for name in metric_names] for v in row_values], dtype=np.float64)
    matrix = matrix.reshape(len(row_values), len(metric_names))
    matrix[np.isinf(matrix)] = np.nan
    frames, local = tree.table(), np.asarray(row_frame, dtype=np.int32)
    numbers = hatchet_numbers(frames.column("parent_local").to_numpy(), row_frame)
    order = next((i for i, (m, a) in enumerate(zip(metrics, attrs))
                  if m.name in NODE_ORDER_COLUMNS or a.name in NODE_ORDER_COLUMNS), None)
    if order is not None:
        frames, local, numbers = reorder(frames, local, matrix[:, order], numbers)
        metrics = metrics[:order] + metrics[order + 1:]
        matrix = np.delete(matrix, order, axis=1)
    values = {"local_id": pa.array(local), "rank": pa.array(np.asarray(row_rank, dtype=np.int32)),
              "thread": pa.array(np.zeros(len(row_frame), dtype=np.int32))}
    for i, m in enumerate(metrics):
        values[m.name] = pa.array(matrix[:, i])
    return ProfileRows(format="caliper", source=SOURCE, frames=check_frames(SOURCE, frames), values=pa.table(values),
                       metrics=metrics, metadata=_globals(cr.globals, attr), reader_version="1",
                       frame_numbers=numbers)


def _leaf(tree: _Tree, frame: int, record: dict) -> int:
    """The GPU activity or sampler child frame of a record (as the .cali reader adds it)."""
    kind = record.get("cupti.activity.kind")
    if kind == "kernel" and "cupti.kernel.name" in record:
        frame = tree.child(frame, "kernel", str(record["cupti.kernel.name"]))
    elif kind == "memcpy":
        frame = tree.child(frame, "memcpy", "memcpy")
    if _SAMPLER_FN in record:
        file, _, line = str(record.get(_SAMPLER_LOC, "")).rpartition(":")
        frame = tree.child(frame, "function", str(record[_SAMPLER_FN]), file or None, line_number(line),
                           record.get(_SAMPLER_MOD))
    return frame


def _globals(raw: dict, attr) -> dict:
    out = {}
    for name, value in raw.items():
        a = attr(name)
        if a is not None and a.is_hidden:
            continue
        if a is None:
            out[name] = value
        elif isinstance(value, list):
            out[name] = [typed(a, str(v)) for v in value]
        else:
            out[name] = typed(a, str(value))
    return out
