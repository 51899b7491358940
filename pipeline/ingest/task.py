"""One ingest task, as a Dask worker runs it: hash -> read -> normalise -> write the batch's data files (nodes,
edges, metrics, and the rank summary of its metrics rows: perflake.ingest.summarize).

A task gets plain values (the lake's :class:`Catalog`, a list of :class:`Candidate` runs, the content hashes
already in the lake) and returns a small :class:`TaskResult`: one outcome per candidate and, per batch it
wrote, the batch id and the catalog rows to commit.  It never touches the runs catalog: the calling process
is the one writer, and commits each batch under the commit lock (:mod:`perflake.ingest.driver`).  The data files a
task wrote are invisible until then; a batch that is not committed is removed (or left to ``vacuum`` when
the caller dies).
"""

from __future__ import annotations

import datetime as dt
import errno
import hashlib
import json
import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import pyarrow as pa

from perflake._version import __version__
from perflake.catalogs import metric_columns
from perflake.catalogs.catalog import Catalog, new_batch_id
from perflake.catalogs.schema import METRICS_KEY_SCHEMA, RANK_SUMMARY, SCHEMA_VERSION
from perflake.catalogs.well_known import promote
from perflake.errors import FormatNotRecognized, LakeError, PerflakeError, ReaderError
from perflake.ingest.log import FAILED_BEFORE, PRESENT, Outcome
from perflake.ingest.normalize import RunFacts, normalize_many
from perflake.ingest.summarize import summarize
from perflake.readers import get_reader
from perflake.vocabulary import EXCLUSIVE, INCLUSIVE, ProfileRows

BATCH_ROWS = 4_000_000  # reader value rows buffered before a batch is normalised and written
BATCH_RUNS = 5_000  # runs per batch at most


@dataclass
class Candidate:
    """A run to hash and, when new, read (plain values: it travels to Dask workers)."""

    kind: str
    path: str
    files: list[str]
    nbytes: int
    stat_key: str


@dataclass
class Known:
    """What the lake already knows: content hashes present (-> run id) and those that failed before."""

    present: dict[str, str]
    failed: dict[str, str]  # content hash -> reason (under this perflake version)
    retry_failed: bool = False


@dataclass
class BatchResult:
    batch: str  # id of the data files written (nodes/edges/metrics); nothing committed yet
    rows: list[dict]  # catalog rows of its runs, sorted by run_id
    outcomes: list[Outcome]  # status "ingested" once committed


@dataclass
class TaskResult:
    outcomes: list[Outcome] = field(default_factory=list)  # skipped or failed: final
    batches: list[BatchResult] = field(default_factory=list)
    error: Exception | None = None  # the lake could not be written: the caller commits the batches, then raises


def hash_run(files: list[str], base: str) -> tuple[str, int, str | None]:
    """sha256 over (relative path, size, bytes) of every input file in sorted order; the total bytes; and,
    for a single-file run, the hash earlier perflake versions gave it (it also covered the file's name; used
    only to recognise runs already in older lakes).

    The relative path of a directory run's files is taken from the directory; a single-file run's file has
    the empty name, so the same bytes under another name are the same run.
    """
    single = not os.path.isdir(base)
    h = hashlib.sha256()
    legacy = hashlib.sha256() if single else None
    total = 0
    for f in sorted(files):
        rel = "" if single else os.path.relpath(f, base)
        size = os.path.getsize(f)
        h.update(rel.encode() + b"\0" + str(size).encode() + b"\0")
        if legacy is not None:
            legacy.update(os.path.basename(f).encode() + b"\0" + str(size).encode() + b"\0")
        with open(f, "rb") as fh:
            while chunk := fh.read(1 << 23):  # 8 MiB at a time: a 1 GB input is not held in memory
                h.update(chunk)
                if legacy is not None:
                    legacy.update(chunk)
        total += size
    return h.hexdigest(), total, legacy.hexdigest() if legacy is not None else None


def run_row(run_id, sha, batch, source, kind, reader, facts: RunFacts, metadata, n_files, nbytes) -> dict:
    """The catalog row of one run."""
    return {
        "run_id": run_id,
        "content_sha256": sha,
        "batch": batch,
        "source": os.path.abspath(source),
        "format": kind,
        "reader_version": reader.version,
        "schema_version": SCHEMA_VERSION,
        "perflake_version": __version__,
        "n_files": n_files,
        "input_bytes": nbytes,
        "ranks": facts.ranks,
        "threads": facts.threads,
        "n_nodes": facts.n_nodes,
        "metrics": [{"name": m.name, "role": m.role, "unit": m.unit, "pair": m.pair} for m in facts.metric_info],
        "exc_metrics": [m.name for m in facts.metric_info if m.role == EXCLUSIVE],
        "inc_metrics": [m.name for m in facts.metric_info if m.role == INCLUSIVE],
        **promote(metadata, facts.ranks),
        "metadata": json.dumps(metadata, default=str, sort_keys=True),
        "ingested_at": dt.datetime.now(dt.timezone.utc),
    }


# -- failure classes --------------------------------------------------------------------------------------------
# A failure of the machine that retrying on every scheduled run would only repeat: permanent for the input it
# hit (logged once, retried when the input changes, with --retry-failed, or after an upgrade: ingest/log.py).
OUT_OF_MEMORY, DISK_FULL = "out of memory", "disk full"
PERMISSION, LINK_LOOP = "permission denied", "symbolic link loop"
_ERRNOS = {errno.ENOMEM: OUT_OF_MEMORY, errno.ENOSPC: DISK_FULL, errno.EDQUOT: DISK_FULL, errno.EFBIG: DISK_FULL,
           errno.EACCES: PERMISSION, errno.EPERM: PERMISSION, errno.ELOOP: LINK_LOOP}
# how delta-rs (Rust's io::Error: "... (os error 28)"), object_store, pyarrow and DuckDB word them
_TEXTS = ((DISK_FULL, ("no space left on device", "disk quota exceeded", "file too large", "os error 28)",
                       "os error 122)", "os error 27)")),
          (OUT_OF_MEMORY, ("out of memory", "cannot allocate memory", "bad_alloc", "os error 12)",
                           "failed to allocate")),
          (PERMISSION, ("permission denied", "operation not permitted", "os error 13)", "os error 1)")),
          (LINK_LOOP, ("too many levels of symbolic links", "os error 40)")))


def _chain(exc: BaseException):
    """``exc`` and the exceptions it was raised from or during (a reader's ``raise ReaderError(...) from None``
    still keeps the OSError it caught as its context)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def failure_class(exc: BaseException) -> str | None:
    """OUT_OF_MEMORY, DISK_FULL, PERMISSION or LINK_LOOP when ``exc`` (or what it was raised from) is one,
    else None.  Read from the type and errno, or else from the text: delta-rs, object_store and DuckDB raise
    their own exception types (DeltaError, a Rust panic, duckdb.IOException) naming the OS error in words."""
    import duckdb

    for e in _chain(exc):
        if isinstance(e, (MemoryError, duckdb.OutOfMemoryException)):  # pyarrow's ArrowMemoryError included
            return OUT_OF_MEMORY
        if isinstance(e, OSError) and e.errno in _ERRNOS:
            return _ERRNOS[e.errno]
    for e in _chain(exc):
        if isinstance(e, PerflakeError):  # perflake's own words (they may quote a profile): their causes decide
            continue
        text = str(e).lower()
        for cls, words in _TEXTS:
            if any(w in text for w in words):
                return cls
    return None


def is_transient(exc: BaseException) -> bool:
    """A passing failure of the machine (tried again on the next run): an I/O error other than the classes
    above (which stay until the input changes: retrying every run would repeat them)."""
    import duckdb

    if failure_class(exc) is not None:
        return False
    if isinstance(exc, duckdb.IOException):
        return True
    return isinstance(exc, OSError) and not isinstance(exc, (IsADirectoryError, NotADirectoryError))


def disk_full_detail(exc: BaseException) -> str:
    """The OS's words for a disk-full error ("No space left on device", "Disk quota exceeded")."""
    for e in _chain(exc):
        if isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
            return os.strerror(e.errno)
    text = str(exc).lower()
    return next((w for w in ("Disk quota exceeded", "File too large") if w.lower() in text), "No space left on device")


def failure_reason(path: str, exc: BaseException, *, nbytes: int | None = None, doing: str = "reading it") -> str:
    """One line naming the input and what is wrong (the class of the failure in words, when it has one)."""
    cls = failure_class(exc)
    size = f" ({nbytes:,} bytes)" if nbytes is not None else ""
    if cls == OUT_OF_MEMORY:
        return f"{path}: out of memory {doing}{size}"
    if cls == DISK_FULL:  # reading: a reader's temporary files (DuckDB spilling) found no room
        where = "writing the lake" if "lake" in doing else f"while {doing}"
        return f"{path}: disk full {where} ({disk_full_detail(exc)})"
    if cls in (PERMISSION, LINK_LOOP):
        name = next((e.filename for e in _chain(exc) if isinstance(e, OSError) and e.filename), None)
        inner = f" ({name})" if name and os.path.abspath(os.fspath(name)) != os.path.abspath(path) else ""
        return f"{path}: {cls}{inner}"
    if isinstance(exc, (ReaderError, FormatNotRecognized)):
        return str(exc)
    if isinstance(exc, PerflakeError):
        return f"{path}: {exc}"
    if isinstance(exc, (OSError, ValueError, UnicodeError)):
        return f"{path}: {type(exc).__name__}: {exc}"
    return f"{path}: internal error (a perflake bug; retried after an upgrade): {type(exc).__name__}: {exc}"


def stops_ingest(exc: BaseException) -> bool:
    """A failure writing the lake that the next batch would meet too: the ingest stops (exit 2)."""
    return failure_class(exc) in (DISK_FULL, OUT_OF_MEMORY)


def is_panic(exc: BaseException) -> bool:
    """A Rust panic raised into Python by delta-rs (pyo3's PanicException derives from BaseException)."""
    return type(exc).__name__ == "PanicException"


def fail(outcomes, exc: BaseException, *, doing: str) -> None:
    """Mark ``outcomes`` failed by ``exc`` (a failure writing the lake: the class decides whether it lasts)."""
    for o in outcomes:
        o.status, o.skip = "failed", None
        o.reason = failure_reason(o.source, exc, nbytes=o.nbytes, doing=doing)
        o.transient, o.writing = is_transient(exc), True


@dataclass
class _Pending:
    candidate: Candidate
    sha: str
    reader: object
    rows: ProfileRows
    outcome: Outcome


class _Batch:
    """Parsed runs waiting to be normalised together and written as one batch's data files."""

    def __init__(self):
        self.pending: list[_Pending] = []
        self.n_values = 0

    def add(self, item: _Pending) -> None:
        self.pending.append(item)
        self.n_values += item.rows.values.num_rows

    def full(self) -> bool:
        return self.n_values >= BATCH_ROWS or len(self.pending) >= BATCH_RUNS

    def _normalize(self, failed: list[Outcome]):
        try:
            return normalize_many([(p.sha[:16], p.rows) for p in self.pending])
        except Exception:  # a bad run (ReaderError) or a bug on one run's rows: it alone must fail
            pass
        good = []  # isolate the run(s) the batch failed on, keep the rest
        for p in self.pending:
            try:
                normalize_many([(p.sha[:16], p.rows)])
                good.append(p)
            except Exception as exc:
                p.outcome.status = "failed"
                p.outcome.reason = failure_reason(p.candidate.path, exc, nbytes=p.candidate.nbytes,
                                                  doing="normalising it")
                p.outcome.transient = is_transient(exc)
                failed.append(p.outcome)
        self.pending = good
        return normalize_many([(p.sha[:16], p.rows) for p in good]) if good else None

    def write(self, catalog: Catalog, result: TaskResult) -> None:
        """Normalise and write the data files (not the catalog rows); on any error nothing is left."""
        t0 = time.perf_counter()
        batch = self._normalize(result.outcomes)
        if batch is None:
            return
        batch_id = new_batch_id()
        try:  # the four tables' appends are commits of four Delta tables: side by side (delta-rs frees the GIL),
            # the longest first, and the catalog rows built meanwhile
            tables = ((RANK_SUMMARY, summarize(batch.metrics)), ("nodes", batch.nodes), ("edges", batch.edges),
                      ("metrics", batch.metrics))
            with ThreadPoolExecutor(len(tables)) as pool:
                writes = [pool.submit(write_metrics, catalog, batch_id, table) if name == "metrics" else
                          pool.submit(catalog.write_table, name, batch_id, table) for name, table in tables]
                rows = [run_row(p.sha[:16], p.sha, batch_id, p.candidate.path, p.candidate.kind, p.reader,
                                batch.runs[p.sha[:16]], p.rows.metadata, len(p.candidate.files), p.candidate.nbytes)
                        for p in self.pending]
                for done in writes:
                    done.result()
        except BaseException as exc:
            catalog.discard(batch_id)
            if stops_ingest(exc):  # disk full (or memory): its runs failed, logged so as not to be retried
                fail([p.outcome for p in self.pending], exc, doing="writing it to the lake")
                result.outcomes += [p.outcome for p in self.pending]
            raise
        share = (time.perf_counter() - t0) / max(1, self.n_values)
        for p in self.pending:
            p.outcome.duration_s += share * p.rows.values.num_rows
        result.batches.append(BatchResult(batch_id, sorted(rows, key=lambda r: r["run_id"]),
                                          [p.outcome for p in self.pending]))


def write_metrics(catalog: Catalog, batch: str, metrics: pa.Table, *, attempts: int = 20) -> None:
    """Append a batch's metrics rows (metric columns named by the metrics' names) with each metric in its
    column of the lake (catalogs/metric_columns.py: its plain name, or an encoded one where the name collides
    with a column the lake has under case-insensitive comparison).  The mapping is made against the table's
    schema as read now; when the append fails (a concurrent ingest added a colliding column first: delta-rs
    refuses the duplicate name), the schema is read again and, if the mapping changed, the append retried."""
    names = [c for c in metrics.column_names if c not in METRICS_KEY_SCHEMA.names]
    for attempt in range(attempts):
        try:
            cols = metric_columns.assign(names, catalog.tables.schema("metrics").names)
        except ValueError as exc:
            raise LakeError(f"{catalog.url}: {exc}") from None
        stored = metrics.rename_columns([cols.get(c, c) if c not in METRICS_KEY_SCHEMA.names else c
                                         for c in metrics.column_names])
        try:
            catalog.write_table("metrics", batch, stored)
            return
        except Exception:
            if attempt == attempts - 1 or metric_columns.assign(names, catalog.tables.schema("metrics").names) == cols:
                raise  # not a column collision: the error it is


def _attempt(c: Candidate, known: Known, seen: dict[str, str]):
    """Hash and (when new) read one run: returns (outcome, pending or None)."""
    t0 = time.perf_counter()
    out = Outcome(os.path.abspath(c.path), c.kind, "ingested", nbytes=c.nbytes, stat_key=c.stat_key)
    try:
        sha, out.nbytes, legacy = hash_run(c.files, c.path)
        out.sha = sha
        present = known.present.get(sha) or seen.get(sha) or (legacy and known.present.get(legacy))
        if present:
            out.status, out.skip, out.run_id = "skipped", PRESENT, present
            out.reason = f"already present as run {present}"
            return out, None
        if sha in known.failed and not known.retry_failed:
            out.status, out.skip, out.reason = "skipped", FAILED_BEFORE, f"failed before: {known.failed[sha]}"
            return out, None
        reader = get_reader(c.kind)
        rows = reader.read(c.path)
    except Exception as exc:  # a bad input, or a reader bug on it: this input fails, the others go on
        out.status, out.transient = "failed", is_transient(exc)
        out.reason = failure_reason(c.path, exc, nbytes=out.nbytes or c.nbytes)
        return out, None
    finally:
        out.duration_s = time.perf_counter() - t0
    seen[sha] = out.run_id = sha[:16]
    return out, _Pending(c, sha, reader, rows, out)


def run_task(catalog: Catalog, candidates: list[Candidate], known: Known) -> TaskResult:
    """Hash, read, normalise and write the runs of ``candidates``; see the module docstring.  An error
    writing the lake stops the task: it returns the batches written so far and the error (the runs not
    written are not reported, so the next ingest tries them again)."""
    result, seen, batch = TaskResult(), {}, _Batch()
    try:
        for c in candidates:
            catalog.check_created()  # a new lake that could not be created: stop now, not after reading it all
            outcome, pending = _attempt(c, known, seen)
            if pending is None:
                result.outcomes.append(outcome)
                continue
            batch.add(pending)
            if batch.full():
                batch.write(catalog, result)
                batch = _Batch()
        if batch.pending:
            batch.write(catalog, result)
    except Exception as exc:
        result.error = exc
    except BaseException as exc:  # a Rust panic out of delta-rs: an error writing the lake like any other
        if not is_panic(exc):
            raise
        result.error = exc
    return result
