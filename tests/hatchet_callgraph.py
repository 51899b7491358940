"""What the real llnl-hatchet makes of a gprof2dot DOT, cProfile pstats or pyinstrument JSON file, node by node.

Run with the Python of ``.bench-venv`` (llnl-hatchet 2026.2.0, see tests/hatchet_load.py)::

    .bench-venv/bin/python tests/hatchet_callgraph.py gprof_dot|cprofile|pyinstrument FILE

It prints one JSON object: ``roots`` (Hatchet ids of the graph's roots) and ``nodes``, one per node of Hatchet's
graph (a call graph for DOT and pstats: a node may have several parents), each with its Hatchet id, its frame
name, the distinct ids of its parents, its call path of names when it has exactly one path (``null`` otherwise)
and its dataframe row (NaN as null).  tests/test_gprof_dot.py, test_cprofile.py and test_pyinstrument.py call
:func:`load` (stdlib only at import time).
"""

from __future__ import annotations

import json
import sys

from venv_report import BENCH_PYTHON, run_json
from venv_report import value as _value

READERS = {"gprof_dot": "from_gprof_dot", "cprofile": "from_cprofile", "pyinstrument": "from_pyinstrument"}


def load(kind: str, path, python=BENCH_PYTHON, timeout: float = 300) -> dict:
    """Run this script in .bench-venv on ``path``; the parsed report."""
    args = [str(python), "-W", "ignore", __file__, kind, str(path)]
    return run_json(args, timeout)


def _single_path(node):
    """The names from the root to ``node`` when it has exactly one path (Hatchet's ``node.path()`` recurses
    without end on a cycle), else None."""
    names, seen = [], set()
    while node is not None:
        if id(node) in seen or len({id(p) for p in node.parents}) > 1:
            return None
        seen.add(id(node))
        names.append(node.frame.get("name"))
        node = node.parents[0] if node.parents else None
    return names[::-1]


def main(kind: str, path: str) -> None:
    import hatchet

    gf = getattr(hatchet.GraphFrame, READERS[kind])(path)
    rows = {}
    for node, rec in zip(gf.dataframe.index, gf.dataframe.to_dict("records")):
        rows[id(node)] = {str(k): _value(v) for k, v in rec.items()}
    nodes = []
    for node in gf.graph.traverse():
        nodes.append({"id": id(node), "name": node.frame.get("name"),
                      "parents": sorted({id(p) for p in node.parents}),
                      "path": _single_path(node),
                      "row": rows.get(id(node))})
    traversed = {n["id"] for n in nodes}
    report = {"roots": [id(r) for r in gf.graph.roots], "nodes": nodes,
              "rows_outside_graph": sum(1 for k in rows if k not in traversed),
              "exc": list(gf.exc_metrics), "inc": list(gf.inc_metrics)}
    sys.stdout.write(json.dumps(report) + "\n")


if __name__ == "__main__":
    main(*sys.argv[1:3])


# -- comparing a perflake GraphFrame with the report (runs in perflake's venv) ---------------------------------


def compare_call_graph(gf, report: dict, key, hatchet_key, metrics, rtol: float = 1e-9) -> dict:
    """Assert that perflake's GraphFrame ``gf`` of a call-graph format (gprof2dot DOT, pstats) holds Hatchet's
    graph node by node.  Hatchet's nodes have several parents, so a node is matched by a function key, not a
    call path: ``key(frame attrs, dataframe row)`` for ours, ``hatchet_key(report node)`` for Hatchet's.
    Checked: the same functions, the same ``metrics`` values (relative ``rtol``, NaN = NaN), the same roots, each
    tree parent one of Hatchet's parents, and Hatchet's call edges = our tree edges + the edges the metadata lists
    as not in the tree (``call_graph.edges_not_in_tree_list``, labels by ``key``).  Returns {key: our node}."""
    import numpy as np

    theirs = {hatchet_key(n): n for n in report["nodes"]}
    assert len(theirs) == len(report["nodes"]), "Hatchet's function keys are not unique"
    by_id = {n["id"]: hatchet_key(n) for n in report["nodes"]}
    df = gf.dataframe
    ours = {}
    for node in gf.graph.traverse():
        row = df.loc[node]
        ours[key(node.frame.attrs, row)] = node
    assert set(ours) == set(theirs), (sorted(set(ours) - set(theirs))[:5], sorted(set(theirs) - set(ours))[:5])
    for k, node in ours.items():
        h = theirs[k]
        row = df.loc[node]
        for m in metrics:
            want = h["row"].get(m) if h["row"] else None
            got = row[m]
            want = np.nan if want is None else float(want)
            assert np.isclose(float(got), want, rtol=rtol, atol=0, equal_nan=True), (k, m, got, want)
        parents = {by_id[p] for p in h["parents"]}
        if node.parents:
            ptree = node.parents[0]
            assert key(ptree.frame.attrs, df.loc[ptree]) in parents, (k, "tree parent is not a caller in Hatchet")
    assert {k for k, n in ours.items() if not n.parents} >= {by_id[r] for r in report["roots"]}
    edges = {(by_id[p], hatchet_key(n)) for n in report["nodes"] for p in n["parents"]}
    tree = {(key(n.parents[0].frame.attrs, df.loc[n.parents[0]]), k) for k, n in ours.items() if n.parents}
    return ours, edges, tree
