"""The ingest log: one row per input an ingest attempted, one Parquet file per ingest invocation.

``<root>/ingest_log/part-<invocation>.parquet`` (schema ``INGEST_LOG_SCHEMA``) is written once, at the end of
an invocation, under a temporary name and renamed, so a reader sees whole files only; the view
``ingest_log`` of :meth:`perflake.Lake.connect` reads them all.  An *attempt* is an input that was hashed
(and read, unless its bytes were already in the lake or had failed before).  An input whose files' names,
sizes, mtimes, ctimes and inodes (its ``stat_key``) are those of its last logged attempt is not hashed again
and not logged again: an invocation that finds nothing new writes no file.

The log is also the ingest's memory: :func:`read_history` gives the last attempt per source path and the
content hashes that failed under this perflake version, so that a failed input is retried only when it
changed (or when asked, or after an upgrade of perflake).  A *transient* failure (memory, I/O: the machine,
not the input) is retried on the next run.  When a lake holds more than ``COMPACT_PARTS`` log files they
are merged into one under the commit lock (the merged file is written before the merged ones are removed:
a reader may see a row twice for that instant, never lose one).
"""

from __future__ import annotations

import datetime as dt
import socket
from dataclasses import dataclass, field

import pyarrow as pa

from perflake._version import __version__
from perflake.catalogs.catalog import Catalog, new_batch_id
from perflake.catalogs.schema import INGEST_LOG_SCHEMA

COMPACT_PARTS = 64  # merge the log's files when there are more than this
PRESENT, FAILED_BEFORE = "present", "failed_before"  # why an input was skipped


@dataclass
class Outcome:
    """What happened to one input (a run's file or directory)."""

    source: str
    kind: str | None
    status: str  # ingested | skipped | failed
    reason: str | None = None
    sha: str | None = None
    run_id: str | None = None
    duration_s: float = 0.0
    nbytes: int | None = None
    stat_key: str | None = None
    skip: str | None = None  # PRESENT or FAILED_BEFORE when skipped
    transient: bool = False  # failed for want of memory or I/O, not because of the input: tried again next time
    attempted_at: dt.datetime = field(default_factory=lambda: dt.datetime.now(dt.timezone.utc))


@dataclass
class Previous:
    """The last logged attempt of one source path."""

    stat_key: str | None
    sha: str | None
    run_id: str | None  # the run it was ingested as, or found present as
    status: str
    reason: str | None
    version: str
    transient: bool


@dataclass
class History:
    latest: dict[str, Previous] = field(default_factory=dict)  # source path -> its last attempt
    failed: dict[str, str] = field(default_factory=dict)  # content hash -> reason, failed under this version

    def failed_before(self, prev: Previous | None, stat_key: str) -> str | None:
        """The earlier failure's reason when the input at this path is unchanged since it failed."""
        if prev is None or prev.stat_key != stat_key:
            return None
        if prev.sha is not None and prev.sha in self.failed:
            return self.failed[prev.sha]
        if prev.status == "failed" and prev.version == __version__ and not prev.transient:
            return prev.reason
        return None


_HISTORY_COLUMNS = ["attempted_at", "source", "stat_key", "content_sha256", "run_id", "status", "reason",
                    "perflake_version", "transient"]


def _read_parts(catalog: Catalog, columns: list[str] | None, paths: list[str] | None = None) -> pa.Table:
    """The rows of the log files ``paths`` (default: all of them; when one is removed by a concurrent
    compaction meanwhile, list them again: the merged file holds its rows)."""
    for attempt in range(5):
        try:
            tables = []
            for path in catalog.log_parts() if paths is None else paths:
                tables.append(catalog.read_parquet(path, columns))
            break
        except FileNotFoundError:
            if attempt == 4 or paths is not None:
                raise
    if not tables:
        schema = INGEST_LOG_SCHEMA if columns is None else pa.schema([INGEST_LOG_SCHEMA.field(c) for c in columns])
        return pa.Table.from_batches([], schema=schema)
    return pa.concat_tables(tables, promote_options="permissive")


def read_history(catalog: Catalog) -> History:
    """The last attempt per source path, and the content hashes that failed under this perflake version."""
    table = _read_parts(catalog, _HISTORY_COLUMNS).sort_by("attempted_at")
    history = History()
    cols = [table.column(c).to_pylist() for c in _HISTORY_COLUMNS[1:]]
    for source, key, sha, run_id, status, reason, version, transient in zip(*cols):
        history.latest[source] = Previous(key, sha, run_id, status, reason, version, bool(transient))
        if sha is not None and status == "failed" and version == __version__ and not transient:
            history.failed[sha] = reason
    return history


def to_table(invocation: str, outcomes: list[Outcome]) -> pa.Table:
    host = socket.gethostname()
    rows = [{"attempted_at": o.attempted_at, "invocation": invocation, "source": o.source, "format": o.kind,
             "content_sha256": o.sha, "status": o.status, "reason": o.reason, "transient": o.transient,
             "run_id": o.run_id, "duration_s": round(o.duration_s, 6), "input_bytes": o.nbytes,
             "stat_key": o.stat_key, "perflake_version": __version__, "host": host} for o in outcomes]
    return pa.Table.from_pylist(rows, schema=INGEST_LOG_SCHEMA)


def write(catalog: Catalog, invocation: str, outcomes: list[Outcome]) -> str | None:
    """Record the attempts of one invocation (nothing when there were none); returns the file written."""
    if not outcomes:
        return None
    return catalog.write_log(invocation, to_table(invocation, outcomes))


def compact(catalog: Catalog, *, lock_timeout: float | None = None, threshold: int | None = None) -> bool:
    """Merge the log's files into one when there are more than ``threshold`` (default ``COMPACT_PARTS``;
    local lakes only, under the commit lock so that two ingests never merge at once); returns whether it did."""
    threshold = COMPACT_PARTS if threshold is None else threshold
    if not catalog.local or len(catalog.log_parts()) <= threshold:
        return False
    with catalog.commit_lock(lock_timeout):
        parts = catalog.log_parts()
        if len(parts) <= threshold:
            return False
        merged = _read_parts(catalog, None, parts).sort_by([("attempted_at", "ascending"), ("source", "ascending")])
        new = catalog.write_log(new_batch_id(), merged.cast(INGEST_LOG_SCHEMA))
        for path in parts:
            if path != new:
                catalog.fs.rm(path)
    return True
