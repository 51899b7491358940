"""The lake's tables as Delta Lake tables (delta-rs, the ``deltalake`` package): the primitives the catalog needs.

Every table of a lake (``runs``, ``nodes``, ``edges``, ``metrics``, ``rank_summary``, ``ingest_log``) is a Delta
table in ``<root>/<table>/`` (``_delta_log/`` + Parquet files): a commit is a put-if-absent of the table's next
log file, atomic on a local disk and on S3-compatible storage (a conditional ``PUT If-None-Match``), so several
writers on several machines need no lock.  Neither Delta nor any other open format commits several tables at
once, so the ``runs`` table is the commit point (docs/table-format.md, "The protocol"):

* data rows are appended first, each tagged with its ingest ``batch`` (blind appends: they never conflict;
  delta-rs retries them over concurrent appends, and :meth:`append` over a concurrent schema change);
* the runs rows are appended by **compare-and-swap** on the runs table's version (:meth:`append_runs_cas`):
  committed as version v+1 of the version v whose content hashes were checked, or not at all;
* a batch whose runs never commit (lost, failed, killed) is deleted (:meth:`delete_batch`) or, after a crash,
  by ``perflake vacuum``; until then its rows sit in files of its own that no reader selects (readers pick
  data files by their ``batch`` range, :meth:`live_files`, among the batches the runs table names).

Questions read the tables' live files from the Delta log directly (:mod:`perflake.catalogs.delta_log`: no
delta-rs loaded for a question); writes, compactions, vacuums and reads ``as_of`` a time go through delta-rs.

What a reader may rely on (the catalog keeps it so): a live data file holds the rows of ONE batch, or is a
compacted file holding rows of committed batches only (:mod:`perflake.catalogs.compaction` merges committed
batches' files and nothing else).  Files removed by a compaction stay on disk until a vacuum older than the
retention removes them, so a reader that listed them can still read them.
"""

from __future__ import annotations

import threading
import time

import pyarrow as pa
import pyarrow.parquet as pq  # the catalog reads the runs table and the ingest log with it

from perflake.catalogs.delta_log import LogReader, Refused, Snapshot, Unsupported, check, file_name, identity
from perflake.catalogs.schema import KEY_COLUMN
from perflake.errors import LakeError

_HANDLES = threading.local()  # open DeltaTable handles of this thread: (table uri, options) -> DeltaTable
_LOCK = threading.Lock()
_LIVE: dict[tuple, pa.Table] = {}  # (table uri, version, identity) -> its live files (live_files)
_RANGES: dict[tuple, tuple] = {}  # (file path, size) -> (size, min, max) of its key column, read from the file
CHECKPOINT_INTERVAL = "100"  # a checkpoint every 100 commits bounds the log a reader replays
APPEND_ATTEMPTS = 100


def writer_properties(schema: pa.Schema):
    """perflake's Parquet choices: zstd, 128k-row groups, dictionary pages for strings only (numbers are nearly
    all distinct or run-sorted: a dictionary attempt cost 30% of the write and gave bigger files),
    BYTE_STREAM_SPLIT for floating-point columns (1.5M HPCToolkit rows: 6.0 -> 5.1 MB, faster under zstd).
    rank_summary's floating-point columns get no min/max statistics: Parquet leaves NaN out of them and DuckDB
    2.0 then folds ``isnan(total)`` to false on a file whose totals include a NaN; no question filters on them."""
    from deltalake import ColumnProperties, WriterProperties

    summary = "m2" in schema.names and "top_ranks" in schema.names
    cols = {}
    for f in schema:
        if pa.types.is_floating(f.type):
            cols[f.name] = ColumnProperties(dictionary_enabled=False, encoding="BYTE_STREAM_SPLIT",
                                            statistics_enabled="NONE" if summary else None)
        elif pa.types.is_integer(f.type):
            cols[f.name] = ColumnProperties(dictionary_enabled=False)
    return WriterProperties(compression="ZSTD", max_row_group_size=131_072, column_properties=cols)


def _hooks():
    from deltalake import PostCommitHookProperties

    return PostCommitHookProperties(create_checkpoint=True, cleanup_expired_logs=False)


class DeltaTables:
    """The Delta tables under one lake root.  ``uri``: the root as delta-rs addresses it (a local path or
    ``s3://bucket/prefix``); ``options``: delta-rs storage options (credentials, endpoint)."""

    def __init__(self, uri: str, options: dict | None = None, lake: str = ""):
        from perflake.engine import resources

        resources.configure()  # before delta-rs starts: its allocator and runtime fit under ``ulimit -v``
        self.uri = uri.rstrip("/")
        self.options = options or None
        self.lake = lake or uri
        self._open: dict[str, object] = {}
        self._runs_files: set[str] = set()
        self._present: dict[str, str] = {}
        self._fs = None  # pyarrow's filesystem of an object store (_arrow_fs)
        self.retries = 0

    def __getstate__(self) -> dict:
        """Picklable (a Catalog travels to Dask workers): open table handles stay behind, reopened there."""
        return {**self.__dict__, "_open": {}, "_runs_files": set(), "_present": {}}

    def table_uri(self, name: str) -> str:
        return f"{self.uri}/{name}"

    # -- tables -----------------------------------------------------------------------------------------
    def create(self, name: str, schema: pa.Schema) -> None:
        from deltalake import DeltaTable
        from deltalake.exceptions import CommitFailedError

        try:
            t = DeltaTable.create(self.table_uri(name), schema, mode="ignore", storage_options=self.options,
                                  configuration={"delta.checkpointInterval": CHECKPOINT_INTERVAL})
        except CommitFailedError:  # another process created it meanwhile (several ingests starting a new lake)
            if not self.exists(name):
                raise
            return
        self._open.setdefault(name, t)  # a new lake's first writes need no second reading of the log

    def exists(self, name: str) -> bool:
        from deltalake import DeltaTable

        return DeltaTable.is_deltatable(self.table_uri(name), storage_options=self.options)

    def table(self, name: str, *, fresh: bool = True):
        """The table at its latest version: one handle per table, thread and process, shared by every
        DeltaTables of the same lake (opening one reads its log: ~1.5 ms), brought up to date incrementally."""
        from deltalake import DeltaTable

        t = self._open.get(name)
        if t is None:
            handles = _HANDLES.__dict__.setdefault("tables", {})
            key = (self.table_uri(name), repr(sorted((self.options or {}).items())))
            t, mark = handles.get(key, (None, None))
            now = identity(self.table_uri(name))
            if t is not None and (now is None or now != mark):
                t = None  # not local, or the table was deleted (and perhaps created again) since: open afresh
            if t is None:
                try:
                    t = DeltaTable(self.table_uri(name), storage_options=self.options)
                except Exception as exc:  # TableNotFoundError, or the store's own error
                    raise LakeError(f"{self.lake}: the {name} table cannot be opened "
                                    f"({str(exc).splitlines()[0]})") from None
                if now is not None:
                    handles[key] = (t, now)
            else:
                t.update_incremental()
            self._open[name] = t
        elif fresh:
            t.update_incremental()
        return t

    def at(self, name: str, as_of=None):
        """A new handle on the table at ``as_of``: None (latest), a version number, or a datetime."""
        from deltalake import DeltaTable

        t = DeltaTable(self.table_uri(name), storage_options=self.options)
        if as_of is not None:
            try:
                t.load_as_version(as_of)
            except Exception as exc:
                raise LakeError(f"{self.lake}: no version of the {name} table at {as_of!r} "
                                f"({str(exc).splitlines()[0]})") from None
        return t

    # -- writing ----------------------------------------------------------------------------------------
    def append(self, name: str, data: pa.Table) -> None:
        """A blind append (new columns merge into the schema: nullable, NULL in older rows).  delta-rs retries
        it over concurrent appends.  A concurrent schema change (another writer's new metric column) fails a
        commit after its data file is written, and that file would stay behind untracked; so new columns are
        committed first on their own (an empty write: no file), retried over such conflicts, and the data is
        appended once the table has them."""
        from deltalake import write_deltalake
        from deltalake.exceptions import CommitFailedError

        props = writer_properties(data.schema)
        for attempt in range(APPEND_ATTEMPTS):
            try:
                t = self.table(name, fresh=attempt > 0)
                if set(data.schema.names) - set(pa.schema(t.schema()).names):
                    write_deltalake(t, data.slice(0, 0), mode="append", schema_mode="merge",
                                    writer_properties=props, post_commithook_properties=_hooks())
                    t = self.table(name)
                    if set(data.schema.names) - set(pa.schema(t.schema()).names):
                        continue  # (not expected: the schema commit is read back at once)
                write_deltalake(t, data, mode="append", schema_mode="merge",
                                writer_properties=props, post_commithook_properties=_hooks())
                return
            except CommitFailedError:
                self.retries += 1
                time.sleep(min(0.2, 0.005 * (attempt + 1)))
        raise LakeError(f"{self.lake}: no commit to the {name} table after {APPEND_ATTEMPTS} attempts "
                        "(too many concurrent writers?)")

    def runs_head(self, columns=("content_sha256", "run_id")):
        """(the runs table at its latest version, content hash -> run id at that version), reading only the
        files not read before (a compaction that removed some starts over).  A runs table perflake cannot read
        exactly (deletion vectors, partitions...: delta_log.check) is refused before any write."""
        self.snapshot("runs")
        t = self.table("runs")
        files = set(t.file_uris())
        if self._runs_files - files:
            self._runs_files, self._present = set(), {}
        new = sorted(files - self._runs_files)
        if new:
            got = self.read_files(new, list(columns))
            self._present.update(zip(got.column("content_sha256").to_pylist(), got.column("run_id").to_pylist()))
            self._runs_files |= set(new)
        return t, dict(self._present)

    def append_runs_cas(self, head, rows: pa.Table) -> bool:
        """Append ``rows`` to the runs table as the version after ``head``'s, or not at all (False: another
        commit came first; reload with :meth:`runs_head` and check again)."""
        from deltalake import CommitProperties, write_deltalake
        from deltalake.exceptions import CommitFailedError

        try:
            write_deltalake(head, rows, mode="append", schema_mode="merge",
                            writer_properties=writer_properties(rows.schema),
                            commit_properties=CommitProperties(max_commit_retries=0),
                            post_commithook_properties=_hooks())
            return True
        except CommitFailedError:
            return False

    def delete_batch(self, name: str, batch: str, run_ids: list[str] | None = None) -> None:
        """Delete the rows of ``batch`` (of ``run_ids`` only, when given) from a table."""
        from deltalake.exceptions import CommitFailedError

        pred = f"batch = '{_safe(batch)}'"
        if run_ids:
            pred += " AND run_id IN (" + ", ".join(f"'{_safe(r)}'" for r in run_ids) + ")"
        for attempt in range(APPEND_ATTEMPTS):
            try:
                self.table(name).delete(pred, post_commithook_properties=_hooks())
                return
            except CommitFailedError:  # a concurrent commit touched what it read: read again
                self.retries += 1
                time.sleep(min(0.2, 0.005 * (attempt + 1)))
        raise LakeError(f"{self.lake}: the rows of batch {batch} could not be deleted from {name} "
                        f"after {APPEND_ATTEMPTS} attempts")

    # -- reading ----------------------------------------------------------------------------------------
    def snapshot(self, name: str, version: int | None = None) -> Snapshot:
        """The table's live files at ``version`` (None: the latest), read from its log directly
        (catalogs/delta_log.py); a log that reader does not parse is read by delta-rs, and either listing is
        checked alike (delta_log.check): what perflake cannot read exactly is one LakeError."""
        fs, strip = self._arrow_fs()
        reader = LogReader(strip(self.table_uri(name)), KEY_COLUMN[name], fs,
                           tag=repr(sorted((self.options or {}).items())) if fs is not None else "")
        try:
            return reader.snapshot(version)
        except Refused as exc:
            raise LakeError(f"{self.lake}: {exc}") from None
        except Unsupported:
            pass
        try:
            t = self.table(name) if version is None else self.at(name, version)
            snap = _from_delta_rs(t, KEY_COLUMN[name])
            check(self.table_uri(name) + "/_delta_log", snap)
        except Refused as exc:
            raise LakeError(f"{self.lake}: {exc}") from None
        except LakeError:
            raise
        except Exception as exc:  # delta-rs cannot read the log either
            raise LakeError(f"{self.lake}: the {name} table's Delta log cannot be read "
                            f"({str(exc).splitlines()[0]})") from None
        return snap

    def version(self, name: str) -> int:
        """The table's latest version."""
        return self.snapshot(name).version

    def live_files(self, name: str, version: int | None = None) -> pa.Table:
        """The table's live data files at ``version`` (None: the latest): ``path`` (absolute, as delta-rs and
        fsspec address it), ``size``, ``min_batch``, ``max_batch``: the range of the table's key column in the
        file (``batch``; ``invocation`` in the ingest log), from the files' statistics."""
        return self.live(name, version)[1]

    def live(self, name: str, version: int | None = None) -> tuple[int, pa.Table]:
        """(the version read, :meth:`live_files` of it): both from one reading of the log.  A file whose
        statistics do not give its key range (written with statistics off or on other columns, by another
        engine) is read once to learn it (:func:`_ranges`): never skipped."""
        snap = self.snapshot(name, version)
        key = (self.table_uri(name), snap.version, snap.identity)
        with _LOCK:
            hit = _LIVE.get(key) if snap.identity is not None else None
        if hit is not None:  # a version's files never change
            return snap.version, hit
        base = self.table_uri(name)
        items = [(p if "://" in p else f"{base}/{p}", v) for p, v in snap.files.items()]
        unknown = [(p, v[0]) for p, v in items if v[1] is None or v[2] is None]
        found = self._ranges(name, unknown) if unknown else {}
        items = [(p, found.get(p, v)) for p, v in items]
        out = pa.table({"path": pa.array([p for p, _ in items], pa.string()),
                        "size": pa.array([v[0] for _, v in items], pa.int64()),
                        "min_batch": pa.array([v[1] for _, v in items], pa.string()),
                        "max_batch": pa.array([v[2] for _, v in items], pa.string())})
        with _LOCK:
            if len(_LIVE) > 256:
                _LIVE.clear()
            _LIVE[key] = out
        return snap.version, out

    def _ranges(self, name: str, files: list[tuple[str, int]]) -> dict[str, tuple]:
        """path -> (size, min, max) of the key column, read from the files themselves (each once per process:
        a data file never changes).  A file with rows lacking the key (appended by another tool) is refused:
        no version of the runs table says whose rows they are.  An empty file gives (size, None, None)."""
        import pyarrow.compute as pc

        col = KEY_COLUMN[name]
        out = {}
        for path, size in files:
            with _LOCK:
                hit = _RANGES.get((path, size))
            if hit is None:
                try:
                    values = self.read_files([path], [col]).column(col)
                except KeyError:
                    values = pa.nulls(1, pa.string())
                except Exception as exc:
                    raise LakeError(f"{self.lake}: {path}: cannot be read ({str(exc).splitlines()[0]})") from None
                if values.null_count:
                    raise LakeError(f"{self.lake}: {path}: {values.null_count} row(s) of the {name} table have no "
                                    f"{col} (written by another tool?): perflake cannot tell which run they belong "
                                    "to; delete them or give them the batch of their run")
                lohi = pc.min_max(values).as_py() if len(values) else {"min": None, "max": None}
                hit = (size, lohi["min"], lohi["max"])
                with _LOCK:
                    _RANGES[(path, size)] = hit
            out[path] = hit
        return out

    def file_uris(self, name: str, version: int | None = None) -> list[str]:
        return self.live_files(name, version).column("path").to_pylist()

    def files_of(self, name: str, batch: str) -> list[str]:
        """The live files of a table whose batch range holds ``batch`` (its own, or compacted ones)."""
        files = self.live_files(name)
        return [p for p, lo, hi in zip(*(files.column(c).to_pylist() for c in ("path", "min_batch", "max_batch")))
                if lo is not None and lo <= batch <= hi]

    def read_files(self, paths: list[str], columns: list[str] | None = None) -> pa.Table:
        """Parquet files of the lake read by Arrow (local paths natively; object stores through pyarrow's
        filesystem built from the same options)."""
        if not paths:
            return pa.table({c: pa.array([], pa.string()) for c in columns or []})
        fs, strip = self._arrow_fs()
        tables = []
        for p in paths:  # file by file: pq.read_table builds a dataset (and loads pyarrow.dataset) for each
            with pq.ParquetFile(strip(p), filesystem=fs) as fh:
                tables.append(_plain(fh.read(columns=columns)))
        return pa.concat_tables(tables, promote_options="permissive")

    def _arrow_fs(self):
        if "://" not in self.uri or self.uri.startswith("file://"):
            return None, lambda p: p.removeprefix("file://")
        if self._fs is None:  # built once: each read of the runs table or the log would build it again
            import pyarrow.fs as pafs

            self._fs = pafs.FileSystem.from_uri(self.uri)[0] if not self.options else _s3(self.options)
        return self._fs, lambda p: p.split("://", 1)[1]

    def schema(self, name: str) -> pa.Schema:
        return pa.schema(self.table(name).schema())

    def read(self, name: str, as_of=None, columns: list[str] | None = None) -> pa.Table:
        return pa.table(self.at(name, as_of).to_pyarrow_table(columns=columns))


def _from_delta_rs(t, key: str) -> Snapshot:
    """delta-rs's listing of a table as a Snapshot (for delta_log.check and the callers)."""
    acts = pa.table(t.get_add_actions(flatten=True))
    cols = [acts.column(c).to_pylist() if c in acts.column_names else [None] * acts.num_rows
            for c in ("path", "size_bytes", f"min.{key}", f"max.{key}")]
    proto, meta = t.protocol(), t.metadata()
    vectors = pa.table(t.deletion_vectors()).column("filepath").to_pylist()
    files = {file_name(p): (s, lo, hi) if isinstance(lo, str) and isinstance(hi, str) else (s, None, None)
             for p, s, lo, hi in zip(*cols)}
    return Snapshot(t.version(), files, None,
                    {"minReaderVersion": proto.min_reader_version, "readerFeatures": proto.reader_features or []},
                    {"partitionColumns": list(meta.partition_columns), "configuration": dict(meta.configuration)},
                    set(vectors))


def _plain(table: pa.Table) -> pa.Table:
    """Dictionary columns (a data file's ``batch``: catalog.batch_column) as their values' type, and the types
    other writers use for the same data (polars and delta-rs write ``string_view``, others ``large_string`` or
    ``large_list``, also inside lists and structs) as perflake's own: files of several writers then concatenate."""
    for i, f in enumerate(table.schema):
        typ = _plain_type(f.type)
        if typ != f.type:
            table = table.set_column(i, pa.field(f.name, typ), table.column(i).cast(typ))
    return table


def _plain_type(typ: pa.DataType) -> pa.DataType:
    if pa.types.is_dictionary(typ):
        return _plain_type(typ.value_type)
    if pa.types.is_string_view(typ) or pa.types.is_large_string(typ):
        return pa.string()
    if pa.types.is_large_list(typ) or pa.types.is_list_view(typ) or pa.types.is_large_list_view(typ) \
            or pa.types.is_list(typ):
        return pa.list_(_plain_type(typ.value_type))
    if pa.types.is_struct(typ):
        return pa.struct([pa.field(typ.field(k).name, _plain_type(typ.field(k).type)) for k in range(typ.num_fields)])
    return typ


def to_schema(data: pa.Table, schema: pa.Schema) -> pa.Table:
    """``data`` with exactly the columns of ``schema``, in its order and types (absent ones null): what a replace
    commit must write (a predicate overwrite takes the table's whole schema)."""
    cols = [data.column(f.name).cast(f.type) if f.name in data.schema.names else pa.nulls(data.num_rows, f.type)
            for f in schema]
    return pa.Table.from_arrays(cols, schema=schema)


def _safe(value: str) -> str:
    """Batch and run ids are [0-9A-Za-z-] (new_batch_id, content hashes): anything else is a bug, not input."""
    if not all(c.isalnum() or c == "-" for c in value):
        raise ValueError(f"unexpected id {value!r}")
    return value


def _s3(options: dict):
    import pyarrow.fs as pafs

    endpoint = options.get("AWS_ENDPOINT_URL")
    scheme = "http" if endpoint and endpoint.startswith("http://") else "https"
    return pafs.S3FileSystem(access_key=options.get("AWS_ACCESS_KEY_ID"),
                             secret_key=options.get("AWS_SECRET_ACCESS_KEY"),
                             session_token=options.get("AWS_SESSION_TOKEN"),
                             endpoint_override=endpoint.split("://", 1)[1] if endpoint else None, scheme=scheme,
                             region=options.get("AWS_REGION", "us-east-1"), allow_bucket_creation=False)
