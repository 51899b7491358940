"""The query engine's parts: the automaton, the public API, predicate semantics (regex anchoring, missing
columns, node attributes) and how Python predicates are called."""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
import pytest

import literal as L
from perflake import query as Q
from perflake.engine import sqlfiles

# main -> pab1, p1x, abc, ab (leaves); every time 1.0, main's inclusive time 10.0
SMALL = [L.tree("main", 10.0, 1.0, L.tree("pab1", 1.0, 1.0), L.tree("p1x", 1.0, 1.0), L.tree("abc", 1.0, 1.0),
                L.tree("ab", 1.0, 1.0))]


@pytest.fixture(scope="module")
def small():
    return L.graphframe(SMALL)


@pytest.fixture(scope="module")
def mock():
    return L.graphframe(L.MOCK_GRAPH)


def names(gf, q, **kw):
    return sorted(n.frame["name"] for n in Q.apply(gf, q, **kw))


# -- the automaton ------------------------------------------------------------------------------------------------
def test_automaton_of_dot_star_dot():
    a = Q.compile_automaton([".", "*", "."])
    trans = set(zip(a["t_src"], a["t_dst"], a["t_elem"], a["t_guard"]))
    assert trans == {
        (-1, 0, 0, -1),  # a match starts anywhere with element 0
        (0, 1, 1, 2), (1, 1, 1, 2),  # the star takes nodes that do not match element 2
        (0, 2, 2, -1), (1, 2, 2, -1),  # element 2 after the star (or right after element 0: zero-length star)
    }
    assert a["start"] == -1 and a["accepting"] == [2]


def test_automaton_of_leading_and_trailing_stars():
    a = Q.compile_automaton(["*", ".", "*"])
    trans = set(zip(a["t_src"], a["t_dst"], a["t_elem"], a["t_guard"]))
    assert {(-1, 0, 0, -1), (-1, 1, 1, -1)} <= trans  # the first node: no guard, star may be empty
    assert (0, 0, 0, 1) in trans and (1, 2, 2, -1) in trans and (2, 2, 2, -1) in trans
    assert a["accepting"] == [1, 2]


def test_the_path_matching_is_the_static_sql_file():
    text = sqlfiles.load("query_match")
    assert "with recursive" in text and sqlfiles.declared_params("query_match") == {
        "t_src", "t_dst", "t_elem", "t_guard", "start", "accepting"}


# -- API ------------------------------------------------------------------------------------------------------------
def test_apply_returns_nodes_in_preorder_and_ids_match(mock):
    nodes = Q.apply(mock, [{"name": "corge"}, "*"])
    order = [n._hatchet_nid for n in nodes]
    assert order == sorted(order) and len(nodes) == 6
    ids = Q.match_node_ids(mock, [{"name": "corge"}, "*"])
    assert ids.dtype == np.uint64 and ids.tolist() == [n.node_id for n in nodes]


def test_explicit_connection_and_reuse_across_graphframes(mock, small):
    con = duckdb.connect()
    q = Q.ObjectQuery([{"name": "[ab].*"}])
    assert names(mock, q, con=con) == ["bar", "bar", "bar", "baz", "baz", "baz", "baz"]
    assert names(small, q, con=con) == ["ab", "abc"]
    assert con.sql("select count(*) from duckdb_views() where not internal").fetchall()[0][0] == 0  # nothing left


def test_empty_result_and_no_match(small):
    assert Q.match_node_ids(small, [{"name": "zzz"}]).size == 0
    assert Q.apply(small, [{"name": "main"}, {"name": "zzz"}]) == []


# -- predicate semantics checked against hatchet 2026.2.0 (same literal, SMALL) ---------------------------------
@pytest.mark.parametrize(("query", "expected"), [
    ([{"name": "p[a-z]+[0-9]"}], ["pab1"]),  # object dialect: anchored at both ends ...
    ([{"name": "p"}], []),
    ([{"name": "a|ab"}], ["ab", "abc"]),  # ... as re.match(value + r"\Z"): "a|ab\Z" lets "a" match "abc"
    ([{"name": ["a.*", ".*c"]}], ["abc"]),  # a list: all must hold
    ([{"depth": -1}], ["ab", "abc", "p1x", "pab1"]),  # depth -1 means "is a leaf"
    ([{"depth": 0}], ["main"]),
    ([{"time": "== 1"}], ["ab", "abc", "main", "p1x", "pab1"]),
    ([{"time": "!= 1"}], []),
    ([{"time (inc)": 10}], ["main"]),
    ([{"nope": "x"}], []),  # an attribute the data lacks matches nothing
    ('MATCH (".", p) WHERE p."name" =~ "p"', ["p1x", "pab1"]),  # string dialect =~: re.match, start only
    ('MATCH (".", p) WHERE p."name" =~ "p.*1$"', ["pab1"]),
    ('MATCH (".", p) WHERE NOT p."nope" = "x"', []),  # ... even under NOT or OR
    ('MATCH (".", p) WHERE p."name" = "ab" OR p."nope" = "x"', []),
])
def test_predicate_semantics_match_hatchet(small, query, expected):
    assert names(small, query) == expected


def test_perflake_attributes(mock, small):
    corge = next(n for n in mock.graph.traverse() if n.frame["name"] == "corge")
    # node_id and _hatchet_nid are Hatchet's pre-order numbers; callpath_id is perflake's call-path id
    assert [n.node_id for n in Q.apply(mock, [{"callpath_id": corge.node_id}])] == [corge.node_id]
    assert names(mock, f'MATCH (".", p) WHERE p."callpath_id" = {corge.node_id}') == ["corge"]
    assert [n._hatchet_nid for n in Q.apply(mock, [{"node_id": corge._hatchet_nid}])] == [corge._hatchet_nid]
    assert names(mock, f'MATCH (".", p) WHERE p."node_id" = {corge._hatchet_nid}') == ["corge"]
    first_two = sorted(n.frame["name"] for n in list(mock.graph)[:2])
    assert names(mock, 'MATCH (".", p) WHERE p."_hatchet_nid" < 2') == first_two
    assert names(mock, [{"node_id": "< 2"}]) == first_two
    assert names(small, [{"is_leaf": True}]) == ["ab", "abc", "p1x", "pab1"]
    assert names(mock, [{"type": "function", "name": "g.*"}]) == ["garply", "garply", "garply"]  # a frame attribute
    assert names(small, [{"time": "<> 1"}]) == []  # <> is !=
    assert names(small, 'MATCH (".", p) WHERE p."file" IS NONE AND p."module" IS NONE') == [
        "ab", "abc", "main", "p1x", "pab1"]
    assert names(small, 'MATCH (".", p) WHERE p."time" IS NONE') == []  # a NaN/number is never None


def test_keywords_are_case_insensitive_and_strings_take_escapes(small):
    assert names(small, "match ('.', p) where p.\"name\" starts with 'p' and not p.\"name\" ends with \"x\"") == [
        "pab1"]
    assert names(small, r'MATCH (".", p) WHERE p."name" =~ "p\w\w\d"') == ["pab1"]


def test_parentheses_and_precedence(small):
    # NOT > AND > OR
    assert names(small, 'MATCH (".", p) WHERE p."name" = "ab" OR p."name" = "abc" AND p."time" > 5') == ["ab"]
    assert names(small, 'MATCH (".", p) WHERE (p."name" = "ab" OR p."name" = "abc") AND p."time" > 5') == []
    assert names(small, 'MATCH (".", p) WHERE NOT (p."name" = "ab" OR p IS NOT LEAF)') == ["abc", "p1x", "pab1"]


# -- Python predicates (base syntax) ----------------------------------------------------------------------------------
def test_callable_gets_the_row_as_hatchet_gives_it(small):
    seen = []

    def pred(row):
        seen.append(row)
        return row["name"].startswith("p")

    q = Q.Query().match(".", lambda row: row.name.frame["name"] == "main").relation(".", pred)
    assert names(small, q) == ["main", "p1x", "pab1"]
    assert all(isinstance(r, pd.Series) for r in seen) and {r.name.frame["name"] for r in seen} >= {"ab", "main"}


def test_query_matcher_old_style_names(small):
    q = Q.QueryMatcher().match(wildcard_spec=".", filter_func=lambda row: row["time (inc)"] > 5).rel("*")
    assert [n.frame["name"] for n in q.apply(small)] == ["main", "ab", "abc", "p1x", "pab1"]
    assert names(small, Q.QueryMatcher([{"name": "main"}, "+"])) == ["ab", "abc", "main", "p1x", "pab1"]
    assert Q.CypherQuery is Q.StringQuery and Q.parse_cypher_query is Q.parse_string_dialect
    assert len(Q.QueryMatcher().match("+").rel(3)) == 5  # "+" is ". *", 3 is ". . ."


def test_mixed_quantifiers_in_string_dialect(mock):
    # from hatchet 2026.2.0
    q = 'MATCH ("+", a)->(2, b)->("*") WHERE a."name" = "waldo" AND b."time" >= 5'
    paths = sorted("/".join(p) for p in L.call_paths(Q.apply(mock, q)))
    assert paths == ["foo/waldo", "foo/waldo/fred", "foo/waldo/fred/plugh", "foo/waldo/fred/xyzzy",
                     "foo/waldo/fred/xyzzy/thud", "foo/waldo/fred/xyzzy/thud/baz", "foo/waldo/fred/xyzzy/thud/garply",
                     "waldo", "waldo/bar", "waldo/bar/baz", "waldo/bar/grault"]


def test_is_query():
    assert Q.is_query(Q.ObjectQuery(["*"])) and Q.is_query(Q.ObjectQuery(["*"]) | Q.ObjectQuery(["."]))
    assert not Q.is_query(["*"])


def test_consecutive_stars_compose_regularly_unlike_hatchet():
    # Documented deviation.  hatchet 2026.2.0 returns [] on a -> d but ["a", "d"] once a sibling "y" exists under
    # a (its star looks one element ahead, among a's children); here both graphs give ["a", "d"].
    q = [{"name": "a"}, ("*", {"name": "x"}), ("*", {"name": "y"}), {"name": "d"}]
    alone = L.graphframe([L.tree("a", 2.0, 1.0, L.tree("d", 1.0, 1.0))])
    with_sibling = L.graphframe([L.tree("a", 3.0, 1.0, L.tree("d", 1.0, 1.0), L.tree("y", 1.0, 1.0))])
    assert names(alone, q) == names(with_sibling, q) == ["a", "d"]
