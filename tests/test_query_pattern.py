"""Query objects as Hatchet's scripts see them (issue 15, query theme): ``query.query_pattern`` (the expanded
``(quantifier, predicate)`` list whose predicates are called on one node's row or on a plain dict), Hatchet's
string-dialect attribute syntax ``p.("name")``, Hatchet's reading of ``p... OR q...`` without parentheses, and
Hatchet's error classes (InvalidQueryPath when a query cannot be parsed, InvalidQueryFilter when a value does not
fit its attribute, raised when the query is applied).  Every case runs in llnl-hatchet 2026.2.0 (.bench-venv) on
the same literal (Hatchet's ``mock_graph_literal``) and the answers are compared.  Hatchet's QueryEngine step
methods (``_cache_node``, ``_match_1``, ``_match_pattern``...): tests/test_query_engine_steps.py."""

from __future__ import annotations

import json

import pytest

import hatchet_load
import literal as L
from conftest import need_bench_python
from perflake import GraphFrame
from perflake import query as Q

# mock rows as Hatchet's own tests build them (dicts), plus every node's dataframe row (added below)
DICTS = [{"name": "MPI_Bcast"}, {"name": "ibv_reg_mr"}, {"time (inc)": 0.1}, {"time (inc)": 0.001},
         {"name": "bar", "time (inc)": 20.0}]

OBJECT = [
    [{"name": "MPI_[_a-zA-Z]*"}, "*", {"name": "ibv[_a-zA-Z]*"}],
    [{"name": "MPI_[_a-zA-Z]*"}, 2, {"name": "ibv[_a-zA-Z]*"}],
    [{"name": "MPI_[_a-zA-Z]*"}, ("+", {"time (inc)": ">= 0.1"}), {"name": "ibv[_a-zA-Z]*"}],
    [{"name": "MPI_[_a-zA-Z]*"}, (3, {"time (inc)": 0.1}), {"name": "ibv[_a-zA-Z]*"}],
    [{("name",): "ba[rz]"}, ("*", {"time (inc)": [">= 20", "<= 60"]})],
    [{"name": "[^b][a-z]+", "time": "> 1"}, ("+", {"time (inc)": "< 100"})],
]
STRING = [
    'MATCH (p)->("*")->(q) WHERE p."name" STARTS WITH "MPI_" AND q."name" STARTS WITH "ibv"',
    'MATCH (p)->(2)->(q) WHERE p."name" STARTS WITH "MPI_" AND q."name" STARTS WITH "ibv"',
    'MATCH (p)->("+", a)->(q) WHERE p."name" STARTS WITH "MPI" AND a."time (inc)" >= 0.1 '
    'AND q."name" STARTS WITH "ibv"',
    'MATCH (p)->(3, a)->(q) WHERE p."name" STARTS WITH "MPI" AND a."time (inc)" = 0.1 AND q."name" STARTS WITH "ibv"',
    'MATCH (p)->("*")->(q) WHERE p.("name") STARTS WITH "MPI_" AND q.("name") STARTS WITH "ibv"',
    'MATCH (p)->(q) WHERE p."name" = "bar" OR p."name" ENDS WITH "x" AND q."time (inc)" >= 5',
    'MATCH (p) WHERE NOT p."name" =~ "b.*" AND p."time (inc)" > 10 OR p."time" = 5',
]
# p... OR q... without parentheses: Hatchet groups the conditions per variable (each variable's predicate must hold)
CROSS_OR = [
    'MATCH (p)->(q) WHERE p."time (inc)" > 100 OR p."time (inc)" <= 30 AND q."time (inc)" = 20',
    'MATCH (p)->(q) WHERE p."name" = "foo" OR q."name" = "bar"',
    'MATCH (p)->(q) WHERE p."name" = "qux" AND q."time" >= 0 OR p."name" = "foo" AND q."name" = "bar"',
    'MATCH (p)->("*")->(q) WHERE q."name" = "grault" OR p."name" = "corge" OR q."name" = "garply"',
    'MATCH (p)->(q) WHERE NOT p."name" = "foo" OR q."name" STARTS WITH "g" OR q IS LEAF',
]
APPLY_ERRORS = [  # (query, Hatchet's class): refused when applied, not when built
    ([{"name": 5}, "*", {"name": "whatever"}], "InvalidQueryFilter"),
    ([{"time": "badstring"}, "*", {"name": "whatever"}], "InvalidQueryFilter"),
    ([{"name": "foo"}, {"time": ["> 1", "about 5"]}], "InvalidQueryFilter"),
    ('MATCH (p) WHERE p."name" > 5', "InvalidQueryFilter"),
]
PARSE_ERRORS = [
    'MATCH (p)->({"bad": "wildcard"}, a)->(q) WHERE p."name" STARTS WITH "MPI"',
    'MATCH (p)->(q)->(r) WHERE p."name" = "foo" AND p."list" = DummyType()',
    'MATCH (p) WHERE p."name" STARTS "x"',
]

HATCHET_CODE = """
import json
from hatchet import GraphFrame
from hatchet.query import ObjectQuery, StringQuery, QueryEngine

literal, dicts, objects, strings, cross, apply_errors, parse_errors = json.loads({args!r})
gf = GraphFrame.from_literal(literal)
rows = [(str(i), d) for i, d in enumerate(dicts)]
rows += [("/".join(str(n.frame["name"]) for n in node.path()), gf.dataframe.loc[node]) for node in gf.graph.traverse()]

def outcome(pred, row):
    try:
        return bool(pred(row))
    except Exception as exc:
        return type(exc).__name__

def pattern(q):
    return [[quant, {{key: outcome(pred, row) for key, row in rows}}] for quant, pred in q.query_pattern]

def matched(q):
    found = QueryEngine().apply(q, gf.graph, gf.dataframe)
    return sorted("/".join(str(n.frame["name"]) for n in node.path()) for node in found)

def error(make):
    try:
        make()
    except Exception as exc:
        return type(exc).__name__
    return None

out = {{"object": [pattern(ObjectQuery([tuple(x) if isinstance(x, list) else x for x in q])) for q in objects],
       "string": [pattern(StringQuery(q)) for q in strings],
       "cross": [matched(StringQuery(q)) for q in cross],
       "apply_errors": [error(lambda: QueryEngine().apply(ObjectQuery(q) if isinstance(q, list) else StringQuery(q),
                                                         gf.graph, gf.dataframe)) for q, _ in apply_errors],
       "parse_errors": [error(lambda: StringQuery(q)) for q in parse_errors]}}
result = pd.DataFrame([[json.dumps(out)]], columns=["out"])
"""


def _jsonable_object(q):
    """Object-dialect queries through JSON (tuples become lists; the recipe turns 2-item lists back into tuples,
    and keys that are 1-tuples into plain names, which Hatchet reads the same)."""
    return [[x[0], {(k[0] if isinstance(k, tuple) else k): v for k, v in x[1].items()}] if isinstance(x, tuple)
            else {(k[0] if isinstance(k, tuple) else k): v for k, v in x.items()} if isinstance(x, dict) else x
            for x in q]


@pytest.fixture(scope="module")
def hatchet():
    need_bench_python()
    args = json.dumps([L.MOCK_GRAPH, DICTS, [_jsonable_object(q) for q in OBJECT], STRING, CROSS_OR,
                       APPLY_ERRORS, PARSE_ERRORS])
    return json.loads(hatchet_load.recipe(HATCHET_CODE.format(args=args))["frame"]["values"][0][0])


@pytest.fixture(scope="module")
def gf():
    return GraphFrame.from_literal(L.MOCK_GRAPH)


def _rows(gf):
    rows = [(str(i), d) for i, d in enumerate(DICTS)]
    rows += [("/".join(str(n.frame["name"]) for n in node.path()), gf.dataframe.loc[node])
             for node in gf.graph.traverse()]
    return rows


def _outcome(pred, row):
    try:
        return bool(pred(row))
    except Exception as exc:  # noqa: BLE001  (the class name is compared with Hatchet's)
        return type(exc).__name__


def _pattern(q, rows):
    return [[quant, {key: _outcome(pred, row) for key, row in rows}] for quant, pred in q.query_pattern]


@pytest.mark.parametrize("i", range(len(OBJECT)))
def test_object_dialect_query_pattern_is_hatchets(hatchet, gf, i):
    assert _pattern(Q.ObjectQuery(OBJECT[i]), _rows(gf)) == hatchet["object"][i]


@pytest.mark.parametrize("i", range(len(STRING)))
def test_string_dialect_query_pattern_is_hatchets(hatchet, gf, i):
    assert _pattern(Q.StringQuery(STRING[i]), _rows(gf)) == hatchet["string"][i]


def test_base_syntax_query_pattern_keeps_the_callables(gf):
    """Base syntax: the pattern holds the user's own callables, expanded as Hatchet expands quantifiers."""
    f, g = (lambda row: row["time (inc)"] >= 60), (lambda row: True)
    q = Q.Query().match(".", f).rel("+", g).rel(2)
    pattern = q.query_pattern
    assert [p[0] for p in pattern] == [".", ".", "*", ".", "."]
    assert pattern[0][1] is f and pattern[1][1] is g and pattern[2][1] is g
    root = gf.graph.roots[0]
    assert bool(pattern[0][1](gf.dataframe.loc[root]))
    compound = Q.ConjunctionQuery([("*", {"time (inc)": ">= 60"})], q)
    assert compound.subqueries[0].query_pattern[0][0] == "*"
    assert compound.subqueries[0].query_pattern[0][1](gf.dataframe.loc[root])


@pytest.mark.parametrize("i", range(len(CROSS_OR)))
def test_or_across_variables_reads_as_hatchet(hatchet, gf, i):
    got = sorted("/".join(str(n.frame["name"]) for n in node.path()) for node in Q.StringQuery(CROSS_OR[i]).apply(gf))
    assert got == hatchet["cross"][i]
    assert got, "the case matches something"


def test_or_across_variables_in_parentheses_is_refused():
    """With parentheses (perflake's extension) the grouping is explicit, and a condition tests one node."""
    with pytest.raises(Q.InvalidQueryPath, match="different variables"):
        Q.StringQuery('MATCH (p)->(q) WHERE (p."name" = "foo" OR q."name" = "bar")')


@pytest.mark.parametrize("i", range(len(APPLY_ERRORS)))
def test_bad_values_are_refused_when_applied(hatchet, gf, i):
    query, cls = APPLY_ERRORS[i]
    assert hatchet["apply_errors"][i] == cls
    q = Q.ObjectQuery(query) if isinstance(query, list) else Q.StringQuery(query)  # built without complaint
    with pytest.raises(getattr(Q, cls)):
        Q.QueryEngine().apply(q, gf.graph, gf.dataframe)


def test_a_value_of_no_usable_type_is_refused_when_applied(gf):
    """Hatchet's test_apply: ``{"list": DummyType()}`` builds, and applying it raises InvalidQueryFilter."""
    q = Q.ObjectQuery([{"name": "foo"}, {"time": object()}])
    with pytest.raises(Q.InvalidQueryFilter, match="must be a number, a string"):
        Q.QueryEngine().apply(q, gf.graph, gf.dataframe)


@pytest.mark.parametrize("i", range(len(PARSE_ERRORS)))
def test_unparsable_string_queries_are_invalid_query_paths(hatchet, i):
    assert hatchet["parse_errors"][i] == "InvalidQueryPath"
    with pytest.raises(Q.InvalidQueryPath):
        Q.StringQuery(PARSE_ERRORS[i])


def test_tuple_attributes_name_columns_of_several_levels():
    """``p.("a", "b")`` and ``{("a", "b"): ...}`` name a column of a two-level column index (Thicket's)."""
    import pandas as pd

    gf = GraphFrame.from_literal(L.MOCK_GRAPH)
    df = gf.dataframe
    df.columns = pd.MultiIndex.from_tuples([("frame", c) if c == "name" else ("run1", c) for c in df.columns])
    gf.dataframe = df
    want = sorted(n.frame["name"] for n in gf.graph.traverse() if n.frame["name"].startswith("ba"))
    for q in ('MATCH (p) WHERE p.("frame", "name") STARTS WITH "ba"', [{("frame", "name"): "ba.*"}]):
        got = Q.apply(gf, q)
        assert sorted(n.frame["name"] for n in got) == want
