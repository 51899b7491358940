"""Hatchet's node numbers in ``from_hpctoolkit_latest`` (issue 15): Hatchet's reader numbers each node by its
HPCToolkit context id and never renumbers (the root ``entry`` of hpctoolkit-gamess is node 1195), its rows are
sorted by them, and scripts read a node's values with ``gf.dataframe.loc[Node(None, hnid=<ctx>)]``.  perflake's
view does the same; where sibling contexts with the same frame merge into one node (perflake's identity, the
documented difference of perflake.interop.hpctoolkit_latest) the node takes the smallest of their ids.  Compared
with llnl-hatchet 2026.2.0 in .bench-venv on the same database and keywords."""

from __future__ import annotations

import json

import pytest

import hatchet_load
from conftest import DATA, _need, need_bench_python
from perflake import GraphFrame
from perflake.frame.graph import Node

CASES = [{"max_depth": 10}, {"min_percentage_of_application_time": 1}, {"max_depth": 6, "label_function_nodes": False}]
METRICS = ["time", "gpuop", "gker"]

HATCHET_CODE = """
import json
from hatchet import GraphFrame
out = []
for case in {cases!r}:
    gf = GraphFrame.from_hpctoolkit_latest({path!r}, metric_names={metrics!r}, **case)
    nodes = [[[str(n.frame["name"]) for n in node.path()], node._hatchet_nid] for node in gf.graph.traverse()]
    rows = [node._hatchet_nid for node in gf.dataframe.index]
    values = {{str(node._hatchet_nid): gf.dataframe.loc[node, "time (inc)"] for node in gf.graph.traverse()}}
    out.append([nodes, rows, values, gf.graph.roots[0]._hatchet_nid])
result = pd.DataFrame([[json.dumps(out)]], columns=["out"])
"""


@pytest.fixture(scope="module")
def database():
    return _need(DATA / "hpctoolkit-gamess")


@pytest.fixture(scope="module")
def hatchet(database):
    need_bench_python()
    code = HATCHET_CODE.format(cases=CASES, path=str(database), metrics=METRICS)
    return json.loads(hatchet_load.recipe(code)["frame"]["values"][0][0])


def _ours(database, case):
    return GraphFrame.from_hpctoolkit_latest(database, metric_names=METRICS, **case)


@pytest.mark.parametrize("i", range(len(CASES)))
def test_numbers_are_hatchets_context_ids(hatchet, database, i):
    nodes, rows, values, root = hatchet[i]
    gf = _ours(database, CASES[i])
    assert gf.graph.roots[0]._hatchet_nid == root == 1195  # the main thread's entry context
    theirs: dict[tuple, list[int]] = {}
    for path, nid in nodes:
        theirs.setdefault(tuple(path), []).append(nid)
    ours = {tuple(str(n.frame["name"]) for n in node.path()): node._hatchet_nid for node in gf.graph.traverse()}
    assert set(ours) == set(theirs)
    assert ours == {path: min(nids) for path, nids in theirs.items()}
    merged = sum(len(v) > 1 for v in theirs.values())
    assert merged < len(theirs) // 10  # these cuts merge few or no contexts: the numbers are mostly Hatchet's own


@pytest.mark.parametrize("i", range(len(CASES)))
def test_rows_in_number_order_and_found_by_number(hatchet, database, i):
    nodes, rows, values, _ = hatchet[i]
    gf = _ours(database, CASES[i])
    numbers = [n._hatchet_nid for n in gf.dataframe.index]
    assert numbers == sorted(numbers) and set(numbers) <= set(rows)
    singles = {nid for path, nid in nodes if sum(1 for p, _ in nodes if p == path) == 1}
    for nid in sorted(singles)[:40]:
        got = gf.dataframe.loc[Node(None, hnid=nid)]  # Hatchet's idiom: a node built by hand finds its row
        assert got["time (inc)"] == pytest.approx(values[str(nid)], rel=1e-12, nan_ok=True)


def test_operations_number_in_pre_order_again(database):
    """filter/squash and deepcopy rebuild the graph, numbered in pre-order as Hatchet's enumerate_traverse does;
    copy shares the graph (and its numbers), as Hatchet's does."""
    gf = _ours(database, CASES[0])
    for out in (gf.filter(lambda row: True), gf.deepcopy()):
        assert [n._hatchet_nid for n in out.graph.traverse()] == list(range(len(out.graph)))
    assert gf.copy().graph is gf.graph
