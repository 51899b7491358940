"""The workloads' data: profiles written by perflake's generators, read to Arrow as ``perflake ingest`` does.

Each input is generated (``perflake.generators``), hashed (``perflake.ingest.task.hash_run``), read by its
reader and normalised in groups (``perflake.ingest.normalize.normalize_many``), then cast to the one schema of
``lakeschema`` and cached as Parquet under ``bench/work/table_format/data/``, so that the benchmarks time the
table formats' commits and reads, not the generators or the readers.

* ``small``: many small runs of three formats (Caliper json-split, TAU, HPCToolkit) with different metric
  columns: consecutive commits carry different metric sets, as a mixed lake does.
* ``big``: one Caliper json-split run of 10,000 nodes x 1,024 ranks (10.24 M metric rows).

``Runs`` gives one run's tables at a time (the data tables are sorted by run_id: a slice per run).
"""

from __future__ import annotations

import json
import os
import pathlib
import sys
import time
from dataclasses import dataclass

import lakeschema
import pyarrow as pa
import pyarrow.parquet as pq

HERE = pathlib.Path(__file__).resolve().parent
WORK = HERE.parent / "work" / "table_format"
DATA = WORK / "data"
GEN = WORK / "gen"

READER = {"caliper": "caliper_json"}  # generator name -> reader kind (the generator writes json-split)
SMALL_MIX = (("caliper", 60, 2), ("tau", 50, 2), ("hpctoolkit", 40, 2))  # (format, nodes, ranks) per small run
GROUP = 500  # runs normalised together (ingest normalises a whole batch in one pass)


def log(msg: str) -> None:
    print(f"[table_format {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def _read_group(kind: str, paths: list[str]):
    """Hash, read and normalise runs as an ingest task does; returns (Batch, runs rows)."""
    from perflake.ingest.normalize import normalize_many
    from perflake.ingest.task import hash_run, run_row
    from perflake.readers import get_reader

    kind = READER.get(kind, kind)
    reader = get_reader(kind)
    items, meta = [], []
    for path in paths:
        files = reader.files(path)
        sha, nbytes, _legacy = hash_run(files, path)
        rows = reader.read(path)
        items.append((sha[:16], rows))
        meta.append((sha, path, rows.metadata, len(files), nbytes))
    batch = normalize_many(items)
    runs = [run_row(sha[:16], sha, "", path, kind, reader, batch.runs[sha[:16]], metadata, n_files, nbytes)
            for sha, path, metadata, n_files, nbytes in meta]
    return batch, runs


def _generate(kind: str, out: pathlib.Path, *, nodes: int, ranks: int, runs: int, seed: int) -> list[str]:
    from perflake.generators import WRITERS

    return [str(p) for p in WRITERS[kind](str(out), nodes=nodes, ranks=ranks, runs=runs, seed=seed)]


def prepare_small(n_runs: int) -> pathlib.Path:
    """``n_runs`` small runs, a third of each format of SMALL_MIX, interleaved in commit order."""
    out = DATA / f"small-{n_runs}"
    if (out / "done.json").exists():
        return out
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    parts = {t: [] for t in ("nodes", "edges", "metrics")}
    runs = []
    per_kind = [n_runs // len(SMALL_MIX) + (i < n_runs % len(SMALL_MIX)) for i in range(len(SMALL_MIX))]
    for (kind, nodes, ranks), count in zip(SMALL_MIX, per_kind):
        paths = _generate(kind, GEN / f"small-{n_runs}-{kind}", nodes=nodes, ranks=ranks, runs=count, seed=11)
        log(f"generated {count} {kind} runs ({nodes} nodes x {ranks} ranks)")
        for start in range(0, len(paths), GROUP):
            batch, rows = _read_group(kind, paths[start:start + GROUP])
            for name, table in (("nodes", batch.nodes), ("edges", batch.edges), ("metrics", batch.metrics)):
                parts[name].append(lakeschema.conform(name, table))
            runs += rows
        log(f"read and normalised {count} {kind} runs")
    # interleave the formats: run i of the commit order is kind i % 3 (metric columns change commit to commit)
    by_kind = [[r for r in runs if r["format"] == READER.get(kind, kind)] for kind, _n, _r in SMALL_MIX]
    order = [lst[i] for i in range(max(map(len, by_kind))) for lst in by_kind if i < len(lst)]
    for name, tables in parts.items():
        pq.write_table(pa.concat_tables(tables, promote_options="default"), out / f"{name}.parquet")
    pq.write_table(lakeschema.runs_table(order), out / "runs.parquet")
    (out / "done.json").write_text(json.dumps({"runs": n_runs, "seconds": time.perf_counter() - t0}))
    log(f"small-{n_runs}: {time.perf_counter() - t0:.1f} s")
    return out


def prepare_big(nodes: int = 10_000, ranks: int = 1024) -> pathlib.Path:
    """One Caliper json-split run of ``nodes`` x ``ranks`` (the bench's ingest-caliper-json-10000x1024 input)."""
    out = DATA / f"big-{nodes}x{ranks}"
    if (out / "done.json").exists():
        return out
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    paths = _generate("caliper", GEN / f"big-{nodes}x{ranks}", nodes=nodes, ranks=ranks, runs=1, seed=1)
    log(f"generated 1 caliper run {nodes} x {ranks}: {time.perf_counter() - t0:.1f} s")
    batch, rows = _read_group("caliper", paths)
    for name, table in (("nodes", batch.nodes), ("edges", batch.edges), ("metrics", batch.metrics)):
        pq.write_table(lakeschema.conform(name, table), out / f"{name}.parquet")
    pq.write_table(lakeschema.runs_table(rows), out / "runs.parquet")
    for p in paths:  # the 440 MB input is not needed again
        os.remove(p)
    (out / "done.json").write_text(json.dumps({"nodes": nodes, "ranks": ranks, "seconds": time.perf_counter() - t0}))
    log(f"big-{nodes}x{ranks}: {time.perf_counter() - t0:.1f} s")
    return out


@dataclass
class Run:
    run_id: str
    sha: str
    tables: dict  # nodes, edges, metrics: pa.Table (this run's rows, metric columns of its format only)
    row: dict  # the runs catalog row (batch empty: set by the writer)


class Runs:
    """The cached runs of a prepared data folder, one at a time in commit order."""

    def __init__(self, folder: pathlib.Path):
        self.runs = pq.read_table(folder / "runs.parquet")
        self.data = {t: pq.read_table(folder / f"{t}.parquet") for t in ("nodes", "edges", "metrics")}
        self._offsets = {t: _offsets(tab) for t, tab in self.data.items()}
        self.rows = self.runs.to_pylist()

    def __len__(self) -> int:
        return len(self.rows)

    def run(self, i: int) -> Run:
        row = self.rows[i]
        tables = {}
        for name, table in self.data.items():
            start, length = self._offsets[name][row["run_id"]]
            part = table.slice(start, length)
            tables[name] = lakeschema.drop_null_metric_columns(part) if name == "metrics" else part
        return Run(row["run_id"], row["content_sha256"], tables, dict(row))

    def many(self, indices) -> list[Run]:
        return [self.run(i) for i in indices]


def _offsets(table: pa.Table) -> dict[str, tuple[int, int]]:
    import numpy as np

    ids = table.column("run_id").to_numpy(zero_copy_only=False)
    out = {}
    if not len(ids):
        return out
    change = np.flatnonzero(ids[1:] != ids[:-1]) + 1
    starts = np.concatenate([[0], change])
    ends = np.concatenate([change, [len(ids)]])
    for s, e in zip(starts, ends):
        out[ids[s]] = (int(s), int(e - s))
    return out


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description="prepare the table-format workloads' data (cached)")
    ap.add_argument("--small", type=int, default=10_000)
    ap.add_argument("--big", action="store_true")
    a = ap.parse_args()
    prepare_small(a.small)
    if a.big:
        prepare_big()
