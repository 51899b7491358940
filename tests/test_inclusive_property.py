"""Property: the SQL-derived inclusive metric equals a small Python reference on random trees."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from perflake.ingest.normalize import normalize
from perflake.readers.base import Metric
from trees import profile


@st.composite
def random_tree(draw):
    n = draw(st.integers(1, 25))
    parents = [-1] + [draw(st.integers(0, i - 1)) for i in range(1, n)]
    # distinct names among siblings keep one node per local id (merging is tested elsewhere)
    nodes = [(i, p, f"f{i}") for i, p in enumerate(parents)]
    ranks = draw(st.integers(1, 3))
    values = [(i, r, 0, draw(st.floats(0, 1e6, allow_nan=False))) for r in range(ranks) for i in range(n)
              if draw(st.booleans()) or i == 0]
    return nodes, values


def reference_inclusive(nodes, values):
    children = {}
    for i, p, _ in nodes:
        children.setdefault(p, []).append(i)
    exc = {(i, r): v for i, r, _, v in values}
    ranks = {r for _, r, _, _ in values}

    def total(i, r):
        return exc.get((i, r), 0.0) + sum(total(c, r) for c in children.get(i, []))

    return {(f"f{i}", r): total(i, r) for i, _, _ in nodes for r in ranks}


@settings(max_examples=60, deadline=None)
@given(random_tree())
def test_inclusive_matches_reference(tree):
    nodes, values = tree
    n = normalize(profile(nodes, values, [Metric("time", "exclusive")]))
    names = dict(zip(n.nodes.column("node_id").to_pylist(), n.nodes.column("name").to_pylist()))
    got = {(names[row["node_id"]], row["rank"]): row["time (inc)"] for row in n.metrics.to_pylist()}
    expected = reference_inclusive(nodes, values)
    for key, value in got.items():
        assert abs(value - expected[key]) <= 1e-9 * max(1.0, abs(expected[key])), key
    # every node that has a measured descendant has an inclusive value
    assert {k for k, v in expected.items() if v} <= set(got) | {k for k, v in expected.items() if v == 0}
