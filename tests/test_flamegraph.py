"""Folded stacks, DOT, and the flame graph drawn by perflake (SVG parsed back, PNG written), plus the CLI.

Expected texts marked "llnl-hatchet 2026.2.0" were printed by ``hatchet.GraphFrame.from_literal(MOCK_GRAPH)``
in the benchmark venv (``.bench-venv``); the others are computed by hand in the comments.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pandas as pd
import pytest

import perflake
from literal import MOCK_GRAPH, RANKS_GRAPH, graphframe, tree
from perflake.cli.app import main
from perflake.errors import RenderError
from perflake.frame.graph import Frame, Graph, Node
from perflake.frame.graphframe import GraphFrame
from perflake.frame.node_values import node_values
from perflake.generators import WRITERS
from perflake.render import flamegraph
from perflake.render.folded import to_dot, to_flamegraph

SVG = "{http://www.w3.org/2000/svg}"
# exclusive: main 10, solve 20, solve/mpi 40, io 5, io/mpi 25 (sum 100); children in frame order: io, solve
SMALL = [tree("main", 100.0, 10.0, tree("solve", 60.0, 20.0, tree("mpi", 40.0, 40.0)),
              tree("io", 30.0, 5.0, tree("mpi", 25.0, 25.0)))]

HATCHET_MOCK_FOLDED = (  # llnl-hatchet 2026.2.0: gf.to_flamegraph() (default_metric "time")
    "foo 0\nfoo; bar 5\nfoo; bar; baz 5\nfoo; bar; grault 10\nfoo; qux 0\nfoo; qux; quux 5\n"
    "foo; qux; quux; corge 10\nfoo; qux; quux; corge; bar 5\nfoo; qux; quux; corge; bar; baz 5\n"
    "foo; qux; quux; corge; bar; grault 10\nfoo; qux; quux; corge; garply 15\nfoo; qux; quux; corge; grault 10\n"
    "foo; waldo 0\nfoo; waldo; fred 5\nfoo; waldo; fred; plugh 5\nfoo; waldo; fred; xyzzy 5\n"
    "foo; waldo; fred; xyzzy; thud 5\nfoo; waldo; fred; xyzzy; thud; baz 5\nfoo; waldo; fred; xyzzy; thud; garply 15\n"
    "foo; waldo; garply 15\nwaldo 10\nwaldo; bar 5\nwaldo; bar; baz 5\nwaldo; bar; grault 10\n"
)
HATCHET_MOCK_DOT_NODES = {  # llnl-hatchet 2026.2.0: gf.to_dot(metric="time (inc)"), node lines
    '"0" [color="#67000d", label="foo" shape=oval];', '"1" [color="#fee2d5", label="bar" shape=oval];',
    '"2" [color="#fff5f0", label="baz" shape=oval];', '"3" [color="#ffefe8", label="grault" shape=oval];',
    '"4" [color="#fc8262", label="qux" shape=oval];', '"5" [color="#fc8262", label="quux" shape=oval];',
    '"6" [color="#fc8f6f", label="corge" shape=oval];', '"7" [color="#fee2d5", label="bar" shape=oval];',
    '"8" [color="#fff5f0", label="baz" shape=oval];', '"9" [color="#ffefe8", label="grault" shape=oval];',
    '"11" [color="#ffefe8", label="grault" shape=oval];', '"10" [color="#fee8de", label="garply" shape=oval];',
    '"12" [color="#fc8f6f", label="waldo" shape=oval];', '"13" [color="#fcb69b", label="fred" shape=oval];',
    '"14" [color="#fff5f0", label="plugh" shape=oval];', '"15" [color="#fdccb8", label="xyzzy" shape=oval];',
    '"16" [color="#fed8c7", label="thud" shape=oval];', '"17" [color="#fff5f0", label="baz" shape=oval];',
    '"18" [color="#fee8de", label="garply" shape=oval];', '"19" [color="#fee8de", label="garply" shape=oval];',
    '"20" [color="#fdccb8", label="waldo" shape=oval];', '"21" [color="#fee2d5", label="bar" shape=oval];',
    '"22" [color="#fff5f0", label="baz" shape=oval];', '"23" [color="#ffefe8", label="grault" shape=oval];',
}
HATCHET_MOCK_DOT_EDGES = {f'"{a}" -> "{b}";' for a, b in [
    (0, 1), (1, 2), (1, 3), (0, 4), (4, 5), (5, 6), (6, 7), (7, 8), (7, 9), (6, 11), (6, 10), (0, 12), (12, 13),
    (13, 14), (13, 15), (15, 16), (16, 17), (16, 18), (12, 19), (20, 21), (21, 22), (21, 23)]}


# -- folded stacks -----------------------------------------------------------------------------------------------
def test_folded_matches_hatchet_byte_for_byte():
    assert to_flamegraph(graphframe(MOCK_GRAPH)) == HATCHET_MOCK_FOLDED
    assert graphframe(MOCK_GRAPH).to_flamegraph() == HATCHET_MOCK_FOLDED  # the GraphFrame method delegates


def test_folded_small_tree_by_hand():
    gf = graphframe(SMALL)
    assert gf.default_metric == "time (inc)"  # the folded default is its exclusive partner, "time"
    assert to_flamegraph(gf) == "main 10\nmain; io 5\nmain; io; mpi 25\nmain; solve 20\nmain; solve; mpi 40\n"
    assert to_flamegraph(gf, sep=";").splitlines()[2] == "main;io;mpi 25"
    # an explicit metric is written as given (Hatchet): inclusive values here
    assert to_flamegraph(gf, "time (inc)").splitlines()[0] == "main 100"


def test_folded_rounds_half_to_even_and_writes_unmeasured_as_zero():
    gf = graphframe([tree("main", 9.0, 2.5, tree("a", 3.5, 3.5), tree("b", None, float("nan")))])
    assert to_flamegraph(gf) == "main 2\nmain; a 4\nmain; b 0\n"


def test_folded_rank_selection_and_aggregates():
    gf = graphframe(RANKS_GRAPH)  # time: main [1, 1], a [20, 4], b [2, 2], c [8, 24]
    assert to_flamegraph(gf, sep=";") == "main 1\nmain;a 20\nmain;b 2\nmain;b;c 8\n"  # rank 0, as Hatchet
    assert to_flamegraph(gf, rank=1, sep=";") == "main 1\nmain;a 4\nmain;b 2\nmain;b;c 24\n"
    assert to_flamegraph(gf, aggregate="sum", sep=";") == "main 2\nmain;a 24\nmain;b 4\nmain;b;c 32\n"
    assert to_flamegraph(gf, aggregate="max", sep=";") == "main 1\nmain;a 20\nmain;b 2\nmain;b;c 24\n"
    with pytest.raises(RenderError, match=r"rank 5 is not in this frame \(ranks 0\.\.1\)"):
        to_flamegraph(gf, rank=5)
    with pytest.raises(RenderError, match="unknown aggregate 'median'"):
        to_flamegraph(gf, aggregate="median")
    with pytest.raises(RenderError, match="no metric 'nope' in this frame"):
        to_flamegraph(gf, "nope")


# -- DOT ---------------------------------------------------------------------------------------------------------
def test_dot_matches_hatchet_up_to_child_order():
    text = to_dot(graphframe(MOCK_GRAPH), metric="time (inc)")
    assert text.startswith("strict digraph {\ngraph [bgcolor=transparent];\nnode [penwidth=4, shape=circle];\n"
                           "edge [penwidth=2];\n\n")
    assert text.endswith("\n}\n")
    lines = text.splitlines()
    assert {ln for ln in lines if "label=" in ln} == HATCHET_MOCK_DOT_NODES
    assert {ln for ln in lines if "->" in ln} == HATCHET_MOCK_DOT_EDGES


def test_dot_threshold_keeps_nodes_with_a_large_share():
    # threshold 0.3 x max 135 = 40.5: foo 135, qux 60, quux 60, corge 55, foo/waldo 55 (fred has 40)
    text = graphframe(MOCK_GRAPH).to_dot(metric="time (inc)", threshold=0.3)
    labels = [ln.split('label="')[1].split('"')[0] for ln in text.splitlines() if "label=" in ln]
    assert labels == ["foo", "qux", "quux", "corge", "waldo"]
    assert [ln for ln in text.splitlines() if "->" in ln] == ['"0" -> "4";', '"4" -> "5";', '"5" -> "6";',
                                                              '"0" -> "12";']


# -- layout and SVG --------------------------------------------------------------------------------------------
def parse(svg: str):
    root = ET.fromstring(svg)
    rects = root.findall(f".//{SVG}rect[@class='node']")
    titles = [g.find(f"{SVG}title").text for g in root.findall(f".//{SVG}g[@class='frame']")]
    return root, rects, titles


def geometry(rects):
    """data-id -> (x, y, width) of each node rectangle."""
    return {int(r.get("data-id"), 16): tuple(float(r.get(k)) for k in ("x", "y", "width")) for r in rects}


def check_nesting(gf, boxes, frame_height=16.0, icicle=False, rel=1e-9, px=2e-3):
    """Every child lies inside its parent's x-range, one level further from the root; siblings don't overlap
    (x is written with 3 decimals: ``px`` of slack; a zero-width box shares its x with the next sibling's)."""
    for node in gf.graph:
        if node.node_id not in boxes:
            continue
        x, y, w = boxes[node.node_id]
        kids = sorted((boxes[c.node_id] for c in node.children if c.node_id in boxes), key=lambda b: (b[0], b[2]))
        for cx, cy, cw in kids:
            assert x - px <= cx and cx + cw <= x + w + px + rel * w
            assert cy == pytest.approx(y + frame_height if icicle else y - frame_height)
        for (ax, _, aw), (bx, _, _) in zip(kids, kids[1:]):
            assert ax + aw <= bx + px


def test_svg_small_tree_one_rect_per_node_widths_proportional():
    gf = graphframe(SMALL)
    svg = gf.flamegraph_svg(width=1010)  # 1010 - 2 x 10 px padding = 990 px for the total of 100
    root, rects, titles = parse(svg)
    assert len(rects) == 5 and root.get("data-nodes") == "5" and root.get("data-drawn") == "5"
    inclusive = {n.node_id: v for n, v in zip(gf.graph, node_values(gf, "time (inc)"))}
    boxes = geometry(rects)
    assert set(boxes) == set(inclusive)
    for nid, (x, y, w) in boxes.items():
        assert w == pytest.approx(inclusive[nid] * 9.9, rel=1e-9)
    by_path = {tuple(f.frame["name"] for f in n.path()): boxes[n.node_id] for n in gf.graph}
    assert by_path[("main",)][0] == pytest.approx(10.0)
    assert by_path[("main", "io")][0] == pytest.approx(10.0)  # io first (frame order), then solve after it
    assert by_path[("main", "solve")][0] == pytest.approx(10.0 + 30 * 9.9)
    assert by_path[("main", "solve", "mpi")][1] < by_path[("main", "solve")][1] < by_path[("main",)][1]  # flame
    check_nesting(gf, boxes)
    assert "mpi (40 time (inc), 40.00%)" in titles and "main (100 time (inc), 100.00%)" in titles


def test_icicle_puts_the_root_on_top():
    gf = graphframe(SMALL)
    _, rects, _ = parse(gf.flamegraph_svg(icicle=True, frame_height=20))
    boxes = geometry(rects)
    check_nesting(gf, boxes, frame_height=20, icicle=True)
    assert min(y for _, y, _ in boxes.values()) == boxes[gf.graph.roots[0].node_id][1]


def test_svg_escapes_names_and_parses():
    name = 'op<T&U> "q" \x01'
    gf = graphframe([tree("main", 10.0, 5.0, tree(name, 5.0, 5.0))])
    root, rects, titles = parse(gf.flamegraph_svg())
    assert len(rects) == 2
    assert 'op<T&U> "q" ? (5 time (inc), 50.00%)' in titles  # control characters cannot be in XML: "?"


def test_unmeasured_and_negative_values_are_zero_width_and_not_drawn():
    gf = graphframe([tree("main", 10.0, 4.0, tree("a", 6.0, 6.0), tree("b", float("nan"), float("nan")),
                          tree("c", -3.0, -3.0))])
    lay = flamegraph.layout(gf)
    assert [(b.name, b.width) for b in lay.boxes] == [("main", 10.0), ("a", 6.0), ("b", 0.0), ("c", 0.0)]
    root, rects, _ = parse(flamegraph.to_svg(lay))
    assert (root.get("data-nodes"), root.get("data-drawn"), len(rects)) == ("4", "2", 2)


def test_children_wider_than_their_parent_are_narrowed_to_fit():
    gf = graphframe([tree("main", 10.0, 0.0, tree("a", 12.0, 12.0), tree("b", 8.0, 8.0))])  # 20 > 10
    widths = {b.name: (b.x, b.width, b.value) for b in flamegraph.layout(gf).boxes}
    assert widths == {"main": (0.0, 10.0, 10.0), "a": (0.0, 6.0, 12.0), "b": (6.0, 4.0, 8.0)}


def test_metric_without_inclusive_partner_is_summed_over_subtrees():
    gf = graphframe([tree("main", 10.0, 1.0, tree("a", 6.0, 6.0, flops=4.0), tree("b", 3.0, 3.0, flops=1.0),
                          flops=2.0)])
    lay = flamegraph.layout(gf, "flops")
    assert lay.metric == "flops summed over subtrees" and lay.total == 7.0
    assert [(b.name, b.width) for b in lay.boxes] == [("main", 7.0), ("a", 4.0), ("b", 1.0)]


def test_a_dag_node_is_drawn_once_under_its_first_parent():
    nodes = {k: Node(Frame(name=k, type="function"), node_id=i) for i, k in enumerate("ABCD", start=1)}
    for parent, child in (("A", "B"), ("A", "C"), ("B", "D"), ("C", "D")):
        nodes[parent].children.append(nodes[child])
        nodes[child].parents.append(nodes[parent])
    graph = Graph([nodes["A"]])
    df = pd.DataFrame({"name": list("ABDC"), "time": [1.0, 1.0, 2.0, 1.0]},
                      index=pd.Index([nodes[k] for k in "ABDC"], name="node", dtype=object))
    gf = GraphFrame(graph, df, exc_metrics=["time"])
    boxes = {b.name: (b.depth, b.x, b.width) for b in flamegraph.layout(gf, "time").boxes}
    assert boxes == {"A": (0, 0.0, 5.0), "B": (1, 0.0, 3.0), "D": (2, 0.0, 2.0), "C": (1, 3.0, 1.0)}


def test_colour_by_metric_and_by_name():
    gf = graphframe(SMALL)
    _, rects, _ = parse(gf.flamegraph_svg())
    fills = {r.get("fill") for r in rects}
    assert len(fills) == 4  # by name: the two "mpi" frames share a colour
    _, rects, _ = parse(gf.flamegraph_svg(color_by="time"))
    assert len({r.get("fill") for r in rects}) == 5
    with pytest.raises(RenderError, match="unknown colour map"):
        gf.flamegraph_svg(color_by="time", colormap="nope")


def test_repr_html_shows_the_tree_and_top_rows():
    gf = graphframe([tree("main<T>", 10.0, 5.0, tree("a", 5.0, 5.0))])
    out = gf._repr_html_()
    assert "<pre>10.000 main&lt;T&gt;\n└─ 5.000 a</pre>" in out and "<table" in out


# -- a generated 10,000-node run -------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def big(tmp_path_factory):
    out = tmp_path_factory.mktemp("tau10k")
    run = WRITERS["tau"](out, nodes=10_000, ranks=2, runs=1, seed=1)[0]
    return run, perflake.read_tau(run)


def test_big_run_svg_has_one_rect_per_node_with_proportional_widths(big):
    _, gf = big
    assert len(gf.graph) == 10_001  # the generator's 10,000 nodes under TAU's ".TAU application"
    root, rects, _ = parse(gf.flamegraph_svg())
    assert len(rects) == len(gf.graph) == int(root.get("data-drawn"))
    inclusive = dict(zip((n.node_id for n in gf.graph), node_values(gf, "time (inc)", rank=0)))
    boxes = geometry(rects)
    assert set(boxes) == set(inclusive)
    widths = np.array([boxes[i][2] for i in boxes])
    values = np.array([inclusive[i] for i in boxes])
    scale = 1180.0 / values.max()  # the single root spans the full 1180 px
    np.testing.assert_allclose(widths, values * scale, rtol=1e-5)
    check_nesting(gf, boxes, rel=1e-5)


def test_big_run_png_is_written(big, tmp_path):
    _, gf = big
    n = gf.write_flamegraph(tmp_path / "big.png")
    data = (tmp_path / "big.png").read_bytes()
    assert n == 10_001 and data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    depth = max(n.depth for n in gf.graph) + 1
    assert (width, height) == (1200, 44 + depth * 16 + 10)


# -- command line --------------------------------------------------------------------------------------------------
def test_cli_writes_svg_png_and_folded(big, tmp_path, capsys):
    run, gf = big
    assert main(["flamegraph", str(run), "-o", str(tmp_path / "f.svg"), "--icicle", "--color-by", "time"]) == 0
    assert len(parse((tmp_path / "f.svg").read_text())[1]) == 10_001
    assert main(["flamegraph", str(run), "-o", str(tmp_path / "f.png"), "--aggregate", "mean"]) == 0
    assert (tmp_path / "f.png").read_bytes()[:4] == b"\x89PNG"
    assert main(["flamegraph", str(run), "-o", str(tmp_path / "f.folded"), "--rank", "1"]) == 0
    folded = (tmp_path / "f.folded").read_text().splitlines()
    expected = [round(float(v)) for v in node_values(gf, "time", rank=1)[:3]]
    assert [int(line.rsplit(" ", 1)[1]) for line in folded[:3]] == expected
    assert folded[1].startswith(".TAU application;")  # flamegraph.pl's separator on the command line
    assert "wrote" in capsys.readouterr().out


def test_cli_from_a_lake(tmp_path, capsys):
    run = WRITERS["tau"](tmp_path / "in", nodes=40, ranks=2, runs=1, seed=2)[0]
    lake = perflake.Lake(tmp_path / "lake")
    lake.ingest([run], progress=False)
    run_id = lake.sql("select run_id from runs")["run_id"][0]
    assert main(["flamegraph", run_id, "--lake", str(tmp_path / "lake"), "-o", str(tmp_path / "r.svg")]) == 0
    assert len(parse((tmp_path / "r.svg").read_text())[1]) == 41


def test_cli_bad_output_or_options_exit_2_with_one_line(tmp_path, capsys):
    run = WRITERS["tau"](tmp_path / "in", nodes=30, ranks=2, runs=1, seed=6)[0]
    assert main(["flamegraph", str(run), "-o", str(tmp_path / "f.pdf")]) == 2
    err = capsys.readouterr().err
    assert err == f"perflake: {tmp_path / 'f.pdf'}: cannot write '.pdf' (use .svg, .png, .folded)\n"
    assert not (tmp_path / "f.pdf").exists()
    assert main(["flamegraph", str(run), "-o", str(tmp_path / "f.svg"), "--metric", "nope"]) == 2
    assert capsys.readouterr().err.startswith("perflake: no metric 'nope' in this frame (metrics: time, time (inc)")
    assert main(["flamegraph", str(run), "-o", str(tmp_path / "f.svg"), "--rank", "9"]) == 2
    assert capsys.readouterr().err == "perflake: rank 9 is not in this frame (ranks 0..1)\n"


def test_folded_scale_and_the_cli_warning_for_values_in_seconds(tmp_path, capsys):
    gf = graphframe([tree("main", 0.75, 0.25, tree("a", 0.5, 0.5))])  # seconds: all round to 0 or 1
    assert to_flamegraph(gf) == "main 0\nmain; a 0\n"
    assert to_flamegraph(gf, scale=1e6) == "main 250000\nmain; a 500000\n"
    lake = tmp_path / "lake"
    assert main(["ingest", str(WRITERS["tau"](tmp_path / "gen", nodes=5, ranks=1, runs=1, seed=1)[0]),
                 "--lake", str(lake), "--quiet"]) == 0  # microseconds: no warning
    run_id = perflake.Lake(lake).runs()["run_id"][0]
    capsys.readouterr()
    assert main(["flamegraph", run_id, "--lake", str(lake), "-o", str(tmp_path / "us.folded")]) == 0
    assert "warning" not in capsys.readouterr().err
    tau = perflake.Lake(lake).graphframe(run_id)
    seconds = tau.copy()
    seconds.dataframe = tau.dataframe.assign(time=tau.dataframe["time"] / 1e6)
    from perflake.render.folded import lost_to_rounding

    assert lost_to_rounding(tau) == 0.0 and lost_to_rounding(seconds) == 1.0  # not a timing
    assert lost_to_rounding(seconds, scale=1e6) == 0.0  # not a timing


def test_a_parent_whose_children_are_all_zero_lays_out_without_warnings():
    import warnings

    gf = graphframe([tree("main", 10.0, 10.0, tree("a", 0.0, 0.0, tree("b", 0.0, 0.0)))])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # it divided 0 by 0
        widths = {b.name: b.width for b in flamegraph.layout(gf).boxes}
    assert widths == {"main": 10.0, "a": 0.0, "b": 0.0}


def test_caliper_inclusive_hash_metrics_pair_with_their_exclusive_partner(shared_data):
    """sw4's .cali: ``inclusive#X`` is the inclusive partner of the derived exclusive ``X`` (Caliper's names),
    so folded stacks write exclusive values and the hot path follows inclusive ones."""
    gf = perflake.read_caliper(next(shared_data("caliper-sw4-cuda-activity-profile-cali").glob("*.cali")))
    inc, exc = "inclusive#scale#sum#cupti.host.duration", "scale#sum#cupti.host.duration"
    from perflake.frame.node_values import exclusive_metric, inclusive_metric

    assert (exclusive_metric(gf, inc), inclusive_metric(gf, exc), inclusive_metric(gf, inc)) == (exc, inc, inc)
    assert to_flamegraph(gf, scale=1e6).splitlines()[0] == "main 190094"  # main's own time, not its 271 s
    assert [n.frame["name"] for n in gf.hot_path(metric=exc)][:3] == ["main", "solve", "TIME_STEPPING"]


def test_scale_is_checked(tmp_path, shared_data, capsys):
    path = str(shared_data("tau-cpi-mpi"))
    for scale, out, message in (("-1", "x.folded", "--scale must be a finite number above 0, not -1"),
                                ("nan", "x.folded", "not nan"),
                                ("2", "x.svg", "--scale applies to .folded output only")):
        assert main(["flamegraph", path, "-o", str(tmp_path / out), "--scale", scale]) == 2
        assert message in capsys.readouterr().err
    assert not list(tmp_path.iterdir())
