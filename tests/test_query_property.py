"""Property: on random small trees and random patterns, the SQL automaton returns exactly the nodes that a
plain Python reference matcher (every downward path, tried element by element) finds; and the three ways of
writing a query (object dialect, string dialect, Python callables) agree."""

from __future__ import annotations

import re

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from perflake import query as Q
from perflake.frame.graphframe import GraphFrame
from perflake.ingest.normalize import normalize
from perflake.readers.base import Metric
from trees import profile

# (object-dialect dict, string-dialect condition on variable v, Python test on (name, time, inc, depth))
PREDICATES = [
    ({}, None, lambda n, t, i, d: True),
    ({"name": "a"}, 'v."name" = "a"', lambda n, t, i, d: n == "a"),
    ({"name": "[ab]"}, 'v."name" =~ "[ab]$"', lambda n, t, i, d: n in "ab"),
    ({"time": "> 2"}, 'v."time" > 2', lambda n, t, i, d: t > 2),
    ({"time (inc)": ">= 6"}, 'v."time (inc)" >= 6', lambda n, t, i, d: i >= 6),
    ({"depth": "< 2"}, 'v."depth" < 2', lambda n, t, i, d: d < 2),
    ({"name": "c", "time": "<= 3"}, 'v."name" = "c" AND v."time" <= 3', lambda n, t, i, d: n == "c" and t <= 3),
    ({"depth": -1}, "v IS LEAF", None),  # the leaf test is answered from the graph
]
QUANTIFIERS = [".", ".", "*", "*", "+", 1, 2]


@st.composite
def trees(draw):
    n = draw(st.integers(1, 14))
    nodes = [(0, -1, draw(st.sampled_from("abc")))]
    for i in range(1, n):
        parent = draw(st.integers(-1, i - 1)) if draw(st.integers(0, 9)) == 0 else draw(st.integers(0, i - 1))
        nodes.append((i, parent, draw(st.sampled_from("abcd"))))
    values = [(i, 0, 0, float(draw(st.integers(0, 5)))) for i in range(n)]
    return nodes, values


patterns = st.lists(st.tuples(st.sampled_from(QUANTIFIERS), st.integers(0, len(PREDICATES) - 1)), min_size=1,
                    max_size=4)


def expand(pattern):
    out = []
    for quant, p in pattern:
        if quant == "+":
            out += [(".", p), ("*", p)]
        elif isinstance(quant, int):
            out += [(".", p)] * quant
        else:
            out.append((quant, p))
    return out


def reference(gf, pattern) -> set:
    """Every node on a downward path (starting anywhere) that the pattern matches, found by brute force."""
    df = gf.dataframe
    nodes = list(gf.graph.traverse())

    def holds(p, node):
        test = PREDICATES[p][2]
        if test is None:
            return not node.children
        return test(node.frame["name"], df.loc[node, "time"], df.loc[node, "time (inc)"], node.depth)

    elements = expand(pattern)
    k = len(elements)

    def matches(path, j=0, i=0):
        if j == len(path):
            return all(w == "*" for w, _ in elements[i:])
        if i == k:
            return False
        wildcard, p = elements[i]
        node = path[j]
        if wildcard == ".":
            return holds(p, node) and matches(path, j + 1, i + 1)
        # a star may match zero nodes, or take this node, unless the next element wants it (first node excepted)
        if matches(path, j, i + 1):
            return True
        free = j == 0 or i + 1 == k or not holds(elements[i + 1][1], node)
        return holds(p, node) and free and matches(path, j + 1, i)

    found = set()

    def walk(path):
        if matches(path):
            found.update(x.node_id for x in path)
        for child in path[-1].children:
            walk(path + [child])

    for start in nodes:
        walk([start])
    return found


def object_query(pattern):
    return [(quant, dict(PREDICATES[p][0])) for quant, p in pattern]


def string_query(pattern) -> str:
    parts, conds = [], []
    for i, (quant, p) in enumerate(pattern):
        q = f'"{quant}"' if isinstance(quant, str) else str(quant)
        parts.append(f"({q}, v{i})")
        if PREDICATES[p][1]:
            conds.append("(" + PREDICATES[p][1].replace("v.", f"v{i}.").replace("v IS", f"v{i} IS") + ")")
    return "MATCH " + "->".join(parts) + (" WHERE " + " AND ".join(conds) if conds else "")


def callable_query(pattern):
    def make(p):
        test = PREDICATES[p][2]
        if test is None:
            return lambda row: not row.name.children
        return lambda row: test(row["name"], row["time"], row["time (inc)"], row.name.depth)

    q = Q.Query()
    for i, (quant, p) in enumerate(pattern):
        (q.match if i == 0 else q.rel)(quant, make(p))
    return q


@settings(max_examples=100, deadline=None)
@given(trees(), st.lists(patterns, min_size=1, max_size=3))
def test_sql_automaton_equals_reference_matcher(tree, pattern_list):
    nodes, values = tree
    n = normalize(profile(nodes, values, [Metric("time", "exclusive")]))
    gf = GraphFrame.from_tables(n.nodes, n.metrics, n.metric_info)
    for pattern in pattern_list:
        expected = reference(gf, pattern)
        got = Q.match_node_ids(gf, object_query(pattern))
        assert got.dtype == np.uint64 and set(got.tolist()) == expected, object_query(pattern)
        assert set(Q.match_node_ids(gf, string_query(pattern)).tolist()) == expected, string_query(pattern)
        assert set(Q.match_node_ids(gf, callable_query(pattern)).tolist()) == expected


def test_string_rendering_of_patterns():
    assert string_query([("+", 1), (2, 0), ("*", 7)]) == \
        'MATCH ("+", v0)->(2, v1)->("*", v2) WHERE (v0."name" = "a") AND (v2 IS LEAF)'
    assert re.fullmatch(r"\[.*\]", str(object_query([(".", 3)]))) is not None
