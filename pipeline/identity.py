"""The call-path id: THE definition of a node's identity, used for every node id in a lake.

::

    frame_key = type, name, file, line, module joined by U+001F (a NULL written as '', line in decimal)
    path_text = the frame keys from the root to the node joined by U+001E
    node_id   = (the first 8 bytes of md5(UTF-8 path_text), read as a little-endian unsigned 64-bit integer)
                & 0x7FFF_FFFF_FFFF_FFFF

(DuckDB's ``md5_number_upper(path_text) & 9223372036854775807``.)  Same frames on the path, same id: in every
run, process, machine and version (since ids became 63-bit, below).  Siblings with identical frames get the
same id, so they merge (Hatchet's normalize()).

The id is a 63-bit value: the top bit of the 64 is cleared (:data:`ID_MASK`).  Delta Lake, Iceberg, Spark and
polars' lake readers have no unsigned 64-bit integer, and the lake's tables store ids in int64 columns
(docs/table-format.md); a 63-bit id casts to int64 and back losslessly, with the same value in every engine.
Inside perflake the type stays uint64 (Arrow, NumPy) / UBIGINT (DuckDB).  The odds of two distinct call
paths colliding are still negligible: about n**2 / 2**64 for n call paths (1e6 paths: ~5e-8).  Ids written
before the change (the full 64 bits) become today's ids with the same mask, ``old_id & ID_MASK``: the mask is
a function of the old id alone, so a stored lake is remapped without re-reading any path text.

How it is computed: md5 is a streaming hash, so the state after a parent's path text, copied and fed
U+001E and the child's key, is the state after the child's path text.  Each call path costs one copy and
one short update: linear in the number of call paths and independent of depth (hashing every path text
whole costs nodes x depth).  The tree is walked one depth level at a time with array operations, and only
the *distinct* (parent call path, frame key) pairs of a level are hashed: a batch of 10,000 runs of one
application hashes about as much as one run.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

FRAME_SEP = "\x1f"  # between the attributes of one frame
PATH_SEP = b"\x1e"  # between the frames of a path
ID_MASK = 0x7FFF_FFFF_FFFF_FFFF  # ids are 63-bit: they fit a signed 64-bit integer (module docstring)
KEY_ATTRS = ("type", "name", "file", "line", "module")


@dataclass
class PathIds:
    """Per input row: ``node_id`` (uint64 holding a 63-bit id), ``parent_id`` (same, meaningful where ``has_parent``),
    ``depth`` (int32, root 0) and ``reached`` (False for a row in a parent cycle, under a missing parent, or
    deeper than the bound: those rows get no id)."""

    node_id: np.ndarray
    parent_id: np.ndarray
    has_parent: np.ndarray
    depth: np.ndarray
    reached: np.ndarray


def frame_keys(frames: pa.Table) -> pa.Array:
    """The frame key of every row of ``frames`` (columns type, name, file, line, module)."""
    parts = []
    for attr in KEY_ATTRS:  # large strings: a batch's keys may exceed 2 GiB in all
        parts.append(pc.fill_null(pc.cast(frames.column(attr), pa.large_string()), ""))
    keys = pc.binary_join_element_wise(*parts, pa.scalar(FRAME_SEP, pa.large_string()))
    return keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys


def _parent_rows(run: np.ndarray, local: np.ndarray, parent_local: np.ndarray) -> np.ndarray:
    """The row of each row's parent; -1 for a root (parent_local -1), -2 when the parent is not among the
    rows (or parent_local is below -1)."""
    n = len(local)
    key = (run.astype(np.int64) << 32) | (local.astype(np.int64) & 0xFFFFFFFF)
    order = np.argsort(key, kind="stable")
    sorted_key = key[order]
    pkey = (run.astype(np.int64) << 32) | (parent_local.astype(np.int64) & 0xFFFFFFFF)
    at = np.minimum(np.searchsorted(sorted_key, pkey), max(n - 1, 0))
    found = sorted_key[at] == pkey if n else np.zeros(0, bool)
    rows = np.where(found, order[at] if n else at, -2)
    rows[parent_local < 0] = -2
    rows[parent_local == -1] = -1
    return rows


def _children(parent: np.ndarray):
    """Children of each row as CSR: (child rows grouped by parent, start of each row's group, count)."""
    n = len(parent)
    has = parent >= 0
    kids = np.flatnonzero(has)
    kids = kids[np.argsort(parent[kids], kind="stable")]
    count = np.bincount(parent[has], minlength=n)
    start = np.zeros(n, np.int64)
    np.cumsum(count[:-1], out=start[1:])
    return kids, start, count


def call_path_ids(run: np.ndarray, local: np.ndarray, parent_local: np.ndarray, keys: pa.Array,
                  max_depth: int) -> PathIds:
    """Call-path ids of the nodes of many runs at once.

    Row i is the node ``local[i]`` of run ``run[i]``, whose parent is the node ``parent_local[i]`` of the
    same run (-1: a root); ``keys`` are the rows' frame keys (:func:`frame_keys`).  Nodes deeper than
    ``max_depth`` are not reached.  Rows may come in any order; (run, local) pairs must be distinct (the
    caller checks: readers/base.py).
    """
    n = len(local)
    node_id = np.zeros(n, np.uint64)
    depth = np.full(n, -1, np.int32)
    parent = _parent_rows(run, local, parent_local)
    encoded = pc.dictionary_encode(keys)
    key_index = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    key_bytes = [k.encode("utf-8") for k in encoded.dictionary.to_pylist()]
    n_keys = max(len(key_bytes), 1)
    kids, start, count = _children(parent)
    canon = np.full(n, -1, np.int64)  # index of the row's distinct call path within its level
    level = np.flatnonzero(parent == -1)
    states: list = []  # md5 states of the previous level's distinct call paths
    d = 0
    while len(level) and d <= max_depth:
        pcanon = canon[parent[level]] if d else np.full(len(level), -1, np.int64)
        code = (pcanon + 1) * n_keys + key_index[level]
        distinct, inverse = np.unique(code, return_inverse=True)
        new_states, digests = [], []
        md5 = hashlib.md5
        for p, k in zip((distinct // n_keys - 1).tolist(), (distinct % n_keys).tolist()):
            if p < 0:
                h = md5(key_bytes[k])
            else:
                h = states[p].copy()
                h.update(PATH_SEP + key_bytes[k])
            new_states.append(h)
            digests.append(h.digest())
        ids = np.frombuffer(b"".join(digests), dtype="<u8")[::2].astype(np.uint64) & np.uint64(ID_MASK)
        canon[level] = inverse.ravel()
        node_id[level] = ids[inverse.ravel()]
        depth[level] = d
        states = new_states
        c = count[level]
        total = int(c.sum())
        if not total:
            break
        first = np.repeat(start[level] - np.cumsum(c) + c, c)
        level = kids[first + np.arange(total)]
        d += 1
    reached = depth >= 0
    has_parent = parent >= 0
    parent_id = np.where(has_parent, node_id[np.maximum(parent, 0)], 0).astype(np.uint64)
    return PathIds(node_id, parent_id, has_parent, depth, reached)
