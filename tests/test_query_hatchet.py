"""Acceptance tests: perflake's query engine gives the results Hatchet gives on the same literal graphs.

Every expected list below comes from RUNNING hatchet 2026.2.0 (``.bench-venv``) on the same literals
(``tests/literal.py``): ``hatchet.query.QueryEngine().apply(query, gf.graph, gf.dataframe)`` on
``GraphFrame.from_literal(literal)``, each matched node written as its call path ``"root/child/..."``.
For multi-rank data Hatchet's dataframe was re-indexed by (node, rank) with both ranks' values; there Hatchet's
"off" raises MultiIndexModeMismatch (so does perflake's), and the "mean" expectations (perflake's mode) were
obtained after Hatchet's ``drop_index_levels()`` (mean).
"""

from __future__ import annotations

import re

import pytest

import literal as L
from perflake import query as Q


def paths(gf, q, mode="off"):
    return sorted("/".join(p) for p in L.call_paths(Q.apply(gf, q, multi_index_mode=mode)))


@pytest.fixture(scope="module")
def mock():
    return L.graphframe(L.MOCK_GRAPH)


# -- the user guide's examples ----------------------------------------------------------------------------------
def test_user_guide_solvers_query():
    # from hatchet 2026.2.0; pilu8 (under pgmres7) is NOT returned: a star stops at the first node matching the
    # element after it, so pgmres7 ends the match
    query = [{"name": "solvers"}, ("*", {"time (inc)": "> 10"}), {"name": "p[a-z]+[0-9]", "time (inc)": ">= 10"}]
    assert paths(L.graphframe(L.SOLVERS_GRAPH), query) == [
        "main/solvers", "main/solvers/hypre", "main/solvers/hypre/amg", "main/solvers/hypre/amg/pfmg3",
        "main/solvers/hypre/pcg2", "main/solvers/pcg1", "main/solvers/petsc", "main/solvers/petsc/ksp",
        "main/solvers/petsc/ksp/pgmres7",
    ]


def test_user_guide_corge_query(mock):
    # from hatchet 2026.2.0
    assert paths(mock, [{"name": "corge"}, "*"]) == [
        "foo/qux/quux/corge", "foo/qux/quux/corge/bar", "foo/qux/quux/corge/bar/baz",
        "foo/qux/quux/corge/bar/grault", "foo/qux/quux/corge/garply", "foo/qux/quux/corge/grault",
    ]


# -- the query-language paper's MPI / L2-misses query, three ways -----------------------------------------------
MPI_EXPECTED = [
    "main/MPI_Init/PMPI_Init", "main/finalize/MPI_Finalize", "main/solve/MPI_Allreduce",
    "main/solve/MPI_Allreduce/PMPI_Allreduce", "main/solve/MPI_Allreduce/PMPI_Allreduce/psm2_poll",
]  # from hatchet 2026.2.0 (identical for the three forms)


def test_mpi_l2_query_three_ways_agree_with_hatchet():
    gf = L.graphframe(L.MPI_GRAPH)
    base = Q.QueryMatcher().match(
        ".", lambda row: re.match("P?MPI_.*", row["name"]) is not None and row["PAPI_L2_TCM"] > 5).rel("*")
    obj = [(".", {"name": "P?MPI_.*", "PAPI_L2_TCM": "> 5"}), "*"]
    string = 'MATCH (".", p)->("*") WHERE p."name" =~ "P?MPI_.*" AND p."PAPI_L2_TCM" > 5'
    assert paths(gf, base) == paths(gf, obj) == paths(gf, string) == MPI_EXPECTED


# -- every string-dialect operator --------------------------------------------------------------------------------
# from hatchet 2026.2.0, on MOCK_GRAPH (Hatchet's mock_graph_literal)
OPERATORS = [
    ("eq_str", 'MATCH (".", p) WHERE p."name" = "bar"',
     [
        "foo/bar", "foo/qux/quux/corge/bar", "waldo/bar",
     ]),
    ("starts", 'MATCH (".", p) WHERE p."name" STARTS WITH "gr"',
     [
        "foo/bar/grault", "foo/qux/quux/corge/bar/grault", "foo/qux/quux/corge/grault", "waldo/bar/grault",
     ]),
    ("ends", 'MATCH (".", p) WHERE p."name" ENDS WITH "ly"',
     [
        "foo/qux/quux/corge/garply", "foo/waldo/fred/xyzzy/thud/garply", "foo/waldo/garply",
     ]),
    ("contains", 'MATCH (".", p) WHERE p."name" CONTAINS "u"',
     [
        "foo/bar/grault", "foo/qux", "foo/qux/quux", "foo/qux/quux/corge/bar/grault", "foo/qux/quux/corge/grault",
        "foo/waldo/fred/plugh", "foo/waldo/fred/xyzzy/thud", "waldo/bar/grault",
     ]),
    ("regex", 'MATCH (".", p) WHERE p."name" =~ "[bg]a"',
     [
        "foo/bar", "foo/bar/baz", "foo/qux/quux/corge/bar", "foo/qux/quux/corge/bar/baz",
        "foo/qux/quux/corge/garply", "foo/waldo/fred/xyzzy/thud/baz", "foo/waldo/fred/xyzzy/thud/garply",
        "foo/waldo/garply", "waldo/bar", "waldo/bar/baz",
     ]),
    ("lt", 'MATCH (".", p) WHERE p."time (inc)" < 10',
     [
        "foo/bar/baz", "foo/qux/quux/corge/bar/baz", "foo/waldo/fred/plugh", "foo/waldo/fred/xyzzy/thud/baz",
        "waldo/bar/baz",
     ]),
    ("le", 'MATCH (".", p) WHERE p."time (inc)" <= 10',
     [
        "foo/bar/baz", "foo/bar/grault", "foo/qux/quux/corge/bar/baz", "foo/qux/quux/corge/bar/grault",
        "foo/qux/quux/corge/grault", "foo/waldo/fred/plugh", "foo/waldo/fred/xyzzy/thud/baz", "waldo/bar/baz",
        "waldo/bar/grault",
     ]),
    ("gt", 'MATCH (".", p) WHERE p."time (inc)" > 55',
     [
        "foo", "foo/qux", "foo/qux/quux",
     ]),
    ("ge", 'MATCH (".", p) WHERE p."time (inc)" >= 55',
     [
        "foo", "foo/qux", "foo/qux/quux", "foo/qux/quux/corge", "foo/waldo",
     ]),
    ("eq_num", 'MATCH (".", p) WHERE p."time" = 15',
     [
        "foo/qux/quux/corge/garply", "foo/waldo/fred/xyzzy/thud/garply", "foo/waldo/garply",
     ]),
    ("leaf", 'MATCH (".", p) WHERE p IS LEAF',
     [
        "foo/bar/baz", "foo/bar/grault", "foo/qux/quux/corge/bar/baz", "foo/qux/quux/corge/bar/grault",
        "foo/qux/quux/corge/garply", "foo/qux/quux/corge/grault", "foo/waldo/fred/plugh",
        "foo/waldo/fred/xyzzy/thud/baz", "foo/waldo/fred/xyzzy/thud/garply", "foo/waldo/garply", "waldo/bar/baz",
        "waldo/bar/grault",
     ]),
    ("not_leaf", 'MATCH (".", p) WHERE p IS NOT LEAF',
     [
        "foo", "foo/bar", "foo/qux", "foo/qux/quux", "foo/qux/quux/corge", "foo/qux/quux/corge/bar", "foo/waldo",
        "foo/waldo/fred", "foo/waldo/fred/xyzzy", "foo/waldo/fred/xyzzy/thud", "waldo", "waldo/bar",
     ]),
    ("not", 'MATCH (".", p) WHERE NOT p."name" = "bar"',
     [
        "foo", "foo/bar/baz", "foo/bar/grault", "foo/qux", "foo/qux/quux", "foo/qux/quux/corge",
        "foo/qux/quux/corge/bar/baz", "foo/qux/quux/corge/bar/grault", "foo/qux/quux/corge/garply",
        "foo/qux/quux/corge/grault", "foo/waldo", "foo/waldo/fred", "foo/waldo/fred/plugh", "foo/waldo/fred/xyzzy",
        "foo/waldo/fred/xyzzy/thud", "foo/waldo/fred/xyzzy/thud/baz", "foo/waldo/fred/xyzzy/thud/garply",
        "foo/waldo/garply", "waldo", "waldo/bar/baz", "waldo/bar/grault",
     ]),
    ("and", 'MATCH (".", p) WHERE p."time" > 5 AND p."time" < 15',
     [
        "foo/bar/grault", "foo/qux/quux/corge", "foo/qux/quux/corge/bar/grault", "foo/qux/quux/corge/grault",
        "waldo", "waldo/bar/grault",
     ]),
    ("or", 'MATCH (".", p) WHERE p."name" = "baz" OR p."name" = "corge"',
     [
        "foo/bar/baz", "foo/qux/quux/corge", "foo/qux/quux/corge/bar/baz", "foo/waldo/fred/xyzzy/thud/baz",
        "waldo/bar/baz",
     ]),
    ("and_or", 'MATCH (".", p) WHERE p."time" > 5 AND p."name" = "bar" OR p."time" > 5 AND p."name" = "garply"',
     [
        "foo/qux/quux/corge/garply", "foo/waldo/fred/xyzzy/thud/garply", "foo/waldo/garply",
     ]),
    ("depth", 'MATCH (".", p) WHERE p."depth" = 2',
     [
        "foo/bar/baz", "foo/bar/grault", "foo/qux/quux", "foo/waldo/fred", "foo/waldo/garply", "waldo/bar/baz",
        "waldo/bar/grault",
     ]),
    ("depth_lt", 'MATCH (".", p)->("*") WHERE p."depth" < 1 AND p."name" = "waldo"',
     [
        "waldo", "waldo/bar", "waldo/bar/baz", "waldo/bar/grault",
     ]),
    ("chain", 'MATCH (".", p)->("*", q)->(".", r) WHERE p."name" = "waldo" AND q."time (inc)" > 20 AND r IS LEAF',
     [
        "foo/waldo", "foo/waldo/fred", "foo/waldo/fred/plugh", "foo/waldo/fred/xyzzy", "foo/waldo/fred/xyzzy/thud",
        "foo/waldo/fred/xyzzy/thud/baz", "foo/waldo/fred/xyzzy/thud/garply", "foo/waldo/garply",
     ]),
    ("plus", 'MATCH (".", p)->("+", q) WHERE p."name" = "corge" AND q."time" >= 5',
     [
        "foo/qux/quux/corge", "foo/qux/quux/corge/bar", "foo/qux/quux/corge/bar/baz",
        "foo/qux/quux/corge/bar/grault", "foo/qux/quux/corge/garply", "foo/qux/quux/corge/grault",
     ]),
    ("count", 'MATCH (".", p)->(2) WHERE p."name" = "fred"',
     [
        "foo/waldo/fred", "foo/waldo/fred/xyzzy", "foo/waldo/fred/xyzzy/thud",
     ]),
    ("leading_star", 'MATCH ("*")->(".", p) WHERE p."name" = "thud"',
     [
        "foo", "foo/waldo", "foo/waldo/fred", "foo/waldo/fred/xyzzy", "foo/waldo/fred/xyzzy/thud",
     ]),
]


@pytest.mark.parametrize(("key", "query", "expected"), OPERATORS, ids=[o[0] for o in OPERATORS])
def test_string_dialect_operator(mock, key, query, expected):
    assert paths(mock, query) == expected


# from hatchet 2026.2.0, on SPECIAL_GRAPH (NaN, +-inf, missing files)
SPECIAL = [
    ("nan", 'MATCH (".", p) WHERE p."flops" IS NAN',
     [
        "main/mpi_send",
     ]),
    ("not_nan", 'MATCH (".", p) WHERE p."flops" IS NOT NAN',
     [
        "main", "main/io", "main/kernel_a", "main/kernel_a/kernel_b",
     ]),
    ("inf", 'MATCH (".", p) WHERE p."flops" IS INF',
     [
        "main/io", "main/kernel_a",
     ]),
    ("not_inf", 'MATCH (".", p) WHERE p."flops" IS NOT INF',
     [
        "main", "main/kernel_a/kernel_b", "main/mpi_send",
     ]),
    ("none", 'MATCH (".", p) WHERE p."file" IS NONE',
     [
        "main/io", "main/kernel_a/kernel_b",
     ]),
    ("not_none", 'MATCH (".", p) WHERE p."file" IS NOT NONE',
     [
        "main", "main/kernel_a", "main/mpi_send",
     ]),
]


@pytest.mark.parametrize(("key", "query", "expected"), SPECIAL, ids=[o[0] for o in SPECIAL])
def test_string_dialect_nan_inf_none(key, query, expected):
    assert paths(L.graphframe(L.SPECIAL_GRAPH), query) == expected


def test_parentheses_equal_hatchets_distributed_form(mock):
    # Hatchet's grammar has no parentheses; its distributed form ("and_or" above) is the expectation
    q = 'MATCH (".", p) WHERE p."time" > 5 AND (p."name" = "bar" OR p."name" = "garply")'
    assert paths(mock, q) == dict((o[0], o[2]) for o in OPERATORS)["and_or"]


# -- compound queries ------------------------------------------------------------------------------------------
BAR, QUX = [{"name": "bar"}, "*"], [{"name": "qux"}, "*"]
FOO, TO_BAZ = [{"name": "foo"}, "*"], ["*", {"name": "baz"}]
COMPOUND = [  # from hatchet 2026.2.0, on MOCK_GRAPH
    ("or", lambda: Q.DisjunctionQuery(BAR, QUX),
     [
        "foo/bar", "foo/bar/baz", "foo/bar/grault", "foo/qux", "foo/qux/quux", "foo/qux/quux/corge",
        "foo/qux/quux/corge/bar", "foo/qux/quux/corge/bar/baz", "foo/qux/quux/corge/bar/grault",
        "foo/qux/quux/corge/garply", "foo/qux/quux/corge/grault", "waldo/bar", "waldo/bar/baz", "waldo/bar/grault",
     ]),
    ("and", lambda: Q.ConjunctionQuery(FOO, TO_BAZ),
     [
        "foo", "foo/bar", "foo/bar/baz", "foo/qux", "foo/qux/quux", "foo/qux/quux/corge", "foo/qux/quux/corge/bar",
        "foo/qux/quux/corge/bar/baz", "foo/waldo", "foo/waldo/fred", "foo/waldo/fred/xyzzy",
        "foo/waldo/fred/xyzzy/thud", "foo/waldo/fred/xyzzy/thud/baz",
     ]),
    ("xor", lambda: Q.ExclusiveDisjunctionQuery(FOO, TO_BAZ),
     [
        "foo/bar/grault", "foo/qux/quux/corge/bar/grault", "foo/qux/quux/corge/garply", "foo/qux/quux/corge/grault",
        "foo/waldo/fred/plugh", "foo/waldo/fred/xyzzy/thud/garply", "foo/waldo/garply", "waldo", "waldo/bar",
        "waldo/bar/baz",
     ]),
    ("xor3", lambda: Q.ExclusiveDisjunctionQuery(FOO, TO_BAZ, BAR),
     [
        "foo/bar", "foo/bar/baz", "foo/qux/quux/corge/bar", "foo/qux/quux/corge/bar/baz",
        "foo/qux/quux/corge/garply", "foo/qux/quux/corge/grault", "foo/waldo/fred/plugh",
        "foo/waldo/fred/xyzzy/thud/garply", "foo/waldo/garply", "waldo", "waldo/bar/grault",
     ]),
    ("not", lambda: Q.NegationQuery(TO_BAZ),
     [
        "foo/bar/grault", "foo/qux/quux/corge/bar/grault", "foo/qux/quux/corge/garply", "foo/qux/quux/corge/grault",
        "foo/waldo/fred/plugh", "foo/waldo/fred/xyzzy/thud/garply", "foo/waldo/garply", "waldo/bar/grault",
     ]),
    ("str_queries", lambda: '{MATCH (".", p)->("*") WHERE p."name" = "bar"} OR {MATCH (".", p)->("*") WHERE p."name" = '
                            '"qux"}',
     [
        "foo/bar", "foo/bar/baz", "foo/bar/grault", "foo/qux", "foo/qux/quux", "foo/qux/quux/corge",
        "foo/qux/quux/corge/bar", "foo/qux/quux/corge/bar/baz", "foo/qux/quux/corge/bar/grault",
        "foo/qux/quux/corge/garply", "foo/qux/quux/corge/grault", "waldo/bar", "waldo/bar/baz", "waldo/bar/grault",
     ]),
    ("str_where", lambda: 'MATCH (".", p)->("*") WHERE {p."name" = "bar"} XOR {p."time (inc)" >= 20}',
     [
        "foo", "foo/qux", "foo/qux/quux", "foo/qux/quux/corge", "foo/qux/quux/corge/garply",
        "foo/qux/quux/corge/grault", "foo/waldo", "foo/waldo/fred", "foo/waldo/fred/plugh", "foo/waldo/fred/xyzzy",
        "foo/waldo/fred/xyzzy/thud", "foo/waldo/fred/xyzzy/thud/baz", "foo/waldo/fred/xyzzy/thud/garply",
        "foo/waldo/garply", "waldo",
     ]),
]


@pytest.mark.parametrize(("key", "make", "expected"), COMPOUND, ids=[c[0] for c in COMPOUND])
def test_compound_query(mock, key, make, expected):
    assert paths(mock, make()) == expected


def test_operators_build_the_compound_classes(mock):
    bar, qux = Q.ObjectQuery(BAR), Q.ObjectQuery(QUX)
    foo, to_baz = Q.ObjectQuery(FOO), Q.ObjectQuery(TO_BAZ)
    expected = {c[0]: c[2] for c in COMPOUND}
    assert paths(mock, bar | qux) == expected["or"]
    assert paths(mock, foo & to_baz) == expected["and"]
    assert paths(mock, foo ^ to_baz) == expected["xor"]
    assert paths(mock, ~to_baz) == expected["not"]
    assert isinstance(bar | qux, Q.OrQuery) and isinstance(foo & to_baz, Q.IntersectionQuery)
    assert isinstance(foo ^ to_baz, Q.SymDifferenceQuery) and isinstance(~to_baz, Q.NotQuery)


# -- multi-rank data ---------------------------------------------------------------------------------------------
RANK_QUERIES = {
    "time_gt_10": [{"time": "> 10"}],
    "inc_ge_10": [{"time (inc)": ">= 10"}],
    "str_child": 'MATCH (".", p)->(".", q) WHERE p."name" = "b" AND q."time" > 20',
}
RANK_EXPECTED = {  # from hatchet 2026.2.0 ("mean": "off" after drop_index_levels(), i.e. the mean)
    "mean": {
        "time_gt_10": [
            "main/a", "main/b/c",
        ],
        "inc_ge_10": [
            "main", "main/a", "main/b", "main/b/c",
        ],
        "str_child": [],
    },
    "any": {
        "time_gt_10": [
            "main/a", "main/b/c",
        ],
        "inc_ge_10": [
            "main", "main/a", "main/b", "main/b/c",
        ],
        "str_child": [
            "main/b", "main/b/c",
        ],
    },
    "all": {
        "time_gt_10": [],
        "inc_ge_10": [
            "main", "main/b",
        ],
        "str_child": [],
    },
}


@pytest.mark.parametrize("mode", ["mean", "any", "all"])
@pytest.mark.parametrize("key", list(RANK_QUERIES))
def test_multi_rank_modes(mode, key):
    gf = L.graphframe(L.RANKS_GRAPH)
    assert gf.dataframe.index.names == ["node", "rank"]
    assert paths(gf, RANK_QUERIES[key], mode) == RANK_EXPECTED[mode][key]
    assert paths(gf, Q.to_query(RANK_QUERIES[key], mode)) == RANK_EXPECTED[mode][key]  # mode set on the query


@pytest.mark.parametrize("key", list(RANK_QUERIES))
def test_multi_rank_off_is_refused(key):
    # hatchet 2026.2.0: an ObjectQuery with multi_index_mode="off" on (node, rank)-indexed data raises
    # MultiIndexModeMismatch (its string dialect fails with "Type mismatch"; perflake raises the same for both)
    gf = L.graphframe(L.RANKS_GRAPH)
    with pytest.raises(Q.MultiIndexModeMismatch):
        paths(gf, RANK_QUERIES[key], "off")


def test_multi_rank_callable_receives_the_nodes_rows():
    # from hatchet 2026.2.0: the predicate gets the DataFrame of the node's rows
    gf = L.graphframe(L.RANKS_GRAPH)
    q = Q.QueryMatcher().match(".", lambda df: bool((df["time"] > 10).any()))
    assert paths(gf, q) == [
        "main/a", "main/b/c",
    ]


@pytest.mark.parametrize("mode", ["any", "all"])
def test_name_predicates_follow_an_edited_name_column(mode):
    """Frame attributes are tested per node while the column holds the frames' values; after a user edits
    one row, the per-row semantics (any/all over the node's rows) hold again."""
    gf = L.graphframe(L.RANKS_GRAPH)
    q = [{"name": "c"}]
    before = paths(gf, q, mode)
    assert before == ["main/b/c"]
    df = gf.dataframe
    first_c = next(i for i, (node, _) in enumerate(df.index) if node.frame["name"] == "c")
    df.iloc[first_c, df.columns.get_loc("name")] = "renamed"  # one rank's row of node c only
    assert paths(gf, q, mode) == (["main/b/c"] if mode == "any" else [])


@pytest.mark.parametrize("mode", ["any", "all"])
def test_name_predicates_read_a_missing_name_per_row(mode):
    """A row whose name was removed (missing) no longer holds its frame's value: that row fails the string
    test, so "all" loses node c and "any" keeps it through its other ranks."""
    gf = L.graphframe(L.RANKS_GRAPH)
    df = gf.dataframe
    first_c = next(i for i, (node, _) in enumerate(df.index) if node.frame["name"] == "c")
    df.iloc[first_c, df.columns.get_loc("name")] = None
    assert df["name"].isna().sum() == 1
    assert paths(gf, [{"name": "c"}], mode) == (["main/b/c"] if mode == "any" else [])
    assert paths(gf, 'MATCH (".", p) WHERE p."name" IS NONE', mode) == (["main/b/c"] if mode == "any" else [])
