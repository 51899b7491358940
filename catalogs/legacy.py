"""The lake layout before schema 5 (perflake's own commit protocol), read by the migrations only.

Up to schema 4 a lake kept one Parquet file per table per ingest batch: ``<table>/part-<batch>.parquet``, the
batch committed by renaming its ``runs/part-<batch>.parquet`` in last; the ingest log one file per invocation
(``ingest_log/part-<id>.parquet``).  Call-path ids were the full 64 bits of the md5 prefix (uint64); schema 5
keeps 63 of them (perflake.identity): ``old & ID_MASK`` is the new id of the same call path.
"""

from __future__ import annotations

import re

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

ID_MASK = 0x7FFF_FFFF_FFFF_FFFF
PART = re.compile(r"^part-(\d{8}T\d+-[0-9a-f]+)\.parquet$")  # a legacy file name (Delta's are part-00000-<uuid>...)


def path(cat, table: str, batch: str) -> str:
    return f"{cat.root}/{table}/part-{batch}.parquet"


def read(cat, file: str, columns: list[str] | None = None) -> pa.Table:
    """One Parquet file, read by Arrow alone (other filesystems' bytes copied into Arrow memory first)."""
    if cat.local:
        return pq.read_table(file, columns=columns)
    out = pa.BufferOutputStream()
    out.write(cat.fs.cat_file(file))
    return pq.read_table(pa.BufferReader(out.getvalue()), columns=columns)


def _parts(cat, table: str) -> list[str]:
    try:
        names = cat.fs.ls(f"{cat.root}/{table}", detail=False)
    except FileNotFoundError:
        return []
    return sorted(m.group(1) for n in names if (m := PART.match(n.rsplit("/", 1)[-1])))


def batches(cat) -> list[str]:
    """Committed batches (those with a runs file), oldest first."""
    return _parts(cat, "runs")


def having(cat, table: str, wanted) -> set[str]:
    return set(_parts(cat, table)) & set(wanted)


def log_files(cat) -> list[str]:
    return [path(cat, "ingest_log", p) for p in _parts(cat, "ingest_log")]


def write(cat, table: str, batch: str, data: pa.Table) -> None:
    """Write a legacy data file atomically (temporary name, then renamed): the 0003 migration's rank summaries."""
    import secrets

    target = path(cat, table, batch)
    tmp = f"{cat.root}/{table}/.part-{batch}.{secrets.token_hex(4)}.tmp"
    with cat.fs.open(tmp, "wb") as fh:
        pq.write_table(data, fh, compression="zstd")
    cat.fs.mv(tmp, target)


def new_ids(table: pa.Table, columns) -> pa.Table:
    """The legacy uint64 call-path ids of ``columns`` as schema 5's (top bit cleared)."""
    for col in columns:
        if col in table.schema.names:
            i = table.schema.get_field_index(col)
            masked = pc.bit_wise_and(table.column(i).cast(pa.uint64()), pa.scalar(ID_MASK, pa.uint64()))
            table = table.set_column(i, pa.field(col, pa.uint64()), masked)
    return table


def files_to_remove(cat, tables) -> list[str]:
    """Every legacy file (and temporary file) of ``tables``: removed once the lake is at schema 5."""
    out = []
    for table in tables:
        try:
            names = cat.fs.ls(f"{cat.root}/{table}", detail=False)
        except FileNotFoundError:
            continue
        for n in names:
            base = n.rsplit("/", 1)[-1]
            if PART.match(base) or (base.startswith(".part-") and base.endswith(".tmp")):
                out.append(n)
    return out
