"""The rank summary of a batch: per run, call path and metric, what every per-rank question needs, computed once.

Imbalance over 1,000 runs of 1,000 call paths x 16 ranks read 16 million metric rows for every question; its
answers only need, per (run, call path, metric), statistics over the run's locations (rank >= 0, every thread;
rank -1, a summary profile, is not a location) where the call path has a value.  They are computed here when a
batch is written (``perflake.ingest.task``) and stored as the batch's ``rank_summary`` file, committed with its
nodes, edges and metrics; batches written before schema 4 get theirs from the migration ``0003-rank-summary``
(catalogs/migrations.py).  The columns (catalogs/schema.py ``RANK_SUMMARY_FILE_SCHEMA``) are those of
sql/imbalance_partial.sql, which imbalance runs over the metrics rows when there is no summary:

- ``count``, ``total``, ``m2`` (sum of squared deviations from the mean total / count; the mean itself is
  not stored: the view and the readers divide), summed as DuckDB sums them (:func:`_moments`),
  ``min``, ``max`` over the locations with a value;
- ``min_rank``: the lowest rank holding ``min``; ``top_ranks``: the ``RANK_SUMMARY_TOP`` ranks of largest
  value, a rank's value being its max over threads, ties to the lower rank (so any shorter top k is a prefix);
  ``max_rank``: its first entry;
- ``locations``: the run's locations, with or without a value at the call path (``absent="zero"``).

Array operations rather than SQL, as in perflake.ingest.rekey: a batch's metrics rows are sorted by run,
call path, rank and thread (checked; sorted here when they are not), so every group is a slice and the
statistics are ``reduceat`` over slice starts; the top ranks come from a row-wise sort of the call paths'
per-rank values (:func:`_top`).  On 1.3 million rows of 16 ranks this takes about 50-70 ms a metric; the
same statistics in DuckDB (sql/imbalance_partial.sql with k = 8) took 300-600 ms.  The file is sorted by
metric, then run and call path, so a question about one metric reads its row groups only.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from perflake.catalogs.schema import METRICS_KEY_SCHEMA, RANK_SUMMARY_FILE_SCHEMA, RANK_SUMMARY_TOP

KEYS = METRICS_KEY_SCHEMA.names  # run_id, node_id, rank, thread


def metric_columns(schema: pa.Schema) -> list[str]:
    """The metric columns of a metrics table: every column after the keys, in name order."""
    return sorted(name for name in schema.names if name not in KEYS)


def _run_codes(column) -> tuple[np.ndarray, pa.Array]:
    """Run ids as integer codes numbered in run-id order, and the run ids of the codes."""
    if not pa.types.is_dictionary(column.type):
        column = pc.dictionary_encode(column)
    if isinstance(column, pa.ChunkedArray):
        column = column.unify_dictionaries().combine_chunks() if column.num_chunks else pa.array([], column.type)
    names = column.dictionary.cast(pa.string())
    by_name = pc.sort_indices(names).to_numpy()
    renumber = np.empty(len(by_name), np.int64)
    renumber[by_name] = np.arange(len(by_name))
    return renumber[column.indices.to_numpy(zero_copy_only=False)], pc.take(names, pa.array(by_name))


def _in_order(codes, node, rank, thread) -> bool:
    """Whether the rows are sorted by (run, call path, rank, thread)."""
    if len(codes) < 2:
        return True
    c0, c1, n0, n1 = codes[:-1], codes[1:], node[:-1], node[1:]
    r0, r1, t0, t1 = rank[:-1], rank[1:], thread[:-1], thread[1:]
    same_node = (c0 == c1) & (n0 == n1)
    return bool(np.all((c0 < c1) | ((c0 == c1) & (n0 < n1)) | (same_node & ((r0 < r1) | ((r0 == r1) & (t0 <= t1))))))


def _locations(codes, rank, thread, runs: int) -> np.ndarray:
    """Per run code, its distinct (rank, thread) pairs (rows with rank >= 0 given)."""
    distinct = pa.table({"c": codes, "r": rank, "t": thread}).group_by(["c", "r", "t"]).aggregate([])
    return np.bincount(distinct.column("c").to_numpy(), minlength=runs).astype(np.int64)


def _moments(values, starts, count) -> tuple[np.ndarray, np.ndarray]:
    """Per group (a slice of ``values`` from each start): the sum, and m2 as sql/imbalance_partial.sql has it,
    ``var_pop(value) * count(*)``.  Both are DuckDB's own updates, one value after the other in row order
    (a sum from 0.0; Welford's mean and squared deviations, then divided by the count and multiplied back), so
    that a run's mean (total / count) is the very number ``avg(value)`` over its metrics rows gives: the
    per-run values of ensembles and regressions keep their ties, which rank tests (Mann-Whitney) count.  The
    loop runs over the places in a group (16 for 16 ranks), each step over the groups that long."""
    n = len(starts)
    total, mean, dsq = np.zeros(n), np.zeros(n), np.zeros(n)
    by_size = np.argsort(-count, kind="stable")
    longer = -count[by_size]  # ascending
    uniform = bool((count == count[0]).all())
    with np.errstate(invalid="ignore", over="ignore"):  # infinite values: NaN or infinite, as in DuckDB
        for j in range(int(count.max())):
            active = slice(None) if uniform else by_size[: np.searchsorted(longer, -j, side="left")]
            _step(values, starts, j, active, total, mean, dsq)
        return total, np.where(count > 1, dsq / count, 0.0) * count


def _step(values, starts, j: int, active, total, mean, dsq) -> None:
    """The j-th value of each active group into its sum and Welford's state (DuckDB's update)."""
    x = values[starts[active] + j]
    total[active] += x
    old = mean[active]
    new = old + (x - old) / (j + 1)
    dsq[active] += (x - new) * (x - old)
    mean[active] = new


def _top(values, ranks, groups, per_group: np.ndarray, k: int, *, nan: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Per group (rows grouped, ranks ascending inside a group), the ranks of the k largest values, ties to the
    lower rank: (list offsets, ranks).

    The groups are laid out as the rows of a matrix (padded) and each row sorted by a heapsort (10 ms for
    84,000 rows of 16, a stable sort 80 ms, a lexsort of the 1.3 million values 750 ms); the few rows whose first
    k + 1 sorted values hold a tie are sorted again stably, which keeps equal values in rank order.  Very
    uneven groups (padding over 4x the values) take one lexsort."""
    n, rows = len(per_group), len(values)
    offsets = np.concatenate([[0], np.cumsum(np.minimum(per_group, k))]).astype(np.int32)
    starts = np.concatenate([[0], np.cumsum(per_group)[:-1]])
    width = int(per_group.max()) if n else 0
    if nan or n * width > 4 * rows + 1024:  # NaN values (above every number, equal to each other): NaN first
        missing = np.isnan(values)
        order = np.lexsort((np.where(missing, 0.0, -values), ~missing, groups))  # stable: ties keep the rank order
        return offsets, ranks[order[np.arange(rows) - starts[groups[order]] < k]]
    if n * width == rows:  # every group as long: the matrix is the values
        neg, rank_of = -values.reshape(n, width), ranks.reshape(n, width)
    else:
        column = np.arange(rows) - starts[groups]
        neg = np.full((n, width), np.inf)  # negated values: the largest first; padding (+inf) after a row's own
        neg[groups, column] = -values
        rank_of = np.zeros((n, width), ranks.dtype)
        rank_of[groups, column] = ranks
    order = np.argsort(neg, axis=1, kind="heapsort")
    head = min(k + 1, width)
    first = np.take_along_axis(neg, order[:, :head], axis=1)
    # a tie among a row's values (or between its -inf and padding) within its first k + 1 sorted places
    tied = ((first[:, :-1] == first[:, 1:]) & (np.arange(1, head) <= per_group[:, None])).any(axis=1)
    if tied.any():
        order[tied] = np.argsort(neg[tied], axis=1, kind="stable")
    kept = min(k, width)
    top = np.take_along_axis(rank_of, order[:, :kept], axis=1)
    return offsets, top[np.arange(kept) < per_group[:, None]]


def _metric(metric: str, codes, node, rank, values, names: pa.Array, locations: np.ndarray) -> pa.Table:
    """The summary rows of one metric from its located, measured rows (sorted)."""
    rows = len(values)
    new = np.empty(rows, bool)
    new[0] = True
    new[1:] = (codes[1:] != codes[:-1]) | (node[1:] != node[:-1])
    starts = np.flatnonzero(new)
    count = np.diff(np.append(starts, rows))
    group = np.repeat(np.arange(len(starts)), count)
    total, m2 = _moments(values, starts, count)
    nan = np.isnan(values)
    # NaN is above every number, as DuckDB orders it: min skips it (NaN when every value is), max is NaN if any
    low, high = np.fmin.reduceat(values, starts), np.maximum.reduceat(values, starts)
    at_min = np.where((values == low[group]) | (nan & np.isnan(low[group])), np.arange(rows), rows)
    min_rank = rank[np.minimum.reduceat(at_min, starts)]
    rank_new = new.copy()
    rank_new[1:] |= rank[1:] != rank[:-1]
    if rank_new.all():  # one location per rank: a rank's value is its one value
        rank_values, rank_ids, rank_group = values, rank, group
    else:
        rank_starts = np.flatnonzero(rank_new)
        rank_values = np.maximum.reduceat(values, rank_starts)
        rank_ids, rank_group = rank[rank_starts], group[rank_starts]
    offsets, top = _top(rank_values, rank_ids, rank_group, np.bincount(rank_group, minlength=len(starts)),
                        RANK_SUMMARY_TOP, nan=bool(nan.any()))
    top_ranks = pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), pa.array(top, pa.int32()))
    run = codes[starts]
    return pa.table({
        "run_id": pc.take(names, pa.array(run)),
        "node_id": pa.array(node[starts], pa.uint64()),
        "metric": pa.repeat(pa.scalar(metric, pa.string()), len(starts)),
        "count": pa.array(count, pa.int64()),
        "total": total,
        "m2": m2,
        "min": low,
        "max": high,
        "min_rank": pa.array(min_rank, pa.int32()),
        "max_rank": pa.array(top[offsets[:-1]], pa.int32()),
        "top_ranks": top_ranks,
        "locations": pa.array(locations[run], pa.int64()),
    }, schema=RANK_SUMMARY_FILE_SCHEMA)


def summarize(metrics: pa.Table) -> pa.Table:
    """The rank_summary rows of a metrics table (a batch's: run_id, node_id, rank, thread, one column per
    metric), sorted by metric, run_id, node_id."""
    parts = []
    if metrics.num_rows:
        codes, names = _run_codes(metrics.column("run_id"))
        node, rank, thread = (metrics.column(c).to_numpy() for c in ("node_id", "rank", "thread"))
        order = None if _in_order(codes, node, rank, thread) else np.lexsort((thread, rank, node, codes))
        if order is not None:
            codes, node, rank, thread = codes[order], node[order], rank[order], thread[order]
        located = rank >= 0
        everywhere = bool(located.all())  # no summary profile (rank -1) in the batch
        locations = (_locations(codes, rank, thread, len(names)) if everywhere else
                     _locations(codes[located], rank[located], thread[located], len(names)))
        for metric in metric_columns(metrics.schema):
            column = metrics.column(metric)
            values = column.cast(pa.float64()).to_numpy()
            if order is not None:
                values = values[order]
            if everywhere and not column.null_count:  # every row a measured location: no copy
                parts.append(_metric(metric, codes, node, rank, values, names, locations))
                continue
            keep = located
            if column.null_count:
                valid = pc.is_valid(column).to_numpy(zero_copy_only=False)
                keep = located & (valid[order] if order is not None else valid)
            if keep.any():  # (else a metric of other runs of the batch, or rank -1 only)
                parts.append(_metric(metric, codes[keep], node[keep], rank[keep], values[keep], names, locations))
    if not parts:
        return pa.Table.from_batches([], schema=RANK_SUMMARY_FILE_SCHEMA)
    return pa.concat_tables(parts)
