"""A perflake lake as five Delta tables (delta-rs, the ``deltalake`` package), for the measurements only.

``<root>/{runs,nodes,edges,metrics,ingest_log}/`` are Delta tables (``_delta_log/`` + Parquet files).  The
primitives the commit protocol (``protocol.py``) needs:

* ``append``: a blind append (delta-rs retries a commit that lost the race to a concurrent one, after its
  conflict checker: appends never conflict with appends); new metric columns merge into the schema
  (``schema_mode="merge"``: nullable, NULL in older files).
* ``runs_head`` / ``append_runs_cas``: the commit point.  The runs table is loaded at version v, the content
  hashes of v are checked, and the append is committed as version v+1 or not at all
  (``CommitProperties(max_commit_retries=0)``: a concurrent commit makes it fail with CommitFailedError
  instead of being retried on top of the new version).  A compare-and-swap on the table version.
"""

from __future__ import annotations

import datetime as dt
import os
import time

import pyarrow as pa
from deltalake import (
    ColumnProperties,
    CommitProperties,
    DeltaTable,
    PostCommitHookProperties,
    WriterProperties,
    write_deltalake,
)
from deltalake.exceptions import CommitFailedError, TableNotFoundError

TABLES = ("runs", "nodes", "edges", "metrics", "ingest_log")


def writer_properties(schema: pa.Schema) -> WriterProperties:
    """perflake's Parquet choices (catalogs/catalog.py): zstd, 128k-row groups, dictionary pages for strings
    only, BYTE_STREAM_SPLIT for floating-point columns."""
    cols = {}
    for f in schema:
        if pa.types.is_floating(f.type):
            cols[f.name] = ColumnProperties(dictionary_enabled=False, encoding="BYTE_STREAM_SPLIT")
        elif pa.types.is_integer(f.type):
            cols[f.name] = ColumnProperties(dictionary_enabled=False)
    return WriterProperties(compression="ZSTD", max_row_group_size=131_072, column_properties=cols)


class DeltaStore:
    name = "delta"

    def __init__(self, root: str, storage_options: dict | None = None, *, tuned: bool = True,
                 checkpoint: bool = True):
        self.root = root.rstrip("/")
        self.opts = storage_options
        self.tuned = tuned  # perflake's encodings (writer_properties) rather than delta-rs' defaults
        self.hooks = PostCommitHookProperties(create_checkpoint=checkpoint, cleanup_expired_logs=False)
        self._tables: dict[str, DeltaTable] = {}
        self._seen_runs_files: set[str] = set()
        self._present: dict[str, str] = {}
        self.retries: dict[str, int] = {}  # commits retried here after CommitFailedError, by table

    def uri(self, table: str) -> str:
        return f"{self.root}/{table}"

    # -- tables ----------------------------------------------------------------------------------------
    def create(self, schemas: dict[str, pa.Schema]) -> None:
        for name, schema in schemas.items():
            DeltaTable.create(self.uri(name), schema, mode="ignore", storage_options=self.opts,
                              configuration={"delta.checkpointInterval": "100"})

    def table(self, name: str, *, fresh: bool = True) -> DeltaTable:
        t = self._tables.get(name)
        if t is None:
            t = self._tables[name] = DeltaTable(self.uri(name), storage_options=self.opts)
        elif fresh:
            t.update_incremental()
        return t

    def append(self, name: str, data: pa.Table) -> None:
        """A blind append.  delta-rs retries it over concurrent appends by itself, but not over a concurrent
        metadata change (another writer's new metric column: "Metadata changed since last commit"): that
        one is retried here, on the reloaded table."""
        props = writer_properties(data.schema) if self.tuned else None
        for attempt in range(50):
            t = self.table(name, fresh=attempt > 0)  # a stale snapshot only costs a retry
            try:
                write_deltalake(t, data, mode="append", schema_mode="merge", writer_properties=props,
                                post_commithook_properties=self.hooks)
                return
            except CommitFailedError:
                self.retries[name] = self.retries.get(name, 0) + 1
                time.sleep(0.005 * (attempt + 1))
        raise RuntimeError(f"{name}: no commit after 50 attempts")

    # -- the commit point ----------------------------------------------------------------------------------
    def runs_head(self):
        """(the runs table at its latest version, content hash -> run id of that version)."""
        t = self.table("runs")
        files = set(t.file_uris())
        new = sorted(files - self._seen_runs_files)
        if new:
            got = _read_files(new, ["content_sha256", "run_id"], self.opts)
            self._present.update(zip(got.column("content_sha256").to_pylist(), got.column("run_id").to_pylist()))
            self._seen_runs_files |= set(new)
        if self._seen_runs_files - files:  # compaction rewrote files: start again
            self._seen_runs_files, self._present = set(), {}
            return self.runs_head()
        return t, dict(self._present)

    def append_runs_cas(self, head: DeltaTable, rows: pa.Table) -> bool:
        try:
            write_deltalake(head, rows, mode="append", schema_mode="merge",
                            writer_properties=writer_properties(rows.schema) if self.tuned else None,
                            commit_properties=CommitProperties(max_commit_retries=0),
                            post_commithook_properties=self.hooks)
            return True
        except CommitFailedError:
            return False

    def delete_batch(self, name: str, batch: str, run_ids: list[str] | None = None) -> None:
        pred = f"batch = '{batch}'"  # batch ids are [0-9T-a-f] only (protocol.new_batch_id)
        if run_ids:
            pred += " AND run_id IN (" + ", ".join(f"'{r}'" for r in run_ids) + ")"
        for attempt in range(50):
            try:
                self.table(name).delete(pred, post_commithook_properties=self.hooks)
                return
            except CommitFailedError:  # a concurrent append may have added rows the predicate could match
                self.retries[f"{name}-delete"] = self.retries.get(f"{name}-delete", 0) + 1
                time.sleep(0.005 * (attempt + 1))
        raise RuntimeError(f"{name}: delete of batch {batch} did not commit after 50 attempts")

    # -- reading -----------------------------------------------------------------------------------------
    def version(self, name: str) -> int:
        return self.table(name).version()

    def at(self, name: str, as_of=None) -> DeltaTable:
        """The table at ``as_of``: None (latest), a version number, or a datetime."""
        t = DeltaTable(self.uri(name), storage_options=self.opts)
        if as_of is not None:
            t.load_as_version(as_of)
        return t

    def files(self, name: str, as_of=None) -> list[str]:
        return self.at(name, as_of).file_uris()

    def read(self, name: str, as_of=None, columns=None) -> pa.Table:
        t = self.at(name, as_of)
        return t.to_pyarrow_table(columns=columns)

    def arrow_schema(self, name: str) -> pa.Schema:
        return pa.schema(self.at(name).schema())

    # -- maintenance -------------------------------------------------------------------------------------
    def compact(self, name: str, target_size: int = 128 << 20) -> dict:
        t = self.table(name)
        props = writer_properties(self.arrow_schema(name)) if self.tuned else None
        return t.optimize.compact(target_size=target_size, writer_properties=props,
                                  post_commithook_properties=self.hooks)

    def vacuum(self, name: str, retention_hours: int = 0) -> list[str]:
        t = self.table(name)
        removed = t.vacuum(retention_hours=retention_hours, enforce_retention_duration=False, dry_run=False)
        t.create_checkpoint()
        t.cleanup_metadata()  # log files older than delta.logRetentionDuration (30 days by default)
        return removed

    def storage(self, name: str) -> dict:
        """Files and bytes under the table: data, and the log (metadata)."""
        if self.opts:
            return {}
        data = meta = data_b = meta_b = 0
        for base, _dirs, files in os.walk(self.uri(name)):
            for f in files:
                size = os.path.getsize(os.path.join(base, f))
                if "_delta_log" in base:
                    meta, meta_b = meta + 1, meta_b + size
                else:
                    data, data_b = data + 1, data_b + size
        live = len(self.table(name).file_uris())
        return {"live_files": live, "data_files": data, "data_bytes": data_b, "log_files": meta, "log_bytes": meta_b}

    def when(self, name: str, version: int) -> dt.datetime:
        for h in self.table(name).history():
            if h.get("version") == version:
                return dt.datetime.fromtimestamp(h["timestamp"] / 1000, dt.timezone.utc)
        raise KeyError(version)


def _read_files(paths: list[str], columns: list[str], storage_options) -> pa.Table:
    import pyarrow.parquet as pq

    if storage_options:
        fs = s3_filesystem(storage_options)
        tables = [pq.read_table(p.split("://", 1)[1], columns=columns, filesystem=fs) for p in paths]
    else:
        tables = [pq.read_table(p.removeprefix("file://"), columns=columns) for p in paths]
    return pa.concat_tables(tables) if tables else pa.table({c: pa.array([], pa.string()) for c in columns})


def s3_filesystem(opts: dict):
    import pyarrow.fs as pafs

    endpoint = opts["AWS_ENDPOINT_URL"]
    return pafs.S3FileSystem(access_key=opts["AWS_ACCESS_KEY_ID"], secret_key=opts["AWS_SECRET_ACCESS_KEY"],
                             endpoint_override=endpoint, scheme="http", region=opts.get("AWS_REGION", "us-east-1"),
                             allow_bucket_creation=False)


def is_delta(uri: str) -> bool:
    try:
        DeltaTable(uri)
        return True
    except TableNotFoundError:
        return False

