"""Hatchet's QueryEngine step by step (perflake.query.node_walk): ``search_cache`` after ``_cache_node``,
``_match_1``, ``_match_0_or_more``, ``_match_pattern`` and ``_apply_impl`` give Hatchet's answers, on Hatchet's
mock literal (one row per node) and a literal with ranks (the node's rows, a DataFrame), for every node and every
element of several queries; llnl-hatchet 2026.2.0 runs the same calls in .bench-venv.  Paths are compared as lists
of names from the root; ``_match_0_or_more`` results are sorted (Hatchet's go through a set: no order)."""

from __future__ import annotations

import functools
import json

import pytest

import hatchet_load
import literal as L
from conftest import DATA, _need, need_bench_python
from perflake import GraphFrame
from perflake.query import ObjectQuery, QueryEngine, StringQuery

QUERIES = [
    [{"name": "fr[a-z]+"}, ("+", {"time (inc)": ">= 25.0"}), {"name": "baz"}],
    [{"name": "qux"}, ("*", {"time (inc)": "> 10"}), {"name": "gr[a-z]+", "time (inc)": "<= 10"}],
    [{"name": "waldo"}, "+", {"time (inc)": ">= 20.0"}, "+", {"time (inc)": 5.0, "time": 5.0}],
    ["*", {"name": "ba[rz]"}],
    [("*", {"time (inc)": "> 1"})],
    [{"name": "foo"}, 2, ("*", {"time": ">= 5"})],
    'MATCH (p)->("*")->(q) WHERE p."name" = "foo" AND q."time (inc)" < 10',
]

HATCHET_CODE = """
import json
from hatchet import GraphFrame
from hatchet.query import ObjectQuery, StringQuery, QueryEngine

literals, queries = json.loads({args!r})
"""


STEPS = """
def name(n):
    return str(n.frame["name"])

def path_of(n):
    return "/".join(name(x) for x in n.path())

def paths(found):
    if found is None:
        return None
    return [[path_of(n) for n in p] for p in found]

def steps(gf, q):
    engine = QueryEngine()
    nodes = list(gf.graph.traverse())
    out = {"cache": {}, "one": {}, "more": {}, "pattern": {}}
    for node in nodes:
        engine._cache_node(node, q, gf.dataframe)
        out["cache"][path_of(node)] = list(engine.search_cache[node._hatchet_nid])
    n = len(q.query_pattern)
    for node in nodes:
        key = path_of(node)
        out["one"][key] = [paths(engine._match_1(q, gf.dataframe, node, i)) for i in range(n)]
        more = []
        for i in range(n):
            if q.query_pattern[i][0] != "*":
                more.append("-")
                continue
            found = paths(engine._match_0_or_more(q, gf.dataframe, node, i))
            more.append(None if found is None else sorted(found))
        out["more"][key] = more
        out["pattern"][key] = [paths(engine._match_pattern(q, gf.dataframe, node, i))
                               for i in range(n) if i in engine.search_cache[node._hatchet_nid]]
    matches, visited = [], set()
    fresh = QueryEngine()
    for root in gf.graph.roots:
        fresh._apply_impl(q, gf.dataframe, root, visited, matches)
    out["apply_impl"] = paths(matches)
    return out

def make(q, mode):
    if isinstance(q, str):
        return StringQuery(q, multi_index_mode=mode)
    return ObjectQuery([tuple(x) if isinstance(x, list) else x for x in q], multi_index_mode=mode)

def outcome(gf, q, mode):
    try:
        return steps(gf, make(q, mode))
    except Exception as exc:
        return type(exc).__name__

def load(source):
    kind, what = source
    return GraphFrame.from_literal(what) if kind == "literal" else GraphFrame.from_tau(what)

answers = [[outcome(load(source), q, mode) for q in queries[kind]] for source, mode, kind in literals]
"""


def _jsonable(q):
    if isinstance(q, str):
        return q
    return [list(x) if isinstance(x, tuple) else x for x in q]


TAU_QUERIES = [
    [{"name": "MPI_.*"}],
    [{"name": ".TAU.*"}, ("*", {"time": "> 100"}), {"name": "MPI_.*"}],
    ["*", {"time (inc)": ">= 1000"}],
    'MATCH (p)->(q) WHERE p."time" > 400 AND q."name" STARTS WITH "MPI"',
]
# (graph, multi_index_mode, which queries): Hatchet's mock literal (one row per node), a TAU profile of 4 ranks
# (the node's rows: a DataFrame, reduced by "any"/"all"; "off" refused)
LITERALS = [(("literal", L.MOCK_GRAPH), "off", "mock")] + [
    (("tau", str(DATA / "tau-cpi-mpi")), mode, "tau") for mode in ("off", "any", "all")]


@pytest.fixture(scope="module")
def hatchet():
    need_bench_python()
    _need(DATA / "tau-cpi-mpi")
    args = json.dumps([LITERALS, {"mock": [_jsonable(q) for q in QUERIES], "tau": [_jsonable(q) for q in TAU_QUERIES]}])
    code = HATCHET_CODE.format(args=args) + STEPS + 'result = pd.DataFrame([[json.dumps(answers)]], columns=["out"])\n'
    return json.loads(hatchet_load.recipe(code)["frame"]["values"][0][0])


@functools.cache
def _perflake_answers():
    space = {"json": json, "GraphFrame": GraphFrame, "ObjectQuery": ObjectQuery, "StringQuery": StringQuery,
             "QueryEngine": QueryEngine, "literals": LITERALS,
             "queries": {"mock": [_jsonable(q) for q in QUERIES], "tau": [_jsonable(q) for q in TAU_QUERIES]}}
    exec(STEPS, space)  # the same calls as Hatchet's side, on perflake's objects
    return json.loads(json.dumps(space["answers"]))


CASES = [(lit, qi) for lit, (_, _, kind) in enumerate(LITERALS)
         for qi in range(len(QUERIES if kind == "mock" else TAU_QUERIES))]


@pytest.mark.parametrize("lit,qi", CASES)
def test_engine_steps_are_hatchets(hatchet, lit, qi):
    ours = _perflake_answers()[lit][qi]
    theirs = hatchet[lit][qi]
    if isinstance(theirs, str) or isinstance(ours, str):  # an error class
        assert ours == theirs
        return
    for step in ("cache", "one", "more", "pattern", "apply_impl"):
        assert ours[step] == theirs[step], step


def test_node_caching_by_hand():
    # Hatchet's own case: the node foo/qux/... under the third child of the root
    gf = GraphFrame.from_literal(L.MOCK_GRAPH)
    node = gf.graph.roots[0].children[2].children[0]
    q = ObjectQuery(QUERIES[0])
    engine = QueryEngine()
    engine._cache_node(node, q, gf.dataframe)
    assert engine.search_cache[node._hatchet_nid] == [0, 1, 2]
    engine.reset_cache()
    assert engine.search_cache == {}
