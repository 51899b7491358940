"""Box and violin plots (perflake.plots.distributions, ``perflake statsframe -o``): what is drawn is read back from
the matplotlib artists and compared with (a) numpy's statistics of values designed by hand and written into
generated Caliper files, and (b) the statsframe's boxplot statistics of an independent Ensemble (DuckDB).

The lake: 9 runs (``variant`` A: runs 0-3, B: 4-6, C: 7-8) of one 12-node call tree, one rank each, with the
exclusive ``time`` of every node set by hand (multiples of 1/8, so that sums and means are exact): two call paths
with equal values (a tie in the ranking), one with a high and a low outlier, one absent from the C runs (its
mean counts the values present only), one with the same value everywhere (no density: a flat violin).
"""

from __future__ import annotations

import json
import re
import struct
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from conftest import DATA, _need
from perflake import Lake
from perflake.cli.app import main
from perflake.errors import PerflakeError, PlotError, UsageError
from perflake.generators import write_caliper_json_runs
from perflake.plots import plot_distributions
from perflake.plots.figure import node_path

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
RUNS = 9
VARIANT = ["A"] * 4 + ["B"] * 3 + ["C"] * 2
STEPS = np.array([0, 3, 1, 4, 1, 5, 2, 6, 5]) / 8
TIE = (2, 4)  # equal values: ordered by call path text (here against the order of their ids)
OUTLIER, MISSING, FLAT, BELOW = 8, 10, 1, 11
M = "time"


def design(n_nodes: int) -> np.ndarray:
    """vals[node, run] (NaN: the run lacks the call path)."""
    vals = np.array([[2 * ((k * 5) % 12) + 1 + STEPS[(r + 2 * k) % RUNS] for r in range(RUNS)]
                     for k in range(n_nodes)])
    vals[TIE[1]] = vals[TIE[0]]
    vals[OUTLIER, 3] += 50.0
    vals[OUTLIER, 5] -= 15.0
    vals[MISSING] = 30.0 + STEPS
    vals[MISSING, 7:] = np.nan  # absent from variant C: mean 30.2 over 7 runs (23.5 if absences were zeros)
    vals[BELOW] = 27.0 + STEPS / 2  # between the two
    vals[FLAT] = 0.5
    return vals


@pytest.fixture(scope="module")
def known(tmp_path_factory):
    root = tmp_path_factory.mktemp("dist")
    files = write_caliper_json_runs(root / "cali", nodes=12, ranks=1, runs=RUNS, seed=3)
    template = json.loads(files[0].read_text())  # run 0's call tree for every run (the generator varies it)
    nodes, col = template["nodes"], {c: i for i, c in enumerate(template["columns"])}
    vals = design(len(nodes))
    for r, path in enumerate(files):
        doc = json.loads(path.read_text())  # the run's own globals
        rows = []
        for row in json.loads(json.dumps(template["data"])):
            k = row[col["path"]]
            if k is not None and np.isnan(vals[k, r]):
                continue
            if k is not None:
                row[col["sum#time.duration"]] = float(vals[k, r])
            rows.append(row)
        doc["nodes"], doc["data"], doc["variant"] = nodes, rows, VARIANT[r]
        path.write_text(json.dumps(doc))
    lake = Lake(root / "lake")
    lake.ingest(files)

    def path_of(k):
        names = []
        while k is not None:
            names.append(nodes[k]["label"])
            k = nodes[k].get("parent")
        return tuple(reversed(names))

    ens = lake.ensemble_of(metric=[M])
    run_of = {p: int(re.search(r"run-(\d+)", s).group(1)) for p, s in ens.metadata["source"].items()}
    id_of = {node_path(n): int(n.node_id) for n in ens.statsframe.index}
    paths = [path_of(k) for k in range(len(nodes))]
    known = {"lake": lake, "vals": vals, "paths": paths, "ids": [id_of[p] for p in paths], "run_of": run_of}
    # the lake holds the designed values
    df = ens.sparse_dataframe()
    for (node, profile), v in df[M].items():
        assert v == vals[paths.index(node_path(node)), run_of[profile]]
    assert len(df) == np.isfinite(vals).sum()
    return known


def expected_order(known, runs=range(RUNS), top=None) -> list[int]:
    """Node numbers by the documented rule: mean of the values present, largest first; ties by call path, then id."""
    vals = known["vals"][:, list(runs)]
    keys = [(-np.nanmean(vals[k]), known["paths"][k], known["ids"][k]) for k in range(len(vals))
            if np.isfinite(vals[k]).any()]
    order = [known["paths"].index(key[1]) for key in sorted(keys)]
    return order[:top] if top else order


def numpy_box(values) -> dict:
    v = np.sort(np.asarray(values, float)[np.isfinite(values)])
    q1, med, q3 = np.percentile(v, [25, 50, 75])  # linear interpolation: numpy's default, and Thicket's
    lo, hi = q1 - 1.5 * (q3 - q1), q3 + 1.5 * (q3 - q1)
    inside = v[(v >= lo) & (v <= hi)]
    return {"q1": q1, "median": med, "q3": q3, "whisker_low": inside.min(), "whisker_high": inside.max(),
            "outliers": v[(v < lo) | (v > hi)], "min": v.min(), "max": v.max()}


def by_gid(plot, gid: str) -> list:
    found = [a for a in plot.axes.get_children() if a.get_gid() == gid]
    return found


def one(plot, gid: str):
    (found,) = by_gid(plot, gid)
    return found


def drawn_box(plot, node_id: int, group: int = 0) -> dict:
    """The statistics a bxp box shows, read off its artists."""
    key = f"{node_id} {group}"
    box = one(plot, f"box {key}").get_path().vertices
    low, high = one(plot, f"whisker-low {key}").get_xdata(), one(plot, f"whisker-high {key}").get_xdata()
    median = one(plot, f"median {key}").get_xdata()
    assert median[0] == median[1] and low[0] == box[:, 0].min() and high[0] == box[:, 0].max()
    assert list(one(plot, f"cap-low {key}").get_xdata()) == [low[1]] * 2
    assert list(one(plot, f"cap-high {key}").get_xdata()) == [high[1]] * 2
    return {"q1": box[:, 0].min(), "q3": box[:, 0].max(), "median": median[0], "whisker_low": low[1],
            "whisker_high": high[1], "outliers": np.asarray(one(plot, f"outliers {key}").get_xdata(), float),
            "y": (box[:, 1].min() + box[:, 1].max()) / 2}


def statsframe_box(ens, node_id: int) -> dict:
    """Thicket's boxplot statistics of the statsframe (DuckDB), computed on their own ensemble."""
    ens.stats.calc_boxplot_statistics([M])
    tag = "(0.25, 0.5, 0.75)"
    row = next(r for n, r in ens.statsframe.iterrows() if int(n.node_id) == node_id)
    return {"q1": row[f"{M}_q1{tag}"], "median": row[f"{M}_q2{tag}"], "q3": row[f"{M}_q3{tag}"],
            "whisker_low": row[f"{M}_whisker_low{tag}"], "whisker_high": row[f"{M}_whisker_high{tag}"],
            "n_outliers": row[f"{M}_n_outliers{tag}"]}


def assert_box(drawn: dict, want: dict, sf: dict) -> None:
    for s in ("q1", "median", "q3", "whisker_low", "whisker_high"):
        assert drawn[s] == sf[s], s  # drawn as DuckDB computed them: nothing recomputed
        np.testing.assert_allclose(drawn[s], want[s], rtol=1e-12, err_msg=s)
    np.testing.assert_array_equal(np.sort(drawn["outliers"]), want["outliers"])
    assert len(drawn["outliers"]) == sf["n_outliers"]


# -- what is drawn --------------------------------------------------------------------------------------------
def test_boxes_are_the_statsframe_boxplot_statistics(known):
    lake, vals = known["lake"], known["vals"]
    ens = lake.ensemble_of(metric=[M])
    plot = plot_distributions(ens, M, top=None)
    assert list(ens.statsframe.columns) == ["name"]  # the caller's ensemble is left as it is
    order = expected_order(known)
    assert list(plot.data["node_id"]) == [known["ids"][k] for k in order]
    reference = lake.ensemble_of(metric=[M])
    outliers = 0
    for k in order:
        node = known["ids"][k]
        drawn = drawn_box(plot, node)
        assert_box(drawn, numpy_box(vals[k]), statsframe_box(reference, node))
        outliers += len(drawn["outliers"])
    assert outliers >= 2 and len(drawn_box(plot, known["ids"][OUTLIER])["outliers"]) == 2  # one high, one low
    flat = drawn_box(plot, known["ids"][FLAT])
    assert flat["q1"] == flat["q3"] == flat["whisker_low"] == flat["whisker_high"] == 0.5
    # Plot.data holds the numbers drawn, the mean and count of the values present
    row = plot.data.set_index("node_id").loc[known["ids"][MISSING]]
    assert row["count"] == 7 and row["mean"] == np.nanmean(vals[MISSING]) and len(row["values"]) == 7
    assert plot.axes.get_xlabel() == "time [sec], one value per profile"


def test_top_call_paths_follow_the_documented_rule(known):
    ens = known["lake"].ensemble_of(metric=[M])
    plot = plot_distributions(ens, M, top=6)
    order = expected_order(known, top=6)
    assert list(plot.data["node_id"]) == [known["ids"][k] for k in order]
    # the rule's three parts are all exercised: an absent value is skipped, not a zero ...
    assert order.index(MISSING) < order.index(BELOW)
    assert np.nansum(known["vals"][MISSING]) / RUNS < known["vals"][BELOW].mean()
    # ... and equal means are ordered by call path text (here against the order of their ids)
    a, b = TIE
    assert np.mean(known["vals"][a]) == np.mean(known["vals"][b])
    first = min(TIE, key=lambda k: known["paths"][k])
    assert first == b and known["ids"][a] < known["ids"][b] and order.index(b) == order.index(a) - 1
    # top to bottom, the tick labels are the rows of Plot.data; the largest mean at the top
    ticks = sorted(zip(plot.axes.get_yticks(), [t.get_text() for t in plot.axes.get_yticklabels()]), reverse=True)
    assert [t for _, t in ticks] == list(plot.data["label"])
    ys = [drawn_box(plot, n)["y"] for n in plot.data["node_id"]]
    assert ys == sorted(ys, reverse=True) and ys == pytest.approx([y for y, _ in ticks])
    for label, path in zip(plot.data["label"], plot.data["path"]):
        assert label.endswith(path[-1]) and path[0] == "main"  # short label, full path kept
    # a Lake and a selection give the same plot as the Ensemble
    again = plot_distributions(known["lake"], M, top=6, where="true")
    assert list(again.data["node_id"]) == list(plot.data["node_id"])
    assert list(again.data["q3"]) == list(plot.data["q3"])


def test_group_by_gives_one_box_per_group_side_by_side(known):
    vals = known["vals"]
    ens = known["lake"].ensemble_of(metric=[M])
    plot = plot_distributions(ens, M, top=None, group_by="variant")
    groups = {g: [r for r in range(RUNS) if VARIANT[r] == g] for g in "ABC"}
    legend = plot.axes.get_legend()
    assert [t.get_text() for t in legend.get_texts()] == ["A", "B", "C"] and legend.get_title().get_text() == "variant"
    order = expected_order(known)  # ranked over the whole ensemble, not per group
    assert list(dict.fromkeys(plot.data["node_id"])) == [known["ids"][k] for k in order]
    reference = {g: ens.filter_metadata(f"variant = '{g}'") for g in "ABC"}
    boxes = 0
    for k in order:
        node = known["ids"][k]
        ys = []
        for j, g in enumerate("ABC"):
            sample = vals[k, groups[g]]
            if not np.isfinite(sample).any():
                assert (k, g) == (MISSING, "C") and not by_gid(plot, f"box {node} {j}")  # no runs, no box
                continue
            drawn = drawn_box(plot, node, j)
            assert_box(drawn, numpy_box(sample), statsframe_box(reference[g], node))
            ys.append(drawn["y"])
            boxes += 1
        centre = len(order) - 1 - order.index(k)
        assert ys == sorted(ys, reverse=True) and all(abs(y - centre) < 0.5 for y in ys)  # side by side, in order
    assert boxes == 3 * len(order) - 1 == len(plot.data) == len([p for p in plot.axes.patches if p.get_gid()])
    assert list(plot.data["group"]) == [g for k in order for g in "ABC" if (k, g) != (MISSING, "C")]
    assert plot.figure.get_suptitle().endswith("top 12 call paths by mean, by variant")


def test_violins_one_body_per_call_path_and_group(known):
    vals = known["vals"]
    ens = known["lake"].ensemble_of(metric=[M])
    top = expected_order(known, top=5)
    assert MISSING in top
    two = plot_distributions(ens.filter_metadata("variant in ('A', 'B')"), M, top=4, group_by=["variant"],
                             kind="violin")
    bodies = [c for c in two.axes.collections if (c.get_gid() or "").startswith("violin ")]
    assert len(bodies) == 4 * 2 and two.kind == "violin" and not two.axes.patches  # no boxes
    plot = plot_distributions(ens, M, top=5, group_by="variant", kind="violin")
    bodies = [c for c in plot.axes.collections if (c.get_gid() or "").startswith("violin ")]
    assert len(bodies) == 5 * 3 - 1 == len(plot.data)  # the call path the C runs lack has no violin there
    for row in plot.data.itertuples():
        j = "ABC".index(row.group)
        key = f"{row.node_id} {j}"
        want = numpy_box(vals[known["ids"].index(row.node_id), [r for r in range(RUNS) if VARIANT[r] == row.group]])
        body = one(plot, f"violin {key}").get_paths()[0].vertices
        assert body[:, 0].min() == want["min"] and body[:, 0].max() == want["max"]  # cut at the data's range
        assert body[:, 1].max() - body[:, 1].min() == pytest.approx(0.95 * 0.8 / 3)  # every violin as wide
        assert (body[:, 1].min() + body[:, 1].max()) / 2 == pytest.approx(row.position)
        np.testing.assert_allclose(one(plot, f"quartiles {key}").get_xdata(), [want["q1"], want["q3"]], rtol=1e-12)
        np.testing.assert_allclose(one(plot, f"whiskers {key}").get_xdata(),
                                   [want["whisker_low"], want["whisker_high"]], rtol=1e-12)
        np.testing.assert_allclose(one(plot, f"median {key}").get_xdata(), [want["median"]], rtol=1e-12)
        assert [row.q1, row.q3] == list(one(plot, f"quartiles {key}").get_xdata())  # the DuckDB numbers
    flat = plot_distributions(ens, M, top=None, kind="violin")
    body = one(flat, f"violin {known['ids'][FLAT]} 0").get_paths()[0].vertices
    assert set(body[:, 0]) == {0.5}  # equal values: no density, a flat violin


def test_per_rank_ensemble_and_log_axis(tmp_path):
    from perflake.generators import write_tau_runs

    lake = Lake(tmp_path / "lake")
    lake.ingest(write_tau_runs(tmp_path / "tau", nodes=15, ranks=4, runs=3, seed=4))
    ens = lake.ensemble_of(metric=["time"], per_rank=True)
    plot = plot_distributions(ens, "time", top=4, log=True)
    assert plot.axes.get_xscale() == "log" and plot.axes.get_xlabel().endswith("one value per profile and rank")
    df = ens.sparse_dataframe()["time"]
    ens.stats.calc_boxplot_statistics(["time"])
    for node in plot.data["node_id"]:
        sample = df[[int(n.node_id) == node for n in df.index.get_level_values("node")]].to_numpy()
        assert len(sample) in (4, 8, 12)  # 4 ranks of each run that has the call path
        assert_box(drawn_box(plot, node), numpy_box(sample), statsframe_box(ens, node))


def test_errors(known):
    lake = known["lake"]
    ens = lake.ensemble_of(metric=[M])
    with pytest.raises(PlotError, match="kind must be 'box' or 'violin', not 'pie'"):
        plot_distributions(ens, M, kind="pie")
    with pytest.raises(PlotError, match="top must be >= 1"):
        plot_distributions(ens, M, top=0)
    with pytest.raises(PlotError, match="no metric 'nope'"):
        plot_distributions(ens, "nope")
    with pytest.raises(UsageError, match="no profile has metadata key 'varaint'.*'variant'"):
        plot_distributions(ens, M, group_by="varaint")
    with pytest.raises(PlotError, match="where= selects the runs of a Lake"):
        plot_distributions(ens, M, where="true")
    with pytest.raises(PlotError, match="needs an Ensemble or a Lake"):
        plot_distributions(ens.dataframe, M)
    with pytest.raises(PerflakeError, match="no runs selected"):
        plot_distributions(lake, M, where="false")


# -- files, Jupyter and the command line -------------------------------------------------------------------------
def svg_text(path) -> str:
    root = ET.parse(path).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    return "\n".join("".join(el.itertext()) for el in root.iter() if el.tag.endswith("}text"))


def test_cli_writes_png_and_svg(known, tmp_path, capsys):
    from matplotlib.image import imread

    root = str(known["lake"].root)
    png = tmp_path / "box.png"
    assert main(["statsframe", "--lake", root, "--metric", M, "--boxplot", "--plot-top", "5", "-o", str(png)]) == 0
    out, err = capsys.readouterr()
    assert err == f"perflake: wrote {png}\n" and "time_q1(0.25, 0.5, 0.75)" in out  # the table is still printed
    head = png.read_bytes()
    assert head.startswith(PNG_MAGIC) and head[12:16] == b"IHDR" and head.endswith(b"IEND\xaeB`\x82")
    want = plot_distributions(known["lake"], M, top=5)
    w_in, h_in = want.figure.get_size_inches()
    assert struct.unpack(">II", head[16:24]) == (w_in * 100, h_in * 100)
    assert imread(png).shape[:2] == (h_in * 100, w_in * 100)  # decodes

    svg = tmp_path / "violin.svg"
    argv = ["statsframe", "--lake", root, "--metric", M, "--plot", "violin", "--group-by", "variant", "-o", str(svg)]
    assert main(argv) == 0
    capsys.readouterr()
    text = svg_text(svg)
    drawn = plot_distributions(known["lake"], M, top=10, group_by="variant", kind="violin")
    for label in [*dict.fromkeys(drawn.data["label"]), "variant", "A", "B", "C", drawn.axes.get_xlabel(),
                  drawn.figure.get_suptitle()]:
        assert label in text, label
    assert svg.read_bytes() == drawn.to_bytes("svg")  # the same plot, byte for byte


@pytest.mark.parametrize("argv, message", [
    (["--plot", "pie", "-o", "{tmp}/out.png"], "--plot 'pie': use box or violin"),
    (["--plot", "box"], "--plot draws a plot: give -o FILE.png or -o FILE.svg"),
    (["--group-by", "variant"], "--group-by draws a plot: give -o"),
    (["-o", "{tmp}/out.jpg"], "out.jpg: cannot write a plot with '.jpg'"),
    (["--plot-top", "0", "-o", "{tmp}/out.png"], "--plot-top must be >= 1, not 0"),
    (["--group-by", "nokey", "-o", "{tmp}/out.svg"], "no profile has metadata key 'nokey'"),
    (["--metric", "nope", "-o", "{tmp}/out.svg"], "no selected run has metric 'nope'"),
])
def test_cli_bad_options_exit_2_with_one_line(known, tmp_path, capsys, argv, message):
    argv = ["statsframe", "--lake", str(known["lake"].root), *[a.replace("{tmp}", str(tmp_path)) for a in argv]]
    if "--metric" not in argv:
        argv += ["--metric", M]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("perflake: ") and message in err
    assert not list(tmp_path.iterdir())


def test_jupyter_shows_it_inline(known):
    plot = plot_distributions(known["lake"], M, top=3)
    assert plot._repr_png_().startswith(PNG_MAGIC) and "<svg" in plot._repr_svg_()
    assert repr(plot).startswith("Plot(box, ") and repr(plot).endswith("3 rows)")


# -- real data -------------------------------------------------------------------------------------------------
def test_rajaperf_groups_match_their_statsframes(tmp_path):
    lake = Lake(tmp_path / "lake")
    lake.ingest([_need(DATA / "rajaperf-quartz")])
    metric = "Avg time/rank"
    ens = lake.ensemble_of(metric=[metric])
    plot = plot_distributions(ens, metric, top=8, group_by="ProblemSizeRunParam")
    parts = ens.groupby("ProblemSizeRunParam")
    assert [t.get_text() for t in plot.axes.get_legend().get_texts()] == ["1048576", "2097152"] and len(parts) == 2
    ens.stats.mean([metric])
    means = {int(n.node_id): m for n, m in ens.statsframe[f"{metric}_mean"].items()}
    ids = list(dict.fromkeys(plot.data["node_id"]))
    assert [means[i] for i in ids] == sorted((m for m in means.values() if np.isfinite(m)), reverse=True)[:8]
    tag = "(0.25, 0.5, 0.75)"
    for j, sub in enumerate(parts.values()):
        sub.stats.calc_boxplot_statistics([metric])
        rows = {int(n.node_id): r for n, r in sub.statsframe.iterrows()}
        for node in ids:
            drawn = drawn_box(plot, node, j)
            assert drawn["q1"] == rows[node][f"{metric}_q1{tag}"] and drawn["q3"] == rows[node][f"{metric}_q3{tag}"]
            assert drawn["median"] == rows[node][f"{metric}_q2{tag}"]
            assert drawn["whisker_high"] == rows[node][f"{metric}_whisker_high{tag}"]
            assert len(drawn["outliers"]) == rows[node][f"{metric}_n_outliers{tag}"]
