"""Literals and JSON as Hatchet has them (issue 15, theme 6), compared with llnl-hatchet 2026.2.0 in .bench-venv.

- literal entries that share a ``_hatchet_nid`` are one node (a DAG, even a cycle: Hatchet's
  ``mock_graph_literal_duplicates`` has 6 nodes, not 8), and ``to_literal`` lists such a node under each parent;
- ``from_lists`` with a Node used twice (a DAG, a cycle), ``to_literal`` -> ``from_literal`` -> ``to_literal``
  gives the same literal, ``tree()`` and ``to_dot()`` show every link;
- a literal whose metrics include ``line`` keeps Hatchet's ``exc_metrics``/``inc_metrics``;
- ``GraphFrame.from_json(s).to_json()`` gives back Hatchet's JSON (same characters), and each side reads the
  other's JSON to the same values.
"""

from __future__ import annotations

import json

import pytest

import hatchet_load
import hatchet_same
from conftest import DATA, _need, need_bench_python


def entry(name, nid, time, inc, *children, kind="function"):
    out = {"frame": {"name": name, "type": kind}, "metrics": {"time (inc)": inc, "time": time, "_hatchet_nid": nid}}
    if children:
        out["children"] = list(children)
    return out


# Hatchet's mock_graph_literal_duplicates: a -> c -> a is a cycle, d has the parents b and c
DUPLICATES = [entry("a", 0, 0.0, 130.0,
                    entry("b", 1, 5.0, 20.0,
                          entry("d", 2, 5.0, 20.0, entry("e", 3, 5.0, 20.0), entry("f", 4, 5.0, 20.0))),
                    entry("c", 5, 5.0, 20.0, entry("a", 0, 5.0, 130.0), entry("d", 2, 5.0, 20.0)))]
# a DAG without a cycle: "shared" under "right" and "left" (listed in that order; numbered in frame order, as
# Hatchet's to_literal numbers them), its child listed once
DIAMOND = [entry("main", 0, 1.0, 8.0,
                 entry("right", 4, 2.0, 6.0, entry("shared", 2, 3.0, 4.0, entry("leaf", 3, 1.0, 1.0))),
                 entry("left", 1, 1.0, 5.0, entry("shared", 2, 3.0, 4.0)))]
TIME_AS_LINE = [{"frame": {"name": "foo", "type": "function"}, "metrics": {"time (inc)": 20.0, "line": 5.0},
                 "children": [{"frame": {"name": "bar"}, "metrics": {"time (inc)": 10.0, "line": 10.0}},
                              {"frame": {"name": "baz", "type": "function"},
                               "metrics": {"time (inc)": 5.0, "line": 5.0}}]}]

SCENARIO = r'''
def described(gf):
    return {"len": len(gf.graph), "roots": [r.frame["name"] for r in gf.graph.roots],
            "traverse": [[n.frame["name"], n._hatchet_nid, n._depth, [c.frame["name"] for c in n.children]]
                         for n in gf.graph.traverse()],
            "parents": [sorted(p.frame["name"] for p in n.parents) for n in gf.graph.traverse()],
            "rows": [[n.frame["name"], float(t), float(i)] for n, t, i in zip(
                gf.dataframe.index.get_level_values("node"), gf.dataframe["time"], gf.dataframe["time (inc)"])],
            "tree": gf.tree(render_header=False)}


def shape(literal):
    return [[e["name"], e["metrics"].get("_hatchet_nid"), sorted(e["metrics"]), shape(e.get("children", []))]
            for e in literal]


def answers():
    out = {}
    for key, lit in (("duplicates", DUPLICATES), ("diamond", DIAMOND)):
        gf = GraphFrame.from_literal(lit)
        out[key] = described(gf)
        out[key + " to_literal"] = shape(gf.to_literal())
        gf.dataframe["expected"] = gf.dataframe["time (inc)"]
        gf.update_inclusive_columns()
        out[key + " inclusive"] = [float(x) for x in gf.dataframe["time (inc)"]]
    a, d = Node(Frame(name="a")), Node(Frame(name="d"))
    cyc = GraphFrame.from_lists([a, ["b", [d]], ["c", [d, ["e"], ["f"]], [a]]])
    out["cycle"] = described(cyc)
    lit = cyc.to_literal()
    out["cycle to_literal"] = shape(lit)
    out["cycle round trip"] = GraphFrame.from_literal(lit).to_literal() == lit
    out["cycle dot"] = sorted(line.strip() for line in cyc.to_dot().splitlines() if "->" in line)
    d2 = Node(Frame(name="d"))
    dag = GraphFrame.from_lists(("a", ("b", d2), ("c", d2)))
    out["lists dag"] = described(dag)
    line = GraphFrame.from_literal(TIME_AS_LINE)
    out["line metrics"] = [sorted(line.exc_metrics), sorted(line.inc_metrics), list(line.dataframe.columns)]
    line.update_inclusive_columns()
    out["line inclusive"] = [sorted(line.inc_metrics), [float(x) for x in line.dataframe["line (inc)"]],
                             bool(line.dataframe["time (inc)"].equals(line.dataframe["line (inc)"]))]
    if JSON:
        text = open(JSON).read()
        back = GraphFrame.from_json(text).to_json()
        out["json chars"] = sorted("".join(text.split())) == sorted("".join(back.split()))
        out["json keys"] = sorted(json.loads(back))
        out["json dtypes"] = [str(t) for t in GraphFrame.from_json(text).dataframe[["time", "time (inc)"]].dtypes]
    return out
'''


@pytest.fixture(scope="module")
def consts():
    path = DATA / "json/hatchet-graph-literal.json"
    return {"DUPLICATES": DUPLICATES, "DIAMOND": DIAMOND, "TIME_AS_LINE": TIME_AS_LINE,
            "JSON": str(path) if path.exists() else None}


@pytest.fixture(scope="module")
def theirs(consts):
    need_bench_python()
    return hatchet_same.hatchet(SCENARIO, **consts)


@pytest.fixture(scope="module")
def ours(consts):
    return hatchet_same.perflake(SCENARIO, **consts)


KEYS = ["duplicates", "duplicates to_literal", "duplicates inclusive", "diamond", "diamond to_literal",
        "diamond inclusive", "cycle", "cycle to_literal", "cycle round trip", "cycle dot", "lists dag",
        "line metrics", "line inclusive"]


@pytest.mark.parametrize("key", KEYS)
def test_same_as_hatchet(theirs, ours, key):
    if key in ("duplicates", "diamond"):  # parents: see test_a_repeated_entry_links_both_ways
        theirs, ours = ({k: v for k, v in side[key].items() if k != "parents"} for side in (theirs, ours))
        assert ours == theirs
    else:
        assert ours[key] == theirs[key]


def test_a_repeated_entry_links_both_ways(theirs, ours):
    """Deliberate difference: Hatchet's literal reader adds a repeated entry to its parent's children but not
    the parent to the node's ``parents`` (d under c is c's child, yet d.parents is [b]), so ``paths()``,
    squash and anything walking upwards miss that link; perflake records it both ways, as ``Node.from_lists``
    and Hatchet's JSON reader do."""
    assert theirs["duplicates"]["parents"] == [[], ["a"], ["b"], ["d"], ["d"], ["a"]]
    assert ours["duplicates"]["parents"] == [["c"], ["a"], ["b", "c"], ["d"], ["d"], ["a"]]
    assert ours["diamond"]["parents"] == [[], ["main"], ["left", "right"], ["shared"], ["main"]]
    assert theirs["lists dag"]["parents"] == ours["lists dag"]["parents"] == [[], ["a"], ["b", "c"], ["a"]]


@pytest.mark.parametrize("key", ["json chars", "json keys", "json dtypes"])
def test_json_round_trip_is_hatchets(theirs, ours, key):
    _need(DATA / "json/hatchet-graph-literal.json")
    assert ours[key] == theirs[key]


def test_the_answers_written_out(ours):
    dup = ours["duplicates"]
    assert dup["len"] == 6 and [t[0] for t in dup["traverse"]] == ["a", "b", "d", "e", "f", "c"]
    assert dup["traverse"][5][3] == ["a", "d"]  # c's children: the cycle back to a, and d (also b's child)
    assert ours["diamond"]["len"] == 5 and ours["diamond inclusive"] == [8.0, 5.0, 4.0, 1.0, 6.0]
    assert ours["cycle round trip"] is True and '"5" -> "0";' in ours["cycle dot"]
    assert ours["line metrics"][:2] == [["line"], ["time (inc)"]] and ours["line inclusive"][2] is True
    if "json chars" in ours:
        assert ours["json chars"] is True
        assert ours["json keys"] == ["dataframe", "dataframe_indices", "exclusive_metrics", "graph",
                                     "inclusive_metrics"]


def test_each_side_reads_the_others_json(tmp_path):
    """perflake's to_json read by Hatchet's from_json gives perflake's tree; Hatchet's JSON read by perflake is
    the JSON test above."""
    need_bench_python()
    from perflake import GraphFrame

    gf = GraphFrame.from_literal(DIAMOND)
    path = tmp_path / "ours.json"
    path.write_text(gf.to_json())
    report = hatchet_load.recipe("result = g.dataframe[['name', 'time', 'time (inc)']]\n"
                                 "result = result.assign(tree=[g.tree(render_header=False)] * len(result))\n",
                                 g=path)
    values = report["frame"]["values"]
    assert [v[:3] for v in values] == [[str(n), float(t), float(i)] for n, t, i in
                                       zip(gf.dataframe["name"], gf.dataframe["time"], gf.dataframe["time (inc)"])]
    assert hatchet_load.ANSI.sub("", values[0][3]) == gf.tree(render_header=False, colour=False)  # both links
    doc = json.loads(gf.to_json())
    assert doc["graph"][0]["0"]["children"] == [4, 1]  # main: right, left (the literal's order)
    back = GraphFrame.from_json(gf.to_json())
    assert back.to_json() == gf.to_json() and len(back.graph) == 5  # perflake reads the DAG back too
    assert sorted(p.frame["name"] for p in back.graph.roots[0].children[0].children[0].parents) == ["left", "right"]


def test_literal_numbers_are_renumbered_in_pre_order():
    """Deliberate difference: Hatchet keeps a literal's ``_hatchet_nid`` values when every entry has one;
    perflake numbers nodes in pre-order always (queries, JSON and row order rely on it).  Literals written by
    ``to_literal`` (Hatchet's or perflake's) carry pre-order numbers, so those read back the same."""
    from perflake import GraphFrame

    gf = GraphFrame.from_literal([entry("main", 7, 1.0, 3.0, entry("b", 3, 1.0, 1.0), entry("a", 9, 1.0, 1.0))])
    assert [(n.frame["name"], n._hatchet_nid) for n in gf.graph.traverse()] == [("main", 0), ("a", 1), ("b", 2)]
