"""API parity with llnl-hatchet's GraphFrame (issue 6 item 1): names, arguments and behaviour.

Expected values marked "llnl-hatchet 2026.2.0" were printed by Hatchet itself in the benchmark venv
(``.bench-venv``) on the same literals or files; the test environment has no Hatchet, so they are pasted here.
Where perflake differs on purpose, the test says so and the module docstrings of perflake.interop.literal,
.aggregate, .subtree, .unify and .tree give the reason.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import perflake
from literal import MOCK_GRAPH
from perflake import GraphFrame
from perflake.errors import RenderError
from perflake.frame.graph_ops import links
from perflake.frame.tables import metric_roles

F = "function"
# the end of the legend of every coloured tree (llnl-hatchet 2026.2.0)
MARKS = "User code    \x1b[38;5;160m◀ \x1b[0m Only in left graph    \x1b[38;5;28m▶ \x1b[0m Only in right graph\n"


def t(name, time, *children):
    """A literal node with an exclusive ``time`` only."""
    return {"frame": {"name": name, "type": F}, "metrics": {"time": time}, "children": list(children)}


def snapshot(gf):
    """What an operation on another frame must not change: graph links, node objects, dataframe values."""
    return links(gf.graph), [id(n) for n in gf.graph], gf.dataframe.copy()


def unchanged(gf, before) -> bool:
    graph_links, node_objects, df = before
    return (links(gf.graph) == graph_links and [id(n) for n in gf.graph] == node_objects
            and gf.dataframe.equals(df))


def values(gf, column):
    return gf.dataframe[column].tolist()


@pytest.fixture
def mock():
    return GraphFrame.from_literal(MOCK_GRAPH)


# -- literals ----------------------------------------------------------------------------------------------------
# llnl-hatchet 2026.2.0: GraphFrame.from_literal(MOCK_GRAPH).dataframe, in row order
MOCK_NAMES = ["foo", "bar", "baz", "grault", "qux", "quux", "corge", "bar", "baz", "grault", "garply", "grault",
              "waldo", "fred", "plugh", "xyzzy", "thud", "baz", "garply", "garply", "waldo", "bar", "baz", "grault"]
MOCK_TIME = [0.0, 5.0, 5.0, 10.0, 0.0, 5.0, 10.0, 5.0, 5.0, 10.0, 15.0, 10.0, 0.0, 5.0, 5.0, 5.0, 5.0, 5.0, 15.0,
             15.0, 10.0, 5.0, 5.0, 10.0]
MOCK_INC = [135.0, 20.0, 5.0, 10.0, 60.0, 60.0, 55.0, 20.0, 5.0, 10.0, 15.0, 10.0, 55.0, 40.0, 5.0, 30.0, 25.0,
            5.0, 15.0, 15.0, 30.0, 20.0, 5.0, 10.0]
# llnl-hatchet 2026.2.0: list(gf.graph.traverse(order="post", attrs="name"))
MOCK_POST = ["baz", "grault", "bar", "baz", "grault", "bar", "garply", "grault", "corge", "quux", "qux", "plugh",
             "baz", "garply", "thud", "xyzzy", "fred", "garply", "waldo", "foo", "baz", "grault", "bar", "waldo"]


def test_from_literal_matches_hatchet(mock):
    assert values(mock, "name") == MOCK_NAMES
    assert values(mock, "time") == MOCK_TIME and values(mock, "time (inc)") == MOCK_INC
    assert list(mock.dataframe.columns) == ["name", "time (inc)", "time"]  # Hatchet's columns, same order
    assert (mock.exc_metrics, mock.inc_metrics, mock.default_metric) == (["time"], ["time (inc)"], "time")
    assert mock.show_metric_columns() == ["time", "time (inc)"]
    assert list(mock.traverse(attrs="name")) == MOCK_NAMES == list(mock.graph.traverse(attrs="name"))
    assert list(mock.traverse(order="post", attrs="name")) == MOCK_POST
    assert list(mock.traverse(attrs=["name", "type"]))[:2] == [("foo", F), ("bar", "None")]  # as Hatchet


def test_from_literal_metric_roles_and_extras():
    lit = [{"frame": {"name": "a", "type": F, "file": "a.c"}, "metrics": {"time": [1.0, 3.0], "cyc (inc)": 9.0,
                                                                         "count": 2, "state": "hot"},
            "attributes": {"module": "libm"},
            "children": [{"frame": {"name": "b"}, "metrics": {"time": [2.0, 4.0], "_hatchet_nid": 7}}]}]
    gf = GraphFrame.from_literal(lit)
    # as Hatchet: "(inc)" names are inclusive, every other numeric metric exclusive, nothing derived
    assert gf.exc_metrics == ["time", "count"] and gf.inc_metrics == ["cyc (inc)"]
    assert "time (inc)" not in gf.dataframe.columns and "_hatchet_nid" not in gf.dataframe.columns
    # perflake extras: per-rank lists, text metrics and attributes as columns, file as a frame attribute
    assert gf.dataframe.index.names == ["node", "rank"]
    assert values(gf, "time") == [1.0, 3.0, 2.0, 4.0]
    assert values(gf, "state")[:2] == ["hot", "hot"] and values(gf, "state")[2] is None
    assert values(gf, "module")[0] == "libm" and values(gf, "file")[:2] == ["a.c", "a.c"]
    with pytest.raises(ValueError, match="without a frame name"):
        GraphFrame.from_literal([{"frame": {"type": F}, "metrics": {}}])


def test_duplicate_siblings_merge():
    """Hatchet keeps two sibling nodes with the same frame; perflake merges them (one call path, summed)."""
    gf = GraphFrame.from_literal([t("a", 1.0, t("b", 2.0), t("b", 5.0))])
    assert values(gf, "name") == ["a", "b"] and values(gf, "time") == [1.0, 7.0]


def test_to_literal_matches_hatchet_and_round_trips(mock):
    lit = mock.to_literal()
    # llnl-hatchet 2026.2.0 (to_literal of MOCK_GRAPH), first root and its first child
    assert {k: lit[0][k] for k in ("name", "frame", "metrics")} == {
        "name": "foo", "frame": {"name": "foo", "type": F}, "metrics": {"time": 0.0, "time (inc)": 135.0,
                                                                         "_hatchet_nid": 0}}
    assert lit[0]["children"][0]["frame"] == {"name": "bar", "type": "None"}
    assert lit[0]["children"][0]["metrics"]["_hatchet_nid"] == 1
    assert lit[0]["attributes"] == {} and "children" not in lit[0]["children"][0]["children"][0]  # a leaf
    assert [r["name"] for r in lit] == ["foo", "waldo"] and len(lit[1]["children"][0]["children"]) == 2
    back = GraphFrame.from_literal(lit)
    assert back.graph == mock.graph and values(back, "time") == MOCK_TIME and values(back, "time (inc)") == MOCK_INC


def test_to_literal_rank_and_cat_columns(shared_data):
    gf = perflake.read_tau(shared_data("tau-cpi-mpi"))
    lit = gf.to_literal(rank=1, cat_columns=["name"])
    # llnl-hatchet 2026.2.0: GraphFrame.from_tau(...).to_literal(rank=1): root and first child
    assert lit[0]["metrics"] == {"time": 419.0, "time (inc)": 55329.0, "_hatchet_nid": 0}
    assert lit[0]["children"][0]["metrics"] == {"time": 333.0, "time (inc)": 333.0, "_hatchet_nid": 1}
    assert lit[0]["attributes"] == {"name": ".TAU application"}


def test_from_lists_matches_hatchet():
    gf = GraphFrame.from_lists(("a", ("b", "c"), ("d",)), ("e",))
    # llnl-hatchet 2026.2.0
    assert gf.tree(render_header=False, colour=False) == "1.000 a\n├─ 1.000 b\n│  └─ 1.000 c\n└─ 1.000 d\n1.000 e\n"
    assert values(gf, "time (inc)") == [4.0, 2.0, 1.0, 1.0, 1.0]
    assert (gf.exc_metrics, gf.inc_metrics, gf.default_metric) == (["time"], ["time (inc)"], "time")
    assert values(GraphFrame.from_lists(("a", "b", "c")), "time (inc)") == [3.0, 1.0, 1.0]


# -- copies ---------------------------------------------------------------------------------------------------
def test_copy_shares_the_graph_deepcopy_shares_nothing(mock):
    before = snapshot(mock)
    shallow, deep = mock.copy(), mock.deepcopy()
    assert shallow.graph is mock.graph and shallow.dataframe is not mock.dataframe
    assert shallow.dataframe.index[0] is mock.dataframe.index[0] and shallow.exc_metrics is not mock.exc_metrics
    assert deep.graph is not mock.graph and deep.graph == mock.graph  # equal, not identical
    assert not {id(n) for n in deep.graph} & {id(n) for n in mock.graph}
    nodes = list(deep.graph)
    assert deep.dataframe.index[0] is nodes[0] and any(c is nodes[1] for c in nodes[0].children)
    deep.dataframe.loc[deep.dataframe.index[0], "time"] = 99.0
    shallow.dataframe["time"] = 0.0
    assert unchanged(mock, before)


# -- drop_index_levels / groupby_aggregate ------------------------------------------------------------------------
# llnl-hatchet 2026.2.0: GraphFrame.from_tau("tau-cpi-mpi"), drop_index_levels(function=...), (time, time (inc))
TAU_MEAN = {".TAU application": (426.5, 53511.75), "MPI_Bcast()": (343.75, 343.75), "MPI_Comm_rank()": (23.0, 23.0),
            "MPI_Comm_size()": (29.0, 29.0), "MPI_Finalize()": (4790.25, 32641.75),
            "MPI_Comm_get_attr()": (24.25, 24.25), "MPI_File_open()": (27118.5, 27118.5),
            "MPI_Info_create()": (678.75, 678.75), "MPI_Info_free()": (30.0, 30.0),
            "MPI_Get_processor_name()": (278.75, 278.75), "MPI_Init()": (19618.5, 19618.5),
            "MPI_Reduce()": (150.5, 150.5)}
TAU_MAX = {".TAU application": (449.0, 55329.0), "MPI_Bcast()": (418.0, 418.0), "MPI_Comm_rank()": (25.0, 25.0),
           "MPI_Comm_size()": (31.0, 31.0), "MPI_Finalize()": (4906.0, 32755.0), "MPI_Comm_get_attr()": (27.0, 27.0),
           "MPI_File_open()": (27490.0, 27490.0), "MPI_Info_create()": (902.0, 902.0),
           "MPI_Info_free()": (33.0, 33.0), "MPI_Get_processor_name()": (298.0, 298.0),
           "MPI_Init()": (21441.0, 21441.0), "MPI_Reduce()": (473.0, 473.0)}


def test_drop_index_levels_matches_hatchet(shared_data):
    gf = perflake.read_tau(shared_data("tau-cpi-mpi"))
    before = snapshot(gf)
    for function, expected in ((np.mean, TAU_MEAN), (np.max, TAU_MAX)):
        g = gf.copy()
        assert g.drop_index_levels(function=function) is None  # in place, as Hatchet
        assert g.dataframe.index.names == ["node"] and len(g.dataframe) == len(g.graph) == 12
        got = {n: (a, b) for n, a, b in zip(g.dataframe["name"], g.dataframe["time"], g.dataframe["time (inc)"])}
        assert got == expected
        assert list(g.dataframe.columns) == list(gf.dataframe.columns)
        assert values(g, "Calls")[0] == gf.dataframe["Calls"].iloc[0]  # not a metric: the first row's value
    assert unchanged(gf, before)


def test_drop_index_levels_on_ranks_literal():
    gf = GraphFrame.from_literal([{"frame": {"name": "m"}, "metrics": {"time": [1.0, 3.0, np.nan]}}])
    gf.drop_index_levels()
    assert values(gf, "time") == [2.0]  # NaN (not measured) is skipped, as pandas' mean does


def module_literal():
    """foo(A) -> bar(B) -> baz(C) -> q(D), foo -> x(C): groups A, B, C, D with C under A and under B."""
    gf = GraphFrame.from_literal([t("foo", 1.0, t("bar", 2.0, t("baz", 4.0, t("q", 8.0))), t("x", 16.0))])
    gf.update_inclusive_columns()
    gf.dataframe["module"] = gf.dataframe["name"].map({"foo": "A", "bar": "B", "baz": "C", "q": "D", "x": "C"})
    return gf


def test_groupby_aggregate_matches_hatchet():
    gf = module_literal()
    before = snapshot(gf)
    out = gf.groupby_aggregate("module", {"time": np.sum, "time (inc)": np.max})
    # llnl-hatchet 2026.2.0
    assert values(out, "name") == ["A", "B", "C", "D"]
    assert values(out, "time") == [1.0, 2.0, 20.0, 8.0] and values(out, "time (inc)") == [31.0, 14.0, 16.0, 8.0]
    assert sorted((p.frame["name"], n.frame["name"]) for n in out.graph for p in n.parents) == [
        ("A", "B"), ("A", "C"), ("B", "C"), ("C", "D")]
    assert out.tree(render_header=False, colour=False, metric_column="time") == (
        "1.000 A\n├─ 2.000 B\n│  └─ 20.000 C\n│     └─ 8.000 D\n└─ 20.000 C\n")  # C shown twice, expanded once
    assert next(iter(out.graph)).frame.attrs == {"name": "A", "type": "module"}
    assert (out.exc_metrics, out.inc_metrics) == (["time"], ["time (inc)"])
    assert unchanged(gf, before)


def test_groupby_aggregate_keeps_ranks():
    """Hatchet fails on a multi-rank frame; perflake aggregates per location."""
    gf = GraphFrame.from_literal([{"frame": {"name": "m"}, "metrics": {"time": [1.0, 2.0], "lib": "x"},
                                   "children": [{"frame": {"name": "k"}, "metrics": {"time": [4.0, 8.0], "lib": "x"}},
                                                {"frame": {"name": "j"},
                                                 "metrics": {"time": [5.0, 6.0], "lib": "y"}}]}])
    out = gf.groupby_aggregate("lib", {"time": "sum"})
    assert out.dataframe.index.names == ["node", "rank"]
    assert values(out, "name") == ["x", "x", "y", "y"] and values(out, "time") == [5.0, 10.0, 5.0, 6.0]


# -- sums over descendants ----------------------------------------------------------------------------------------
def test_subtree_and_subgraph_sum(mock):
    g = mock.copy()
    g.subtree_sum(["time"], ["t_sub"])
    g.subgraph_sum("time", "t_graph")
    assert values(g, "t_sub") == MOCK_INC == values(g, "t_graph")  # llnl-hatchet 2026.2.0: the inclusive times
    g.subtree_sum(["time"])  # in place when out_columns is not given
    assert values(g, "time") == MOCK_INC
    g = mock.copy()
    g.subtree_sum(["time"], ["t_max"], function=lambda x: x.max())
    assert values(g, "t_max")[:4] == [15.0, 10.0, 5.0, 10.0]
    g = mock.copy()
    g.dataframe["time (inc)"] = 0.0
    g.update_inclusive_columns()
    assert values(g, "time (inc)") == MOCK_INC and values(mock, "time (inc)") == MOCK_INC


def test_subtree_sum_on_dag_counts_paths_subgraph_sum_counts_nodes():
    out = module_literal().groupby_aggregate("module", {"time": np.sum, "time (inc)": np.max})
    out.subtree_sum(["time"], ["tt"])
    out.subgraph_sum(["time"], ["tg"])
    # llnl-hatchet 2026.2.0 on the same DAG
    assert values(out, "tt") == [59.0, 30.0, 28.0, 8.0] and values(out, "tg") == [31.0, 30.0, 28.0, 8.0]


def test_subtree_sum_per_rank_with_function(shared_data):
    gf = perflake.read_tau(shared_data("tau-cpi-mpi"))
    for function in (lambda x: x.max(), "max", np.max):
        g = gf.copy()
        g.subtree_sum(["time"], ["t"], function=function)
        # llnl-hatchet 2026.2.0: subtree_sum(["time"], ["t"], function=lambda x: x.max()), root at ranks 0..3
        assert values(g, "t")[:4] == [27490.0, 26904.0, 27029.0, 27051.0]
    g = gf.copy()
    g.subtree_sum(["time"], ["t"])
    np.testing.assert_array_equal(g.dataframe["t"], g.dataframe["time (inc)"])


def test_subtree_sum_nan_stays_nan():
    gf = GraphFrame.from_literal([t("m", np.nan, t("a", np.nan), t("b", 2.0))])
    gf.subtree_sum(["time"], ["s"])
    assert values(gf, "s")[0] == 2.0 and math.isnan(values(gf, "s")[1])  # sum(min_count=1)


def test_generate_exclusive_columns_matches_hatchet():
    def inc(name, value, *children):
        return {"frame": {"name": name, "type": F}, "metrics": {"time (inc)": value}, "children": list(children)}

    gf = GraphFrame.from_literal([inc("main", 100.0, inc("a", 30.0, inc("c", np.nan)), inc("b", np.nan, inc("d", 5.0)),
                                      inc("e", 20.0))])
    assert gf.exc_metrics == [] and gf.inc_metrics == ["time (inc)"]
    gf.generate_exclusive_columns()
    # llnl-hatchet 2026.2.0: [50.0, 30.0, nan, nan, 5.0, 20.0], exc_metrics ['time']
    np.testing.assert_array_equal(values(gf, "time"), [50.0, 30.0, np.nan, np.nan, 5.0, 20.0])
    assert gf.exc_metrics == ["time"]
    lit = [{"frame": {"name": "m"}, "metrics": {"cyc": 10.0, "t (inc)": 5.0},
            "children": [{"frame": {"name": "k"}, "metrics": {"cyc": 4.0, "t (inc)": 2.0}}]}]
    gf = GraphFrame.from_literal(lit)
    gf.exc_metrics, gf.inc_metrics = [], ["cyc", "t (inc)"]
    gf.generate_exclusive_columns()
    # llnl-hatchet 2026.2.0: cyc (exc) [6, 4], t [3, 2], exc_metrics ['t', 'cyc (exc)'] (perflake: inc order)
    assert values(gf, "cyc (exc)") == [6.0, 4.0] and values(gf, "t") == [3.0, 2.0]
    assert sorted(gf.exc_metrics) == ["cyc (exc)", "t"]
    g = GraphFrame.from_literal(lit)
    g.generate_exclusive_columns(inc_metrics="cyc")  # not an inclusive metric: nothing to do, as Hatchet
    assert list(g.dataframe.columns) == ["name", "cyc", "t (inc)"]


# -- graphs: ==, union, unify --------------------------------------------------------------------------------------
A = [t("main", 1.0, t("a", 2.0, t("c", 4.0)), t("b", 8.0))]
B = [t("main", 10.0, t("a", 20.0), t("b", 80.0, t("d", 160.0)), t("e", 320.0))]


def test_graph_equality_and_union():
    ga, gb = GraphFrame.from_literal(A), GraphFrame.from_literal(B)
    assert ga.graph == GraphFrame.from_literal(A).graph and ga.graph == ga.deepcopy().graph
    assert ga.graph != gb.graph and not ga.graph == gb.graph
    assert hash(ga.graph) == hash(GraphFrame.from_literal(A).graph)
    before_a, before_b = snapshot(ga), snapshot(gb)
    mapping: dict = {}
    union = ga.graph.union(gb.graph, mapping)
    # llnl-hatchet 2026.2.0
    assert [(n.frame["name"], [c.frame["name"] for c in n.children]) for n in union.traverse()] == [
        ("main", ["a", "b", "e"]), ("a", ["c"]), ("c", []), ("b", ["d"]), ("d", []), ("e", [])]
    assert mapping[next(iter(ga.graph))] is next(iter(union))
    assert unchanged(ga, before_a) and unchanged(gb, before_b)


def test_unify_matches_hatchet():
    ga, gb = GraphFrame.from_literal(A), GraphFrame.from_literal(B)
    ga.update_inclusive_columns()
    keep = ga.copy()  # shares ga's old graph: must keep it
    before = snapshot(keep)
    assert ga.unify(gb) is None
    # llnl-hatchet 2026.2.0
    assert values(ga, "name") == ["main", "a", "c", "b", "d", "e"]
    np.testing.assert_array_equal(values(ga, "time"), [1.0, 2.0, 4.0, 8.0, np.nan, np.nan])
    assert [int(x) for x in ga.dataframe["_missing_node"]] == [0, 0, 1, 0, 2, 2]
    assert values(gb, "name") == ["main", "a", "b", "d", "e"] and "_missing_node" not in gb.dataframe
    assert ga.graph is gb.graph and len(ga.graph) == 6
    assert all(n in set(map(id, ga.graph)) for n in map(id, ga.dataframe.index))  # re-pointed at the union
    assert all(n in set(map(id, gb.graph)) for n in map(id, gb.dataframe.index))
    assert unchanged(keep, before)
    assert "_missing_node" not in [m.name for m in metric_roles(ga)]  # never a metric
    assert "c ◀ " in ga.tree(render_header=False, colour=False)


# -- arithmetic ----------------------------------------------------------------------------------------------------
A_SUBSET = [t("main", 1.0, t("a", 2.0), t("b", 8.0))]


def test_arithmetic_marks_one_sided_nodes_as_hatchet():
    left, right = GraphFrame.from_literal(B), GraphFrame.from_literal(A_SUBSET)
    before_l, before_r = snapshot(left), snapshot(right)
    diff = left - right
    # llnl-hatchet 2026.2.0: (from_literal(B) - from_literal(A_SUBSET)).tree(render_header=False)
    assert diff.tree(render_header=False, colour=False) == (
        "9.000 main\n├─ 18.000 a\n├─ 72.000 b\n│  └─ 160.000 d ◀ \n└─ 320.000 e ◀ \n")
    # llnl-hatchet 2026.2.0, same with colour (stdout a terminal)
    assert diff.tree(render_header=False, colour=True) == (
        "\x1b[38;5;22m9.000\x1b[0m main\x1b[0m\n├─ \x1b[38;5;22m18.000\x1b[0m a\x1b[0m\n├─ \x1b[38;5;34m72.000\x1b[0m "
        "b\x1b[0m\n│  └─ \x1b[38;5;46m160.000\x1b[0m d\x1b[0m \x1b[38;5;160m◀ \x1b[0m\n└─ \x1b[38;5;196m320.000\x1b[0m "
        "e\x1b[0m \x1b[38;5;160m◀ \x1b[0m\n\n\x1b[4mLegend\x1b[0m (Metric: time Min: 9.00 Max: 320.00)\n"
        "\x1b[38;5;196m█ \x1b[0m288.90 - 320.00\n\x1b[38;5;208m█ \x1b[0m226.70 - 288.90\n"
        "\x1b[38;5;220m█ \x1b[0m164.50 - 226.70\n\x1b[38;5;46m█ \x1b[0m102.30 - 164.50\n"
        "\x1b[38;5;34m█ \x1b[0m40.10 - 102.30\n\x1b[38;5;22m█ \x1b[0m9.00 - 40.10\n\n"
        f"name\x1b[0m {MARKS}")
    assert unchanged(left, before_l) and unchanged(right, before_r)  # Hatchet unifies its operands; we do not


def test_right_only_nodes_and_in_place_operators():
    ga, gb = GraphFrame.from_literal(A), GraphFrame.from_literal(B)
    # llnl-hatchet 2026.2.0 marks c ◀, d ▶, e ▶, keeps c's left value and leaves d and e NaN
    # (perflake.analytics.compare)
    lines = (ga - gb).tree(render_header=False, colour=False).splitlines()
    assert lines == ["-9.000 main", "├─ -18.000 a", "│  └─ 4.000 c ◀ ", "├─ -72.000 b", "│  └─ nan d ▶ ",
                     "└─ nan e ▶ "]
    shared = ga.copy()
    graph = ga.graph
    ga += gb
    assert ga.graph is not graph and shared.graph is graph and len(graph) == 4  # the old graph is untouched
    assert values(ga, "time")[:3] == [11.0, 22.0, 4.0]
    assert [int(x) for x in ga.dataframe["_missing_node"]][:3] == [0, 0, 1]
    same = GraphFrame.from_literal(A)
    assert "_missing_node" not in (same - same.copy()).dataframe  # one graph: nothing to mark, as Hatchet
    for op in ("__sub__", "__mul__", "__truediv__", "__isub__", "__imul__", "__itruediv__"):
        out = getattr(GraphFrame.from_literal(A), op)(GraphFrame.from_literal(A_SUBSET))
        assert out.default_metric == "time" and "_missing_node" in out.dataframe


def test_filter_and_squash_match_hatchet_and_leave_the_source_alone(mock):
    before = snapshot(mock)
    names = ["corge", "garply", "grault", "garply", "grault", "waldo", "grault"]
    kept = mock.filter(lambda df: df["time"] > 5.0)
    # llnl-hatchet 2026.2.0: filter(lambda x: x["time"] > 5.0[, update_inc_cols=False]) on MOCK_GRAPH
    assert values(kept, "name") == names and values(kept, "time") == [10.0, 15.0, 20.0, 30.0, 10.0, 10.0, 10.0]
    assert values(kept, "time (inc)") == [45.0, 15.0, 20.0, 30.0, 10.0, 20.0, 10.0]
    stale = mock.filter(lambda df: df["time"] > 5.0, update_inc_cols=False)
    assert values(stale, "time (inc)") == [55.0, 15.0, 20.0, 30.0, 10.0, 30.0, 10.0]
    loose = mock.filter(lambda df: df["time"] > 5.0, squash=False)
    assert loose.graph is mock.graph and len(loose.dataframe) == 9
    assert loose.squash().graph == kept.graph and kept.graph is not mock.graph
    assert values(loose.squash(update_inc_cols=False), "time (inc)") == values(stale, "time (inc)")
    assert values(loose.squash(False), "time (inc)") == values(stale, "time (inc)")
    assert unchanged(mock, before)


# -- tree() parameters ---------------------------------------------------------------------------------------------
LEGEND_0_15 = ("\n\x1b[4mLegend\x1b[0m (Metric: time Min: 0.00 Max: 15.00)\n\x1b[38;5;196m█ \x1b[0m13.50 - 15.00\n"
               "\x1b[38;5;208m█ \x1b[0m10.50 - 13.50\n\x1b[38;5;220m█ \x1b[0m7.50 - 10.50\n"
               "\x1b[38;5;46m█ \x1b[0m4.50 - 7.50\n"
               "\x1b[38;5;34m█ \x1b[0m1.50 - 4.50\n\x1b[38;5;22m█ \x1b[0m0.00 - 1.50\n\n")


def test_tree_highlight_annotation_and_range_match_hatchet(mock):
    """Each expected string: llnl-hatchet 2026.2.0, MOCK_GRAPH, tree(render_header=False, ...) on a terminal."""
    hl = "\x1b[48;5;246m\x1b[38;5;232m"
    assert mock.tree(render_header=False, highlight_name=True, depth=2, colour=True) == (
        f"\x1b[38;5;22m0.000\x1b[0m {hl}foo\x1b[0m\n├─ \x1b[38;5;46m5.000\x1b[0m {hl}bar\x1b[0m\n├─ "
        f"\x1b[38;5;22m0.000\x1b[0m {hl}qux\x1b[0m\n└─ \x1b[38;5;22m0.000\x1b[0m {hl}waldo\x1b[0m\n"
        f"\x1b[38;5;220m10.000\x1b[0m {hl}waldo\x1b[0m\n└─ \x1b[38;5;46m5.000\x1b[0m {hl}bar\x1b[0m\n"
        f"{LEGEND_0_15}{hl}name\x1b[0m {MARKS}")
    assert mock.tree(render_header=False, highlight_name=True, depth=2, colour=False) == (
        "0.000 foo\n├─ 5.000 bar\n├─ 0.000 qux\n└─ 0.000 waldo\n10.000 waldo\n└─ 5.000 bar\n")
    g = mock.copy()
    g.dataframe["ann"] = np.where(g.dataframe["time"] > 5, "hot", "cold")
    assert g.tree(render_header=False, annotation_column="ann", depth=2, colour=True) == (
        "\x1b[38;5;22m0.000\x1b[0m [cold] foo\x1b[0m\n├─ \x1b[38;5;46m5.000\x1b[0m [cold] bar\x1b[0m\n├─ "
        "\x1b[38;5;22m0.000\x1b[0m [cold] qux\x1b[0m\n└─ \x1b[38;5;22m0.000\x1b[0m [cold] waldo\x1b[0m\n"
        "\x1b[38;5;220m10.000\x1b[0m [hot] waldo\x1b[0m\n└─ \x1b[38;5;46m5.000\x1b[0m [cold] bar\x1b[0m\n"
        f"{LEGEND_0_15}name\x1b[0m {MARKS}")
    ranged = mock.tree(render_header=False, min_value=5, max_value=12, depth=3, colour=True)
    assert ranged.startswith("\x1b[34m0.000\x1b[0m foo\x1b[0m\n├─ \x1b[38;5;22m5.000\x1b[0m bar\x1b[0m\n│  ├─ "
                             "\x1b[38;5;22m5.000\x1b[0m baz\x1b[0m\n│  └─ \x1b[38;5;208m10.000\x1b[0m grault\x1b[0m\n")
    assert "(Metric: time Min: 5.00 Max: 12.00)\n\x1b[38;5;196m█ \x1b[0m11.30 - 12.00\n" in ranged
    assert "└─ \x1b[38;5;196m15.000\x1b[0m garply\x1b[0m\n" in ranged  # above the maximum: the top colour
    inverted = mock.tree(render_header=False, invert_colormap=True, depth=2, colour=True)
    assert inverted.startswith("\x1b[38;5;196m0.000\x1b[0m foo\x1b[0m\n├─ \x1b[38;5;220m5.000\x1b[0m bar\x1b[0m\n")
    two = mock.tree(render_header=False, metric_column=["time (inc)", "time"], precision=1, depth=2, colour=True)
    assert two.startswith("\x1b[38;5;196m135.0\x1b[0m \x1b[2m0.0\x1b[0m foo\x1b[0m\n├─ \x1b[38;5;34m20.0\x1b[0m "
                          "\x1b[2m5.0\x1b[0m bar\x1b[0m\n")
    assert "(Metric: time (inc) Min: 5.00 Max: 135.00)" in two


def test_tree_plain_annotation_and_context(mock):
    g = mock.copy()
    g.dataframe["num"] = g.dataframe["time"] * 2
    # llnl-hatchet 2026.2.0 prints str(value) in both places
    plain = {"render_header": False, "depth": 1, "colour": False}
    assert g.tree(annotation_column="num", **plain) == "0.000 [0.0] foo\n10.000 [20.0] waldo\n"
    assert g.tree(context_column="num", **plain) == "0.000 foo 0.0\n10.000 waldo 20.0\n"
    assert g.tree(render_header=False, name_column="num", depth=1, colour=False) == "0.000 0.0\n10.000 20.0\n"


def test_tree_colour_extras(mock):
    """Beyond Hatchet 2026.2.0 (which fails on any colormap but RdYlGn): matplotlib colour maps."""
    text = mock.tree(render_header=False, colormap="viridis", depth=1, colour=True)
    assert text.startswith("\x1b[38;5;") and "Legend" in text
    with pytest.raises(RenderError, match="unknown colormap"):
        mock.tree(colormap="no-such-map", colour=True)
    g = mock.copy()
    g.dataframe["ann"] = np.where(g.dataframe["time"] > 5, "hot", "cold")
    coloured = g.tree(render_header=False, annotation_column="ann", colormap_annotations=["red", 27], depth=1,
                      colour=True)
    assert "[\x1b[38;5;196mcold\x1b[0m] foo" in coloured and "[\x1b[38;5;27mhot\x1b[0m] waldo" in coloured


def test_tree_special_values():
    gf = GraphFrame.from_literal([{"frame": {"name": "m"}, "metrics": {"flops": 2.0}, "children": [
        {"frame": {"name": "a"}, "metrics": {"flops": float("-inf")}},
        {"frame": {"name": "b"}, "metrics": {"flops": float("inf")}},
        {"frame": {"name": "c"}, "metrics": {"flops": 3.0}},
        {"frame": {"name": "d"}, "metrics": {"flops": float("nan")}}]}])
    # llnl-hatchet 2026.2.0: -inf and nan blue, inf the top colour, range over the finite values
    assert gf.tree(render_header=False, metric_column="flops", colour=True).startswith(
        "\x1b[38;5;22m2.000\x1b[0m m\x1b[0m\n├─ \x1b[34m-inf\x1b[0m a\x1b[0m\n├─ \x1b[38;5;196minf\x1b[0m b\x1b[0m\n"
        "├─ \x1b[38;5;196m3.000\x1b[0m c\x1b[0m\n└─ \x1b[34mnan\x1b[0m d\x1b[0m\n\n\x1b[4mLegend\x1b[0m (Metric: flops "
        "Min: 2.00 Max: 3.00)")


def test_tree_of_ten_thousand_nodes(tmp_path):
    """Correctness only (the timing against Hatchet's 4.3 s is bench/bench_tree.py): one line per node."""
    from perflake.generators import WRITERS
    from perflake.read import read_tau

    out = WRITERS["tau"](tmp_path, nodes=10_000, ranks=2, runs=1, seed=1)
    gf = read_tau(out[0])
    text = gf.tree(render_header=False, colour=False)
    lines = text.splitlines()
    assert len(lines) == len(gf.graph) >= 10_000
    assert lines[0].endswith(next(iter(gf.graph)).frame["name"]) and lines[1].startswith(("├─ ", "└─ "))
    assert len(gf.tree(colour=True).splitlines()) == len(gf.graph) + 2 + 10  # perflake's header line, legend


def test_hatchet_file_constructors(shared_data):
    """The first line of a Hatchet script works: GraphFrame.from_tau / from_caliper / from_caliperreader /
    from_hpctoolkit / from_hpctoolkit_latest, with Hatchet's metric names and index levels."""
    from perflake.errors import UsageError

    tau = GraphFrame.from_tau(shared_data("tau-cpi-mpi"))
    assert list(tau.dataframe.index.names) == ["node", "rank"] and tau.default_metric == "time (inc)"
    assert tau.tree(rank=0, render_header=False, colour=False).startswith("51781.000 .TAU application\n")
    lulesh_json = next(shared_data("caliper-lulesh-json").glob("*.json"))
    assert GraphFrame.from_caliper(lulesh_json).default_metric == "time"
    cali = GraphFrame.from_caliperreader(next(shared_data("caliper-lulesh-cali").glob("*.cali")))
    assert cali.exc_metrics == ["time"] and cali.inc_metrics == ["time (inc)"]
    old = GraphFrame.from_hpctoolkit(shared_data("hpctoolkit-cpi-database"))
    assert any(str(n.frame["name"]).endswith(":MPI_Init") for n in old.graph.traverse())
    v4 = GraphFrame.from_hpctoolkit_latest(shared_data("hpctoolkit-gamess"))
    assert list(v4.dataframe.index.names) == ["node"] and v4.default_metric == "time (inc)"  # Hatchet's summary view
    with pytest.raises(UsageError, match="query=.*not supported"):
        GraphFrame.from_caliper(lulesh_json, query="SELECT *")
    with pytest.raises(UsageError, match="native=True.*not supported"):
        GraphFrame.from_caliperreader(lulesh_json, native=True)
