"""Hatchet's query API on perflake (issue 15, theme 1): every query object has ``apply(gf)``, the engine object and
the exception names exist, and each case gives the node set that llnl-hatchet 2026.2.0 gives, computed in the same
test by running Hatchet in .bench-venv (tests/hatchet_load.recipe) on perflake's export of the same literal."""

from __future__ import annotations

import pytest

import hatchet_load
import literal as L
from conftest import need_bench_python
from perflake import query as pq
from perflake.errors import QueryError
from perflake.interop.json_files import write_hatchet_json

# (name, perflake query builder, the same query in Hatchet's words); each applied with `.apply(gf)`
CASES = [
    ("AndQuery", lambda: pq.AndQuery([{"name": "MPI.*"}, "*"], [".", {"name": "MPI_Send"}]),
     "hatchet.query.AndQuery([{'name': 'MPI.*'}, '*'], ['.', {'name': 'MPI_Send'}])"),
    ("OrQuery", lambda: pq.OrQuery([{"name": "MPI_Send"}], [{"name": "MPI_Recv"}]),
     "hatchet.query.OrQuery([{'name': 'MPI_Send'}], [{'name': 'MPI_Recv'}])"),
    ("XorQuery", lambda: pq.XorQuery([{"name": "MPI.*"}, "*"], [{"name": "MPI_Send"}]),
     "hatchet.query.XorQuery([{'name': 'MPI.*'}, '*'], [{'name': 'MPI_Send'}])"),
    ("NotQuery", lambda: pq.NotQuery([{"name": "MPI.*"}]),
     "hatchet.query.NotQuery([{'name': 'MPI.*'}])"),
    ("QueryMatcher", lambda: pq.QueryMatcher().match(".", lambda row: row["name"] == "MPI_Send").rel("*"),
     "hatchet.query.QueryMatcher().match('.', lambda row: row['name'] == 'MPI_Send').rel('*')"),
    ("QueryMatcher-list", lambda: pq.QueryMatcher([{"name": "main"}, "+"]),
     "hatchet.query.QueryMatcher([{'name': 'main'}, '+'])"),
    ("CypherQuery", lambda: pq.CypherQuery('MATCH (".", p)->("*") WHERE p."name" STARTS WITH "MPI"'),
     "hatchet.query.CypherQuery('MATCH (\".\", p)->(\"*\") WHERE p.\"name\" STARTS WITH \"MPI\"')"),
    ("AndQuery-of-matchers",
     lambda: pq.AndQuery(pq.QueryMatcher([{"name": "MPI.*"}]), pq.QueryMatcher([{"time (inc)": "> 1"}])),
     "hatchet.query.AndQuery(hatchet.query.QueryMatcher([{'name': 'MPI.*'}]), "
     "hatchet.query.QueryMatcher([{'time (inc)': '> 1'}]))"),
]
# new-style compounds and dialect objects: Hatchet applies them with QueryEngine().apply(q, graph, dataframe)
ENGINE_CASES = [
    ("ConjunctionQuery", lambda: pq.ConjunctionQuery([{"name": "MPI.*"}, "*"], [{"time": "> 1"}]),
     "hatchet.query.ConjunctionQuery([{'name': 'MPI.*'}, '*'], [{'time': '> 1'}])"),
    ("DisjunctionQuery", lambda: pq.DisjunctionQuery([{"name": "MPI_Send"}], [{"name": "MPI_Recv"}]),
     "hatchet.query.DisjunctionQuery([{'name': 'MPI_Send'}], [{'name': 'MPI_Recv'}])"),
    ("ExclusiveDisjunctionQuery",
     lambda: pq.ExclusiveDisjunctionQuery([{"name": "MPI.*"}, "*"], [{"name": "MPI_Send"}]),
     "hatchet.query.ExclusiveDisjunctionQuery([{'name': 'MPI.*'}, '*'], [{'name': 'MPI_Send'}])"),
    ("NegationQuery", lambda: pq.NegationQuery([{"name": "MPI.*"}]),
     "hatchet.query.NegationQuery([{'name': 'MPI.*'}])"),
    ("StringQuery", lambda: pq.StringQuery('MATCH (".", p)->("+", q) WHERE p."name" = "main" AND q."time" > 1'),
     "hatchet.query.StringQuery('MATCH (\".\", p)->(\"+\", q) WHERE p.\"name\" = \"main\" AND q.\"time\" > 1')"),
    ("ObjectQuery", lambda: pq.ObjectQuery([{"name": "main"}, "*", {"name": "MPI.*"}]),
     "hatchet.query.ObjectQuery([{'name': 'main'}, '*', {'name': 'MPI.*'}])"),
]


def paths(nodes) -> list[str]:
    return sorted("/".join(str(n.frame["name"]) for n in node.path()) for node in nodes)


def hatchet_paths(tmp_path, lines: list[str]) -> list[list[str]]:
    """Each Hatchet expression's matched nodes as call paths, one list per expression."""
    need_bench_python()
    gf = L.graphframe(L.MPI_GRAPH)
    write_hatchet_json(gf, tmp_path / "gf.json")
    code = ("import json\n"
            "engine = hatchet.query.QueryEngine()\n"
            "def run(q):\n"
            "    nodes = q.apply(gf) if hasattr(q, 'apply') else engine.apply(q, gf.graph, gf.dataframe)\n"
            "    return sorted('/'.join(str(n.frame['name']) for n in node.path()) for node in nodes)\n"
            f"answers = [run({'), run('.join(lines)})]\n"
            "result = pd.DataFrame({'answer': [json.dumps(a) for a in answers]})\n")
    import json

    report = hatchet_load.recipe(code, gf=tmp_path / "gf.json")
    return [json.loads(row[0]) for row in report["frame"]["values"]]


def test_every_query_object_applies_as_hatchets(tmp_path):
    gf = L.graphframe(L.MPI_GRAPH)
    cases = CASES + ENGINE_CASES
    theirs = hatchet_paths(tmp_path, [h for _, _, h in cases])
    for (name, build, _), want in zip(cases, theirs):
        assert paths(build().apply(gf)) == want, name
        assert paths(pq.QueryEngine().apply(build(), gf.graph, gf.dataframe)) == want, name
    assert any(theirs) and not all(theirs[0] == t for t in theirs)  # the cases tell queries apart


def test_hatchets_query_names_exist():
    assert all(issubclass(c, pq.AbstractQuery) for c in (pq.Query, pq.QueryMatcher, pq.ObjectQuery, pq.StringQuery,
                                                          pq.CompoundQuery, pq.NaryQuery, pq.AndQuery))
    assert pq.is_hatchet_query(pq.NotQuery([{"name": "x"}])) and not pq.is_hatchet_query([{"name": "x"}])
    for exc in (pq.InvalidQueryPath, pq.InvalidQueryFilter, pq.BadNumberNaryQueryArgs, pq.MultiIndexModeMismatch):
        assert issubclass(exc, QueryError)


@pytest.mark.parametrize("build, exc", [
    (lambda: pq.NotQuery([{"name": "a"}], [{"name": "b"}]), pq.BadNumberNaryQueryArgs),
    (lambda: pq.AndQuery([{"name": "a"}]), pq.BadNumberNaryQueryArgs),
    (lambda: pq.QueryMatcher().rel(".", lambda row: True), pq.InvalidQueryPath),
    (lambda: pq.QueryMatcher().match("?"), pq.InvalidQueryPath),
    (lambda: pq.QueryMatcher("not a list"), pq.InvalidQueryPath),
    (lambda: pq.ObjectQuery([{"time": "fast"}]).apply(L.graphframe(L.MPI_GRAPH)), pq.InvalidQueryFilter),
    (lambda: pq.ObjectQuery([{"name": 3j}]).apply(L.graphframe(L.MPI_GRAPH)), pq.InvalidQueryFilter),
    (lambda: pq.ObjectQuery([{"name": "a"}], multi_index_mode="foo"), AssertionError),
    (lambda: pq.StringQuery('MATCH (".", p) WHERE p."name" = "a"', multi_index_mode="foo"), AssertionError),
])
def test_errors_carry_hatchets_names(build, exc):
    """The exception classes Hatchet raises for these mistakes (hatchet/query/errors.py; a bad multi_index_mode
    is Hatchet's ``assert``)."""
    with pytest.raises(exc):
        build()
