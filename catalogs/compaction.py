"""Compaction: many small files of a table merged into few, without changing any query result.

A lake fed by cron every few minutes gains a file per table per ingest; a Delta commit and every read cost more
with every live file.  :func:`compact` rewrites the rows of *whole batches* whose files are all smaller than the
target size, as one replace commit per table (Delta's ``replaceWhere``: ``write_deltalake(mode="overwrite",
predicate="batch IN (...)")``), sorted by run_id as ingest writes them.  Only committed batches are merged (the
runs table names them), so a compacted file never holds rows a reader must not see, and readers keep picking
files by batch range (catalogs/catalog.py ``files``).  The commit is checked against concurrent ones by
delta-rs: a concurrent ingest's appends (other batches) do not conflict; two compactions of the same files do,
and the loser gives up (no version changed; the files it had written are untracked -- delta-rs does not say
which they are -- and ``perflake vacuum`` deletes them once older than its retention).  Removed files stay on
disk for readers that listed them, until ``perflake vacuum`` (retention: ``--older-than``).

``ingest`` calls :func:`maybe_compact` after its commits: a table is compacted once it has more than
``AUTO_FILES`` files below the target size.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from perflake.catalogs.delta import _safe, to_schema, writer_properties
from perflake.catalogs.schema import INGEST_LOG, KEY_COLUMN, RUNS, TABLES

TARGET_BYTES = 128 << 20  # a file this big is left alone
AUTO_FILES = int(os.environ.get("PERFLAKE_COMPACT_FILES", "64"))  # small files of a table that trigger compaction
MAX_REWRITE_BYTES = 1 << 30  # at most this many input bytes per replace commit (more: several commits)
SORT = {"nodes": ["run_id", "node_id"], "edges": ["run_id", "parent_id", "child_id"],
        "metrics": ["run_id", "node_id", "rank", "thread"], "rank_summary": ["metric", "run_id", "node_id"],
        RUNS: ["batch", "run_id"], INGEST_LOG: ["attempted_at", "source"]}


@dataclass
class Compacted:
    table: str
    files_before: int
    files_after: int
    rewritten: int  # files replaced


def _plan(cat, table: str, target: int, committed: set[str] | None) -> tuple[list[str], list[str], int]:
    """(keys to rewrite, files they cover, their bytes): the keys whose every covering file is small."""
    files = cat.tables.live_files(table)
    paths, sizes = files.column("path").to_pylist(), files.column("size").to_pylist()
    los, his = files.column("min_batch").to_pylist(), files.column("max_batch").to_pylist()
    small = [i for i, s in enumerate(sizes) if s < target and los[i] is not None]
    if len(small) < 2:
        return [], [], 0
    keys = sorted(committed) if committed is not None else sorted({k for i in small for k in (los[i], his[i])})
    big = [(los[i], his[i]) for i, s in enumerate(sizes) if s >= target and los[i] is not None]
    chosen, covered, nbytes = [], set(), 0
    for k in keys:
        owners = [i for i in small if los[i] <= k <= his[i]]
        if not owners or any(lo <= k <= hi for lo, hi in big):
            continue
        extra = sum(sizes[i] for i in owners if i not in covered)
        if nbytes + extra > MAX_REWRITE_BYTES and chosen:
            break
        chosen.append(k)
        covered.update(owners)
        nbytes += extra
    if len(covered) < 2:
        return [], [], 0
    return chosen, [paths[i] for i in sorted(covered)], nbytes


def compact_table(cat, table: str, *, target: int = TARGET_BYTES, committed: set[str] | None = None) -> Compacted:
    """Merge the small files of one table (see the module); returns what it did."""
    from deltalake import write_deltalake
    from deltalake.exceptions import CommitFailedError, SchemaMismatchError

    before = cat.tables.table(table).file_uris()
    keys, files, _nbytes = _plan(cat, table, target, committed if table != INGEST_LOG else None)
    if not keys:
        return Compacted(table, len(before), len(before), 0)
    key = KEY_COLUMN[table]
    data = cat.tables.read_files(files)
    data = data.filter(pc.is_in(data.column(key), value_set=pa.array(keys, data.schema.field(key).type)))
    data = to_schema(data, cat.tables.schema(table))
    data = data.sort_by([(c, "ascending") for c in SORT[table] if c in data.schema.names])
    predicate = f"{key} IN (" + ", ".join(f"'{_safe(k)}'" for k in keys) + ")"
    try:  # (no schema merge: a metadata change would fail every concurrent writer's commit once)
        write_deltalake(cat.tables.table(table), data, mode="overwrite", predicate=predicate,
                        writer_properties=writer_properties(data.schema), target_file_size=target)
    except (CommitFailedError, SchemaMismatchError):  # another compaction, a conflicting commit, or a new metric
        return Compacted(table, len(before), len(before), 0)  # column since the read: nothing changed, next time
    after = cat.tables.table(table).file_uris()
    return Compacted(table, len(before), len(after), len(files))


def compact(cat, *, target: int = TARGET_BYTES, tables=TABLES) -> list[Compacted]:
    """Compact every table of the lake (only batches the runs table names, for the data tables).  The runs
    table last: a reader ``as_of`` a runs version reads the other tables as they were at its commit, so the files
    the other tables' compactions replace are needed by no runs version committed after them, and a vacuum may
    remove them once that runs commit is older than its retention (catalogs/vacuum.py)."""
    committed = set(cat.batches())
    tables = [t for t in tables if t != RUNS] + [t for t in tables if t == RUNS]
    done = [compact_table(cat, t, target=target, committed=committed) for t in tables]
    cat._files.clear()
    return done


def small_files(cat, table: str, target: int = TARGET_BYTES) -> int:
    sizes = cat.tables.live_files(table).column("size")
    return pc.sum(pc.less(sizes, target)).as_py() or 0


def maybe_compact(cat, *, threshold: int | None = None, target: int = TARGET_BYTES) -> list[Compacted]:
    """Compact the tables with more than ``threshold`` small files (default ``AUTO_FILES``).  The files are
    counted after one ingest in ``threshold // 4`` (at most 16; by the runs table's version): a table passes the
    threshold by at most that many batches, and most ingests skip the count (6 file listings)."""
    threshold = AUTO_FILES if threshold is None else threshold
    if cat.tables.version(RUNS) % max(1, min(16, threshold // 4)):
        return []
    due = [t for t in TABLES if small_files(cat, t, target) > threshold]
    return compact(cat, target=target, tables=due) if due else []
