"""A perflake lake as five Iceberg tables (pyiceberg, SQL catalog on SQLite), for the measurements only.

``<root>/catalog.db`` is the SQL catalog (one row per table: its current ``metadata_location``); the tables'
files are under ``<warehouse>/perflake.db/<table>/{data,metadata}/``.  A commit is a compare-and-swap of
that row (``UPDATE ... WHERE metadata_location = <the one this writer read>``).  The primitives the commit
protocol (``protocol.py``) needs:

* ``append``: a fast append; pyiceberg retries one that lost the race (``commit.retry.num-retries``, 4 by
  default; a fast append validates nothing, so retrying is always right).  New metric columns are added
  first with ``update_schema().union_by_name`` (its own commit: a schema change is not part of the append).
* ``runs_head`` / ``append_runs_cas``: the runs table has ``commit.retry.num-retries=0``: an append made on
  the metadata this writer read commits or fails with CommitFailedException.

What pyiceberg 0.12 does not have: compaction (``rewrite_data_files``) and orphan-file removal: ``compact``
and ``vacuum`` here are written on its lower-level API (a REPLACE snapshot; expire_snapshots; a sweep of
files no live metadata names).
"""

from __future__ import annotations

import datetime as dt
import os
import time
import uuid

import pyarrow as pa
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.exceptions import CommitFailedException, NoSuchTableError
from pyiceberg.expressions import And, EqualTo, In

NS = "perflake"
PROPS = {
    "write.parquet.compression-codec": "zstd",
    "write.parquet.row-group-limit": "131072",
    "write.metadata.delete-after-commit.enabled": "true",
    "write.metadata.previous-versions-max": "100",
    "commit.retry.num-retries": "20",
    "commit.retry.min-wait-ms": "10",
    "commit.retry.max-wait-ms": "2000",
}


class IcebergStore:
    name = "iceberg"

    def __init__(self, root: str, *, warehouse: str | None = None, io_props: dict | None = None):
        self.root = root.rstrip("/")
        os.makedirs(self.root, exist_ok=True)
        props = {"uri": f"sqlite:///{self.root}/catalog.db", "warehouse": warehouse or f"file://{self.root}/warehouse"}
        props.update(io_props or {})
        self.catalog = SqlCatalog("perflake", **props)
        self._tables = {}
        self._seen_snapshots: set[int] = set()
        self._present: dict[str, str] = {}
        self.retries: dict[str, int] = {}  # commits retried here after CommitFailedException, by table

    # -- tables ----------------------------------------------------------------------------------------
    def create(self, schemas: dict[str, pa.Schema]) -> None:
        self.catalog.create_namespace_if_not_exists(NS)
        for name, schema in schemas.items():
            props = dict(PROPS)
            if name == "runs":
                props["commit.retry.num-retries"] = "0"  # the compare-and-swap commit point
            self.catalog.create_table_if_not_exists(f"{NS}.{name}", schema=schema, properties=props)

    def table(self, name: str, *, fresh: bool = True):
        t = self._tables.get(name)
        if t is None:
            t = self._tables[name] = self.catalog.load_table(f"{NS}.{name}")
        elif fresh:
            t.refresh()
        return t

    def append(self, name: str, data: pa.Table) -> None:
        for attempt in range(50):
            t = self.table(name, fresh=attempt > 0)  # a stale table only costs a retry (append refreshes)
            missing = [f for f in data.schema if f.name not in t.schema().column_names]
            try:
                if missing:
                    with t.update_schema() as u:
                        u.union_by_name(pa.schema(missing))
                    continue
                t.append(data)
                return
            except CommitFailedException:  # raced another writer (retries used up, or a schema change)
                self.retries[name] = self.retries.get(name, 0) + 1
                time.sleep(0.01 * (attempt + 1))
        raise RuntimeError(f"{name}: could not append after 50 attempts")

    # -- the commit point ----------------------------------------------------------------------------------
    def runs_head(self):
        """(the runs table as this writer last loaded it, content hash -> run id).  Incremental: only the
        data files added by snapshots not seen before are read (their own manifests: a scan plan would read
        every manifest of the table, one per commit, each time); after a snapshot that removed files
        (compaction, delete) or a gap in the history (expired snapshots), everything is read again."""
        t = self.table("runs")
        head = t.current_snapshot()
        if head is None:
            return t, {}
        new, s, complete = [], head, False
        while s is not None:
            if s.snapshot_id in self._seen_snapshots:
                complete = True
                break
            if s.summary is None or s.summary.operation.value != "append":
                break
            for m in s.manifests(t.io):
                if m.added_snapshot_id == s.snapshot_id:
                    new += [e.data_file.file_path for e in m.fetch_manifest_entry(t.io, discard_deleted=True)]
            s = t.snapshot_by_id(s.parent_snapshot_id) if s.parent_snapshot_id is not None else None
        if s is None:
            complete = True  # walked back to the first snapshot
        if not complete:
            self._seen_snapshots, self._present = set(), {}
            new = self._file_paths(t)
        if new:
            import pyarrow.parquet as pq

            tables = []
            for p in new:
                with t.io.new_input(p).open() as fh:
                    tables.append(pq.read_table(fh, columns=["content_sha256", "run_id"]))
            got = pa.concat_tables(tables)
            self._present.update(zip(got.column("content_sha256").to_pylist(), got.column("run_id").to_pylist()))
        self._seen_snapshots.add(head.snapshot_id)
        s = head
        while s is not None and s.parent_snapshot_id is not None and s.parent_snapshot_id not in self._seen_snapshots:
            self._seen_snapshots.add(s.parent_snapshot_id)
            s = t.snapshot_by_id(s.parent_snapshot_id)
        return t, dict(self._present)

    def append_runs_cas(self, head, rows: pa.Table) -> bool:
        try:
            head.append(rows)
            return True
        except CommitFailedException:
            return False

    def delete_batch(self, name: str, batch: str, run_ids: list[str] | None = None) -> None:
        pred = EqualTo("batch", batch)
        if run_ids:
            pred = And(pred, In("run_id", run_ids))
        for attempt in range(50):
            try:
                self.table(name).delete(pred)
                return
            except CommitFailedException:
                self.retries[name] = self.retries.get(name, 0) + 1
                time.sleep(0.01 * (attempt + 1))

    # -- reading -----------------------------------------------------------------------------------------
    @staticmethod
    def _file_paths(t, snapshot_id=None) -> list[str]:
        if t.current_snapshot() is None:
            return []
        return [task.file.file_path for task in t.scan(snapshot_id=snapshot_id).plan_files()]

    def _snapshot_id(self, t, as_of):
        if as_of is None:
            return None
        if isinstance(as_of, dt.datetime):
            snap = t.snapshot_as_of_timestamp(int(as_of.timestamp() * 1000))
            if snap is None:
                raise ValueError(f"no snapshot as of {as_of}")
            return snap.snapshot_id
        return int(as_of)

    def version(self, name: str) -> int:
        snap = self.table(name).current_snapshot()
        return snap.snapshot_id if snap else -1

    def files(self, name: str, as_of=None) -> list[str]:
        t = self.table(name)
        return self._file_paths(t, self._snapshot_id(t, as_of))

    def read(self, name: str, as_of=None, columns=None) -> pa.Table:
        t = self.table(name)
        scan = t.scan(snapshot_id=self._snapshot_id(t, as_of), selected_fields=tuple(columns) if columns else ("*",))
        return scan.to_arrow()

    def arrow_schema(self, name: str) -> pa.Schema:
        return self.table(name).schema().as_arrow()

    # -- maintenance -------------------------------------------------------------------------------------
    def compact(self, name: str, target_size: int = 128 << 20) -> dict:
        """Rewrite the live data files as few files (a REPLACE snapshot: delete the old files, add the new,
        in one commit; readers of older snapshots still see the old files until vacuum)."""
        from pyiceberg.io.pyarrow import _dataframe_to_data_files

        t = self.table(name)
        snap = t.current_snapshot()
        if snap is None:
            return {"rewritten": 0}
        tasks = list(t.scan(snapshot_id=snap.snapshot_id).plan_files())
        old = [task.file for task in tasks]
        data = t.scan(snapshot_id=snap.snapshot_id).to_arrow()
        if "run_id" in data.schema.names:
            data = data.sort_by([("run_id", "ascending")])
        tx = t.transaction()
        tx.set_properties({"write.target-file-size-bytes": str(target_size)})
        new = list(_dataframe_to_data_files(table_metadata=tx.table_metadata, df=data, io=t.io,
                                            write_uuid=uuid.uuid4()))
        with tx.update_snapshot().overwrite() as ow:
            for f in old:
                ow.delete_data_file(f)
            for f in new:
                ow.append_data_file(f)
        tx.commit_transaction()
        return {"rewritten": len(old), "written": len(new)}

    def vacuum(self, name: str, retention_hours: float = 0) -> list[str]:
        """Expire snapshots older than the retention, then delete the files no remaining snapshot or
        metadata names (pyiceberg has no remove_orphan_files: a sweep of the table's folder, local only)."""
        t = self.table(name)
        cutoff = dt.datetime.now(dt.timezone.utc) - dt.timedelta(hours=retention_hours)
        keep_current = t.current_snapshot()
        expire = [s.snapshot_id for s in t.snapshots()
                  if keep_current is None or s.snapshot_id != keep_current.snapshot_id
                  and s.timestamp_ms < cutoff.timestamp() * 1000]
        if expire:
            t.maintenance.expire_snapshots().by_ids(expire).commit()
        t = self.table(name)
        live = {t.metadata_location.removeprefix("file://")}
        live |= {m.get("metadata-file", "").removeprefix("file://") for m in t.metadata.model_dump(by_alias=True)
                 .get("metadata-log", [])}
        for s in t.snapshots():
            live.add(s.manifest_list.removeprefix("file://"))
            for m in s.manifests(t.io):
                live.add(m.manifest_path.removeprefix("file://"))
                for e in m.fetch_manifest_entry(t.io, discard_deleted=True):
                    live.add(e.data_file.file_path.removeprefix("file://"))
        base = t.location().removeprefix("file://")
        removed = []
        for d, _dirs, files in os.walk(base):
            for f in files:
                p = os.path.join(d, f)
                if p not in live:
                    os.remove(p)
                    removed.append(p)
        return removed

    def storage(self, name: str) -> dict:
        t = self.table(name)
        base = t.location()
        if not base.startswith("file://"):
            return {}
        base = base.removeprefix("file://")
        out = {"data_files": 0, "data_bytes": 0, "log_files": 0, "log_bytes": 0}
        for d, _dirs, files in os.walk(base):
            kind = "log" if d.rstrip("/").endswith("metadata") else "data"
            for f in files:
                out[f"{kind}_files"] += 1
                out[f"{kind}_bytes"] += os.path.getsize(os.path.join(d, f))
        out["live_files"] = len(self._file_paths(t))
        out["snapshots"] = len(t.snapshots())
        return out

    def when(self, name: str, snapshot_id: int) -> dt.datetime:
        s = self.table(name).snapshot_by_id(snapshot_id)
        return dt.datetime.fromtimestamp(s.timestamp_ms / 1000, dt.timezone.utc)


def exists(root: str) -> bool:
    try:
        IcebergStore(root).catalog.load_table(f"{NS}.runs")
        return True
    except NoSuchTableError:
        return False
