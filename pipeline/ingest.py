"""detect -> hash -> read -> normalize -> write Parquet -> commit the catalog rows (the commit point).

Idempotent: a run's id is the hash of its input files' bytes, so the same bytes ingested again (from any
path) are skipped.  Atomic: rows are written per batch and become visible only when the batch's catalog
file is committed; on any failure while writing, the batch's files are removed and nothing is visible.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import sys
import time
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from perflake import __version__
from perflake.catalogs.catalog import Catalog, new_batch_id
from perflake.catalogs.schema import RUNS_SCHEMA, SCHEMA_VERSION
from perflake.catalogs.well_known import promote
from perflake.errors import FormatNotRecognized, PerflakeError, ReaderError
from perflake.normalize import RunFacts, normalize_many
from perflake.readers import detect, get_reader
from perflake.readers.base import EXCLUSIVE, INCLUSIVE, ProfileRows

BATCH_ROWS = 4_000_000  # reader value rows buffered before a batch is normalised and written
BATCH_RUNS = 5_000  # runs per batch at most


@dataclass
class IngestReport:
    ingested: list[str] = field(default_factory=list)  # run ids
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (source, run id already present)
    failed: list[tuple[str, str]] = field(default_factory=list)  # (source, one-line reason)

    def summary(self) -> str:
        return f"ingested {len(self.ingested)} runs, skipped {len(self.skipped)} already present, {len(self.failed)} failed"

    @property
    def ok(self) -> bool:
        return not self.failed


def find_runs(paths) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """Expand paths into (format, path) runs; a directory that is not itself a run is walked.

    Returns (runs, problems) where problems are (path, reason) for explicit paths that hold no profile.
    """
    runs, problems = [], []
    for p in paths:
        p = os.fspath(p)
        if not os.path.exists(p):
            problems.append((p, f"{p}: no such file or directory"))
            continue
        kind = detect(p)
        if kind:
            runs.append((kind, p))
            continue
        found = []
        if os.path.isdir(p):
            for top, dirs, files in os.walk(p):
                dirs.sort()
                if top != p and (kind := detect(top)):
                    found.append((kind, top))
                    dirs[:] = []
                    continue
                for f in sorted(files):
                    fp = os.path.join(top, f)
                    if (kind := detect(fp)):
                        found.append((kind, fp))
        if not found:
            problems.append((p, f"{p}: not a profile perflake can read, and no profiles found inside"))
        runs += found
    return runs, problems


def content_hash(files: list[str], base: str) -> tuple[str, int]:
    """sha256 over (relative path, size, bytes) of every input file, in sorted order; and the total bytes."""
    h = hashlib.sha256()
    total = 0
    for f in sorted(files):
        rel = os.path.relpath(f, base) if os.path.isdir(base) else os.path.basename(f)
        size = os.path.getsize(f)
        h.update(rel.encode() + b"\0" + str(size).encode() + b"\0")
        with open(f, "rb") as fh:
            while chunk := fh.read(1 << 23):  # 8 MiB at a time: a 1 GB input is not held in memory
                h.update(chunk)
        total += size
    return h.hexdigest(), total


def _run_row(run_id, sha, batch, source, kind, reader, facts: RunFacts, metadata, n_files, nbytes) -> dict:
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


@dataclass
class _Pending:
    run_id: str
    sha: str
    path: str
    kind: str
    reader: object
    rows: ProfileRows
    n_files: int
    nbytes: int


class _Batch:
    """Parsed runs waiting to be normalised together and written as one batch."""

    def __init__(self):
        self.id = new_batch_id()
        self.pending: list[_Pending] = []
        self.n_values = 0

    def add(self, item: _Pending) -> None:
        self.pending.append(item)
        self.n_values += item.rows.values.num_rows

    def _normalize(self, report: IngestReport):
        try:
            return normalize_many([(p.run_id, p.rows) for p in self.pending])
        except ReaderError:
            pass
        good = []  # isolate the run(s) the batch failed on, keep the rest
        for p in self.pending:
            try:
                normalize_many([(p.run_id, p.rows)])
                good.append(p)
            except ReaderError as exc:
                report.failed.append((p.path, str(exc)))
        self.pending = good
        return normalize_many([(p.run_id, p.rows) for p in good]) if good else None

    def write(self, catalog: Catalog, report: IngestReport) -> None:
        batch = self._normalize(report)
        if batch is None:
            return
        with catalog.commit_lock():  # another ingest may have committed some of these runs meanwhile
            present = dict(zip(*(catalog.runs().column(c).to_pylist() for c in ("content_sha256", "run_id"))))
            report.skipped += [(p.path, present[p.sha]) for p in self.pending if p.sha in present]
            pending = [p for p in self.pending if p.sha not in present]
            if not pending:
                return
            keep = pa.array([p.run_id for p in pending], pa.string())
            tables = [(name, t if len(pending) == len(self.pending) else t.filter(pc.is_in(t.column("run_id"), value_set=keep)))
                      for name, t in (("nodes", batch.nodes), ("edges", batch.edges), ("metrics", batch.metrics))]
            rows = sorted(
                (_run_row(p.run_id, p.sha, self.id, p.path, p.kind, p.reader, batch.runs[p.run_id], p.rows.metadata,
                          p.n_files, p.nbytes) for p in pending),
                key=lambda r: r["run_id"],
            )
            try:
                for name, table in tables:
                    catalog.write_table(name, self.id, table)
                catalog.commit(self.id, pa.Table.from_pylist(rows, schema=RUNS_SCHEMA))
            except BaseException:
                catalog.discard(self.id)
                raise
        report.ingested += [r["run_id"] for r in rows]


class _Progress:
    """A one-line progress bar on a terminal (stderr); silent otherwise."""

    def __init__(self, total: int, enabled: bool):
        self.total, self.done, self.enabled = total, 0, enabled and total > 1 and sys.stderr.isatty()
        self.t0 = time.monotonic()

    def step(self, label: str) -> None:
        self.done += 1
        if self.enabled:
            width = 30
            filled = int(width * self.done / self.total)
            rate = self.done / max(time.monotonic() - self.t0, 1e-9)
            sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} {rate:.1f} runs/s {label[-40:]:<40}")
            sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\n")


def ingest(catalog: Catalog, paths, *, progress: bool = True) -> IngestReport:
    """Ingest every run found under ``paths`` into the lake of ``catalog``."""
    report = IngestReport()
    runs, problems = find_runs(paths)
    report.failed += problems
    present = catalog.runs()
    known = dict(zip(present.column("content_sha256").to_pylist(), present.column("run_id").to_pylist()))
    batch = _Batch()
    bar = _Progress(len(runs), progress)
    for kind, path in runs:
        bar.step(path)
        try:
            reader = get_reader(kind)
            files = reader.files(path)
            sha, nbytes = content_hash(files, path)
            if sha in known:
                report.skipped.append((path, known[sha]))
                continue
            rows = reader.read(path)
        except PerflakeError as exc:
            report.failed.append((path, str(exc) if isinstance(exc, (ReaderError, FormatNotRecognized)) else f"{path}: {exc}"))
            continue
        except (OSError, ValueError, UnicodeError, MemoryError) as exc:
            report.failed.append((path, f"{path}: {type(exc).__name__}: {exc}"))
            continue
        known[sha] = sha[:16]
        batch.add(_Pending(sha[:16], sha, path, kind, reader, rows, len(files), nbytes))
        if batch.n_values >= BATCH_ROWS or len(batch.pending) >= BATCH_RUNS:
            batch.write(catalog, report)
            batch = _Batch()
    bar.close()
    if batch.pending:
        batch.write(catalog, report)
    return report
