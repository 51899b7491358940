"""The runs catalog and the lake's storage layout on an fsspec filesystem.

Layout under the lake root (any fsspec URL; a local directory by default)::

    perflake.json                  marker: format name and schema version
    runs/part-<batch>.parquet      catalog rows of one ingest batch -- written LAST: the commit point
    nodes/part-<batch>.parquet     rows of every run of that batch, sorted by run_id, node_id
    edges/part-<batch>.parquet     sorted by run_id, parent_id, child_id
    metrics/part-<batch>.parquet   sorted by run_id, node_id, rank, thread
    rank_summary/part-<batch>.parquet  per run, call path, metric: statistics over locations (schema 4)
    ingest_log/part-<id>.parquet   one file per ingest invocation that attempted something (perflake.ingest.log)

A batch is visible only once its ``runs/part-<batch>.parquet`` exists; that file is written under a
temporary name and renamed, so a crash leaves either a complete batch or invisible leftovers.  Data files
are found through the catalog (batch -> file name), never by globbing the data folders.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import json
import secrets

import pyarrow as pa
import pyarrow.parquet as pq

from perflake.catalogs import remote
from perflake.catalogs.schema import DATA_TABLES, INGEST_LOG, MARKER, RANK_SUMMARY, RUNS, RUNS_SCHEMA, SCHEMA_VERSION
from perflake.errors import LakeError, LockTimeout

ROW_GROUP_ROWS = 131_072


def new_batch_id() -> str:
    """Sortable and unique: UTC time to the microsecond plus 32 random bits."""
    return dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%S%f") + "-" + secrets.token_hex(4)


class Catalog:
    """Storage of one lake: where files go, and the runs table."""

    def __init__(self, root: str, *, create: bool = False, storage_options: dict | None = None):
        self.url = str(root)
        self.fs, self.root = remote.open_fs(self.url, storage_options)  # StorageError: not installed, unreachable
        self.root = self.root.rstrip("/")
        self.local = "file" in (self.fs.protocol if isinstance(self.fs.protocol, tuple) else (self.fs.protocol,))
        self.migrated: list[str] = []  # migrations applied when this lake was opened
        marker = f"{self.root}/{MARKER}"
        if self.fs.exists(marker):
            self._check_marker(marker)
        elif create:
            self._create(marker)
        else:
            raise LakeError(f"{self.url}: not a perflake lake (create one with: perflake ingest PATH --lake "
                            f"{self.url})")

    def _create(self, marker: str) -> None:
        try:
            if self.fs.exists(self.root) and self.fs.ls(self.root) and not self.fs.exists(f"{self.root}/{RUNS}"):
                raise LakeError(f"{self.url}: exists and is not empty, but is not a perflake lake")
            self.fs.makedirs(self.root, exist_ok=True)
            for table in (RUNS, *DATA_TABLES, INGEST_LOG):
                self.fs.makedirs(f"{self.root}/{table}", exist_ok=True)
            info = {"format": "perflake-lake", "schema_version": SCHEMA_VERSION,
                    "created_at": dt.datetime.now(dt.timezone.utc).isoformat(), "migrations": []}
            self._atomic_write(marker, json.dumps(info, indent=1).encode())
        except OSError as exc:  # not creatable: a read-only or missing parent, a file in the way...
            raise LakeError(f"{self.url}: cannot create the lake ({exc.strerror or exc})") from None

    def _check_marker(self, marker: str) -> None:
        """An older lake is migrated (named, recorded migrations: catalogs/migrations.py); a newer one refused."""
        from perflake.catalogs import migrations

        self.migrated = migrations.check(self)

    # -- paths ---------------------------------------------------------------------------------------------
    def path(self, table: str, batch: str) -> str:
        return f"{self.root}/{table}/part-{batch}.parquet"

    def duck_path(self, path: str) -> str:
        """The path as DuckDB must see it (a URL for non-local filesystems registered with DuckDB)."""
        if self.local:
            return path
        protocol = self.fs.protocol if isinstance(self.fs.protocol, str) else self.fs.protocol[0]
        return f"{protocol}://{path}"

    # -- writing -------------------------------------------------------------------------------------------
    def _atomic_write(self, path: str, data: bytes) -> None:
        tmp = path.rsplit("/", 1)
        tmp = f"{tmp[0]}/.{tmp[1]}.{secrets.token_hex(4)}.tmp"
        with self.fs.open(tmp, "wb") as fh:
            fh.write(data)
        self.fs.mv(tmp, path)

    def write_table(self, table_name: str, batch: str, table: pa.Table, *, atomic: bool = False) -> str:
        """Write a data file of ``batch``; ``atomic``: under a temporary name, then renamed (a file added to a
        committed batch, whose presence must mean that it is complete)."""
        path = self.path(table_name, batch)
        target = f"{self.root}/{table_name}/.part-{batch}.{secrets.token_hex(4)}.tmp" if atomic else path
        with self.fs.open(target, "wb") as fh:
            pq.write_table(table, fh, compression="zstd", row_group_size=ROW_GROUP_ROWS,
                           use_dictionary=_dictionary_columns(table.schema),
                           use_byte_stream_split=_split_columns(table.schema),
                           write_statistics=True if table_name != RANK_SUMMARY else _statistics_columns(table.schema))
        if atomic:
            self.fs.mv(target, path)
        return path

    @contextlib.contextmanager
    def commit_lock(self, timeout: float | None = None):
        """Serialise the commit step of concurrent ingests on a local lake (an exclusive lock on
        ``<root>/.commit.lock``); on other filesystems there is no lock and duplicates are only prevented
        within one process.  ``timeout``: seconds to wait for the lock (None: forever), then LockTimeout."""
        if not self.local:
            yield
            return
        import fcntl
        import time

        with open(f"{self.root}/.commit.lock", "a+b") as fh:
            if timeout is None:
                fcntl.flock(fh, fcntl.LOCK_EX)
            else:
                deadline = time.monotonic() + timeout
                while True:
                    try:
                        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        break
                    except BlockingIOError:
                        if time.monotonic() >= deadline:
                            raise LockTimeout(f"{self.url}: another ingest has held the commit lock for more than "
                                              f"{timeout:g} s ({self.root}/.commit.lock)") from None
                        time.sleep(0.02)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def commit(self, batch: str, runs: pa.Table) -> None:
        """Make a batch visible: write its catalog rows atomically.  Nothing before this is visible."""
        buf = io.BytesIO()
        pq.write_table(runs.cast(RUNS_SCHEMA), buf, compression="zstd")
        self._atomic_write(self.path(RUNS, batch), buf.getvalue())

    def subset_batch(self, batch: str, new_batch: str, run_ids: list[str]) -> None:
        """Write the rows of ``run_ids`` from the (uncommitted) data files of ``batch`` as ``new_batch``: used
        when another ingest committed some of a batch's runs first, so that no run is stored twice."""
        import pyarrow.compute as pc

        keep = pa.array(sorted(run_ids), pa.string())
        for table in DATA_TABLES:
            data = self.read_parquet(self.path(table, batch))
            mask = pc.is_in(data.column("run_id").cast(pa.string()), value_set=keep)
            self.write_table(table, new_batch, data.filter(mask))

    def discard(self, batch: str) -> None:
        """Remove the data files of a batch that will not be committed (best effort)."""
        for table in DATA_TABLES:
            try:
                self.fs.rm(self.path(table, batch))
            except (FileNotFoundError, OSError):
                pass

    # -- reading -------------------------------------------------------------------------------------------
    def read_parquet(self, path: str, columns: list[str] | None = None) -> pa.Table:
        """One Parquet file of the lake, read by Arrow alone: a local path natively, other filesystems' bytes
        copied into Arrow memory first.  (Reading a Python file object leaves Arrow read-ahead buffers that
        hold Python objects; released by an Arrow thread at interpreter exit they abort the process.)"""
        if self.local:
            return pq.read_table(path, columns=columns)
        out = pa.BufferOutputStream()
        out.write(self.fs.cat_file(path))
        return pq.read_table(pa.BufferReader(out.getvalue()), columns=columns)

    def batches(self) -> list[str]:
        """Committed batches, oldest first."""
        names = self.fs.glob(f"{self.root}/{RUNS}/part-*.parquet")
        return sorted(n.rsplit("/part-", 1)[1][: -len(".parquet")] for n in names)

    def runs(self, batches: list[str] | None = None, columns: list[str] | None = None) -> pa.Table:
        """The runs catalog (one row per run): of every committed batch, or of ``batches`` only."""
        tables = []
        for batch in self.batches() if batches is None else batches:
            tables.append(self.read_parquet(self.path(RUNS, batch), columns))
        if not tables:
            schema = RUNS_SCHEMA if columns is None else pa.schema([RUNS_SCHEMA.field(c) for c in columns])
            return pa.Table.from_batches([], schema=schema)  # (Schema.empty_table() imports pandas)
        return pa.concat_tables(tables, promote_options="permissive")

    def files(self, table: str, batches) -> list[str]:
        """The data files of ``table`` for the given batches, as DuckDB paths."""
        return [self.duck_path(self.path(table, b)) for b in sorted(set(batches))]

    def having(self, table: str, batches) -> set[str]:
        """The batches among ``batches`` that have a ``table`` file (one listing of the folder): every committed
        batch has one of each data table, except a rank_summary for a batch that a perflake of schema 3
        committed after the lake was migrated to 4 (its questions then read the metrics rows)."""
        try:
            names = self.fs.ls(f"{self.root}/{table}", detail=False)
        except FileNotFoundError:
            return set()
        present = {n.rsplit("/", 1)[-1] for n in names}
        return {b for b in batches if f"part-{b}.parquet" in present}

    # -- the ingest log (perflake.ingest.log) -----------------------------------------------------------------
    def log_parts(self) -> list[str]:
        """Paths of the ingest log's files (each one complete: written under a temporary name, renamed)."""
        return sorted(self.fs.glob(f"{self.root}/{INGEST_LOG}/part-*.parquet"))

    def write_log(self, part: str, table: pa.Table) -> str:
        """Write one ingest log file atomically; returns its path."""
        self.fs.makedirs(f"{self.root}/{INGEST_LOG}", exist_ok=True)
        buf = io.BytesIO()
        pq.write_table(table, buf, compression="zstd")
        path = self.path(INGEST_LOG, part)
        self._atomic_write(path, buf.getvalue())
        return path

    # -- maintenance ---------------------------------------------------------------------------------------
    def leftovers(self, older_than: float) -> list[str]:
        """Files no committed batch owns (a crashed ingest's data files, temporary files), older than
        ``older_than`` seconds -- younger ones may belong to an ingest that is still running."""
        import time

        committed = set(self.batches())
        now = time.time()
        found = []
        for table in (RUNS, *DATA_TABLES, INGEST_LOG):
            if not self.fs.exists(f"{self.root}/{table}"):
                continue
            for info in self.fs.ls(f"{self.root}/{table}", detail=True):
                name = info["name"].rsplit("/", 1)[-1]
                is_part = name.startswith("part-") and name.endswith(".parquet")
                batch = name[len("part-"):-len(".parquet")] if is_part else None
                if batch in committed or table == INGEST_LOG and batch is not None:  # every log file is complete
                    continue
                mtime = info.get("mtime") or info.get("created") or 0
                mtime = mtime.timestamp() if hasattr(mtime, "timestamp") else float(mtime)
                if now - mtime >= older_than:
                    found.append(info["name"])
        return sorted(found)

    def vacuum(self, older_than: float = 3600.0) -> list[str]:
        """Delete :meth:`leftovers`; returns what was removed."""
        removed = self.leftovers(older_than)
        for path in removed:
            self.fs.rm(path)
        return removed


def _dictionary_columns(schema: pa.Schema) -> list[str]:
    """Columns worth dictionary pages: strings (names, files, run ids repeat).  Numbers (metric values,
    call-path ids) are nearly all distinct or already run-sorted: a dictionary attempt on them cost 30% of
    the write and gave a bigger file (1.5M metric rows: 0.197 s / 7.9 MB -> 0.135 s / 6.0 MB).  Lists of
    integers (rank_summary's top ranks: few distinct values) too: 12.5 -> 8.2 MiB for 2 million rows."""
    def wanted(t: pa.DataType) -> bool:
        return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_dictionary(t)
    return [f.name for f in schema if wanted(f.type)] + [
        f"{f.name}.list.element" for f in schema if pa.types.is_list(f.type) and pa.types.is_integer(f.type.value_type)]


def _statistics_columns(schema: pa.Schema) -> list[str]:
    """The columns of a rank_summary file given min/max statistics: not its floating-point ones.  Arrow leaves
    NaN out of a column's min/max (as the Parquet format says) and DuckDB 2.0 then takes the column to hold no
    NaN: ``isnan(total)`` is folded to false on a file whose totals include a NaN (a NaN value, or infinities
    of both signs).  No question filters on those columns, so they lose nothing."""
    return [f.name for f in schema if not pa.types.is_floating(f.type) and not pa.types.is_nested(f.type)]


def _split_columns(schema: pa.Schema) -> list[str]:
    """Floating-point columns (metric values) take the BYTE_STREAM_SPLIT encoding: their bytes grouped by
    position (exponents together, mantissas together) compress better and faster under zstd (1.5M
    HPCToolkit rows: 0.133 s / 6.0 MB -> 0.092 s / 5.1 MB).  DuckDB, pyarrow and Spark read it."""
    return [f.name for f in schema if pa.types.is_float32(f.type) or pa.types.is_float64(f.type)]
