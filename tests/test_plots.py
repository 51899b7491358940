"""Plots (perflake.plots, ``perflake plot``): what is drawn is read back from the matplotlib artists and compared
with numbers computed independently from the lake (``lake.sql`` + pandas); files are checked as PNG/SVG."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pandas as pd
import pytest

from perflake import Lake
from perflake.cli.app import main
from perflake.errors import PerflakeError, PlotError, UnknownRun
from perflake.generators import write_caliper_json_runs, write_tau_runs
from perflake.plots import Plot, plot_heatmap, plot_imbalance, plot_scaling
from perflake.plots.figure import path_labels, shorten
from perflake.plots.scaling_lines import IDEAL_GID

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """A strong-scaling study: TAU runs of 30 nodes on 2, 4 and 8 ranks (two runs at 8)."""
    root = tmp_path_factory.mktemp("study")
    lake = Lake(root / "lake")
    for ranks, runs in ((2, 1), (4, 1), (8, 2)):
        lake.ingest(write_tau_runs(root / f"n{ranks}", nodes=30, ranks=ranks, runs=runs, seed=5))
    return lake


@pytest.fixture(scope="module")
def sparse(tmp_path_factory):
    """A Caliper run of 4 ranks where 4 leaves exist on rank 0 only, and a TAU run of 4 ranks x 2 threads."""
    root = tmp_path_factory.mktemp("sparse")
    (path,) = write_caliper_json_runs(root / "cali", nodes=30, ranks=4, runs=1, seed=9)
    doc = json.loads(path.read_text())
    parents = {n.get("parent") for n in doc["nodes"]}
    leaves = [i for i in range(len(doc["nodes"])) if i not in parents][:4]
    col = {c: i for i, c in enumerate(doc["columns"])}
    doc["data"] = [row for row in doc["data"] if not (row[col["path"]] in leaves and row[col["mpi.rank"]] != 0)]
    path.write_text(json.dumps(doc))
    lake = Lake(root / "lake")
    lake.ingest([path])
    lake.ingest(write_tau_runs(root / "tau", nodes=20, ranks=4, threads=2, runs=1, seed=2))
    return lake


def run_of(lake, where: str) -> str:
    return lake.sql(f"select run_id from runs where {where} order by run_id limit 1")["run_id"][0]


def bars(plot: Plot) -> tuple[list[float], list[str]]:
    """Bar lengths and their tick labels, top to bottom."""
    ax = plot.axes
    patches = sorted(ax.patches, key=lambda p: -p.get_y())
    ticks = {round(t, 6): lab.get_text() for t, lab in zip(ax.get_yticks(), ax.get_yticklabels())}
    return [p.get_width() for p in patches], [ticks[round(p.get_y() + p.get_height() / 2, 6)] for p in patches]


def per_rank(lake, run_id: str, metric: str = "time", threads: str = "mean") -> pd.DataFrame:
    """node_id x rank of a run, threads combined, straight from the metrics table."""
    m = lake.sql(f'select node_id, rank, thread, "{metric}" as v from metrics where run_id = $r and rank >= 0',
                 {"r": run_id})
    g = m.groupby(["node_id", "rank"])["v"]
    return (g.sum(min_count=1) if threads == "sum" else getattr(g, threads)()).unstack("rank")


def top_by_total(wide: pd.DataFrame, n: int | None) -> pd.DataFrame:
    total = wide.sum(axis=1, min_count=1).dropna().sort_values(ascending=False, kind="stable")
    return wide.loc[total.index[:n]]


# -- imbalance ------------------------------------------------------------------------------------------------
def test_imbalance_bars_are_the_imbalance_values(study):
    df = study.imbalance(metric="time")
    plot = plot_imbalance(df, top=10)
    widths, labels = bars(plot)
    want = df.dropna(subset=["imbalance"]).sort_values("imbalance", ascending=False, kind="stable").head(10)
    np.testing.assert_array_equal(widths, want["imbalance"].to_numpy())
    # and max / mean from the raw metrics of the lake
    m = study.sql("select run_id, node_id, time from metrics where rank >= 0 and time is not null")
    g = m.groupby(["run_id", "node_id"])["time"]
    ratio = (g.max() / g.mean()).loc[list(zip(want["run_id"], want["node_id"]))].to_numpy()
    np.testing.assert_allclose(widths, ratio, rtol=1e-12)
    for label, (_, row) in zip(labels, want.iterrows()):  # several runs: each label names its run
        assert label.endswith(f" [{row['run_id'][:8]}]") and shorten(row["path"][-1]) in label
    assert len(set(labels)) == 10
    assert list(plot.data["label"]) == labels and list(plot.data["node_id"]) == list(want["node_id"])
    assert plot.axes.get_xlabel().startswith("imbalance = max / mean")


def test_imbalance_of_a_column_and_of_a_graphframe(study):
    run = run_of(study, "nprocs = 8")
    gf_table = study.graphframe(run).load_imbalance("time")
    plot = plot_imbalance(gf_table, column="max", top=7)
    widths, labels = bars(plot)
    want = study.sql("select node_id, max(time) as mx from metrics where run_id = $r and rank >= 0 group by node_id",
                     {"r": run}).sort_values("mx", ascending=False, kind="stable").head(7)
    np.testing.assert_array_equal(widths, want["mx"].to_numpy())
    assert [n.node_id for n in plot.data.index] == list(want["node_id"])
    assert all(not label.endswith("]") for label in labels)  # one run: no run suffix
    names = [str(n.frame.get("name")) for n in plot.data.index]
    assert all(shorten(name) in label for name, label in zip(names, labels))
    assert plot.axes.get_xlabel() == "time: max over ranks"
    lake_table = plot_imbalance(study.imbalance(run, metric="time"), column="max", top=7)
    assert bars(lake_table) == (widths, labels)  # same bars from the lake's table of the same run


def test_imbalance_errors(study):
    df = study.imbalance(run_of(study, "nprocs = 2"))
    with pytest.raises(PlotError, match="no numeric column 'name'"):
        plot_imbalance(df, column="name")
    with pytest.raises(PlotError, match="nothing to plot"):
        plot_imbalance(df.iloc[:0])
    with pytest.raises(PlotError, match="top must be"):
        plot_imbalance(df, top=0)
    with pytest.raises(PlotError, match="DataFrame"):
        plot_imbalance(study)


# -- scaling --------------------------------------------------------------------------------------------------
def test_scaling_lines_are_the_scaling_table(study):
    table = study.scaling_table("time", by="nprocs")
    assert list(table.columns) == ["name", "path", 2, 4, 8]
    plot = plot_scaling(table, top=5, metric="time")
    lines = [ln for ln in plot.axes.lines if ln.get_gid() != IDEAL_GID]
    peak = table[[2, 4, 8]].max(axis=1).sort_values(ascending=False, kind="stable")
    assert [int(ln.get_gid()) for ln in lines] == list(peak.index[:5])
    # the table itself, from the metrics: per run the mean over ranks, then the mean over the runs of a scale
    m = study.sql("select r.nprocs, m.run_id, m.node_id, m.time from metrics m join runs r using (run_id) "
                  "where m.rank >= 0 and m.time is not null")
    per_run = m.groupby(["nprocs", "run_id", "node_id"])["time"].mean()
    want = per_run.groupby(["node_id", "nprocs"]).mean().unstack("nprocs")
    for line in lines:
        node = int(line.get_gid())
        np.testing.assert_array_equal(line.get_xdata(), [2, 4, 8])
        np.testing.assert_array_equal(line.get_ydata(), table.loc[node, [2, 4, 8]].to_numpy(dtype=float))
        np.testing.assert_allclose(line.get_ydata(), want.loc[node, [2, 4, 8]].to_numpy(), rtol=1e-12)
    assert [t.get_text() for t in plot.axes.get_xticklabels()] == ["2", "4", "8"]
    assert plot.axes.get_xlabel() == "nprocs" and plot.axes.get_ylabel() == "time"
    legend = [t.get_text() for t in plot.axes.get_legend().get_texts()]
    assert legend == [ln.get_label() for ln in lines] == list(plot.data["label"])


def test_scaling_ideal_and_log_axes(study):
    table = study.scaling_table("time", by="nprocs")
    plot = plot_scaling(table, top=3, logx=True, logy=True, ideal=True)
    assert plot.axes.get_xscale() == "log" and plot.axes.get_yscale() == "log"
    ideal = [ln for ln in plot.axes.lines if ln.get_gid() == IDEAL_GID]
    lines = [ln for ln in plot.axes.lines if ln.get_gid() != IDEAL_GID]
    assert len(ideal) == len(lines) == 3
    for line, ref in zip(lines, ideal):
        x, y = np.asarray(line.get_xdata(), float), np.asarray(line.get_ydata(), float)
        np.testing.assert_allclose(ref.get_ydata(), y[0] * x[0] / x, rtol=1e-12)  # y0 * x0 / x
        assert ref.get_color() == line.get_color()
    assert "ideal strong scaling" in [t.get_text() for t in plot.axes.get_legend().get_texts()][-1]


def test_scaling_categories_and_errors(study):
    table = study.scaling_table("time", by="app")  # one non-numeric key: drawn as a category
    plot = plot_scaling(table, top=2)
    assert [t.get_text() for t in plot.axes.get_xticklabels()] == [str(c) for c in table.columns[2:]]
    with pytest.raises(PlotError, match="log x axis needs numeric"):
        plot_scaling(table, logx=True)
    with pytest.raises(PlotError, match="no value columns"):
        plot_scaling(table[["name", "path"]])
    with pytest.raises(PlotError, match="nothing to plot"):
        plot_scaling(table.assign(**{c: np.nan for c in table.columns[2:]}))


# -- heatmap --------------------------------------------------------------------------------------------------
def test_heatmap_is_the_pivot_of_the_metrics(study):
    run = run_of(study, "nprocs = 8")
    plot = plot_heatmap(study, run[:6], metric="time", top=12)
    image = plot.axes.images[0].get_array()
    want = top_by_total(per_rank(study, run), 12)
    assert image.shape == (12, 8)
    np.testing.assert_array_equal(image.filled(np.nan), want.to_numpy())
    assert list(plot.data.index.get_level_values("node_id")) == list(want.index)
    assert list(plot.data.columns) == list(range(8))
    assert [t.get_text() for t in plot.axes.get_yticklabels()] == list(plot.data.index.get_level_values("label"))
    assert plot.axes.get_xlabel() == "rank"
    colourbar = plot.figure.axes[1]
    assert colourbar.get_ylabel() == "time"
    # the same from the run's GraphFrame
    again = plot_heatmap(study.graphframe(run), metric="time", top=12)
    np.testing.assert_array_equal(again.axes.images[0].get_array().filled(np.nan), want.to_numpy())


def test_heatmap_absent_cells_are_nan(sparse):
    run = run_of(sparse, "format = 'caliper_json'")
    plot = plot_heatmap(sparse, run, metric="time", top=None)
    image = plot.axes.images[0].get_array()
    want = top_by_total(per_rank(sparse, run), None)
    assert np.isnan(want.to_numpy()).sum() >= 4 * 3  # 4 call paths absent on ranks 1..3
    np.testing.assert_array_equal(np.ma.getmaskarray(image), np.isnan(want.to_numpy()))
    np.testing.assert_array_equal(image.filled(np.nan), want.to_numpy())
    assert plot.figure.axes[1].get_xlabel() == "grey:\nabsent"


@pytest.mark.parametrize("threads", ["mean", "sum", "max"])
def test_heatmap_combines_threads(sparse, threads):
    run = run_of(sparse, "format = 'tau'")
    plot = plot_heatmap(sparse, run, metric="time", top=6, threads=threads)
    want = top_by_total(per_rank(sparse, run, threads=threads), 6)
    np.testing.assert_allclose(plot.axes.images[0].get_array().filled(np.nan), want.to_numpy(), rtol=1e-12)
    assert plot.figure.axes[1].get_ylabel() == f"time, {threads} over threads"


def test_heatmap_defaults_and_errors(study):
    run = run_of(study, "nprocs = 4")
    assert plot_heatmap(study, run).figure.axes[1].get_ylabel() == "time"  # the first exclusive metric
    assert plot_heatmap(study, run, log=True).axes.images[0].norm.__class__.__name__ == "LogNorm"
    with pytest.raises(PlotError, match="needs a run id"):
        plot_heatmap(study)
    with pytest.raises(UnknownRun):
        plot_heatmap(study, "ffffffff")
    with pytest.raises(PlotError, match="no metric 'nope'"):
        plot_heatmap(study, run, metric="nope")
    with pytest.raises(PlotError, match="threads="):
        plot_heatmap(study, run, threads="median")
    with pytest.raises(PlotError, match="only together with a Lake"):
        plot_heatmap(study.graphframe(run), run)


# -- files and Jupyter ------------------------------------------------------------------------------------------
def svg_text(path) -> str:
    root = ET.parse(path).getroot()
    return "\n".join("".join(el.itertext()) for el in root.iter() if el.tag.endswith("}text"))


def test_svg_and_png_files(study, tmp_path):
    run = run_of(study, "nprocs = 8")
    plots = {"imbalance": plot_imbalance(study.imbalance(run), top=5),
             "scaling": plot_scaling(study.scaling_table("time"), top=3, metric="time"),
             "heatmap": plot_heatmap(study, run, top=5)}
    for kind, plot in plots.items():
        svg = plot.save(tmp_path / f"{kind}.SVG")
        text = svg_text(svg)
        ax = plot.axes
        title = plot.figure.get_suptitle() or ax.get_title(loc="left")
        assert title, kind
        for label in (ax.get_xlabel(), ax.get_ylabel(), title):
            assert label in text, (kind, label)
        for tick in ax.get_yticklabels() if kind != "scaling" else ax.get_xticklabels():
            assert tick.get_text() in text
        png = plot.save(tmp_path / f"{kind}.png").read_bytes()
        assert png.startswith(PNG_MAGIC)
        width, height = struct.unpack(">II", png[16:24])  # the IHDR chunk
        w_in, h_in = plot.figure.get_size_inches()
        assert (width, height) == (w_in * 100, h_in * 100)
        assert (w_in * 4).is_integer() and (h_in * 4).is_integer()  # quarter inches: whole pixels
        small = plot.save(tmp_path / f"{kind}-40.png", dpi=40).read_bytes()
        assert struct.unpack(">II", small[16:24]) == (w_in * 40, h_in * 40)
    twice = plot_heatmap(study, run, top=5)
    assert twice.to_bytes("svg") == plot_heatmap(study, run, top=5).to_bytes("svg")  # reproducible bytes
    with pytest.raises(PlotError, match=r"\.pdf'; use \.png or \.svg"):
        plots["heatmap"].save(tmp_path / "out.pdf")
    with pytest.raises(PlotError, match="no extension"):
        plots["heatmap"].save(tmp_path / "out")
    with pytest.raises(PlotError, match="cannot write"):
        plots["heatmap"].save(tmp_path / "missing" / "out.png")
    assert not (tmp_path / "out.pdf").exists() and not (tmp_path / "out").exists()


def test_jupyter_reprs(study):
    plot = plot_heatmap(study, run_of(study, "nprocs = 2"), top=4)
    png, svg = plot._repr_png_(), plot._repr_svg_()
    assert isinstance(png, bytes) and png.startswith(PNG_MAGIC)
    assert isinstance(svg, str) and "<svg" in svg and "rank" in svg
    assert repr(plot).startswith("Plot(heatmap, ") and plot.figure.axes[0] is plot.axes
    assert plot.figure.canvas.__class__.__name__ == "FigureCanvasAgg"


# -- command line -----------------------------------------------------------------------------------------------
def test_cli_writes_the_plots(study, tmp_path, capsys):
    root = study.root
    run = run_of(study, "nprocs = 8")
    cases = {
        "imb.png": ["plot", "imbalance", "--lake", root, "--top", "5", "--where", "nprocs = 8"],
        "imb-max.svg": ["plot", "imbalance", run, "--lake", root, "--by", "max", "--title", "Max per call path"],
        "scaling.svg": ["plot", "scaling", "--lake", root, "--by", "nprocs", "--logx", "--ideal", "--top", "4"],
        "heat.png": ["plot", "heatmap", run[:8], "--lake", root, "--metric", "time (inc)", "--top", "6"],
    }
    for name, argv in cases.items():
        out = tmp_path / name
        assert main([*map(str, argv), "-o", str(out)]) == 0
        assert capsys.readouterr().out == f"wrote {out}\n"
        head = out.read_bytes()[:8]
        assert (head == PNG_MAGIC) if name.endswith(".png") else head.startswith(b"<?xml")
    assert "Max per call path" in svg_text(tmp_path / "imb-max.svg")
    scaling = svg_text(tmp_path / "scaling.svg")
    assert "nprocs" in scaling and "ideal strong scaling" in scaling


@pytest.mark.parametrize("argv, message", [
    (["plot", "heatmap", "RUN", "-o", "{tmp}/out.jpg"], "out.jpg: cannot write a plot with '.jpg'"),
    (["plot", "heatmap", "ffffffff", "-o", "{tmp}/out.png"], "no run 'ffffffff'"),
    (["plot", "heatmap", "RUN", "--metric", "nope", "-o", "{tmp}/out.png"], "no metric 'nope'"),
    (["plot", "scaling", "--where", "nprocs > 1000", "-o", "{tmp}/out.png"], "no runs selected"),
    (["plot", "imbalance", "--by", "name", "-o", "{tmp}/out.svg"], "no numeric column 'name'"),
])
def test_cli_user_errors_exit_2_with_one_line(study, tmp_path, capsys, argv, message):
    run = run_of(study, "nprocs = 2")
    argv = [a.replace("{tmp}", str(tmp_path)).replace("RUN", run) for a in argv] + ["--lake", str(study.root)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("perflake: ") and message in err
    assert not list(tmp_path.iterdir())


def test_cli_does_not_import_matplotlib_until_a_plot_is_made():
    code = "import sys, perflake.cli.app; perflake.cli.app._parser(); print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    assert out.stdout.strip() == "False"


# -- labels -----------------------------------------------------------------------------------------------------
def test_labels_are_short_and_distinct():
    assert shorten("MPI_Recv()") == "MPI_Recv()"
    assert shorten("void restrict_residual(Field &, const Field &)", 24) == "restrict_residual(\u2026)"
    assert shorten("void std::__introsort_loop<int*, long>(size_t)", 40) == "void std::__introsort_loop<\u2026>(\u2026)"
    assert len(shorten("x" * 100, 30)) == 30
    labels = path_labels([("main", "a", "solve"), ("main", "b", "solve"), ("main", "solve"), ("main",)])
    assert labels == ["\u2026 > a > solve", "\u2026 > b > solve", "main > solve", "main"]
    grown = path_labels([("r", "x", "a", "solve"), ("r", "y", "a", "solve")])  # collide on two frames: grow
    assert grown == ["\u2026 > x > a > solve", "\u2026 > y > a > solve"]
    assert path_labels([("m", "f"), ("m", "f")], [" [run1]", " [run2]"]) == ["m > f [run1]", "m > f [run2]"]
    assert issubclass(PlotError, PerflakeError)


def test_imbalance_labels_of_look_alike_deep_paths_fit(tmp_path):
    """Paths that differ only deep down (HPCToolkit's '<unknown procedure>' chains) once gave 277-character
    labels, and constrained layout collapsed the axes (a warning, an unreadable picture)."""
    import warnings

    rows = pd.DataFrame({"path": [("main",) + ("<unknown procedure>",) * k + ("loop",) for k in range(1, 13)],
                         "imbalance": np.linspace(3.0, 1.5, 12), "metric": "time", "run_id": "r" * 16})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plot = plot_imbalance(rows, top=12)
        plot.save(tmp_path / "deep.png")
    labels = list(plot.data["label"])
    assert max(map(len, labels)) <= 94 and len(set(labels)) == 12
    assert plot.figure.get_size_inches()[0] >= 0.058 * max(map(len, labels)) + 7.0
