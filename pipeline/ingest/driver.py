"""scan -> plan -> (in parallel) hash, read, normalise, write data files -> commit the catalog rows -> log.

Idempotent: a run's id is the hash of its input files' bytes, so the same bytes ingested again (from any
path, under any name) are skipped.  Atomic: rows are written per batch and become visible only when the
batch's catalog file is committed; the calling process is the one writer of the catalog, under the commit
lock, and re-checks there what concurrent ingests committed meanwhile.  Every attempt is recorded in the
ingest log (:mod:`perflake.ingest.log`), which also lets an input that failed be retried only when it
changed (``retry_failed=True`` retries it anyway).  A failure writing the lake that every further batch would
meet too (disk full, out of memory) stops the ingest with :class:`perflake.errors.LakeFull` (or
IngestStopped): what was committed stays, the batch being written is not visible, its inputs are logged as
failed (when the log can still be written) and the error carries the report.  Parallelism:
:mod:`perflake.ingest.task` tasks run by Dask (:func:`perflake.engine.parallel.fan_out`).
"""

from __future__ import annotations

import math
import os
import sys
import time

import pyarrow as pa

from perflake.catalogs.catalog import Catalog, new_batch_id
from perflake.catalogs.compaction import maybe_compact
from perflake.catalogs.schema import RUNS_SCHEMA
from perflake.engine import resources
from perflake.errors import IngestStopped, LakeFull, PerflakeError
from perflake.ingest.log import PRESENT, History, Outcome, read_history, write
from perflake.ingest.report import IngestReport
from perflake.ingest.scan import SymlinkEscape, describe, scan
from perflake.ingest.task import (
    BATCH_ROWS,
    BATCH_RUNS,
    DISK_FULL,
    PERMISSION,
    BatchResult,
    Candidate,
    Known,
    disk_full_detail,
    fail,
    failure_class,
    failure_reason,
    hash_run,
    is_panic,
    is_transient,
    run_task,
    stops_ingest,
)

__all__ = ["BATCH_ROWS", "BATCH_RUNS", "IngestReport", "content_hash", "find_runs", "ingest"]

LOCK_TIMEOUT = 600.0  # seconds to wait for the commit lock: a commit takes milliseconds, so this means a hang
TASK_BYTES = 64 << 20  # input bytes per task at most (a bigger run is a task of its own)
MIN_TASK_BYTES = 4 << 20  # less input than this per worker is not worth splitting
DEFAULT_SCHEDULER = "threads"  # measured: see README "Scheduled ingestion"


def find_runs(paths, *, follow_symlinks: bool = False) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """Expand paths into (format, path) runs; a directory that is not itself a run is walked (symlinks out
    of it are not followed unless ``follow_symlinks``).  Returns (runs, problems): problems are (path,
    reason) for explicit paths that hold no profile."""
    found = scan(paths, follow_symlinks=follow_symlinks)
    return [(kind, path) for kind, path, _root in found.runs], found.problems


def content_hash(files: list[str], base: str) -> tuple[str, int]:
    """sha256 over (relative path, size, bytes) of every input file, in sorted order; and the total bytes."""
    sha, total, _legacy = hash_run(files, base)
    return sha, total


class _Progress:
    """A one-line progress bar on a terminal (stderr); silent otherwise."""

    def __init__(self, total: int, enabled: bool):
        self.total, self.done, self.enabled = total, 0, enabled and total > 1 and sys.stderr.isatty()
        self.t0 = time.monotonic()

    def step(self, n: int = 1) -> None:
        self.done = min(self.total, self.done + n)
        if self.enabled:
            width = 30
            filled = int(width * self.done / self.total)
            rate = self.done / max(time.monotonic() - self.t0, 1e-9)
            sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} {rate:.1f} runs/s")
            sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\n")


def _plan(catalog: Catalog, paths, report: IngestReport, *, follow_symlinks: bool, retry_failed: bool,
          history: History, run_ids: set[str], min_age: float = 0.0) -> list[Candidate]:
    """The runs to hash and read; what is unchanged since its last logged attempt is settled here, and
    what was modified less than ``min_age`` seconds ago is left for a later ingest (not logged)."""
    found = scan(paths, follow_symlinks=follow_symlinks)
    now = time.time()
    report.failed += found.problems  # reported, not logged: nothing was read (a cron job's empty folder)
    report.ignored += found.ignored
    report.unrecognised += found.unrecognised
    for path, reason, key in found.unreadable:  # logged like a failed input: once, until it changes
        source = os.path.abspath(path)
        if not retry_failed and (before := history.failed_before(history.latest.get(source), key)) is not None:
            report.skipped_failed.append((source, before))
        else:
            report.outcomes.append(Outcome(source, None, "failed", reason, stat_key=key))
    candidates = []
    for kind, path, root in found.runs:
        try:
            files = describe(kind, path, root, follow_symlinks=follow_symlinks)
        except SymlinkEscape as exc:
            report.ignored.append((path, str(exc)))
            continue
        except OSError as exc:
            report.outcomes.append(Outcome(os.path.abspath(path), kind, "failed", failure_reason(path, exc),
                                           transient=is_transient(exc)))
            continue
        prev = history.latest.get(os.path.abspath(path))
        if min_age > 0 and now - files.newest < min_age:  # still being written, perhaps
            report.settling.append((os.path.abspath(path), max(now - files.newest, 0.0)))
        elif prev is not None and prev.stat_key == files.stat_key and prev.run_id in run_ids:
            report.skipped.append((os.path.abspath(path), prev.run_id))
            report.unchanged += 1
        elif not retry_failed and (reason := history.failed_before(prev, files.stat_key)) is not None:
            report.skipped_failed.append((os.path.abspath(path), reason))
        else:
            candidates.append(Candidate(kind, path, files.files, files.nbytes, files.stat_key))
    return candidates


def _chunks(candidates: list[Candidate], parallelism: int) -> list[list[Candidate]]:
    """Tasks of about equal input bytes: enough to keep ``parallelism`` workers busy, none above TASK_BYTES
    unless one run is bigger, and no split of small work (tiny ingests stay one task, one batch)."""
    total = sum(c.nbytes for c in candidates)
    if parallelism <= 1:
        return [candidates]
    n = max(math.ceil(total / TASK_BYTES), min(parallelism, total // MIN_TASK_BYTES), 1)
    target, tasks, chunk, size = total / n, [], [], 0
    for c in candidates:
        chunk.append(c)
        size += c.nbytes
        if size >= target * (len(tasks) + 1) - 1e-9 and len(tasks) < n - 1:
            tasks.append(chunk)
            chunk = []
    return [t for t in (*tasks, chunk) if t]


class _Committer:
    """The one writer of the catalog in this process: commits each task's batch by compare-and-swap on the runs
    table (catalogs/delta.py), dropping the runs another ingest committed first (their rows are appended again
    as a new batch without them, so a committed batch holds exactly its runs' rows).  On a local lake the
    commit lock spares concurrent ingests lost races; on S3 the compare-and-swap alone decides."""

    def __init__(self, catalog: Catalog, lock_timeout: float | None, *, new: bool = False):
        self.catalog, self.lock_timeout = catalog, lock_timeout
        self.conflicts = 0  # lost compare-and-swaps (another commit came first): retried
        self.present = {} if new else catalog.runs_head()[1]  # content hash -> run id

    def commit(self, result: BatchResult) -> None:
        cat = self.catalog
        with cat.commit_lock(self.lock_timeout):
            if not cat.has_batch(result.batch):
                for o in result.outcomes:  # removed by a `perflake vacuum` with a short --older-than
                    o.status, o.transient = "failed", True
                    o.reason = f"{o.source}: the batch's data files were removed before the commit (tried again)"
                cat.discard(result.batch)
                return
            batch, rows, committed = result.batch, list(result.rows), set()
            try:
                while True:
                    head, self.present = cat.runs_head()
                    keep = [r for r in rows if r["content_sha256"] not in self.present]
                    if keep and len(keep) < len(rows):
                        new = new_batch_id()
                        cat.subset_batch(batch, new, [r["run_id"] for r in keep])
                        cat.discard(batch)
                        batch, rows = new, [{**r, "batch": new} for r in keep]
                        continue  # a new head: the subset took time
                    if not keep:
                        cat.discard(batch)
                        break
                    if cat.commit(head, pa.Table.from_pylist(keep, schema=RUNS_SCHEMA)):
                        self.present.update((r["content_sha256"], r["run_id"]) for r in keep)
                        committed = {r["content_sha256"] for r in keep}
                        break
                    self.conflicts += 1
            except BaseException:
                cat.discard(batch)
                raise
            for o in result.outcomes:
                if o.sha in self.present and o.sha not in committed:
                    o.status, o.skip, o.run_id = "skipped", PRESENT, self.present[o.sha]
                    o.reason = f"already present as run {o.run_id}"


def _scheduler(catalog: Catalog, scheduler):
    """The Dask scheduler to use: a memory:// lake lives in this process only, so its tasks do too."""
    from perflake.engine.parallel import LOCAL_SCHEDULERS

    if scheduler is None:
        scheduler = DEFAULT_SCHEDULER
    if isinstance(scheduler, str) and scheduler.lower() not in LOCAL_SCHEDULERS and "://" not in scheduler:
        raise ValueError(f"scheduler {scheduler!r}: expected threads, processes, synchronous, 'tcp://host:port' "
                         "or a distributed.Client")
    if "memory" in (catalog.fs.protocol if isinstance(catalog.fs.protocol, tuple) else (catalog.fs.protocol,)):
        return "synchronous" if scheduler in ("synchronous", "sync") else "threads"
    return scheduler


def _parallelism(scheduler) -> int:
    if isinstance(scheduler, str) and scheduler.lower() in ("synchronous", "sync", "single-threaded"):
        return 1
    if scheduler is not None and not isinstance(scheduler, str):  # a distributed.Client
        return max(1, sum(scheduler.nthreads().values()))
    return resources.workers(os.cpu_count() or 1)


def _run(catalog: Catalog, candidates: list[Candidate], known: Known, scheduler, bar: _Progress, stop):
    """Run the tasks, yielding their results wave by wave (as many tasks as workers at a time), so that the
    caller commits each wave's batches before the next one starts: no written batch waits long for its
    commit (``perflake vacuum`` removes uncommitted files older than an hour).  No new wave once ``stop()``."""
    from perflake.engine.parallel import fan_out

    client = None
    if isinstance(scheduler, str) and "://" in scheduler:
        from perflake.engine.parallel import connect_client

        client = scheduler = connect_client(scheduler)  # within CONNECT_SECONDS, or one line
    try:
        parallelism = _parallelism(scheduler)
        chunks = _chunks(candidates, parallelism)
        if len(chunks) == 1:  # one task: run it here (no pool to start)
            yield run_task(catalog, chunks[0], known)
            bar.step(len(candidates))
            return
        for start in range(0, len(chunks), parallelism):
            if stop():
                return
            wave = chunks[start:start + parallelism]
            tasks = [{"catalog": catalog, "candidates": c, "known": known} for c in wave]
            with _TaskCallback(bar, len(candidates) / len(chunks)):
                yield from fan_out(run_task, tasks, scheduler=scheduler)
    finally:
        if client is not None:
            client.close()


class _TaskCallback:
    """Steps the progress bar as Dask's local schedulers finish tasks (distributed ones do not call it)."""

    def __init__(self, bar: _Progress, runs_per_task: float):
        self.bar, self.per_task, self.cb = bar, runs_per_task, None

    def __enter__(self):
        from dask.callbacks import Callback

        self.cb = Callback(posttask=lambda key, result, dsk, state, worker_id: self.bar.step(round(self.per_task)))
        self.cb.__enter__()
        return self

    def __exit__(self, *exc):
        self.cb.__exit__(*exc)


def ingest(catalog: Catalog, paths, *, progress: bool = True, retry_failed: bool = False,
           follow_symlinks: bool = False, scheduler=None, lock_timeout: float | None = LOCK_TIMEOUT,
           min_age: float = 0.0) -> IngestReport:
    """Ingest every run found under ``paths`` into the lake of ``catalog``.

    Parameters
    ----------
    retry_failed : read again inputs that failed before although they did not change.
    follow_symlinks : follow symlinked directories and symlinks out of a scanned directory.
    scheduler : None (local threads), "threads", "processes", "synchronous", "tcp://host:port" or a
        ``distributed.Client``; workers parse and normalise, this process commits.
    lock_timeout : seconds to wait for the commit lock (LockTimeout after that); None waits forever.
    min_age : leave for a later ingest the inputs with a file (or the run directory) modified less than
        this many seconds ago: a run that a job is still writing is not ingested half-written (its
        complete bytes would later be a second, different run).  Listed in ``report.settling``.
    """
    t0 = time.perf_counter()
    report = IngestReport(invocation=new_batch_id())
    new = catalog.creating()  # a lake being created (in the background) has no runs and no log to read yet
    history = History() if new else read_history(catalog)
    committer = _Committer(catalog, lock_timeout, new=new)
    candidates = _plan(catalog, paths, report, follow_symlinks=follow_symlinks, retry_failed=retry_failed,
                       history=history, run_ids=set(committer.present.values()), min_age=min_age)
    known = Known(dict(committer.present), history.failed, retry_failed)
    bar = _Progress(len(candidates), progress)
    error = None
    try:
        results = _run(catalog, candidates, known, _scheduler(catalog, scheduler), bar,
                       stop=lambda: error is not None) if candidates else ()
        for result in results:
            report.outcomes += result.outcomes
            for br in result.batches:
                if error is None:
                    try:
                        committer.commit(br)
                        report.outcomes += br.outcomes
                        continue
                    except BaseException as exc:
                        if not isinstance(exc, Exception) and not is_panic(exc):
                            raise
                        error = exc
                        if stops_ingest(exc):  # its inputs failed for it: logged, not retried every run
                            fail(br.outcomes, exc, doing="committing it to the lake")
                            report.outcomes += br.outcomes
                catalog.discard(br.batch)  # after a failed commit: not recorded, tried again next time
            error = error or result.error
    except BaseException as exc:
        bar.close()
        _finish(catalog, report, t0, failing=True)
        _attach(exc, report)
        raise
    bar.close()
    _finish(catalog, report, t0, failing=error is not None)
    if error is not None:
        stopped = _stopped(catalog, error, report)
        if stopped is error:
            raise error
        raise stopped from error
    if report.ingested or report.outcomes:
        try:
            maybe_compact(catalog)  # housekeeping: small files past a threshold merged (catalogs/compaction.py)
        except Exception as exc:
            if failure_class(exc) != DISK_FULL:
                raise
            report.notes.append(f"{catalog.url}: compaction skipped: disk full")  # the next ingest tries again
    return report


def _attach(exc: BaseException, report: IngestReport) -> None:
    """Let the caller of a failing ingest see what it did (the CLI prints the summary, --json the lists)."""
    try:
        if getattr(exc, "report", None) is None:
            exc.report = report
    except (AttributeError, TypeError):
        pass


def _stopped(catalog: Catalog, error: BaseException, report: IngestReport) -> BaseException:
    """The error an ingest that could not write its lake raises: one line, with the report attached."""
    cls = failure_class(error)
    if isinstance(error, PerflakeError) and cls != DISK_FULL:
        _attach(error, report)
        return error
    failed = sum(1 for o in report.outcomes if o.status == "failed" and o.writing)
    logged = ("logged as failed: tried again when they change or with --retry-failed" if report.log_error is None
              else "the ingest log could not be written either, so they are tried again next time")
    tail = f"; {failed} input(s) not ingested, {logged}" if failed else ""
    if cls == DISK_FULL:
        return LakeFull(f"{catalog.url}: disk full writing the lake ({disk_full_detail(error)}){tail}", report)
    if stops_ingest(error):
        return IngestStopped(f"{catalog.url}: out of memory writing the lake{tail}", report)
    if cls == PERMISSION:
        return IngestStopped(f"{catalog.url}: permission denied writing the lake", report)
    if is_panic(error):
        first = (str(error).strip().splitlines() or [""])[0]
        return IngestStopped(f"{catalog.url}: delta-rs failed writing the lake: {first}", report)
    _attach(error, report)
    return error


def _finish(catalog: Catalog, report: IngestReport, t0: float, *, failing: bool) -> None:
    """Fill the report from the outcomes and write the log (best effort when the ingest is failing)."""
    for o in report.outcomes:
        if o.status == "ingested":
            report.ingested.append(o.run_id)
        elif o.status == "failed":
            report.failed.append((o.source, o.reason))
        elif o.skip == PRESENT:
            report.skipped.append((o.source, o.run_id))
        else:
            report.skipped_failed.append((o.source, o.reason))
    report.duration_s = time.perf_counter() - t0
    try:
        if write(catalog, report.invocation, report.outcomes) is not None:  # one commit to the ingest_log table
            report.log_file = f"{catalog.url.rstrip('/')}/ingest_log@{report.invocation}"
    except BaseException as exc:
        if not isinstance(exc, Exception) and not is_panic(exc):
            raise
        cls = failure_class(exc)
        first = (str(exc).strip().splitlines() or [""])[0]
        report.log_error = (f"disk full: {disk_full_detail(exc)}" if cls == DISK_FULL else
                            f"{type(exc).__name__}: {first}")
        if not failing and cls != DISK_FULL:
            raise
        if not failing:  # the runs are committed; only their log is missing: the next ingest finds them present
            raise LakeFull(f"{catalog.url}: disk full writing the ingest log; the runs ingested are committed", report)
