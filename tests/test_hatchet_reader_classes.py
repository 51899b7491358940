"""Hatchet's reader classes (issue 15): ``CaliperReader(path).read()``, ``HPCToolkitReader(dir).read()``,
``TAUReader``, ``CaliperNativeReader``, ``LiteralReader``... take Hatchet's arguments and read what the matching
``GraphFrame.from_*`` reads.  Compared with the same classes of llnl-hatchet 2026.2.0 in .bench-venv: the
call paths of names and the sum of an inclusive metric per call path (HPCToolkit's statement nodes, which
Hatchet names only in its dataframe, through their callers' inclusive values)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import hatchet_load
import literal as L
from conftest import DATA, _need, need_bench_python
from perflake.interop import hatchet_readers as R

CASES = {  # name: (Hatchet's module.Class(args...), the metric compared)
    "caliper_json": ("caliper_reader.CaliperReader(D + 'caliper-lulesh-json/lulesh-annotation-profile.json', "
                     "node_ordering=False)", "time (inc)"),
    "cali": ("caliper_native_reader.CaliperNativeReader(D + 'caliper-ordered-cali/"
             "230525-151052_1930517_eWbGeyrlBOPT.cali', False, [], True)", "Total time"),
    "hpctoolkit": ("hpctoolkit_reader.HPCToolkitReader(D + 'hpctoolkit-cpi-database')", "time (inc)"),
    "tau": ("tau_reader.TAUReader(D + 'tau-cpi-mpi')", "time (inc)"),
    "literal": ("literal_reader.LiteralReader(LITERAL)", "time (inc)"),
}

HATCHET_CODE = """
import importlib, json
LITERAL = json.loads({literal!r})
D = {data!r} + "/"
out = {{}}
for name, (call, metric) in {cases!r}.items():
    module = call.split(".")[0]
    globals()[module] = importlib.import_module("hatchet.readers." + module)
    gf = eval(call).read()
    path_of = {{}}
    stack = [(r, ()) for r in gf.graph.roots]  # paths from the children lists (its json reader sets no parents)
    while stack:
        n, above = stack.pop()
        if id(n) in path_of:
            continue
        path_of[id(n)] = above + (str(n.frame.get("name")),)
        stack.extend((c, path_of[id(n)]) for c in n.children)
    sums = {{}}
    df = gf.dataframe.reset_index()
    for node, v in zip(df["node"], df[metric]):
        if node.frame.get("type") == "statement":  # HPCToolkit's statements: compared through their callers
            continue
        key = "/".join(path_of[id(node)])
        sums[key] = sums.get(key, 0.0) + (0.0 if v != v else float(v))
    out[name] = {{"sums": sums, "inc": sorted(map(str, gf.inc_metrics))}}
result = pd.DataFrame([[json.dumps(out)]], columns=["out"])
"""


@pytest.fixture(scope="module")
def hatchet():
    need_bench_python()
    code = HATCHET_CODE.format(literal=json.dumps(L.MOCK_GRAPH), data=str(_need(DATA)), cases=CASES)
    return json.loads(hatchet_load.recipe(code)["frame"]["values"][0][0])


def _ours(name: str):
    D = str(_need(DATA)) + "/"
    made = {
        "caliper_json": lambda: R.CaliperReader(D + "caliper-lulesh-json/lulesh-annotation-profile.json",
                                                node_ordering=False),
        "cali": lambda: R.CaliperNativeReader(D + "caliper-ordered-cali/230525-151052_1930517_eWbGeyrlBOPT.cali",
                                              False, [], True),
        "hpctoolkit": lambda: R.HPCToolkitReader(D + "hpctoolkit-cpi-database"),
        "tau": lambda: R.TAUReader(D + "tau-cpi-mpi"),
        "literal": lambda: R.LiteralReader(L.MOCK_GRAPH),
    }[name]()
    return made.read()


@pytest.mark.parametrize("name", list(CASES))
def test_reader_class_reads_as_hatchets(hatchet, name):
    gf = _ours(name)
    metric = CASES[name][1]
    sums = {}
    df = gf.dataframe.reset_index()
    for node, v in zip(df["node"], df[metric]):
        if node.frame.get("type") == "statement":
            continue
        key = "/".join(str(n.frame.get("name")) for n in node.path())
        sums[key] = sums.get(key, 0.0) + (0.0 if np.isnan(v) else float(v))
    assert sums == pytest.approx(hatchet[name]["sums"], rel=1e-9)
    assert metric in gf.inc_metrics or metric in hatchet[name]["inc"] or name == "cali"


def test_reader_classes_keep_hatchets_signatures(tmp_path):
    """Every class takes Hatchet's positional arguments; reading goes through GraphFrame.from_*."""
    from perflake import GraphFrame

    lit = R.LiteralReader(L.MOCK_GRAPH).read()
    assert isinstance(lit, GraphFrame) and len(lit.graph) == len(GraphFrame.from_literal(L.MOCK_GRAPH).graph)
    js = R.JsonReader(lit.to_json()).read()
    assert sorted(n.frame["name"] for n in js.graph.traverse()) == sorted(n.frame["name"] for n in lit.graph.traverse())
    latest = R.HPCToolkitReaderLatest(str(_need(DATA / "hpctoolkit-gamess")), max_depth=4,
                                      min_application_percentage_time=1)
    assert latest.keywords["min_percentage_of_application_time"] == 1
    assert max(n.depth for n in latest.read().graph.traverse()) <= 4
