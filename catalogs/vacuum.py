"""Removing what no reader needs: the rows of batches that never committed (a crashed or killed ingest), and
the files no version of a table younger than the retention uses (Delta's vacuum).  ``perflake vacuum``."""

from __future__ import annotations

import datetime as dt

from perflake.catalogs.schema import DATA_TABLES, TABLES


def leftovers(cat, older_than: float) -> list[str]:
    """Uncommitted batches (a crashed or killed ingest) older than ``older_than`` seconds -- younger ones may
    belong to an ingest that is still running -- as ``<table>/batch=<id>`` entries."""
    committed = set(cat.batches())
    cutoff = dt.datetime.now(dt.timezone.utc) - dt.timedelta(seconds=older_than)
    found = []
    for name in DATA_TABLES:
        files = cat.tables.live_files(name)
        for lo, hi in zip(files.column("min_batch").to_pylist(), files.column("max_batch").to_pylist()):
            if lo is not None and lo == hi and lo not in committed and _batch_time(lo) <= cutoff:
                found.append(f"{name}/batch={lo}")
    return sorted(set(found))


def vacuum(cat, older_than: float = 3600.0) -> list[str]:
    """Delete the rows of :func:`leftovers`, then the files no version younger than ``older_than`` seconds
    uses (Delta's vacuum: ``as_of`` cannot reach back before that).  Returns what was removed."""
    cat._files.clear()
    removed = leftovers(cat, older_than)
    for entry in removed:
        name, batch = entry.split("/batch=")
        cat.tables.delete_batch(name, batch)
    hours = max(0, int(older_than // 3600))
    for name in TABLES:
        t = cat.tables.table(name)
        for path in t.vacuum(retention_hours=hours, dry_run=False, enforce_retention_duration=False):
            removed.append(f"{name}/{path}")
    return removed


def _batch_time(batch: str) -> dt.datetime:
    try:
        return dt.datetime.strptime(batch.split("-")[0], "%Y%m%dT%H%M%S%f").replace(tzinfo=dt.timezone.utc)
    except ValueError:
        return dt.datetime.min.replace(tzinfo=dt.timezone.utc)
