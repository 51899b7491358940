"""A Delta table's live files read from its log directly, without delta-rs: the read path of every question.

Reading a snapshot needs no writer: the Delta protocol's log (``<table>/_delta_log/``) is a sequence of JSON
commits ``<version:020d>.json`` (one action per line) and, every ``delta.checkpointInterval`` commits, a Parquet
checkpoint ``<version:020d>.checkpoint.parquet`` (or ``.checkpoint.<part:010d>.<parts:010d>.parquet``) holding
the table's whole state at that version.  The live files of version V are the ``add`` actions of the newest
complete checkpoint at or below V, then of the commits after it up to V, minus the ``remove`` actions met on the
way (PROTOCOL.md, "Action Reconciliation"; within one commit removes apply before adds, so a file re-added with a
new deletion vector stays).  delta-rs does the same, but costs ``import deltalake`` (12 ms) and ~1.5 ms per table
opened: most of a small question in a fresh process.  Writing stays with delta-rs (catalogs/delta.py).

What a snapshot may hold, and what happens otherwise (:func:`check`, applied to delta-rs's listing too):

* a file's key-column range comes from its statistics (``stats`` JSON, or ``stats_parsed`` in a checkpoint);
  without them (statistics off, on other columns, truncated away) the range is None: *unknown*, and the caller
  must read the file to learn it -- a file is never skipped for lacking statistics;
* a ``protocol`` and a ``metaData`` action are required (a log without them is not a table);
* reader version 1, 2 or 3 with the reader features of :data:`READER_FEATURES`; column mapping must be off
  (the Parquet files would hold physical column names), no partition columns (their values are not in the
  files), and no live file may carry a deletion vector (its deleted rows are still in the file): each of these
  raises :class:`Refused`, which no other reader can fix for perflake's file-level reads;
* a log this module does not parse (v2 checkpoints, commits missing before the version asked) raises
  :class:`Unsupported`: the caller asks delta-rs, whose listing then goes through the same :func:`check`.

Snapshots of the latest version are kept per table and brought forward by reading only the commits since (one
``stat`` of the next commit's name says whether there is one); a table deleted and created again at the same
path (a new first commit) is read afresh.
"""

from __future__ import annotations

import json
import os
import re
import threading
import urllib.parse
from dataclasses import dataclass, field

_COMMIT = re.compile(r"^(\d{20})\.json$")
_CHECKPOINT = re.compile(r"^(\d{20})\.checkpoint(?:\.(\d{10})\.(\d{10}))?\.parquet$")
# reader features whose meaning this module handles: timestampNtz and vacuumProtocolCheck change nothing in which
# files are live; deletionVectors and columnMapping are checked (a live vector, a mapping mode other than none:
# refused); v2Checkpoint changes the log's structure (delta-rs reads it)
READER_FEATURES = frozenset({"timestampNtz", "vacuumProtocolCheck", "deletionVectors", "columnMapping"})
DELEGATED_FEATURES = frozenset({"v2Checkpoint"})
_LOCK = threading.Lock()
_CACHE: dict[str, "Snapshot"] = {}  # table location -> the newest snapshot read of it


class Unsupported(Exception):
    """This log uses a structure this reader does not parse: ask delta-rs."""


class Refused(Exception):
    """The table holds something perflake cannot read exactly from its Parquet files (one line: why)."""


@dataclass
class Snapshot:
    """One version of a table: ``files`` maps each live file's path (relative to the table, unquoted, or an
    absolute URI) to (size in bytes, min, max of the table's key column from the file's statistics, or None
    when they do not say).  ``protocol``/``metadata``: the table's protocol and metaData actions in force
    (metadata: ``partitionColumns`` and ``configuration``); ``vectors``: live files with a deletion vector."""

    version: int
    files: dict[str, tuple[int, str | None, str | None]] = field(default_factory=dict)
    identity: tuple | None = None
    protocol: dict | None = None
    metadata: dict | None = None
    vectors: set[str] = field(default_factory=set)

    def copy(self) -> "Snapshot":
        return Snapshot(self.version, dict(self.files), self.identity, self.protocol, self.metadata,
                        set(self.vectors))


class LogReader:
    """The log of the table at ``location`` (a local path, or a path on ``fs``, a pyarrow filesystem).
    ``key``: the column whose min/max each file's statistics give (``batch``; ``invocation`` in the ingest log)."""

    def __init__(self, location: str, key: str, fs=None, tag: str = ""):
        self.location, self.key, self.fs = location.rstrip("/"), key, fs
        self.log = f"{self.location}/_delta_log"
        self.cache_key = f"{tag}|{self.location}"  # ``tag``: what else tells stores apart (an endpoint...)

    # -- storage ------------------------------------------------------------------------------------------------
    def _list(self) -> tuple[dict[int, str], dict[int, list[str]], tuple | None]:
        """(version -> commit name, version -> names of its complete checkpoint, identity of the first commit)."""
        if self.fs is None:
            try:
                names = os.listdir(self.log)
            except FileNotFoundError:
                raise Unsupported(f"{self.log} does not exist") from None
            ident = identity(self.location)
        else:
            import pyarrow.fs as pafs

            infos = self.fs.get_file_info(pafs.FileSelector(self.log, allow_not_found=True))
            names = [i.base_name for i in infos]
            ident = next(((i.size, i.mtime_ns) for i in infos if i.base_name == f"{0:020d}.json"), None)
        commits, parts = {}, {}
        for name in names:
            m = _COMMIT.match(name)
            if m:
                commits[int(m.group(1))] = name
                continue
            m = _CHECKPOINT.match(name)
            if m:
                parts.setdefault((int(m.group(1)), int(m.group(3) or 1)), []).append(name)
        checkpoints = {v: sorted(found) for (v, n), found in parts.items() if len(found) == n}
        return commits, checkpoints, ident

    def _read(self, name: str) -> bytes:
        path = f"{self.log}/{name}"
        if self.fs is None:
            with open(path, "rb") as fh:
                return fh.read()
        with self.fs.open_input_stream(path) as fh:
            return fh.read()

    # -- snapshots -------------------------------------------------------------------------------------------
    def snapshot(self, version: int | None = None) -> Snapshot:
        """The table at ``version`` (None: the latest), checked (:func:`check`)."""
        if version is None and self.fs is None:
            snap = self._forward()
            if snap is not None:
                return snap
        commits, checkpoints, ident = self._list()
        latest = max([*commits, *checkpoints], default=-1)
        if latest < 0:
            raise Unsupported(f"{self.log}: no commit")
        target = latest if version is None else version
        if target > latest or target < 0:
            raise Unsupported(f"{self.log}: no version {target}")
        with _LOCK:
            cached = _CACHE.get(self.cache_key)
        if cached is not None and ident is not None and cached.identity == ident and cached.version <= target \
                and all(v in commits for v in range(cached.version + 1, target + 1)):
            if cached.version == target:
                return cached
            snap = cached.copy()
        else:
            base = max((v for v in checkpoints if v <= target), default=None)
            snap = Snapshot(-1, {}, ident)
            if base is not None:
                try:
                    self._apply_checkpoint(snap, checkpoints[base])
                except Unsupported:
                    raise
                except Exception as exc:  # a damaged checkpoint: delta-rs may still read the table
                    raise Unsupported(f"{self.log}: checkpoint {base} unreadable ({exc})") from None
                snap.version = base
            if any(v not in commits for v in range(snap.version + 1, target + 1)):
                raise Unsupported(f"{self.log}: commits missing before version {target}")
        for v in range(snap.version + 1, target + 1):
            self._apply_commit(snap, self._read(commits[v]))
            snap.version = v
        check(self.log, snap)
        if version is None and ident is not None:
            self._keep(snap)
        return snap

    def _forward(self) -> Snapshot | None:
        """The latest snapshot from the cached one on a local disk: one ``stat`` per new commit, and one of the
        first commit (the table's identity).  None when nothing usable is cached."""
        with _LOCK:
            cached = _CACHE.get(self.cache_key)
        if cached is None or cached.identity is None or identity(self.location) != cached.identity:
            return None
        snap, v = None, cached.version + 1
        while True:
            try:
                data = self._read(f"{v:020d}.json")
            except FileNotFoundError:
                break
            snap = snap or cached.copy()
            self._apply_commit(snap, data)
            snap.version = v
            v += 1
        if snap is None:
            return cached
        check(self.log, snap)
        self._keep(snap)
        return snap

    def _keep(self, snap: Snapshot) -> None:
        with _LOCK:
            held = _CACHE.get(self.cache_key)
            if held is None or held.identity != snap.identity or held.version < snap.version:
                _CACHE[self.cache_key] = snap

    def _apply_commit(self, snap: Snapshot, data: bytes) -> None:
        adds = []
        for line in data.splitlines():
            if not line.strip():
                continue
            try:
                action = json.loads(line)
            except ValueError:
                raise Unsupported(f"{self.log}: a commit holds a line that is not JSON") from None
            if "add" in action:
                adds.append(action["add"])
            elif "remove" in action:
                path = file_name(action["remove"]["path"])
                snap.files.pop(path, None)
                snap.vectors.discard(path)
            elif "protocol" in action:
                snap.protocol = action["protocol"]
                _delegated(self.log, snap.protocol)
            elif "metaData" in action:
                meta = action["metaData"]
                snap.metadata = {"partitionColumns": meta.get("partitionColumns") or [],
                                 "configuration": meta.get("configuration") or {}}
        for add in adds:  # after the commit's removes: a file re-added (with a new deletion vector) stays
            path = file_name(add["path"])
            snap.files[path] = (int(add["size"]), *self._range(add.get("stats")))
            if add.get("deletionVector"):
                snap.vectors.add(path)
            else:
                snap.vectors.discard(path)

    def _apply_checkpoint(self, snap: Snapshot, names: list[str]) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        for name in names:
            with pq.ParquetFile(pa.BufferReader(self._read(name))) as fh:
                present = set(fh.schema_arrow.names)
                table = fh.read(columns=[c for c in ("add", "protocol", "metaData") if c in present])
            if "protocol" in present:
                for row in table.column("protocol").drop_null().to_pylist():
                    snap.protocol = row
                    _delegated(self.log, row)
            if "metaData" in present:
                for row in table.column("metaData").drop_null().to_pylist():
                    snap.metadata = {"partitionColumns": row.get("partitionColumns") or [],
                                     "configuration": dict(row.get("configuration") or [])}
            if "add" not in present:
                continue
            adds = table.column("add").drop_null().combine_chunks()
            if not len(adds):
                continue
            sub = {adds.type.field(i).name for i in range(adds.type.num_fields)}
            stats = adds.field("stats").to_pylist() if "stats" in sub else [None] * len(adds)
            parsed = _parsed_ranges(adds, self.key) if "stats_parsed" in sub else [(None, None)] * len(adds)
            vectors = (adds.field("deletionVector").is_valid().to_pylist() if "deletionVector" in sub
                       else [False] * len(adds))
            for path, size, st, rng, dv in zip(adds.field("path").to_pylist(), adds.field("size").to_pylist(),
                                               stats, parsed, vectors):
                path = file_name(path)
                snap.files[path] = (int(size), *(self._range(st) if st else rng))
                if dv:
                    snap.vectors.add(path)

    def _range(self, stats: str | None) -> tuple[str | None, str | None]:
        """The key column's (min, max) from a file's JSON statistics; (None, None) when they do not give both."""
        if not stats:
            return None, None
        st = json.loads(stats)
        lo = (st.get("minValues") or {}).get(self.key)
        hi = (st.get("maxValues") or {}).get(self.key)
        return (lo, hi) if isinstance(lo, str) and isinstance(hi, str) else (None, None)


def _parsed_ranges(adds, key: str) -> list[tuple[str | None, str | None]]:
    """The key column's (min, max) from a checkpoint's ``stats_parsed`` struct (written instead of, or beside,
    the JSON statistics: ``delta.checkpoint.writeStatsAsStruct``)."""
    parsed = adds.field("stats_parsed")
    out = []
    for side in ("minValues", "maxValues"):
        names = {parsed.type.field(i).name for i in range(parsed.type.num_fields)}
        col = parsed.field(side) if side in names else None
        if col is None or col.type.get_field_index(key) < 0:
            return [(None, None)] * len(adds)
        out.append(col.field(key).to_pylist())
    return [(lo, hi) if isinstance(lo, str) and isinstance(hi, str) else (None, None) for lo, hi in zip(*out)]


def identity(location: str) -> tuple | None:
    """Which table lives at the local ``location``: the inode and time of its first log entry (a table deleted
    and created again has another); None on an object store or without that entry."""
    if "://" in location and not location.startswith("file://"):
        return None
    try:
        st = os.stat(f"{location.removeprefix('file://')}/_delta_log/{0:020d}.json")
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns, st.st_dev


def file_name(path: str) -> str:
    """A log path as a file name: a relative path (URI-encoded in the log) unquoted; an absolute one as a canonical
    absolute URI, so that ``/a/b``, ``file:/a/b`` and ``file:///a/b`` name one file (the protocol compares paths
    as URIs: an add and a remove of the same file may spell it differently)."""
    if "://" not in path and not path.startswith(("/", "file:")):
        return urllib.parse.unquote(path)
    parsed = urllib.parse.urlparse(path)
    if parsed.scheme in ("", "file"):
        return "file://" + urllib.parse.unquote(parsed.path)
    return f"{parsed.scheme}://{parsed.netloc}{urllib.parse.unquote(parsed.path)}"


def _delegated(log: str, protocol: dict) -> None:
    if set(protocol.get("readerFeatures") or []) & DELEGATED_FEATURES:
        raise Unsupported(f"{log}: reader features {sorted(protocol['readerFeatures'])}")


def check(log: str, snap: Snapshot) -> None:
    """Refused unless perflake reads the snapshot's live files exactly as Parquet files (module docstring)."""
    table = log.removesuffix("/_delta_log")
    if snap.protocol is None or snap.metadata is None:
        missing = " and ".join(a for a, v in (("protocol", snap.protocol), ("metaData", snap.metadata)) if v is None)
        raise Refused(f"{table}: version {snap.version} has no {missing} action: not a complete Delta table")
    version = int(snap.protocol.get("minReaderVersion", 1))
    features = set(snap.protocol.get("readerFeatures") or [])
    if version > 3 or (version == 3 and features - READER_FEATURES - DELEGATED_FEATURES):
        unknown = sorted(features - READER_FEATURES - DELEGATED_FEATURES)
        raise Refused(f"{table}: Delta reader version {version}{f' with features {unknown}' if unknown else ''} "
                      "is not supported")
    conf = snap.metadata.get("configuration") or {}
    if conf.get("delta.columnMapping.mode", "none") != "none":
        raise Refused(f"{table}: column mapping (mode {conf['delta.columnMapping.mode']}) is not supported")
    if snap.metadata.get("partitionColumns"):
        raise Refused(f"{table}: partitioned by {snap.metadata['partitionColumns']}: perflake reads unpartitioned "
                      "tables only (rewrite it without partitions)")
    if snap.vectors:
        raise Refused(f"{table}: {len(snap.vectors)} live file(s) carry deletion vectors (rows deleted without "
                      "rewriting the file): perflake cannot apply them; rewrite the table (e.g. an optimize with "
                      "deletion vectors purged)")
