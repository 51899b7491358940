"""Re-key the readers' values by call-path id when no call paths merge: the fast path of normalisation.

``sql/rekey_metrics.sql`` states the result (values joined to their node ids, sorted by run, node, rank,
thread); this module computes the same table with array operations, because for large runs the sort
dominated ingest time and memory (a sort of 10 million rows holds the rows, a permutation and the sort's
own buffers at once).  Here the join is a lookup -- readers number their nodes 0..n-1 (``local_id``,
readers/base.py), so a node's row in a batch is ``offset[run] + local_id`` -- and the sort is a gather in
slices of the output: the rows of a range of nodes are found in input order (which is already rank-major
for every reader), ordered inside the slice, and copied into columns allocated once.  Memory beyond input
and output is one slice.

Rows with equal (run, node, rank, thread) keep their input order (a Caliper region path split by a non-nested
attribute gives one location several rows): ``normalize._repeats`` then sends the values to the summing SQL path.
A NaN value becomes null, as ``normalize._nan_to_null`` does on the SQL path.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

SLICE_ROWS = 1 << 20  # output rows per slice (the last slice of a skewed run may hold more)


def _array(column) -> np.ndarray:
    """A column as NumPy, without a copy when it is one chunk without nulls (nulls of floats become NaN)."""
    if pa.types.is_null(column.type):  # a column of no value at all (e.g. built from an empty list)
        return np.full(len(column), np.nan)
    if isinstance(column, pa.ChunkedArray):
        column = column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()
    return column.to_numpy(zero_copy_only=not column.null_count)


def _already_sorted(rank: np.ndarray, thread: np.ndarray) -> bool:
    """Whether the rows are in (rank, thread) order already (rank-major blocks: TAU, HPCToolkit)."""
    if len(rank) < 2:
        return True
    r0, r1 = rank[:-1], rank[1:]
    if not np.all(r1 >= r0):
        return False
    if not np.any(thread):
        return True
    t0, t1 = thread[:-1], thread[1:]
    return bool(np.all((r1 > r0) | (t1 >= t0)))


def _locations_ordered(key: np.ndarray, rank: np.ndarray, thread: np.ndarray) -> bool:
    """Whether rows sorted by ``key`` have (rank, thread) ascending within each key (true when the input was
    node-major, as Caliper writes: the stable sort by node then needs no second key)."""
    same = key[1:] == key[:-1]
    later = (rank[1:] > rank[:-1]) | ((rank[1:] == rank[:-1]) & (thread[1:] >= thread[:-1]))
    return bool(np.all(~same | later))


def _slices(per_node: np.ndarray) -> list[tuple[int, int]]:
    """Node-position ranges [a, b) holding about SLICE_ROWS rows each."""
    ends = np.cumsum(per_node)
    bounds = [0]
    while bounds[-1] < len(per_node):
        target = (ends[bounds[-1] - 1] if bounds[-1] else 0) + SLICE_ROWS
        bounds.append(max(bounds[-1] + 1, int(np.searchsorted(ends, target, side="right"))))
    bounds[-1] = min(bounds[-1], len(per_node))
    return list(zip(bounds[:-1], bounds[1:]))


def _dense(lid: np.ndarray, rank: np.ndarray, thread: np.ndarray, n_frames: int) -> int:
    """How many location blocks the rows are, when they are a dense matrix in location-major order: every
    block holds the run's frames 0..n-1 in order, at one location, blocks in (rank, thread) order (old
    HPCToolkit databases: one block per metric-db file); 0 when they are not."""
    if not n_frames or len(lid) % n_frames or not len(lid):
        return 0
    blocks = len(lid) // n_frames
    shaped = lid.reshape(blocks, n_frames)
    if not (np.array_equal(shaped[0], np.arange(n_frames)) and (shaped == shaped[0]).all()):
        return 0
    for loc in (rank, thread):
        shaped = loc.reshape(blocks, n_frames)
        if not (shaped == shaped[:, :1]).all():
            return 0
    return blocks if _already_sorted(rank[::n_frames], thread[::n_frames]) else 0


def _transposed(number: int, blocks: int, frame_position: np.ndarray, node_ids: np.ndarray, rank, thread,
                names: list[str], sources: list[np.ndarray]) -> pa.Table:
    """The dense case of :func:`rekey`: one run's values, a (location x frame) matrix, transposed into node
    order (one fancy-index pass and one copy per column instead of a sort)."""
    n = len(frame_position)
    first = np.argsort(frame_position)  # the frame at each output node position (positions are distinct)
    ids = node_ids[frame_position[first]]
    rows = n * blocks
    columns = {
        "run_id": pa.array(np.full(rows, number, np.int32)),
        "node_id": pa.array(np.repeat(ids, blocks)),
        "rank": pa.array(np.tile(rank[::n].astype(np.int32, copy=False), n)),
        "thread": pa.array(np.tile(thread[::n].astype(np.int32, copy=False), n)),
    }
    for name, source in zip(names, sources):
        columns[name] = pa.array(source.reshape(blocks, n).T[first].ravel(), from_pandas=True)
    return pa.table(columns)


def rekey(tables: list[tuple[int, pa.Table]], frame_counts: np.ndarray, position: np.ndarray,
          node_ids: np.ndarray, metrics: list[str]) -> pa.Table | None:
    """The values of runs ``tables`` ((run number, values table) in ascending run number) re-keyed and sorted.

    ``frame_counts[run]`` is the number of frames of run number ``run``; ``position[offset[run] + local_id]``
    is the row of that node in the batch's node table (sorted by run, then node id), whose ids are
    ``node_ids``, offsets being the cumulative frame counts.  The result has the columns run_id (int32 run
    number), node_id, rank, thread and the ``metrics`` present, as float64.  Returns None when a local id is
    out of range (the caller then takes the SQL path, which drops such rows as an inner join does).
    """
    counts = np.asarray(frame_counts, dtype=np.int64)
    offsets = np.concatenate(([0], np.cumsum(counts)[:-1])) if len(counts) else counts
    position = position.astype(np.int32 if len(position) < 2**31 else np.int64)
    values = (tables[0][1] if len(tables) == 1
              else pa.concat_tables([t for _, t in tables], promote_options="permissive"))
    numbers = np.array([no for no, _ in tables], dtype=np.int32)
    lengths = np.array([t.num_rows for _, t in tables], dtype=np.int64)
    lid = _array(values.column("local_id"))
    if len(lid) and lid.min() < 0:
        return None
    if len(tables) == 1:
        no = int(numbers[0])
        if len(lid) and lid.max() >= counts[no]:
            return None
        g = position[int(offsets[no]) + lid] if offsets[no] else position[lid]
    else:
        run = np.repeat(numbers, lengths)
        if np.any(lid >= counts[run]):
            return None
        g = position[offsets[run] + lid]
        del run
    rank = _array(values.column("rank"))
    thread = _array(values.column("thread"))
    names = [n for n in values.column_names if n in metrics]
    if len(tables) == 1:
        no = int(numbers[0])
        blocks = _dense(lid, rank, thread, int(counts[no]))
        if blocks:
            sources = [_array(values.column(n)).astype(np.float64, copy=False) for n in names]
            frames = position[int(offsets[no]):int(offsets[no] + counts[no])]
            return _transposed(no, blocks, frames, node_ids, rank, thread, names, sources)
    by_location = not _already_sorted(rank, thread)
    sources = [_array(values.column(n)).astype(np.float64, copy=False) for n in names]
    n = len(g)
    out_node = np.empty(n, np.uint64)
    out_rank = np.empty(n, np.int32) if rank.any() else None  # all zero: fresh zeros below, no memory
    out_thread = np.empty(n, np.int32) if thread.any() else None
    out_values = [np.empty(n, np.float64) for _ in names]
    per_node = np.bincount(g, minlength=len(position))
    start = 0
    for a, b in _slices(per_node):
        rows = np.flatnonzero((g >= a) & (g < b)) if (a, b) != (0, len(per_node)) else np.arange(n)
        key = g[rows]
        if b - a <= 1 << 16:  # NumPy's stable sort of 16-bit keys is a radix sort
            order = np.argsort((key - a).astype(np.uint16), kind="stable")
        else:
            order = np.argsort(key, kind="stable")
        if by_location and not _locations_ordered(key[order], rank[rows[order]], thread[rows[order]]):
            order = np.lexsort((thread[rows], rank[rows], key))  # input neither rank-major nor node-major
        rows = rows[order]
        stop = start + len(rows)
        out_node[start:stop] = node_ids[key[order]]
        if out_rank is not None:
            out_rank[start:stop] = rank[rows]
        if out_thread is not None:
            out_thread[start:stop] = thread[rows]
        for source, out in zip(sources, out_values):
            out[start:stop] = source[rows]
        start = stop
    del g, sources
    zeros = lambda: np.zeros(n, np.int32)  # noqa: E731 - calloc'd pages cost nothing until written
    columns = {
        "run_id": pa.array(np.repeat(numbers, lengths) if numbers.any() else zeros()),
        "node_id": pa.array(out_node),
        "rank": pa.array(out_rank if out_rank is not None else zeros()),
        "thread": pa.array(out_thread if out_thread is not None else zeros()),
    }
    for name, out in zip(names, out_values):
        columns[name] = pa.array(out, from_pandas=True)  # NaN -> null, zero-copy
    return pa.table(columns)
