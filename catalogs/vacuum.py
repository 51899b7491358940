"""Removing what no reader needs (``perflake vacuum``), without ever removing what one does.

Two steps, both judged against the lake as it is NOW (the latest version of every table; a Catalog opened
``as_of`` a version is refused: its runs table is an old one, in which later commits look uncommitted):

1. **Uncommitted batches**: the rows of batches that the latest runs table does not name (a crashed or killed
   ingest) and whose batch id is older than ``older_than`` seconds (a younger one may belong to an ingest that is
   still running) are deleted (a Delta delete commit per table).  On a local lake this happens under the lake's
   commit lock, so no ingest commits such a batch between the decision and the delete; on S3 (no lock) an
   ``older_than`` shorter than an ingest's write-to-commit time (seconds) can race with a running ingest.
2. **Files**: per table, the files in its folder are listed, then its Delta log is read (JSON commits and the
   newest checkpoint, whose ``remove`` tombstones count too), and a file is deleted when
   * it is not referenced by the table's latest version (never a live file), and
   * a ``remove`` action tombstoned it at a time older than ``now - older_than`` (the later of the action's
     ``deletionTimestamp`` and its commit's time: every version that used the file was superseded before the
     cutoff, so no version committed, or current, within the retention window uses it) -- for the tables other
     than runs, older also than the commit of the runs version current at the cutoff (:func:`runs_moment`:
     a reader ``as_of`` a runs version reads them as they were at that commit, catalogs/snapshots.py), or
   * NO log entry references it (an untracked file: the data a failed or lost commit wrote, or a killed writer's)
     and it was last modified before ``now - older_than``.
   Files and folders whose name starts with ``_`` or ``.`` (``_delta_log/``...) are never touched (Delta's rule).
   The retention is honoured to the second (delta-rs' own vacuum takes whole hours).  No commit records it.

What is reported (the return value; ``perflake vacuum`` prints one line each), every item once:
``<table>/batch=<id>`` for each uncommitted batch whose rows this call deleted, and ``<table>/<file>`` for each
file this call deleted from storage -- except the files that held only a batch reported in the same call (they
are that entry).  A file is deleted once, so a later call never reports it again; a batch's files tombstoned by
a call whose retention kept them are reported by the later call that deletes them.

A writer beside a vacuum whose ``older_than`` is shorter than that writer's write-to-commit time can lose the
files it is about to commit (as with Delta's own VACUUM and a retention below the default): keep ``older_than``
above the longest write (the default, an hour, is).
"""

from __future__ import annotations

import datetime as dt
import json
import math
import time

from perflake.catalogs.delta_log import _CHECKPOINT, _COMMIT, file_name
from perflake.catalogs.schema import DATA_TABLES, RUNS, TABLES
from perflake.errors import UsageError

LOCK_TIMEOUT = 600.0  # seconds to wait for an ingest's commit (milliseconds) to release the commit lock
SLACK_S = 600.0  # commits this much older than the cutoff are read too (clocks of the store and of writers differ)


def committed_batches(cat) -> set[str]:
    """The batches the LATEST version of the runs table names (never a pinned or ``as_of`` one)."""
    _version, live = cat.tables.live(RUNS)
    paths = live.column("path").to_pylist()
    if not paths:
        return set()
    return set(cat.tables.read_files(paths, ["batch"]).column("batch").to_pylist())


def leftovers(cat, older_than: float) -> list[str]:
    """Uncommitted batches (a crashed or killed ingest) older than ``older_than`` seconds -- younger ones may
    belong to an ingest that is still running -- as ``<table>/batch=<id>`` entries.  Committedness is judged
    from the latest runs table."""
    committed = committed_batches(cat)
    cutoff = dt.datetime.now(dt.timezone.utc) - dt.timedelta(seconds=older_than)
    found = []
    for name in DATA_TABLES:
        files = cat.tables.live_files(name)
        for lo, hi in zip(files.column("min_batch").to_pylist(), files.column("max_batch").to_pylist()):
            if lo is not None and lo == hi and lo not in committed and _batch_time(lo) <= cutoff:
                found.append(f"{name}/batch={lo}")
    return sorted(set(found))


def vacuum(cat, older_than: float = 3600.0) -> list[str]:
    """Delete the rows of :func:`leftovers`, then the files no version of a table younger than ``older_than``
    seconds uses (see the module).  Returns what was removed, each item once."""
    if cat.as_of is not None:
        raise UsageError(f"{cat.url}: a lake opened as_of={cat.as_of!r} cannot be vacuumed (vacuum works on the "
                         "latest version: open the lake without as_of)")
    try:
        older_than = float(older_than)
    except (TypeError, ValueError):
        older_than = math.nan
    if not math.isfinite(older_than) or older_than < 0:
        raise UsageError(f"older_than: a number of seconds >= 0 is needed, not {older_than!r}")
    cat._files.clear()
    covered: dict[str, set[str]] = {}  # table -> files of batches reported as <table>/batch=<id> (not again)
    with _commit_lock(cat):
        removed = leftovers(cat, older_than)
        for entry in removed:
            name, batch = entry.split("/batch=")
            live = cat.tables.live_files(name)
            cols = (live.column(c).to_pylist() for c in ("path", "min_batch", "max_batch"))
            covered.setdefault(name, set()).update(_relative(cat, name, p) for p, lo, hi in zip(*cols)
                                                   if lo == hi == batch)  # the batch's own files
            cat.tables.delete_batch(name, batch)
    cat._files.clear()
    cutoff = time.time() - older_than  # taken after the deletes: with older_than=0 their files go now too
    moment = runs_moment(cat, cutoff)
    for name in TABLES:
        replaced = cutoff if name == RUNS else min(cutoff, moment)
        for rel in sweep(cat, name, cutoff, replaced_before=replaced):
            if rel not in covered.get(name, ()):
                removed.append(f"{name}/{rel}")
    return removed


def runs_moment(cat, cutoff: float) -> float:
    """The commit time (POSIX seconds) of the runs version that was the latest at ``cutoff`` -- the oldest runs
    version a reader may still ask for -- or of the oldest version in the log if all are younger.  A reader
    ``as_of`` a runs version reads every other table as it was when that version was committed
    (catalogs/snapshots.py), so the other tables keep every file replaced after this moment.  -inf (keep every
    replaced file) when the runs log cannot be read."""
    log_dir = f"{cat.root}/{RUNS}/_delta_log"
    listing = _find(cat, log_dir)
    commits = _versions(listing)
    order = sorted(commits)
    try:
        times = {}

        def at(i: int) -> float:
            if i not in times:
                v = order[i]
                times[i] = _commit_ms(_commit_actions(cat, f"{log_dir}/{commits[v]}"), _mtime(listing[commits[v]]))
            return times[i] / 1000

        if not order:
            return -math.inf
        if at(0) > cutoff:
            return at(0)
        lo, hi = 0, len(order) - 1  # the newest commit at or before the cutoff (commit times grow with versions)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if at(mid) <= cutoff:
                lo = mid
            else:
                hi = mid - 1
        return at(lo)
    except (FileNotFoundError, ValueError):
        return -math.inf


# -- the files of one table ------------------------------------------------------------------------------------------
class _Log:
    """What a table's log says about its files: the latest version's live files, each tombstoned file's removal
    time (ms), every other file a log entry names, and whether files may be named that this reader cannot see
    (deletion vectors, sidecars: then no untracked file is deleted)."""

    def __init__(self):
        self.version = -1
        self.live: set[str] = set()
        self.removed_ms: dict[str, int] = {}
        self.named: set[str] = set()
        self.opaque = False

    def tombstone(self, path: str, ms: int) -> None:
        self.named.add(path)
        self.removed_ms[path] = max(ms, self.removed_ms.get(path, 0))


def sweep(cat, name: str, cutoff: float, *, replaced_before: float | None = None, dry_run: bool = False) -> list[str]:
    """Delete (unless ``dry_run``) the files of table ``name`` that no version current at or after
    ``replaced_before`` (a POSIX time; default ``cutoff``) uses -- tombstoned before it -- and the files no log
    entry references modified before ``cutoff``.  Returns their paths relative to the table folder, sorted.  A log
    this cannot read in full deletes nothing."""
    replaced_before = cutoff if replaced_before is None else min(cutoff, replaced_before)
    folder = f"{cat.root}/{name}"
    log_dir = f"{folder}/_delta_log"
    listing = _find(cat, folder)  # the files first, then the log: a file committed meanwhile is in the log read
    logs = {rel.split("/", 1)[1]: info for rel, info in listing.items() if rel.startswith("_delta_log/")}
    log = _read_log(cat, log_dir, logs, replaced_before)
    if log is None:
        return []
    doomed = []
    for rel, info in listing.items():
        if any(part[:1] in ("_", ".") for part in rel.split("/")) or rel in log.live:
            continue
        if rel in log.removed_ms:
            if log.removed_ms[rel] < replaced_before * 1000:
                doomed.append(rel)
        elif rel not in log.named and not log.opaque and _mtime(info) < cutoff:
            doomed.append(rel)
    if not doomed or dry_run:
        return sorted(doomed)
    # commits that landed since the log was read: what they add stays (a writer committing an older file)
    doomed, newer = set(doomed), _versions(_find(cat, log_dir))
    for v in sorted(v for v in newer if v > log.version):
        try:
            actions = _commit_actions(cat, f"{log_dir}/{newer[v]}")
        except FileNotFoundError:
            continue
        doomed -= {_rel(a.get("path"), cat, folder) for kind, a in actions if kind in ("add", "cdc")}
    gone = []
    for rel in sorted(doomed):
        try:
            cat.fs.rm_file(f"{folder}/{rel}")
        except FileNotFoundError:  # another vacuum deleted it first: it reports it
            continue
        gone.append(rel)
    for path in (folder, log_dir):
        cat.fs.invalidate_cache(path)
    return gone


def _read_log(cat, log_dir: str, logs: dict[str, dict], cutoff: float) -> _Log | None:
    """The log of a table from its listing (name -> info): the newest complete checkpoint, every commit after it,
    and every commit modified after ``cutoff - SLACK_S`` (whose removals may be younger than the cutoff).  None
    when it cannot be read in full (no commit, a gap, a file gone meanwhile: nothing is deleted then)."""
    commits = _versions(logs)
    parts: dict[tuple[int, int], list[str]] = {}
    for fname in logs:
        m = _CHECKPOINT.match(fname)
        if m:
            parts.setdefault((int(m.group(1)), int(m.group(3) or 1)), []).append(fname)
    checkpoints = {v: sorted(found) for (v, n), found in parts.items() if len(found) == n}
    latest = max([*commits, *checkpoints], default=-1)
    if latest < 0:
        return None
    log = _Log()
    base = max(checkpoints, default=-1)
    if any(v not in commits for v in range(base + 1, latest + 1)):
        return None  # a gap: the latest version's files are not known
    try:
        if base >= 0:
            _apply_checkpoint(cat, log, [f"{log_dir}/{f}" for f in checkpoints[base]], log_dir)
        for v in sorted(commits):
            if v > base or _mtime(logs[commits[v]]) >= cutoff - SLACK_S:
                _apply_commit(cat, log, v > base, f"{log_dir}/{commits[v]}", _mtime(logs[commits[v]]), log_dir)
    except FileNotFoundError:  # a log cleanup meanwhile: try next time
        return None
    log.version = latest
    return log


def _apply_commit(cat, log: _Log, replay: bool, path: str, mtime: float, log_dir: str) -> None:
    """One JSON commit: its adds and removes name files; its removals are timed by the later of their
    ``deletionTimestamp`` and the commit's own time; after the checkpoint (``replay``) it changes the live set."""
    actions = _commit_actions(cat, path)
    folder = log_dir.rsplit("/", 1)[0]
    committed_ms = max(_commit_ms(actions, 0.0), int(mtime * 1000) if math.isfinite(mtime) else 0)
    for kind, action in actions:
        rel = _rel(action.get("path"), cat, folder) if kind in ("add", "remove", "cdc") else None
        if kind == "add" and rel is not None:
            if action.get("deletionVector"):
                log.opaque = True
            log.named.add(rel)
            if replay:
                log.live.add(rel)
                log.removed_ms.pop(rel, None)
        elif kind == "remove" and rel is not None:
            log.tombstone(rel, max(int(action.get("deletionTimestamp") or 0), committed_ms))
            if replay:
                log.live.discard(rel)
        elif kind == "cdc" and rel is not None:
            log.named.add(rel)


def _apply_checkpoint(cat, log: _Log, paths: list[str], log_dir: str) -> None:
    """The newest checkpoint: its adds are the live files at its version, its removes tombstones."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = log_dir.rsplit("/", 1)[0]
    for path in paths:
        with pq.ParquetFile(pa.BufferReader(cat.fs.cat_file(path))) as fh:
            names = fh.schema_arrow.names
            add_fields = {f.name for f in fh.schema_arrow.field("add").type} if "add" in names else set()
            cols = [c for c in ("add.path", "remove.path", "remove.deletionTimestamp") if c.split(".")[0] in names]
            if "deletionVector" in add_fields:
                cols.append("add.deletionVector.pathOrInlineDv")
            if "sidecar" in names:
                cols.append("sidecar.path")
            rows = fh.read(columns=cols).to_pylist() if cols else []
        for row in rows:
            add, remove = row.get("add"), row.get("remove")
            if row.get("sidecar"):
                log.opaque = True  # a v2 checkpoint's adds live in sidecar files: not read here
            if add and add.get("path") is not None:
                rel = _rel(add["path"], cat, folder)
                if add.get("deletionVector"):
                    log.opaque = True
                if rel is not None:
                    log.named.add(rel)
                    log.live.add(rel)
            if remove and remove.get("path") is not None:
                rel = _rel(remove["path"], cat, folder)
                if rel is not None:
                    log.tombstone(rel, int(remove.get("deletionTimestamp") or 0))


def _commit_actions(cat, path: str) -> list[tuple[str, dict]]:
    out = []
    for line in cat.fs.cat_file(path).splitlines():
        if line.strip():
            action = json.loads(line)
            out.extend(action.items())
    return out


def _commit_ms(actions: list[tuple[str, dict]], mtime: float) -> int:
    """A commit's time (ms): its commitInfo's ``inCommitTimestamp`` or ``timestamp`` (as catalogs/snapshots.py
    reads it), else the commit file's modification time."""
    for kind, action in actions:
        if kind == "commitInfo":
            ts = action.get("inCommitTimestamp", action.get("timestamp"))
            if isinstance(ts, int):
                return ts
    return int(mtime * 1000) if math.isfinite(mtime) else 0


def _versions(logs: dict[str, dict]) -> dict[int, str]:
    """version -> commit file name, among a log folder's names."""
    out = {}
    for fname in logs:
        m = _COMMIT.match(fname)
        if m:
            out[int(m.group(1))] = fname
    return out


def _find(cat, folder: str) -> dict[str, dict]:
    """Every file below ``folder`` (relative path -> fsspec info), read afresh: s3fs keeps listings (its dircache),
    and answers even ``cat_file`` of a file missing from a cached listing of its folder with FileNotFoundError."""
    for path in (folder, f"{folder}/_delta_log"):
        cat.fs.invalidate_cache(path)
    try:
        found = cat.fs.find(folder, detail=True)
    except FileNotFoundError:
        return {}
    base = cat.fs._strip_protocol(folder).rstrip("/") + "/"
    return {p[len(base):]: info for p, info in found.items() if p.startswith(base) and info.get("type") != "directory"}


def _rel(path: str | None, cat, folder: str) -> str | None:
    """A log entry's path relative to the table folder (unquoted), or None when it lies outside it."""
    if not path:
        return None
    name = file_name(path)
    if "://" not in name:
        return name
    stripped = cat.fs._strip_protocol(name).rstrip("/")
    base = cat.fs._strip_protocol(folder).rstrip("/") + "/"
    return stripped[len(base):] if stripped.startswith(base) else None


def _relative(cat, name: str, path: str) -> str:
    """A live-file path of :meth:`DeltaTables.live_files` relative to the table folder."""
    base = f"{cat.tables.table_uri(name)}/"
    if path.startswith(base):
        return path[len(base):]
    return _rel(path, cat, f"{cat.root}/{name}") or path


def _mtime(info: dict) -> float:
    """An fsspec file info's modification time (POSIX seconds): local ``mtime``, S3 ``LastModified``."""
    for key in ("mtime", "LastModified", "last_modified", "updated", "modified"):
        value = info.get(key)
        if value is None:
            continue
        if isinstance(value, dt.datetime):
            return (value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)).timestamp()
        if isinstance(value, str):
            return dt.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        return float(value)
    return math.inf  # unknown: treated as new (kept)


def _commit_lock(cat):
    """The lake's commit lock on a local lake (what Catalog.commit_lock takes; taken directly so that code
    wrapping that method, e.g. a test running a vacuum inside it, does not re-enter here); none on S3."""
    import contextlib

    if not cat.local:
        return contextlib.nullcontext()
    from perflake.catalogs.concurrency import file_lock

    return file_lock(f"{cat.root}/.commit.lock", LOCK_TIMEOUT, f"{cat.url}: an ingest has held the commit lock")


def _batch_time(batch: str) -> dt.datetime:
    try:
        return dt.datetime.strptime(batch.split("-")[0], "%Y%m%dT%H%M%S%f").replace(tzinfo=dt.timezone.utc)
    except ValueError:
        return dt.datetime.min.replace(tzinfo=dt.timezone.utc)
