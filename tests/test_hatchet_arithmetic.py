"""Hatchet's arithmetic between GraphFrames (issue 15, theme 5): union of the two graphs, IEEE results, and
Hatchet's ``DataFrame.update`` rule -- a NaN result keeps the left operand's value, so a node only in the left
operand keeps its value and one only in the right is NaN; 0 / 0 keeps the left 0, x / 0 is inf.  Each case is
compared with llnl-hatchet 2026.2.0 run in .bench-venv on the same literals (values and ``tree()`` text)."""

from __future__ import annotations

import json
import math

import pytest

import hatchet_load
from conftest import need_bench_python
from perflake import GraphFrame


def literal(values: dict) -> list:
    """main -> one child per name; None: the child is absent."""
    kids = [{"frame": {"name": n, "type": "function"}, "metrics": {"time": v, "time (inc)": v}}
            for n, v in values.items() if v is not None]
    total = 1.0 + sum(v for v in values.values() if v)
    return [{"frame": {"name": "main", "type": "function"}, "metrics": {"time": 1.0, "time (inc)": total},
             "children": kids}]


LEFT = literal({"zero_num": 0.0, "by_zero": 5.0, "neg_by_zero": -5.0, "only1": 10.0, "zz": 0.0, "both": 6.0})
RIGHT = literal({"zero_num": 3.0, "by_zero": 0.0, "neg_by_zero": 0.0, "only2": 5.0, "zz": 0.0, "both": 2.0})
OPS = ["__add__", "__sub__", "__mul__", "__truediv__"]


def by_name(gf) -> dict:
    df = gf.dataframe
    return {str(n.frame["name"]): float(df.loc[n, "time"]) for n in gf.graph.traverse()}


def same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


@pytest.fixture(scope="module")
def hatchets_answers():
    need_bench_python()
    code = (f"import json\nleft, right = {LEFT!r}, {RIGHT!r}\nrows = []\n"
            f"for op in {OPS!r}:\n"
            "    g1, g2 = hatchet.GraphFrame.from_literal(left), hatchet.GraphFrame.from_literal(right)\n"
            "    r = getattr(g1, op)(g2)\n"
            "    vals = {str(n.frame['name']): float(r.dataframe.loc[n, 'time']) for n in r.graph.traverse()}\n"
            "    text = r.tree(metric_column='time', render_header=False)\n"
            "    rows.append([op, json.dumps(vals), text])\n"
            "result = pd.DataFrame(rows, columns=['op', 'values', 'tree'])\n")
    report = hatchet_load.recipe(code)
    return {op: (json.loads(vals), hatchet_load.ANSI.sub("", text)) for op, vals, text in report["frame"]["values"]}


@pytest.mark.parametrize("op", OPS)
def test_values_are_hatchets(hatchets_answers, op):
    want, _ = hatchets_answers[op]
    got = by_name(getattr(GraphFrame.from_literal(LEFT), op)(GraphFrame.from_literal(RIGHT)))
    assert set(got) == set(want)
    assert all(same(got[k], want[k]) for k in want), {k: (got[k], want[k]) for k in want if not same(got[k], want[k])}


def test_the_rule_by_hand():
    """The values Hatchet gives, written out (so that the rule is visible without .bench-venv)."""
    div = by_name(GraphFrame.from_literal(LEFT) / GraphFrame.from_literal(RIGHT))
    assert (div["zero_num"], div["by_zero"], div["neg_by_zero"], div["zz"], div["only1"], div["both"]) == (
        0.0, math.inf, -math.inf, 0.0, 10.0, 3.0)
    assert math.isnan(div["only2"])
    sub = by_name(GraphFrame.from_literal(LEFT) - GraphFrame.from_literal(RIGHT))
    assert (sub["only1"], sub["zero_num"], sub["both"]) == (10.0, -3.0, 4.0) and math.isnan(sub["only2"])


@pytest.mark.parametrize("op", OPS)
def test_tree_marks_one_sided_nodes_as_hatchet(hatchets_answers, op):
    _, want = hatchets_answers[op]
    got = getattr(GraphFrame.from_literal(LEFT), op)(GraphFrame.from_literal(RIGHT))
    assert got.tree(metric_column="time", render_header=False, colour=False) == want


def test_in_place_operators_give_the_same_values():
    for op, iop in zip(OPS, ["__iadd__", "__isub__", "__imul__", "__itruediv__"]):
        want = by_name(getattr(GraphFrame.from_literal(LEFT), op)(GraphFrame.from_literal(RIGHT)))
        g = GraphFrame.from_literal(LEFT)
        g = getattr(g, iop)(GraphFrame.from_literal(RIGHT))
        got = by_name(g)
        assert all(same(got[k], want[k]) for k in want), op
