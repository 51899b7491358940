"""perflake's commit protocol on top of an open table format (the same for both stores).

Neither format commits several tables atomically (a Delta or Iceberg commit is one table's), so the
``runs`` table stays the commit point, as ``runs/part-<batch>.parquet`` is today:

1. ``present``: the content hashes already in ``runs`` (latest version) -- those inputs are skipped.
2. The batch's rows are appended to ``nodes``, ``edges``, ``metrics``, each row tagged with the batch id
   (blind appends: concurrent appends never conflict; the format retries them).
3. Commit point: the runs rows are appended with a compare-and-swap on the runs table's version: load
   version v, drop the runs whose hash v already has, commit as v+1 or fail; on failure, reload and repeat.
   Exactly one commit of a content hash can win, whatever the number of writers.
4. Rows of runs that lost (another writer committed the same bytes first) are deleted from the data tables
   (``batch = B AND run_id IN (...)``); a writer killed between 2 and 3 leaves rows of a batch that ``runs``
   never names: invisible to a reader that joins on (run_id, batch), and removed by ``vacuum_orphans``.
5. One ``ingest_log`` row per input (blind append).

A reader pins ``runs`` first (latest, or ``as_of``), then reads the data tables' latest version and keeps
the rows whose (run_id, batch) is in the pinned runs: every committed run whole, nothing else.
"""

from __future__ import annotations

import datetime as dt
import secrets
import socket
import time
from dataclasses import dataclass, field

import lakeschema
import pyarrow as pa

from perflake.catalogs import schema as S

DATA = ("nodes", "edges", "metrics")


def new_batch_id() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%S%f") + "-" + secrets.token_hex(4)


def initial_schemas() -> dict[str, pa.Schema]:
    """The tables as created: the data tables' key columns with ``batch``, metrics without metric columns."""
    def data(schema: pa.Schema, ids) -> pa.Schema:
        fields = [pa.field(f.name, pa.int64()) if f.name in ids else f for f in schema]
        return pa.schema([fields[0], pa.field("batch", pa.string()), *fields[1:]])

    return {"runs": S.RUNS_SCHEMA,
            **{t: data(S.DATA_SCHEMAS[t], lakeschema.ID_COLUMNS[t]) for t in DATA},
            "ingest_log": S.INGEST_LOG_SCHEMA}


@dataclass
class Outcome:
    batch: str = ""
    committed: list = field(default_factory=list)  # run ids this commit made visible
    skipped: list = field(default_factory=list)  # already present before we wrote anything
    lost: list = field(default_factory=list)  # committed by another writer while we wrote: rows deleted
    conflicts: int = 0  # failed compare-and-swaps on runs
    seconds: dict = field(default_factory=dict)


def commit(store, runs, *, log: bool = True, invocation: str = "") -> Outcome:
    """Ingest ``runs`` (data.Run) as one batch through ``store`` (DeltaStore / IcebergStore)."""
    out, t0 = Outcome(), time.perf_counter()
    _head, present = store.runs_head()
    todo = [r for r in runs if r.sha not in present]
    out.skipped = [r.run_id for r in runs if r.sha in present]
    if todo:
        out.batch = batch = new_batch_id()
        for name in DATA:
            part = pa.concat_tables([r.tables[name] for r in todo], promote_options="default")
            store.append(name, lakeschema.with_batch(part, batch))
        t1 = time.perf_counter()
        out.seconds["data"] = t1 - t0
        while True:
            head, present = store.runs_head()
            keep = [r for r in todo if r.sha not in present]
            if not keep or store.append_runs_cas(head, lakeschema.runs_table(
                    [{**r.row, "batch": batch, "ingested_at": dt.datetime.now(dt.timezone.utc)} for r in keep])):
                break
            out.conflicts += 1
        out.committed = [r.run_id for r in keep]
        out.lost = [r.run_id for r in todo if r not in keep]
        t2 = time.perf_counter()
        out.seconds["runs"] = t2 - t1
        if out.lost:
            for name in DATA:
                store.delete_batch(name, batch, out.lost)
        out.seconds["cleanup"] = time.perf_counter() - t2
    if log:
        t3 = time.perf_counter()
        store.append("ingest_log", log_rows(runs, out, invocation or out.batch or new_batch_id()))
        out.seconds["log"] = time.perf_counter() - t3
    out.seconds["total"] = time.perf_counter() - t0
    return out


def log_rows(runs, out: Outcome, invocation: str) -> pa.Table:
    now = dt.datetime.now(dt.timezone.utc)
    host = socket.gethostname()
    committed = set(out.committed)
    rows = []
    for r in runs:
        status = "ingested" if r.run_id in committed else "skipped"
        rows.append({"attempted_at": now, "invocation": invocation, "source": r.row["source"],
                     "format": r.row["format"], "content_sha256": r.sha, "status": status,
                     "reason": None if status == "ingested" else f"already present as run {r.run_id}",
                     "transient": False, "run_id": r.run_id, "duration_s": 0.0,
                     "input_bytes": r.row["input_bytes"], "stat_key": None, "perflake_version": "bench",
                     "host": host})
    return pa.Table.from_pylist(rows, schema=S.INGEST_LOG_SCHEMA)


# -- reading ---------------------------------------------------------------------------------------------
def snapshot_files(store, as_of=None) -> tuple[pa.Table, dict[str, list[str]]]:
    """The pinned runs table and the data tables' file lists (read after it), for engines that read
    Parquet files (DuckDB's read_parquet, polars.scan_parquet, pyarrow.dataset)."""
    runs = store.read("runs", as_of)
    return runs, {name: store.files(name) for name in DATA}


def committed(table: pa.Table, runs: pa.Table) -> pa.Table:
    """Rows of a data table whose (run_id, batch) is a committed run of ``runs``."""
    keys = runs.select(["run_id", "batch"])
    typed = pa.schema([table.schema.field("run_id"), table.schema.field("batch")])
    return table.join(keys.cast(typed), ["run_id", "batch"], join_type="left semi")


def vacuum_orphans(store, older_than_s: float = 3600.0) -> dict[str, int]:
    """Delete data rows whose batch no committed run names (a writer killed between its data appends and
    its runs commit), when the batch id is older than ``older_than_s`` (younger ones may still commit)."""
    runs = store.read("runs", columns=["batch"])
    live = set(runs.column("batch").to_pylist())
    cutoff = dt.datetime.now(dt.timezone.utc) - dt.timedelta(seconds=older_than_s)
    removed = {}
    for name in DATA:
        batches = set(store.read(name, columns=["batch"]).column("batch").unique().to_pylist())
        dead = sorted(b for b in batches - live if _batch_time(b) < cutoff)
        for b in dead:
            store.delete_batch(name, b)
        removed[name] = len(dead)
    return removed


def _batch_time(batch: str) -> dt.datetime:
    return dt.datetime.strptime(batch.split("-")[0], "%Y%m%dT%H%M%S%f").replace(tzinfo=dt.timezone.utc)
