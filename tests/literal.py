"""Hatchet-style literal graphs for query tests, and their conversion to perflake GraphFrames.

A literal is a list of roots ``{"frame": {"name": ..., "type": ...}, "metrics": {...}, "children": [...]}``, the
format of Hatchet's ``GraphFrame.from_literal``.  A metric value may be a list: one value per rank (multi-rank
data).  ``tree(name, inc, exc, *children)`` writes them compactly.  This module does not import perflake at
import time, so the same literals can be fed to Hatchet when regenerating expected results.
"""

from __future__ import annotations


def tree(name, inc=None, exc=None, *children, type=None, **metrics) -> dict:
    frame = {"name": name} if type is None else {"name": name, "type": type}
    values = dict(metrics)
    if inc is not None:
        values["time (inc)"] = inc
    if exc is not None:
        values["time"] = exc
    out = {"frame": frame, "metrics": values}
    if children:
        out["children"] = list(children)
    return out


F = "function"

# Hatchet's test fixture ``mock_graph_literal`` (hatchet/tests/conftest.py): names, types, inclusive and
# exclusive times.  The user guide's ``[{"name": "corge"}, "*"]`` example runs on it.
MOCK_GRAPH = [
    tree("foo", 135.0, 0.0,
         tree("bar", 20.0, 5.0, tree("baz", 5.0, 5.0, type=F), tree("grault", 10.0, 10.0)),
         tree("qux", 60.0, 0.0,
              tree("quux", 60.0, 5.0,
                   tree("corge", 55.0, 10.0,
                        tree("bar", 20.0, 5.0, tree("baz", 5.0, 5.0, type=F), tree("grault", 10.0, 10.0)),
                        tree("grault", 10.0, 10.0),
                        tree("garply", 15.0, 15.0, type=F), type=F)), type=F),
         tree("waldo", 55.0, 0.0,
              tree("fred", 40.0, 5.0,
                   tree("plugh", 5.0, 5.0, type=F),
                   tree("xyzzy", 30.0, 5.0,
                        tree("thud", 25.0, 5.0, tree("baz", 5.0, 5.0, type=F), tree("garply", 15.0, 15.0, type=F),
                             type=F), type=F), type=F),
              tree("garply", 15.0, 15.0, type=F), type=F), type=F),
    tree("waldo", 30.0, 10.0, tree("bar", 20.0, 5.0, tree("baz", 5.0, 5.0, type=F), tree("grault", 10.0, 10.0)),
         type=F),
]

# The user guide's sample graph (a solver stack) is only published as an image; this literal has the same
# shape of interest: "solvers" over chains of nodes with inclusive times around 10 and nodes named p<x><digit>
# (pilu8 under pgmres7 is where Hatchet's rule "a star stops at the first node matching the next element" shows).
SOLVERS_GRAPH = [
    tree("main", 200.0, 5.0,
         tree("setup", 25.0, 5.0, tree("psetup1", 20.0, 20.0)),
         tree("solvers", 150.0, 5.0,
              tree("hypre", 80.0, 10.0,
                   tree("pcg2", 40.0, 40.0),
                   tree("amg", 30.0, 8.0, tree("pfmg3", 12.0, 12.0), tree("prelax4", 9.0, 9.0), tree("p5", 1.0, 1.0))),
              tree("pcg1", 15.0, 15.0),
              tree("slow", 8.0, 3.0, tree("pbad9", 5.0, 5.0)),
              tree("petsc", 47.0, 2.0, tree("ksp", 45.0, 5.0, tree("pgmres7", 40.0, 20.0, tree("pilu8", 20.0, 20.0))))),
         tree("output", 20.0, 20.0)),
]

# A small MPI code with PAPI L2 misses: for the query-language paper's MPI/L2 example.
MPI_GRAPH = [
    tree("main", 100.0, 2.0,
         tree("solve", 60.0, 5.0,
              tree("MPI_Allreduce", 20.0, 4.0, tree("PMPI_Allreduce", 16.0, 10.0, tree("psm2_poll", 6.0, 6.0,
                                                                                       PAPI_L2_TCM=2.0),
                                                                           PAPI_L2_TCM=9.0), PAPI_L2_TCM=12.0),
              tree("MPI_Wait", 5.0, 5.0, PAPI_L2_TCM=3.0),
              tree("compute", 30.0, 30.0, PAPI_L2_TCM=400.0), PAPI_L2_TCM=1.0),
         tree("MPI_Init", 30.0, 10.0, tree("PMPI_Init", 20.0, 20.0, PAPI_L2_TCM=50.0), PAPI_L2_TCM=4.0),
         tree("finalize", 8.0, 3.0, tree("MPI_Finalize", 5.0, 5.0, PAPI_L2_TCM=7.0), PAPI_L2_TCM=0.0),
         PAPI_L2_TCM=0.0),
]

# NaN, infinities and missing files, for IS [NOT] NAN / INF / NONE.
SPECIAL_GRAPH = [
    tree("main", 40.0, 1.0,
         tree("mpi_send", 5.0, 5.0, flops=float("nan"), file="mpi.c"),
         tree("kernel_a", 30.0, 20.0, tree("kernel_b", 10.0, 10.0, flops=3.0, file=None),
              flops=float("inf"), file="kern.cu"),
         tree("io", 4.0, 4.0, flops=float("-inf"), file=None),
         flops=2.0, file="main.c"),
]

# Two ranks: rank 0's and rank 1's time per node (inclusive time derived by perflake and given here for Hatchet).
RANKS_GRAPH = [
    tree("main", [31.0, 31.0], [1.0, 1.0],
         tree("a", [20.0, 4.0], [20.0, 4.0]),
         tree("b", [10.0, 26.0], [2.0, 2.0], tree("c", [8.0, 24.0], [8.0, 24.0])),
         ),
]


FRAME_KEYS = ("file", "line", "end_line", "module")  # frame attributes, also accepted among "metrics" (Hatchet
# keeps a literal's frame out of its dataframe, so a string column for Hatchet is written as a metric)


def _frame_value(node, key):
    return node["frame"].get(key, node.get("metrics", {}).get(key))


def _walk(literal):
    """(local_id, parent_local, node) in pre-order."""
    out, stack = [], [(node, -1) for node in reversed(literal)]
    while stack:
        node, parent = stack.pop()
        out.append((len(out), parent, node))
        stack += [(child, out[-1][0]) for child in reversed(node.get("children", []))]
    return out


def profile_rows(literal):
    """A literal -> perflake ProfileRows (``time`` exclusive, ``time (inc)`` inclusive, other metrics "other")."""
    import numpy as np
    import pyarrow as pa

    from perflake.readers.base import FRAME_SCHEMA, Metric, ProfileRows

    rows = _walk(literal)
    names = list(dict.fromkeys(m for _, _, node in rows for m in node.get("metrics", {}) if m not in FRAME_KEYS))
    roles = {"time": Metric("time", "exclusive", None, "time (inc)"),
             "time (inc)": Metric("time (inc)", "inclusive", None, "time")}
    metrics = [roles.get(m, Metric(m, "other")) for m in names]
    ranks = max([len(v) for _, _, node in rows for v in node.get("metrics", {}).values() if isinstance(v, list)]
                + [1])
    frames = pa.table({
        "local_id": pa.array([r[0] for r in rows], pa.int32()),
        "parent_local": pa.array([r[1] for r in rows], pa.int32()),
        "name": [r[2]["frame"]["name"] for r in rows],
        "type": [r[2]["frame"].get("type") for r in rows],
        **{k: pa.array([_frame_value(r[2], k) for r in rows], FRAME_SCHEMA.field(k).type) for k in FRAME_KEYS},
    }, schema=FRAME_SCHEMA)
    table = {"local_id": [], "rank": [], "thread": [], **{m: [] for m in names}}
    for local, _, node in rows:
        for rank in range(ranks):
            table["local_id"].append(local)
            table["rank"].append(rank)
            table["thread"].append(0)
            for m in names:
                v = node.get("metrics", {}).get(m, np.nan)
                table[m].append(v[rank] if isinstance(v, list) else v)
    values = pa.table({"local_id": pa.array(table["local_id"], pa.int32()),
                       "rank": pa.array(table["rank"], pa.int32()),
                       "thread": pa.array(table["thread"], pa.int32()),
                       **{m: pa.array(np.asarray(table[m], float)) for m in names}})
    return ProfileRows(format="literal", source="<literal>", frames=frames, values=values, metrics=metrics)


def graphframe(literal):
    """A perflake GraphFrame of a literal (normalised like any reader's output)."""
    from perflake.frame.graphframe import GraphFrame
    from perflake.ingest.normalize import normalize

    n = normalize(profile_rows(literal))
    return GraphFrame.from_tables(n.nodes, n.metrics, n.metric_info)


def call_paths(nodes) -> list[tuple[str, ...]]:
    """Sorted call paths (names from the root) of perflake Nodes."""
    return sorted(tuple(x.frame["name"] for x in node.path()) for node in nodes)
