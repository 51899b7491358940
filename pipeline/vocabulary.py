"""The words readers and frames share: metric roles, :class:`Metric`, the frame columns, :class:`ProfileRows`.

Readers produce these (``perflake.readers``, whose contract is :mod:`perflake.readers.base`); normalisation, the
GraphFrame's tables, the operations and interop consume them.  Only pyarrow is imported here, so a reader that
imports this module loads no lake, DuckDB or pandas.

Columns of ``ProfileRows.frames`` (:data:`FRAME_SCHEMA`; one row per node of the input's call tree, parents
before children):

============  =========  ==========================================================
local_id      int32      0..n-1, position in the list
parent_local  int32      local id of the parent, -1 for a root
name          string     frame name (never null)
type          string     frame kind: ``function``, ``loop``, ``statement``, ...
file          string     source file, null when unknown
line          int64      first line, null when unknown
end_line      int64      last line, null when unknown
module        string     load module / library, null when unknown
============  =========  ==========================================================

Columns of ``ProfileRows.values`` (one row per node and location that has a measurement):
``local_id`` int32, ``rank`` int32, ``thread`` int32 (:data:`LOCATION_COLUMNS`), then one float64 column per
metric in ``ProfileRows.metrics`` order.  Absent measurements are absent rows, null or NaN; normalisation stores
them as null (never 0), so that merging identical sibling frames sums only measured values.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

FRAME_SCHEMA = pa.schema(
    [
        ("local_id", pa.int32()),
        ("parent_local", pa.int32()),
        ("name", pa.string()),
        ("type", pa.string()),
        ("file", pa.string()),
        ("line", pa.int64()),
        ("end_line", pa.int64()),
        ("module", pa.string()),
    ]
)
FRAME_ATTRS = ("name", "type", "file", "line", "end_line", "module")
LOCATION_COLUMNS = ("rank", "thread")

# metric roles
EXCLUSIVE = "exclusive"
INCLUSIVE = "inclusive"
OTHER = "other"  # counts, statistics: neither summed up the tree nor derived


@dataclass(frozen=True)
class Metric:
    """A metric column: its Hatchet-style name, its role and its unit (None when the format does not say).

    ``pair`` names the exclusive/inclusive counterpart (``time`` <-> ``time (inc)``) when there is one.
    """

    name: str
    role: str
    unit: str | None = None
    pair: str | None = None


@dataclass
class ProfileRows:
    """What a reader returns for one run."""

    format: str
    source: str
    frames: pa.Table
    values: pa.Table
    metrics: list[Metric]
    metadata: dict = field(default_factory=dict)
    reader_version: str = "1"
    # optional: per frame (by local id), the number the format's Hatchet reader gives its node -- Hatchet's
    # ``nid`` column (Caliper's readers); a GraphFrame read straight from the file shows it, a lake does not
    frame_numbers: object = None

    def metric(self, name: str) -> Metric:
        for m in self.metrics:
            if m.name == name:
                return m
        raise KeyError(name)
