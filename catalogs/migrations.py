"""Schema versions of a lake and the named migrations between them.

A lake records its schema version in ``perflake.json`` (catalogs/schema.py ``MARKER``), and every migration
applied to it by name, time and perflake version under ``"migrations"``.  Opening a lake of an older version
applies the missing migrations in order, under the commit lock (so concurrent openers migrate once), then
rewrites the marker atomically; each migration is idempotent, so a crash in the middle is finished by the
next opener.  A lake that cannot be written (read-only storage) is not migrated: the error says to run
``perflake migrate --lake L`` with write access.  A lake of a newer version than this perflake, or of a
version no migration leads from, is refused with what to do.

Adding a schema change: bump ``SCHEMA_VERSION`` in catalogs/schema.py and append a :class:`Migration`
from the previous version here, with a test that opens a lake of the previous version.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Callable

import pyarrow as pa

from perflake.catalogs import legacy
from perflake.catalogs.schema import INGEST_LOG, INGEST_LOG_SCHEMA, MARKER, SCHEMA_VERSION
from perflake.errors import LakeError


@dataclass(frozen=True)
class Migration:
    name: str
    from_version: int
    to_version: int
    apply: Callable  # (catalog) -> None; idempotent
    summary: str
    cleanup: Callable | None = None  # (catalog) -> None, once the marker records the new version


def _add_ingest_log(cat) -> None:
    cat.fs.makedirs(f"{cat.root}/{INGEST_LOG}", exist_ok=True)


def _child_order(cat) -> None:
    """Nothing to rewrite: batches written before schema 3 have no ``child_order`` column in their nodes files
    (the lake's views read it as NULL) and perflake lists those runs' children in frame order, as it did when
    they were ingested; the input order of their siblings is not recorded anywhere to recover it from."""


def _rank_summary(cat) -> None:
    """Every committed batch gets its rank_summary file, computed from its metrics file as ingest computes it
    (perflake.ingest.summarize); each file is written under a temporary name and renamed, so a batch that has
    one has all of it, and a migration stopped midway goes on with the batches that have none."""
    from perflake.catalogs.schema import RANK_SUMMARY
    from perflake.ingest.summarize import summarize

    cat.fs.makedirs(f"{cat.root}/{RANK_SUMMARY}", exist_ok=True)
    batches = legacy.batches(cat)
    for batch in sorted(set(batches) - legacy.having(cat, RANK_SUMMARY, batches)):
        metrics = legacy.read(cat, legacy.path(cat, "metrics", batch))
        legacy.write(cat, RANK_SUMMARY, batch, summarize(metrics))


MIGRATE_ROWS = 4_000_000  # rows of one table per Delta commit during the migration


def _delta_tables(cat) -> None:
    """Schema 4 -> 5: the layout of one Parquet file per table per batch becomes Delta Lake tables in the same
    folders.  Every committed batch's rows are appended (call-path ids to 63 bits, ``batch`` added), then every
    runs row in one commit, then the ingest log.  The legacy files stay until the marker says 5 (``cleanup``);
    a migration stopped midway left Delta tables next to them, which a rerun drops and writes again."""
    from perflake.catalogs.catalog import conform
    from perflake.catalogs.schema import DATA_TABLES, ID_COLUMNS, RANK_SUMMARY, RUNS, RUNS_SCHEMA, TABLES
    from perflake.ingest.summarize import summarize

    for name in TABLES:  # an earlier attempt's Delta state: start again from the legacy files
        for n in cat.fs.ls(f"{cat.root}/{name}", detail=False) if cat.fs.exists(f"{cat.root}/{name}") else []:
            base = n.rsplit("/", 1)[-1]
            if base == "_delta_log" or (base.endswith(".parquet") and not legacy.PART.match(base)):
                cat.fs.rm(n, recursive=True)
    cat.tables._open.clear()
    cat.create_tables()
    batches = legacy.batches(cat)
    have_summary = legacy.having(cat, RANK_SUMMARY, batches)
    for name in DATA_TABLES:
        pending, rows = [], 0
        for batch in batches:
            if name == RANK_SUMMARY and batch not in have_summary:
                data = summarize(legacy.read(cat, legacy.path(cat, "metrics", batch)))
            else:
                data = legacy.read(cat, legacy.path(cat, name, batch))
            pending.append(conform(name, legacy.new_ids(data, ID_COLUMNS[name]), batch))
            rows += data.num_rows
            if rows >= MIGRATE_ROWS:
                cat.tables.append(name, pa.concat_tables(pending, promote_options="default"))
                pending, rows = [], 0
        if pending:
            cat.tables.append(name, pa.concat_tables(pending, promote_options="default"))
    if batches:
        runs = [legacy.read(cat, legacy.path(cat, RUNS, b)) for b in batches]
        cat.tables.append(RUNS, pa.concat_tables(runs, promote_options="permissive").cast(RUNS_SCHEMA))
    logs = [legacy.read(cat, f) for f in legacy.log_files(cat)]
    if logs:
        cat.tables.append(INGEST_LOG, pa.concat_tables(logs, promote_options="permissive").cast(INGEST_LOG_SCHEMA))


def _remove_legacy_files(cat) -> None:
    from perflake.catalogs.schema import TABLES

    for n in legacy.files_to_remove(cat, TABLES):
        cat.fs.rm(n)


MIGRATIONS = (
    Migration("0001-ingest-log", 1, 2, _add_ingest_log,
              "adds the ingest_log/ folder: one Parquet file of attempts per ingest (perflake.ingest.log)"),
    Migration("0002-child-order", 2, 3, _child_order,
              "nodes gain child_order (siblings in the input's order); older batches keep NULL: frame order"),
    Migration("0003-rank-summary", 3, 4, _rank_summary,
              "adds rank_summary/: per run, call path and metric, the statistics over its locations, built from "
              "each batch's metrics rows (perflake.ingest.summarize)"),
    Migration("0004-delta-tables", 4, 5, _delta_tables,
              "every table becomes a Delta Lake table (atomic commits by any number of writers, on a local disk or "
              "S3; snapshots; compaction); call-path ids keep 63 bits (old id & 0x7FFF_FFFF_FFFF_FFFF) and are "
              "stored as int64; data rows carry their ingest batch; run_id is a string in every table",
              cleanup=_remove_legacy_files),
)


def pending(version: int) -> list[Migration]:
    """The migrations from ``version`` to SCHEMA_VERSION, in order; LakeError when there is no such path."""
    path, at = [], version
    while at != SCHEMA_VERSION:
        step = next((m for m in MIGRATIONS if m.from_version == at), None)
        if step is None:
            break
        path.append(step)
        at = step.to_version
    if at != SCHEMA_VERSION:
        raise LakeError(f"lake schema version {version!r} has no migration to version {SCHEMA_VERSION}: ingest the "
                        "inputs again into a new lake (perflake ingest SOURCES --lake NEW_LAKE)")
    return path


def read_marker(cat) -> dict:
    marker = f"{cat.root}/{MARKER}"
    try:
        info = json.loads(cat.fs.cat_file(marker))
    except (ValueError, OSError) as exc:
        raise LakeError(f"{marker}: unreadable lake marker ({exc})") from None
    if not isinstance(info, dict) or info.get("format") != "perflake-lake":
        raise LakeError(f"{marker}: not a perflake lake marker")
    return info


def check(cat, *, migrate: bool = True) -> list[str]:
    """Make sure the lake of ``cat`` is at SCHEMA_VERSION, migrating it when ``migrate``; returns the names of
    the migrations applied now."""
    info = read_marker(cat)
    version = info.get("schema_version")
    if version == SCHEMA_VERSION:
        return []
    marker = f"{cat.root}/{MARKER}"
    if isinstance(version, int) and version > SCHEMA_VERSION:
        raise LakeError(f"{marker}: lake schema version {version} was written by a newer perflake (this one reads "
                        f"up to {SCHEMA_VERSION}): upgrade perflake")
    steps = pending(version if isinstance(version, int) else -1)
    if not migrate:
        raise LakeError(f"{marker}: lake schema version {version}, this perflake needs {SCHEMA_VERSION}: run "
                        f"perflake migrate --lake {cat.url} ({', '.join(m.name for m in steps)})")
    return _apply(cat, marker)


def _apply(cat, marker: str) -> list[str]:
    from perflake._version import __version__

    info = read_marker(cat)
    try:
        with cat.commit_lock():
            info = read_marker(cat)  # another process may have migrated meanwhile
            done = []
            for step in pending(info.get("schema_version") if isinstance(info.get("schema_version"), int) else -1):
                step.apply(cat)
                info["schema_version"] = step.to_version
                info.setdefault("migrations", []).append({
                    "name": step.name, "from": step.from_version, "to": step.to_version,
                    "applied_at": dt.datetime.now(dt.timezone.utc).isoformat(), "perflake": __version__,
                })
                cat._atomic_write(marker, json.dumps(info, indent=1).encode())  # one step at a time
                if step.cleanup is not None:
                    step.cleanup(cat)
                done.append(step.name)
            return done
    except OSError as exc:
        raise LakeError(f"{marker}: lake schema version {info.get('schema_version')} needs migrating to "
                        f"{SCHEMA_VERSION} and the lake is not writable here ({exc.strerror or exc}): run "
                        f"perflake migrate --lake {cat.url} with write access") from None
