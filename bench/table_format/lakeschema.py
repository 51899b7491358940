"""One schema for every table, in types both open table formats have.

Neither Delta Lake nor Iceberg has an unsigned 64-bit integer (Delta: byte, short, integer, long; Iceberg:
int, long): delta-rs maps uint64 to long and fails on the first id >= 2**63 ("Can't cast value
18446744073709551615 to type Int64"), pyiceberg fails with "argument out of range".  The call-path ids
(``node_id``, ``parent_id``, ``child_id``, perflake.identity) are therefore stored as int64.  Since ids are
63-bit (md5's first 8 bytes with the top bit cleared) the int64 value equals perflake's uint64 id; the
bit-preserving view below also keeps a full 64-bit id of an older lake (two's complement; back with
``.view(pa.uint64())``, in DuckDB ``(node_id::HUGEINT + CASE WHEN node_id < 0 THEN 18446744073709551616 ELSE 0
END)::UBIGINT``).
``run_id`` is a plain
string in every table (today metrics.run_id is dictionary<string>), and every data table gains ``batch``,
the commit that wrote the row: the data tables are appended before the runs table commits them, so a
reader joins on (run_id, batch) to see committed rows only (docs/table-format.md, "Protocol").
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from perflake.catalogs import schema as S

ID_COLUMNS = {"nodes": ("node_id", "parent_id"), "edges": ("parent_id", "child_id"), "metrics": ("node_id",)}


def _to_int64(col: pa.ChunkedArray) -> pa.ChunkedArray:
    return pa.chunked_array([c.view(pa.int64()) for c in col.chunks], pa.int64())


def conform(name: str, table: pa.Table) -> pa.Table:
    """A data table (nodes, edges, metrics) as normalize_many writes it -> the open-format schema."""
    for col in ID_COLUMNS[name]:
        i = table.schema.get_field_index(col)
        table = table.set_column(i, pa.field(col, pa.int64()), _to_int64(table.column(i)))
    i = table.schema.get_field_index("run_id")
    if pa.types.is_dictionary(table.schema.field(i).type):
        table = table.set_column(i, pa.field("run_id", pa.string()), table.column(i).cast(pa.string()))
    return table


def with_batch(table: pa.Table, batch: str) -> pa.Table:
    """The data rows of one commit, tagged with its batch id (after run_id)."""
    if "batch" in table.schema.names:
        table = table.drop_columns(["batch"])
    return table.add_column(1, pa.field("batch", pa.string()), pa.repeat(pa.scalar(batch, pa.string()),
                                                                          table.num_rows))


def drop_null_metric_columns(metrics: pa.Table) -> pa.Table:
    """Metric columns that are null in every row of this table (another format's metrics) are not stored."""
    keys = set(S.METRICS_KEY_SCHEMA.names) | {"batch"}
    drop = [f.name for f in metrics.schema if f.name not in keys and metrics.column(f.name).null_count == len(metrics)]
    return metrics.drop_columns(drop) if drop else metrics


def runs_table(rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=S.RUNS_SCHEMA)


def node_id_uint64(col) -> pa.Array:
    """The perflake call-path id back from the stored int64."""
    col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    return col.view(pa.uint64())


def same_rows(a: pa.Table, b: pa.Table, keys: list[str]) -> bool:
    """Equal as sets of rows (column order, row order and chunking ignored; columns compared by name)."""
    if set(a.schema.names) != set(b.schema.names) or a.num_rows != b.num_rows:
        return False
    names = sorted(a.schema.names)
    a, b = a.select(names), b.select(names)
    order = [(k, "ascending") for k in keys]
    a = a.take(pc.sort_indices(a, sort_keys=order))
    b = b.take(pc.sort_indices(b, sort_keys=order)).cast(a.schema)
    return a.equals(b)
