"""Re-key the readers' values by call-path id when no call paths merge: the fast path of normalisation.

``sql/rekey_metrics.sql`` states the result (values joined to their node ids, sorted by run, node, rank,
thread); this module computes the same table with array operations because the sort dominates ingest
of large runs: a comparison sort of 10 million rows costs seconds, a radix sort on 16-bit digits
(NumPy's stable sort of ``uint16`` keys) a fraction of that.  The join is a lookup: readers number their
nodes 0..n-1 (``local_id``, readers/base.py), so a node's row in a batch is ``offset[run] + local_id``.

Output order ties: rows with equal (run, node, rank, thread) keep their input order (the sort is stable),
as DuckDB's sort is free to reorder them; readers never emit such duplicates when nothing merges.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

DIGIT = 16


def radix_argsort(keys: list[np.ndarray]) -> np.ndarray:
    """The stable permutation sorting rows by ``keys`` (most significant first; non-negative integers)."""
    n = len(keys[0]) if keys else 0
    perm = np.arange(n, dtype=np.int64)
    for key in reversed(keys):  # least significant key first: LSD radix over 16-bit digits
        key = key.astype(np.uint64, copy=False)
        top = int(key.max()) if n else 0
        if top == 0:
            continue
        shift = 0
        while top >> shift:
            digit = ((key[perm] >> np.uint64(shift)) & np.uint64(0xFFFF)).astype(np.uint16)
            perm = perm[np.argsort(digit, kind="stable")]
            shift += DIGIT
    return perm


def _already_sorted(rank: np.ndarray, thread: np.ndarray) -> bool:
    """Whether the rows are in (rank, thread) order already (readers usually write rank-major blocks)."""
    if len(rank) < 2:
        return True
    r0, r1, t0, t1 = rank[:-1], rank[1:], thread[:-1], thread[1:]
    return bool(np.all((r1 > r0) | ((r1 == r0) & (t1 >= t0))))


def rekey(values: pa.Table, frame_counts: list[int], position: np.ndarray, node_ids: np.ndarray,
          metrics: list[str]) -> pa.Table | None:
    """``values`` (run_id int32 = run number, local_id, rank, thread, metrics...) re-keyed and sorted.

    ``frame_counts[run]`` is the number of frames of run number ``run`` (runs numbered 0..k-1 in order);
    ``position[offset[run] + local_id]`` is the row of that node in the batch's node table, sorted by
    (run, node id), whose ids are ``node_ids``.  Returns None when a local id is out of range (the caller
    then takes the SQL path, which drops such rows as an inner join does).
    """
    run = values.column("run_id").to_numpy()
    lid = values.column("local_id").to_numpy()
    counts = np.asarray(frame_counts, dtype=np.int64)
    if len(lid) and (lid.min() < 0 or np.any(lid >= counts[run])):
        return None
    offsets = np.concatenate(([0], np.cumsum(counts)[:-1])) if len(counts) else counts
    g = position[offsets[run] + lid]
    rank = values.column("rank").to_numpy(zero_copy_only=False).astype(np.int64)
    thread = values.column("thread").to_numpy(zero_copy_only=False).astype(np.int64)
    keys = [g.astype(np.uint64)]
    if not _already_sorted(rank, thread):
        keys += [(rank - rank.min()).astype(np.uint64), (thread - thread.min()).astype(np.uint64)]
    perm = radix_argsort(keys)
    order = pa.array(perm)
    columns = {
        "run_id": values.column("run_id").take(order),
        "node_id": pa.array(node_ids[g[perm]], pa.uint64()),
        "rank": pa.array(rank[perm].astype(np.int32)),
        "thread": pa.array(thread[perm].astype(np.int32)),
    }
    for name in values.column_names:
        if name in metrics:
            columns[name] = pc.cast(values.column(name), pa.float64()).take(order)
    return pa.table(columns)
