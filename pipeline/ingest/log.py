"""The ingest log: one row per input an ingest attempted, one commit per ingest invocation.

The lake's ``ingest_log`` Delta table (schema ``INGEST_LOG_SCHEMA``) gains the rows of an invocation in one
append at its end, so a reader sees whole invocations only; the view ``ingest_log`` of
:meth:`perflake.Lake.connect` reads the version current when it connected (compaction merges its files, whose
old copies stay readable until a vacuum).  An *attempt* is an input that was hashed
(and read, unless its bytes were already in the lake or had failed before).  An input whose files' names,
sizes, mtimes, ctimes and inodes (its ``stat_key``) are those of its last logged attempt is not hashed again
and not logged again: an invocation that finds nothing new writes nothing.

The log is also the ingest's memory: :func:`read_history` gives the last attempt per source path and the
content hashes that failed under this perflake version, so that a failed input is retried only when it
changed (or when asked, or after an upgrade of perflake).

Failure classes (:func:`perflake.ingest.task.failure_class`), and when each is tried again:

* the input is bad (truncated, damaged, not a profile; a reader's error): *permanent* -- logged once, then
  skipped (``skipped_failed``, exit 0) until its bytes change (a ``touch`` alone makes it hashed again, not
  read), ``--retry-failed`` is given, or perflake is upgraded;
* out of memory reading or normalising it (``MemoryError``, pyarrow's ArrowMemoryError, DuckDB's
  OutOfMemoryException): *permanent* as well.  The same input on the same machine would fail the same way on
  every scheduled run, re-reading it each time; "out of memory reading it (N bytes)" says how big it was;
* the lake's disk full (ENOSPC, EDQUOT, or EFBIG under a file-size limit; from Python, delta-rs,
  object_store, pyarrow or DuckDB, found by errno or by the OS's words in their messages): the ingest stops
  (exit 2; committed runs stay, the batch being written is not visible) and the inputs of that batch are
  logged as failed with "disk full writing the lake", *permanent*: not the input's fault, but retrying them on
  every cron run while the disk stays full is what must not happen.  After freeing space, run once with
  ``--retry-failed`` (or they are tried when they change).  The inputs the stopped ingest did not reach are
  not logged: the next run tries them, so each input meets a full disk once.  When the disk is too full for
  the log row itself, the summary says so (``log_error``) and nothing is remembered: the next run tries
  again, and fails the same way, without crashing;
* permission denied, a symbolic link loop, a dangling symbolic link (found by the scan or on reading):
  *permanent* until the entry changes -- a ``chmod`` changes its ctime, hence its ``stat_key``;
* any other I/O error (EIO, a network file system going away): *transient*, tried again on the next run.
"""

from __future__ import annotations

import datetime as dt
import socket
from dataclasses import dataclass, field

import pyarrow as pa

from perflake._version import __version__
from perflake.catalogs.catalog import Catalog
from perflake.catalogs.schema import INGEST_LOG_SCHEMA

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
    transient: bool = False  # a passing I/O failure, not the input's: tried again next time
    writing: bool = False  # failed writing the lake (disk full, out of memory): the ingest stopped there
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


def read_history(catalog: Catalog) -> History:
    """The last attempt per source path, and the content hashes that failed under this perflake version."""
    table = catalog.read_log(_HISTORY_COLUMNS).sort_by("attempted_at")
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
    """Record the attempts of one invocation (nothing when there were none: one commit); returns the id."""
    if not outcomes:
        return None
    catalog.write_log(to_table(invocation, outcomes))
    return invocation
