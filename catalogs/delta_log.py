"""A Delta table's live files read from its log directly, without delta-rs: the read path of every question.

Reading a snapshot needs no writer: the Delta protocol's log (``<table>/_delta_log/``) is a sequence of JSON
commits ``<version:020d>.json`` (one action per line) and, every ``delta.checkpointInterval`` commits, a Parquet
checkpoint ``<version:020d>.checkpoint.parquet`` (or ``.checkpoint.<part:010d>.<parts:010d>.parquet``) holding
the table's whole state at that version.  The live files of version V are the ``add`` actions of the newest
complete checkpoint at or below V, then of the commits after it up to V, minus the ``remove`` actions met on the
way (PROTOCOL.md, "Action Reconciliation").  delta-rs does the same, but costs ``import deltalake`` (12 ms) and
~1.5 ms per table opened: most of a small question in a fresh process.  Writing stays with delta-rs
(catalogs/delta.py).

Only what this module understands is read: reader version 1 (or 3 with no reader feature but ``timestampNtz``),
no partition columns.  Anything else (deletion vectors, column mapping, v2 checkpoints, a log with a gap) raises
:class:`Unsupported`, and the caller asks delta-rs instead.  Snapshots of the latest version are kept per table
and brought forward by reading only the commits since; a table deleted and created again at the same path (a new
first commit) is read afresh.
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
READER_FEATURES = frozenset({"timestampNtz"})  # reader features that change nothing in which files are live
_LOCK = threading.Lock()
_CACHE: dict[str, "Snapshot"] = {}  # table location -> the newest snapshot read of it


class Unsupported(Exception):
    """This log uses something this reader does not implement: ask delta-rs."""


@dataclass
class Snapshot:
    """One version of a table: ``files`` maps each live file's path (relative to the table, unquoted, or an
    absolute URI) to (size in bytes, min, max of the table's key column from the file's statistics or None)."""

    version: int
    files: dict[str, tuple[int, str | None, str | None]] = field(default_factory=dict)
    identity: tuple | None = None


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
        """The table at ``version`` (None: the latest)."""
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
            snap = Snapshot(cached.version, dict(cached.files), ident)
        else:
            base = max((v for v in checkpoints if v <= target), default=None)
            snap = Snapshot(-1, {}, ident)
            if base is not None:
                self._apply_checkpoint(snap, checkpoints[base])
                snap.version = base
            if any(v not in commits for v in range(snap.version + 1, target + 1)):
                raise Unsupported(f"{self.log}: commits missing before version {target}")
        for v in range(snap.version + 1, target + 1):
            self._apply_commit(snap, self._read(commits[v]))
            snap.version = v
        if version is None and ident is not None:
            with _LOCK:
                held = _CACHE.get(self.cache_key)
                if held is None or held.identity != ident or held.version < snap.version:
                    _CACHE[self.cache_key] = snap
        return snap

    def _apply_commit(self, snap: Snapshot, data: bytes) -> None:
        for line in data.splitlines():
            if not line.strip():
                continue
            action = json.loads(line)
            if "add" in action:
                add = action["add"]
                if add.get("deletionVector"):
                    raise Unsupported(f"{self.log}: deletion vectors")
                snap.files[file_name(add["path"])] = (int(add["size"]), *self._range(add.get("stats")))
            elif "remove" in action:
                snap.files.pop(file_name(action["remove"]["path"]), None)
            elif "protocol" in action:
                _check_protocol(self.log, action["protocol"])
            elif "metaData" in action:
                _check_metadata(self.log, action["metaData"])

    def _apply_checkpoint(self, snap: Snapshot, names: list[str]) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        for name in names:
            with pq.ParquetFile(pa.BufferReader(self._read(name))) as fh:
                table = fh.read(columns=["add", "protocol", "metaData"])
            for row in table.column("protocol").drop_null().to_pylist():
                _check_protocol(self.log, row)
            for row in table.column("metaData").drop_null().to_pylist():
                _check_metadata(self.log, {"partitionColumns": row["partitionColumns"],
                                           "configuration": dict(row["configuration"] or [])})
            adds = table.column("add").drop_null().combine_chunks()
            if not len(adds):
                continue
            names_ = {adds.type.field(i).name for i in range(adds.type.num_fields)}
            if "deletionVector" in names_ and adds.field("deletionVector").null_count != len(adds):
                raise Unsupported(f"{self.log}: deletion vectors")
            stats = adds.field("stats").to_pylist() if "stats" in names_ else [None] * len(adds)
            for path, size, st in zip(adds.field("path").to_pylist(), adds.field("size").to_pylist(), stats):
                snap.files[file_name(path)] = (int(size), *self._range(st))

    def _range(self, stats: str | None) -> tuple[str | None, str | None]:
        if not stats:
            return None, None
        st = json.loads(stats)
        return (st.get("minValues") or {}).get(self.key), (st.get("maxValues") or {}).get(self.key)


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
    """A log path as a file name: relative paths are URI-encoded in the log; absolute URIs are kept."""
    return path if "://" in path else urllib.parse.unquote(path)


def _check_protocol(log: str, protocol: dict) -> None:
    version = protocol.get("minReaderVersion", 1)
    features = set(protocol.get("readerFeatures") or [])
    if version == 1 or (version == 3 and features <= READER_FEATURES):
        return
    raise Unsupported(f"{log}: reader version {version} with features {sorted(features)}")


def _check_metadata(log: str, meta: dict) -> None:
    if meta.get("partitionColumns"):
        raise Unsupported(f"{log}: partitioned table")
    if (meta.get("configuration") or {}).get("delta.columnMapping.mode", "none") != "none":
        raise Unsupported(f"{log}: column mapping")
