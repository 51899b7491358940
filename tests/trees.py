"""Hand-built ProfileRows for tests: tiny trees whose values are checked by hand."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from perflake.readers.base import FRAME_SCHEMA, Metric, ProfileRows


def profile(nodes, values, metrics, fmt="test") -> ProfileRows:
    """nodes: [(local_id, parent_local, name)], values: [(local_id, rank, thread, v1, v2, ...)]."""
    n = len(nodes)
    frames = pa.table(
        {
            "local_id": pa.array([x[0] for x in nodes], pa.int32()),
            "parent_local": pa.array([x[1] for x in nodes], pa.int32()),
            "name": [x[2] for x in nodes],
            "type": ["function"] * n,
            "file": pa.nulls(n, pa.string()),
            "line": pa.nulls(n, pa.int64()),
            "end_line": pa.nulls(n, pa.int64()),
            "module": pa.nulls(n, pa.string()),
        },
        schema=FRAME_SCHEMA,
    )
    cols = list(zip(*values)) if values else [[]] * (3 + len(metrics))
    table = {"local_id": pa.array(cols[0], pa.int32()), "rank": pa.array(cols[1], pa.int32()),
             "thread": pa.array(cols[2], pa.int32())}
    for i, m in enumerate(metrics):
        table[m.name] = pa.array(np.asarray(cols[3 + i], dtype=float))
    return ProfileRows(format=fmt, source=f"<{fmt}>", frames=frames, values=pa.table(table), metrics=list(metrics))


# main(1) -> a(2) -> c(4), d(8);  main -> b(16) -> c(32);  a second "a" under main (64) -> e(128)
# The two "a" siblings have identical frames, so they merge: a = 2 + 64, children c, d, e.
SMALL_NODES = [(0, -1, "main"), (1, 0, "a"), (2, 1, "c"), (3, 1, "d"), (4, 0, "b"), (5, 4, "c"), (6, 0, "a"),
               (7, 6, "e")]
SMALL_EXC = {0: 1, 1: 2, 2: 4, 3: 8, 4: 16, 5: 32, 6: 64, 7: 128}
# by call path, rank 0 (rank 1 holds 10x these)
SMALL_EXPECTED_EXC = {("main",): 1, ("main", "a"): 66, ("main", "a", "c"): 4, ("main", "a", "d"): 8,
                      ("main", "a", "e"): 128, ("main", "b"): 16, ("main", "b", "c"): 32}
SMALL_EXPECTED_INC = {("main",): 255, ("main", "a"): 206, ("main", "a", "c"): 4, ("main", "a", "d"): 8,
                      ("main", "a", "e"): 128, ("main", "b"): 48, ("main", "b", "c"): 32}


def small_exclusive_only() -> ProfileRows:
    values = [(lid, r, 0, v * (10 if r else 1)) for r in (0, 1) for lid, v in SMALL_EXC.items()]
    return profile(SMALL_NODES, values, [Metric("time", "exclusive", "usec")])
