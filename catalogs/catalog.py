"""The runs catalog and the lake's storage on a local disk or an object store.

Layout under the lake root (a local directory or an ``s3://`` URL; schema 5)::

    perflake.json      marker: format name, schema version, migrations applied
    README.md          what the tables are, for people and other engines (catalogs/describe.py)
    runs/              Delta table: one row per run -- THE commit point (compare-and-swap on its version)
    nodes/ edges/ metrics/ rank_summary/   Delta tables of the runs' rows, each row tagged with its ``batch``
    ingest_log/        Delta table: one row per input an ingest attempted (perflake.ingest.log)

An ingest appends a batch's rows to the data tables, then appends the batch's runs rows to ``runs`` by
compare-and-swap (catalogs/delta.py): a run is visible once, and whole, when its runs row is committed; rows of
a batch that never commits are in files no reader selects, removed by the writer or by ``perflake vacuum``.
A reader pins one version of ``runs`` (the latest, or ``as_of``) and reads the data files of its batches.
"""

from __future__ import annotations

import bisect
import contextlib
import datetime as dt
import json
import os
import secrets

import pyarrow as pa

from perflake.catalogs import remote
from perflake.catalogs.concurrency import Background, file_lock
from perflake.catalogs.delta import DeltaTables
from perflake.catalogs.schema import (
    DATA_TABLES,
    DESCRIPTION,
    ID_COLUMNS,
    INGEST_LOG,
    MARKER,
    RUNS,
    RUNS_SCHEMA,
    SCHEMA_VERSION,
    TABLES,
    stored_schema,
)
from perflake.errors import LakeError, StorageError


def new_batch_id() -> str:
    """Sortable and unique: UTC time to the microsecond plus 32 random bits."""
    return dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%S%f") + "-" + secrets.token_hex(4)


def conform(table_name: str, table: pa.Table, batch: str) -> pa.Table:
    """A data table as ingest builds it -> as stored: ``batch`` after run_id, run_id a string (or its
    dictionary: strings in the Delta schema and for every engine, see batch_column), call-path ids int64
    (63-bit values: the cast is exact; a value >= 2**63 is an error, not a wrap)."""
    for col in ID_COLUMNS[table_name]:
        i = table.schema.get_field_index(col)
        table = table.set_column(i, pa.field(col, pa.int64()), table.column(i).cast(pa.int64()))
    i = table.schema.get_field_index("run_id")
    typ = table.schema.field(i).type
    if typ != pa.string() and not (pa.types.is_dictionary(typ) and typ.value_type == pa.string()):
        table = table.set_column(i, pa.field("run_id", pa.string()), table.column(i).cast(pa.string()))
    return table.add_column(1, "batch", batch_column(batch, table.num_rows))


def batch_column(batch: str, n: int) -> pa.Array:
    """``n`` times ``batch`` as a one-value dictionary: a plain string column of 10 M rows is 300 MB written in
    0.7 s, this one 40 MB.  The Delta schema says string (delta-rs maps a dictionary to its values) and every
    engine reads it as one; only the Arrow type hint in the file says dictionary (:meth:`DeltaTables.read_files`
    gives plain strings)."""
    import numpy as np

    return pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), pa.array([batch], pa.string()))


class Catalog:
    """Storage of one lake: its Delta tables and the runs catalog.  ``as_of``: read the runs table as it was at
    that version (an int) or time (a datetime); the data tables are read at their latest version, which holds
    every run any version committed."""

    def __init__(self, root: str, *, create: bool = False, storage_options: dict | None = None, as_of=None):
        self.url = str(root)
        self.fs, self.root = remote.open_fs(self.url, storage_options)  # StorageError: not installed, unreachable
        self.root = self.root.rstrip("/")
        protocols = self.fs.protocol if isinstance(self.fs.protocol, tuple) else (self.fs.protocol,)
        self.local = "file" in protocols or "local" in protocols
        if not self.local and not set(protocols) & set(remote.S3_PROTOCOLS):
            raise StorageError(self.url, "a lake lives on a local disk or on S3-compatible storage (s3://); "
                                         f"{protocols[0]}:// is not supported by its table format (Delta Lake)")
        self.as_of = as_of
        self.migrated: list[str] = []  # migrations applied when this lake was opened
        marker = f"{self.root}/{MARKER}"
        exists = self.fs.exists(marker)  # (after this call s3fs has its client, whose credentials delta-rs gets)
        uri = os.path.abspath(self.root) if self.local else f"s3://{self.root}"
        self._tables = DeltaTables(uri, remote.delta_options(self.fs) if not self.local else None, self.url)
        self._creating = None  # the thread creating a new lake's tables (see _create), until it is waited for
        self._runs_version = None  # the pinned runs table (self.snapshot()): its version, files, columns read
        self._runs_files: list[str] | None = None
        self._runs_cols: dict[str, pa.ChunkedArray] = {}
        self._files: dict[str, tuple] = {}  # table -> (its version, live files' paths, min batches, max batches)
        self._seen: dict[str, int] = {}  # table -> the version the last question read
        self._pins: dict[str, int] = {}  # as_of: table -> its version at the pinned runs version's commit
        if exists:
            self._check_marker(marker)
        elif create:
            self._create(marker)
        else:
            raise LakeError(f"{self.url}: not a perflake lake (create one with: perflake ingest PATH --lake "
                            f"{self.url})")

    def _create(self, marker: str) -> None:
        try:
            if self.fs.exists(self.root):  # empty, or a lake another ingest (or a killed one) is creating: go on
                known = {*TABLES, MARKER, DESCRIPTION, ".commit.lock"}
                names = [n.rstrip("/").rsplit("/", 1)[-1] for n in self.fs.ls(self.root, detail=False)]
                if [n for n in names if n not in known and not (n.startswith(".") and n.endswith(".tmp"))]:
                    raise LakeError(f"{self.url}: exists and is not empty, but is not a perflake lake")
            self.fs.makedirs(self.root, exist_ok=True)
        except OSError as exc:  # not creatable: a read-only or missing parent, a file in the way...
            raise LakeError(f"{self.url}: cannot create the lake ({exc.strerror or exc})") from None
        self._creating = Background(self._create_tables_and_marker, marker)

    def _create_tables_and_marker(self, marker: str) -> None:
        """The tables, then the marker (an opener never sees a marker without tables): in a thread of its own,
        while the ingest that creates the lake reads its inputs (six commits: ~12 ms)."""
        try:
            self.create_tables(self._tables)
            info = {"format": "perflake-lake", "schema_version": SCHEMA_VERSION, "table_format": "delta",
                    "created_at": dt.datetime.now(dt.timezone.utc).isoformat(), "migrations": []}
            self._atomic_write(marker, json.dumps(info, indent=1).encode())
        except OSError as exc:
            raise LakeError(f"{self.url}: cannot create the lake ({exc.strerror or exc})") from None
        except Exception as exc:  # delta-rs' own: a file where a table's folder goes, a damaged log...
            raise LakeError(f"{self.url}: cannot create the lake ({str(exc).splitlines()[0]})") from None

    @property
    def tables(self) -> DeltaTables:
        """The lake's Delta tables (once a new lake's tables are created)."""
        if self._creating is not None:
            self._creating.wait()
            self._creating = None
        return self._tables

    def check_created(self) -> None:
        """Raise now (LakeError) if the creation of this new lake's tables has failed; never waits."""
        if self._creating is not None and self._creating.done():
            _ = self.tables

    def creating(self) -> bool:
        """Whether this Catalog is creating a new lake's tables still: the lake had no runs and no ingest log
        when this Catalog found it (another ingest's commits since are seen by the compare-and-swap)."""
        return self._creating is not None and not self._creating.done()

    def __getstate__(self) -> dict:
        """Picklable (Dask's process workers get the catalog): the new lake's tables created first."""
        _ = self.tables
        return self.__dict__

    def create_tables(self, tables: DeltaTables | None = None) -> None:
        """Create every table that does not exist yet (idempotent), and the lake's description.  ``tables``:
        a new lake's, created in the background thread (see _create)."""
        from perflake.catalogs.describe import write_description

        tables = tables or self.tables
        for name in TABLES:  # one after the other: beside a running ingest, threads would slow its reading
            tables.create(name, stored_schema(name))
        write_description(self)

    def _check_marker(self, marker: str) -> None:
        """An older lake is migrated (named, recorded migrations: catalogs/migrations.py); a newer one refused."""
        try:  # the common case, without loading the migrations
            info = json.loads(self.fs.cat_file(marker))
            if isinstance(info, dict) and info.get("format") == "perflake-lake" and \
                    info.get("schema_version") == SCHEMA_VERSION:
                return
        except (ValueError, OSError):
            pass  # migrations.check says what is wrong
        from perflake.catalogs import migrations

        self.migrated = migrations.check(self)

    def duck_path(self, path: str) -> str:
        """The path as DuckDB must see it (a URL for non-local filesystems registered with DuckDB)."""
        if self.local:
            return path.removeprefix("file://")
        return path if "://" in path else f"s3://{path}"

    def _atomic_write(self, path: str, data: bytes) -> None:
        tmp = path.rsplit("/", 1)
        tmp = f"{tmp[0]}/.{tmp[1]}.{secrets.token_hex(4)}.tmp"
        with self.fs.open(tmp, "wb") as fh:
            fh.write(data)
        self.fs.mv(tmp, path)

    # -- writing -------------------------------------------------------------------------------------------
    def write_table(self, table_name: str, batch: str, table: pa.Table) -> None:
        """Append the rows of ``batch`` to a data table (invisible until the batch's runs rows commit).  No rows:
        no file, and no commit unless the table gains a column (a declared metric no location measured)."""
        if table.num_rows or set(table.schema.names) - set(self.tables.schema(table_name).names):
            self.tables.append(table_name, conform(table_name, table, batch))

    def commit_lock(self, timeout: float | None = None):
        """On a local lake, serialise the commit step of concurrent ingests (catalogs/concurrency.py): not needed
        for correctness (the runs commit is a compare-and-swap) but it spares concurrent ingests lost races.
        Elsewhere no lock.  ``timeout``: seconds to wait, then LockTimeout."""
        if not self.local:
            return contextlib.nullcontext()
        return file_lock(f"{self.root}/.commit.lock", timeout, f"{self.url}: another ingest has held the commit lock")

    def runs_head(self):
        """(runs table at its latest version, content hash -> run id at that version): see DeltaTables."""
        return self.tables.runs_head()

    def commit(self, head, runs: pa.Table) -> bool:
        """Make runs visible: append their catalog rows as the version after ``head``, or nothing (False)."""
        return self.tables.append_runs_cas(head, runs.cast(RUNS_SCHEMA))

    def has_batch(self, batch: str) -> bool:
        """Whether the batch's rows are still there (a ``perflake vacuum`` with a short ``--older-than`` may
        have deleted an uncommitted batch): every run has nodes, so its nodes rows tell."""
        return bool(self.tables.files_of("nodes", batch))

    def subset_batch(self, batch: str, new_batch: str, run_ids: list[str]) -> None:
        """Append the rows of ``run_ids`` from ``batch`` again as ``new_batch``: used when another ingest
        committed some of a batch's runs first, so that a committed batch holds exactly its runs' rows."""
        import pyarrow.compute as pc

        keep = pa.array(sorted(run_ids), pa.string())
        for name in DATA_TABLES:
            data = self.batch_rows(name, batch)
            data = data.filter(pc.is_in(data.column("run_id"), value_set=keep))
            self.tables.append(name, data.set_column(1, "batch", batch_column(new_batch, data.num_rows)))

    def batch_rows(self, name: str, batch: str) -> pa.Table:
        """The rows of ``batch`` in a table's latest version, as stored."""
        import pyarrow.compute as pc

        data = self.tables.read_files(self.tables.files_of(name, batch))
        return data.filter(pc.equal(data.column("batch"), batch)) if data.num_rows else data

    def discard(self, batch: str) -> None:
        """Delete the rows of a batch that will not be committed (best effort: vacuum removes what is left)."""
        for name in DATA_TABLES:
            try:
                self.tables.delete_batch(name, batch)
            except Exception:
                pass

    # -- reading -------------------------------------------------------------------------------------------
    def snapshot(self, *, latest: bool = False, columns: list[str] | None = None) -> pa.Table:
        """The pinned runs table (``columns`` of it): the version of ``as_of``, or the latest when first asked or
        when ``latest`` (a commit since is then read).  Its files are read by Arrow directly, the columns asked
        for only, each once per version (Delta's dataset scan of the whole table costs 25 ms for 10,000 runs)."""
        if self._runs_files is None or (latest and self.as_of is None):
            if self.as_of is None:  # the log read directly (catalogs/delta_log.py)
                version, live = self.tables.live(RUNS)
                files = live.column("path").to_pylist()
            else:  # a version or a time: every table as of that commit (catalogs/snapshots.py)
                from perflake.catalogs import snapshots

                version, files = snapshots.runs_at(self, self.as_of)
            if self._runs_files is None or version != self._runs_version:
                self._runs_version, self._runs_files, self._runs_cols = version, files, {}
        names = RUNS_SCHEMA.names if columns is None else list(columns)
        missing = [c for c in names if c not in self._runs_cols]
        if missing:
            got = self.tables.read_files(self._runs_files, missing) if self._runs_files else None
            for c in missing:
                field = RUNS_SCHEMA.field(c)
                col = got.column(c).cast(field.type) if got is not None else pa.array([], field.type)
                self._runs_cols[c] = col
            if "run_id" in missing:
                _check_unique(self.url, self._runs_cols["run_id"])
        return pa.Table.from_arrays([self._runs_cols[c] for c in names],
                                    schema=pa.schema([RUNS_SCHEMA.field(c) for c in names]))

    def runs(self, batches: list[str] | None = None, columns: list[str] | None = None) -> pa.Table:
        """The runs catalog (one row per run), of the latest version at this call (or ``as_of``), of every
        batch or of ``batches`` only."""
        if batches is None:
            return self.snapshot(latest=True, columns=columns)
        import pyarrow.compute as pc

        cols = None if columns is None else list(dict.fromkeys([*columns, "batch"]))
        table = self.snapshot(latest=True, columns=cols)
        table = table.filter(pc.is_in(table.column("batch"), value_set=pa.array(sorted(set(batches)), pa.string())))
        return table.select(columns) if columns is not None else table

    def batches(self) -> list[str]:
        """Committed batches, oldest first."""
        return sorted(set(self.runs(columns=["batch"]).column("batch").to_pylist()))

    def files(self, table: str, batches, *, placeholder: bool = True) -> list[str]:
        """The live data files of ``table`` that hold rows of ``batches`` (as DuckDB paths): a batch's own files,
        and compacted files whose batch range includes one of them.  A compacted file may hold other committed
        runs too: every reader filters on the run ids it wants.  The file list is read once per version of the
        pinned runs table (a file a compaction replaced meanwhile stays readable until a vacuum).  When no file
        holds them (runs without a metric value have no metrics rows), ``placeholder``: one empty file of the
        table's schema in a local temporary folder, so that a query over the list reads no row (else [])."""
        wanted = sorted(set(batches))
        if not wanted:
            return [self._placeholder(table)] if placeholder else []
        paths, los, his = self._live(table)
        out = []
        for path, lo, hi in zip(paths, los, his):
            if lo is None:
                continue
            i = bisect.bisect_left(wanted, lo)
            if i < len(wanted) and wanted[i] <= hi:
                out.append(path)
        if not out and placeholder:
            return [self._placeholder(table)]
        return sorted(out)

    def _placeholder(self, table: str) -> str:
        import hashlib
        import tempfile

        import pyarrow.parquet as pq

        schema = self.tables.schema(table)
        digest = hashlib.sha256(schema.to_string().encode()).hexdigest()[:16]
        folder = os.path.join(tempfile.gettempdir(), f"perflake-empty-{os.getuid()}")
        path = os.path.join(folder, f"{table}-{digest}.parquet")
        if not os.path.exists(path):
            os.makedirs(folder, exist_ok=True)
            tmp = f"{path}.{secrets.token_hex(4)}.tmp"
            pq.write_table(schema.empty_table(), tmp)
            os.replace(tmp, path)
        return path

    def _live(self, table: str) -> tuple[list, list, list]:
        """(paths as DuckDB reads them, min batches, max batches) of the table's live files: at its latest version,
        checked on every call (another writer may have appended, deleted or compacted since), or at the version
        pinned with ``as_of``."""
        if self._runs_files is None:
            self.snapshot(columns=[])  # pin the runs version (read nothing)
        version, live = self.tables.live(table, self._pinned(table))
        self._seen[table] = version
        cached = self._files.get(table)
        if cached is None or cached[0] != version:
            paths = [self.duck_path(p) for p in live.column("path").to_pylist()]
            cached = self._files[table] = (version, paths, live.column("min_batch").to_pylist(),
                                           live.column("max_batch").to_pylist())
        return cached[1], cached[2], cached[3]

    def _pinned(self, table: str) -> int | None:
        """The version of ``table`` this catalog reads: None (the latest) or, ``as_of``, the version it had when
        the pinned runs version was committed (every table as of one moment); the files it needs must still be
        there (a vacuum may have removed them: one LakeError)."""
        if self.as_of is None:
            return None
        if table not in self._pins:
            from perflake.catalogs import snapshots

            self._pins[table] = snapshots.version_at(self, table)
        return self._pins[table]

    def versions(self) -> dict[str, int]:
        """The version of each table the last question read (``as_of``: the pinned ones); tables not read yet are
        read now."""
        if self._runs_files is None:
            self.snapshot(columns=[])
        out = {RUNS: self._runs_version}
        for name in DATA_TABLES:
            if name not in self._seen:
                self._live(name)
            out[name] = self._seen[name]
        return out

    def having(self, table: str, batches) -> set[str]:
        """The batches among ``batches`` with rows in ``table`` (by the live files' batch ranges).  Every batch
        ingested since schema 4 has rank_summary rows; a table's rows deleted by hand are read as absent."""
        _paths, los, his = self._live(table)
        ranges = sorted((lo, hi) for lo, hi in zip(los, his) if lo is not None)
        starts, reach, top = [], [], ""
        for lo, hi in ranges:  # reach[i]: the highest batch any of the first i+1 ranges reaches
            top = max(top, hi)
            starts.append(lo)
            reach.append(top)
        out = set()
        for b in set(batches):
            i = bisect.bisect_right(starts, b)
            if i and reach[i - 1] >= b:
                out.add(b)
        return out

    # -- the ingest log (perflake.ingest.log) -----------------------------------------------------------------
    def read_log(self, columns: list[str] | None = None) -> pa.Table:
        """The ingest log's rows at its latest version (its files read by Arrow directly)."""
        from perflake.catalogs.schema import INGEST_LOG_SCHEMA

        files = self.tables.file_uris(INGEST_LOG)
        schema = INGEST_LOG_SCHEMA if columns is None else pa.schema([INGEST_LOG_SCHEMA.field(c) for c in columns])
        if not files:
            return pa.Table.from_batches([], schema=schema)
        return self.tables.read_files(files, columns).cast(schema)

    def log_files(self) -> list[str]:
        return sorted(self.duck_path(p) for p in self.tables.live_files(INGEST_LOG).column("path").to_pylist())

    def write_log(self, table: pa.Table) -> None:
        """Append one invocation's attempts to the ingest log (one commit)."""
        self.tables.append(INGEST_LOG, table)


def _check_unique(url: str, run_ids: pa.ChunkedArray) -> None:
    """A run is one row of the runs table: another tool's append of a copy would make every run question
    ambiguous (which batch holds its rows?), so it is refused, naming the runs."""
    import pyarrow.compute as pc

    if len(pc.unique(run_ids)) == len(run_ids):
        return
    counts = pc.value_counts(run_ids)
    twice = [v["values"] for v in counts.to_pylist() if v["counts"] > 1]
    raise LakeError(f"{url}: the runs table holds {len(twice)} run(s) more than once ({', '.join(sorted(twice)[:3])}"
                    f"{', ...' if len(twice) > 3 else ''}; written by another tool?): delete the extra rows")
