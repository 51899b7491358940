"""Hatchet's Node / Frame / Graph API (issue 15, themes 6 and 7): graphs built by hand, compared with
llnl-hatchet 2026.2.0 in .bench-venv running the same scenario (tests/hatchet_same.py).

Covered: ``Frame`` (no attributes -> ValueError, type 'None', sorted repr/str, copy, ordering), ``Node(frame,
parent=None, hnid=-1, depth=-1)``, ``Node.from_lists``/``Graph.from_lists`` (a Node used twice: a DAG),
traversals (pre/post, DAG, several roots), ``paths``/``path`` with ``MultiplePathError``, ``dag_equal``,
``Graph ==``, ``copy``, ``union``, ``is_tree``, ``len``, ``_hatchet_nid``/``_depth``, hashing (a set of
nodes iterates as in Hatchet), ``GraphFrame(graph, dataframe)`` for a hand-built graph (ids derived by
perflake) and its errors.
"""

from __future__ import annotations

import pytest

import hatchet_same
from conftest import need_bench_python

SCENARIO = r'''
def names(nodes):
    return [n.frame["name"] for n in nodes]


def raises(fn, kind):
    try:
        fn()
    except kind:
        return kind.__name__
    except Exception as exc:
        return "other: " + type(exc).__name__
    return "no error"


def answers():
    out = {}
    # -- Frame
    f = Frame(foo="baz", bar="quux")
    out["frame repr"], out["frame str"] = repr(f), str(f)
    out["frame attrs"] = sorted(Frame({"name": "foo"}, file="bar.c").attrs.items())
    out["frame no attrs"] = [raises(lambda: Frame({}), ValueError), raises(lambda: Frame(), ValueError)]
    out["frame order"] = [Frame(a=1) < Frame(a=2), Frame(a=1) < Frame(b=1), Frame(b=1, c=1) > Frame(a=1, b=1),
                          Frame(a=1) == Frame(a=1), Frame(a=1) != Frame(b=1)]
    g = Frame(a="foo", b="bar")
    out["frame copy"] = [g == g.copy(), g != g.copy(), g < g.copy(), g.copy() is g, g.copy().attrs == g.attrs]
    out["frame values"] = [Frame(a=1, b=2).values("a"), list(Frame(a=1, b=2).values(["b", "x", "a"])),
                           Frame(a=1).get("x", "dflt")]
    # -- Node
    n = Node(Frame(a=1, b=2, c=3))
    out["node repr"], out["node str"] = repr(n), str(n)
    out["node defaults"] = [n._hatchet_nid, n._depth, n.parents, n.children]
    p = Node(Frame(name="p"))
    c = Node(Frame(name="c"), p, hnid=7, depth=3)
    out["node parent"] = [names(c.parents), names(p.children), c._hatchet_nid, c._depth]
    out["node copy"] = [c.copy().frame == c.frame, c.copy().parents, c.copy()._hatchet_nid]
    # -- from_lists and traversals
    t = Node.from_lists(["a", ["b", "d", "e"], ["c", "f", "g"]])
    out["pre"] = list(t.traverse(attrs="name"))
    out["post"] = list(t.traverse(order="post", attrs="name"))
    out["lists children"] = [names(t.children), names(t.children[0].children)]
    out["from_lists error"] = raises(lambda: Node.from_lists(object()), ValueError)
    d = Node(Frame(name="d"))
    dag = Node.from_lists(["a", ["b", d], ["c", d]])
    out["dag pre"] = list(dag.traverse(attrs="name"))
    out["dag parents"] = names(d.parents)
    out["paths"] = [names(path) for path in d.paths()]
    out["path error"] = raises(lambda: d.path(), MultiplePathError)
    e = Node(Frame(name="e", type="function"))
    Node.from_lists(["a", ["b", e]])
    out["path"] = [repr(x) for x in e.path()]
    out["path equal"] = e.path() == (Node(Frame(name="a")), Node(Frame(name="b")),
                                     Node(Frame(name="e", type="function")))
    d = Node(Frame(name="d"))  # a fresh shared node: Hatchet's copy() mixes up nodes shared by two graphs
    sub = Node.from_lists(("a", ("b", d), ("c", d)))
    gr = Graph.from_lists(("e", "f", sub), ("g", sub, "h"))
    out["graph pre"] = list(gr.traverse(attrs="name"))
    out["graph post"] = list(gr.traverse(order="post", attrs="name"))
    out["graph nids"] = [(x.frame["name"], x._hatchet_nid, x._depth) for x in gr.traverse()]
    out["graph roots"] = names(gr.roots)
    d4 = Node(Frame(name="d"))
    out["len"] = [len(Graph.from_lists(("a", "b", "c", "d", "e"))), len(Graph.from_lists(("a", ("b", d4), ("c", d4)))),
                  len(Graph.from_lists(("a", ("b", "d"), ("c", "d")))), len(gr)]
    out["is_tree"] = [Graph.from_lists(("a",)).is_tree(), Graph.from_lists(("a", ("b", ("c")))).is_tree(),
                      Graph.from_lists(("b", "c"), ("d", "e")).is_tree(), gr.is_tree(), Graph([sub]).is_tree()]
    # -- comparison, copy, union
    gc = gr.copy()
    out["copy"] = [gc == gr, gc is gr, gc.roots[0] is gr.roots[0], list(gc.traverse(attrs="name")),
                   [x._hatchet_nid for x in gc.traverse()]]
    c1 = Node.from_lists(("c", "d"))
    g1 = Graph.from_lists(("a", ("b", c1), ("e", c1, "f")))
    d2 = Node(Frame(name="d"))
    g2 = Graph.from_lists(("a", ("b", ("c", d2)), ("e", d2, "f")))
    d3 = Node(Frame(name="d"))
    c3 = Node.from_lists(("c", d3))
    g3 = Graph.from_lists(("a", ("b", c3), ("e", c3, d3, "f")))
    u = g1.union(g2)
    out["union"] = [g1 != g2, u == g3, len(u), list(u.traverse(attrs="name")), u is not g1]
    # dag_equal of numbered graphs (Hatchet's dag_equal tells nodes apart by _hatchet_nid: see the test below)
    gt = Graph.from_lists(["a", ["b", "d", "e"], ["c", "f", "g"]])
    d5 = Node(Frame(name="d"))
    gd = Graph.from_lists(["a", ["b", d5], ["c", d5]])
    gt2 = Graph.from_lists(["a", ["c", "g", "f"], ["b", "e", "d"]])
    out["dag_equal"] = [gt.roots[0].dag_equal(gt.roots[0]), gd.roots[0].dag_equal(gd.roots[0]),
                        gt.roots[0].dag_equal(gd.roots[0]), gd.roots[0].dag_equal(gt.roots[0]),
                        gt.roots[0].dag_equal(gt2.roots[0]), gt == gt2, gt == gd,
                        Graph.from_lists(("a", "b")) == Graph.from_lists(("a", "b")),
                        Graph.from_lists(("a", "b")) == Graph.from_lists(("a", "c")),
                        Graph.from_lists(("a", "b", "c")) == Graph.from_lists(("a", "c", "b"))]
    # -- hashing: a set of the nodes of one graph iterates by _hatchet_nid (Hatchet hashes by it)
    big = Graph.from_lists(("r", ("m", "x", "y"), ("k", "z"), "q"))
    out["set order"] = [x.frame["name"] for x in set(big.traverse())]
    out["sorted"] = names(sorted(big.traverse(), reverse=True))
    # -- GraphFrame of a hand-built graph
    out["gf errors"] = [raises(lambda: GraphFrame(None, None), ValueError),
                        raises(lambda: GraphFrame(Graph([]), None), ValueError),
                        raises(lambda: GraphFrame(Graph([]), pd.DataFrame()), ValueError)]
    hg = Graph.from_lists(("main", ("solve", "mpi", "io"), ("setup", "io")))
    nodes = list(hg.traverse())
    df = pd.DataFrame({"node": nodes, "name": names(nodes), "time": [float(i + 1) for i in range(len(nodes))]})
    df = df.set_index("node")
    gf = GraphFrame(hg, df, ["time"], [])
    gf.update_inclusive_columns()
    out["gf values"] = [[x.frame["name"], gf.dataframe.loc[x, "time"], gf.dataframe.loc[x, "time (inc)"]]
                        for x in gf.graph.traverse()]
    out["gf tree"] = gf.tree(render_header=False)
    out["gf lookup"] = gf.dataframe.loc[nodes[2], "name"]
    kept = gf.filter(lambda row: row["name"] != "solve")
    out["gf squash"] = [list(kept.graph.traverse(attrs="name")),
                        [kept.dataframe.loc[x, "time (inc)"] for x in kept.graph.traverse()]]
    # -- squash of DAGs (Hatchet's "bunny" graphs): a node keeps a link to every nearest kept ancestor
    for key, drop, want in (("bunny", ("a", "b", "c"), lambda d, b: (("e", d, "f"), ("g", d, "h"))),
                            ("goat", ("a", "c"), lambda d, b: (("e", b, d, "f"), ("g", b, d, "h")))):
        d = Node(Frame(name="d"))
        diamond = Node.from_lists(("a", ("b", d), ("c", d)))
        gf = GraphFrame.from_lists(("e", "f", diamond), ("g", diamond, "h"))
        out_gf = gf.filter(lambda row: row["name"] not in drop)
        nd = Node(Frame(name="d"))
        nb = Node.from_lists(("b", nd))
        expected = Graph.from_lists(*want(nd, nb))
        out[key] = [out_gf.graph == expected, list(out_gf.graph.traverse(attrs="name")),
                    [[x.frame["name"], sorted(p.frame["name"] for p in x.parents),
                      float(out_gf.dataframe.loc[x, "time (inc)"])] for x in out_gf.graph.traverse()],
                    out_gf.tree(render_header=False), len(out_gf.dataframe)]
    return out
'''


@pytest.fixture(scope="module")
def theirs():
    need_bench_python()
    return hatchet_same.hatchet(SCENARIO)


@pytest.fixture(scope="module")
def ours():
    return hatchet_same.perflake(SCENARIO)


GROUPS = {
    "frame": ["frame repr", "frame str", "frame attrs", "frame no attrs", "frame order", "frame copy", "frame values"],
    "node": ["node repr", "node str", "node defaults", "node parent", "node copy"],
    "from_lists and traversal": ["pre", "post", "lists children", "from_lists error", "dag pre", "dag parents",
                                 "graph pre", "graph post", "graph nids", "graph roots", "len", "is_tree"],
    "paths": ["paths", "path error", "path", "path equal"],
    "comparison, copy and union": ["copy", "union", "dag_equal"],
    "hashing": ["set order", "sorted"],
    "graphframe of a hand-built graph": ["gf errors", "gf values", "gf tree", "gf lookup", "gf squash"],
    "squash of a DAG": ["bunny", "goat"],
}


@pytest.mark.parametrize("group", list(GROUPS))
def test_same_as_hatchet(theirs, ours, group):
    keys = GROUPS[group]
    assert hatchet_same.differences({k: theirs[k] for k in keys}, {k: ours[k] for k in keys}) == {}


def test_the_scenario_checks_something(ours):
    """The answers written out (readable without .bench-venv): what Hatchet gives, and so perflake."""
    assert ours["frame repr"] == "Frame({'bar': 'quux', 'foo': 'baz', 'type': 'None'})"
    assert ours["frame no attrs"] == ["ValueError", "ValueError"]
    assert ours["node repr"] == "Node({'a': 1, 'b': 2, 'c': 3, 'type': 'None'})"
    assert ours["graph pre"] == ["e", "a", "b", "d", "c", "f", "g", "h"]
    assert ours["dag parents"] == ["b", "c"] and ours["path error"] == "MultiplePathError"
    assert ours["len"] == [5, 4, 5, 8] and ours["is_tree"] == [True, True, False, False, False]
    assert ours["union"][:3] == [True, True, 6]
    assert ours["gf errors"] == ["ValueError"] * 3
    assert ours["gf values"][0] == ["main", 1.0, 21.0]
    assert ours["bunny"][0] is True and ours["bunny"][1] == ["e", "d", "f", "g", "h"]
    assert ours["bunny"][2][1] == ["d", ["e", "g"], 1.0] and ours["goat"][2][0] == ["e", [], 4.0]


def test_hand_built_graph_gets_the_ids_of_the_same_call_paths_from_a_literal():
    """perflake's addition: the ids GraphFrame derives for a hand-built graph are those of the same call paths
    read from a literal (perflake.identity over name/type/file/line/module; type 'None' is no type)."""
    import pandas as pd

    from perflake import GraphFrame
    from perflake.frame.graph import Frame, Graph, Node

    hand = Graph.from_lists(("main", ("solve", "mpi"), "io"))
    nodes = list(hand)
    assert all(n.node_id is None for n in nodes)
    gf = GraphFrame(hand, pd.DataFrame({"time": [1.0] * 4}, index=pd.Index(nodes, name="node")), ["time"])
    lit = GraphFrame.from_literal([{"frame": {"name": "main"}, "metrics": {"time": 1.0}, "children": [
        {"frame": {"name": "solve"}, "metrics": {"time": 1.0}, "children": [
            {"frame": {"name": "mpi"}, "metrics": {"time": 1.0}}]},
        {"frame": {"name": "io"}, "metrics": {"time": 1.0}}]}])
    assert {n.frame["name"]: n.node_id for n in gf.graph} == {n.frame["name"]: n.node_id for n in lit.graph}
    twins = Graph.from_lists(("a", "b", "b"))  # equal sibling frames: two nodes in Hatchet, and in a hand-built graph
    GraphFrame(twins, pd.DataFrame({"time": [1.0] * 3}, index=pd.Index(list(twins), name="node")))
    assert len({n.node_id for n in twins}) == 3
    node = Node(Frame(name="x"))
    assert node.node_id is None and node.callpath_id is None


def test_dag_equal_of_nodes_not_yet_numbered():
    """Deliberate difference: Hatchet's dag_equal marks visited nodes by ``_hatchet_nid``, which is -1 for every
    node of ``Node.from_lists`` until a Graph numbers them, so there any two trees whose roots have as many
    children compare equal (``a(b(d, e), c(f, g))`` equals ``a(b(d), c(d))``).  perflake marks nodes by object
    and compares the structure."""
    from perflake.frame.graph import Frame, Node

    tree = Node.from_lists(["a", ["b", "d", "e"], ["c", "f", "g"]])
    d = Node(Frame(name="d"))
    dag = Node.from_lists(["a", ["b", d], ["c", d]])
    assert tree.dag_equal(tree) and dag.dag_equal(dag)
    assert not tree.dag_equal(dag) and not dag.dag_equal(tree)
    assert tree.dag_equal(Node.from_lists(["a", ["c", "g", "f"], ["b", "e", "d"]]))  # order does not matter
