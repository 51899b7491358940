"""Defaults that fit the data (issue 13, item 10): the metric shown when none is named comes from the run's
metrics by one rule (perflake.frame.defaults), the tree names it, and the tree header is perflake's own.

Deviation from Hatchet, on purpose: for a Spot/RAJAPerf ``.cali`` (no ``time``) Hatchet 2026.2.0's
``from_caliperreader`` takes the first column, ``Min time/rank`` (and files all four timers as exclusive);
perflake takes ``Avg time/rank``, the metric Thicket users read (the rule: an inclusive time, the average of a
min/max/avg/total family first).  Where Hatchet's reader picks ``time`` (Caliper, old HPCToolkit, JSON),
``GraphFrame.default_metric`` stays ``time`` for code ported from Hatchet, but ``perflake tree`` shows its
inclusive partner: a tree of exclusive values means little.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import perflake
from perflake.analytics.ensemble import default_metric, ensemble, scaling_table
from perflake.cli import app as cli
from perflake.frame.defaults import frame_default, is_time_like, preferred, selection_default, shown_metric
from perflake.generators import WRITERS
from perflake.readers.base import EXCLUSIVE, INCLUSIVE, OTHER, Metric

SPOT = [Metric(n, INCLUSIVE, "sec") for n in ("Min time/rank", "Max time/rank", "Avg time/rank", "Total time")] + [
    Metric(n, OTHER) for n in ("BlockSize", "Bytes/Rep", "Node order", "Reps")]
TAU = [Metric("PAPI_L2_TCM", EXCLUSIVE, None, "PAPI_L2_TCM (inc)"), Metric("PAPI_L2_TCM (inc)", INCLUSIVE),
       Metric("time", EXCLUSIVE, "usec", "time (inc)"), Metric("time (inc)", INCLUSIVE, "usec", "time")]


# -- the rule ----------------------------------------------------------------------------------------------
def test_rule_prefers_an_inclusive_time_and_the_average_of_a_family():
    assert preferred(SPOT) == "Avg time/rank"
    raw = [Metric(f"{s}#inclusive#sum#time.duration", INCLUSIVE) for s in ("min", "max", "avg", "sum")]
    assert preferred(raw) == "avg#inclusive#sum#time.duration"  # the same family under Caliper's own names
    assert preferred(TAU) == "time (inc)"  # a time before a counter, whatever their order
    assert preferred([Metric("Max time/rank", INCLUSIVE), Metric("Total time", INCLUSIVE)]) == "Total time"
    assert preferred([Metric("time", EXCLUSIVE), Metric("count (inc)", INCLUSIVE)]) == "count (inc)"  # inclusive first
    assert preferred([Metric("bytes (inc)", INCLUSIVE), Metric("flops (inc)", INCLUSIVE)]) == "bytes (inc)"
    assert preferred([Metric("flops", EXCLUSIVE), Metric("time", EXCLUSIVE)]) == "time"
    assert preferred([Metric("flops", EXCLUSIVE), Metric("bytes", EXCLUSIVE)]) == "flops"
    assert preferred([Metric("Reps", OTHER), Metric("x", OTHER)]) == "Reps" and preferred([]) is None


def test_time_like_by_unit_or_name():
    assert is_time_like(Metric("wall", INCLUSIVE, "usec")) and is_time_like(Metric("CPUTIME (sec) (I)", INCLUSIVE))
    assert is_time_like(Metric("REALTIME", EXCLUSIVE))
    assert is_time_like(Metric("sum#cupti.activity.duration", EXCLUSIVE))
    for name in ("timestamp", "Node order", "Iterations/Rep", "PAPI_TOT_CYC", "count"):
        assert not is_time_like(Metric(name, INCLUSIVE)), name
    assert preferred([Metric("count", INCLUSIVE), Metric("wall", INCLUSIVE, "usec")]) == "wall"


def test_frame_default_keeps_hatchets_time_where_its_reader_picks_it():
    caliper = [Metric("time", EXCLUSIVE, "usec", "time (inc)"), Metric("time (inc)", INCLUSIVE, "usec", "time")]
    for fmt in ("caliper", "caliper_json", "hpctoolkit", "hatchet_json"):
        assert frame_default(caliper, fmt) == "time"
    assert frame_default(caliper, "tau") == "time (inc)" and frame_default(caliper, "hpctoolkit_v4") == "time (inc)"
    assert frame_default(SPOT, "caliper") == "Avg time/rank" and frame_default(SPOT, None) == "Avg time/rank"


def test_selection_default_takes_the_metrics_most_runs_have():
    spot = [{"name": m.name, "role": m.role, "unit": m.unit, "pair": m.pair} for m in SPOT]
    tau = [{"name": m.name, "role": m.role, "unit": m.unit, "pair": m.pair} for m in TAU]
    assert selection_default([spot] * 5 + [tau]) == ("Avg time/rank", 5)
    assert selection_default([spot] + [tau] * 2) == ("time (inc)", 2)
    assert selection_default([spot, tau]) == ("Avg time/rank", 1)  # a tie: the rule over both
    assert selection_default([[], None]) == (None, 0)


# -- real data ---------------------------------------------------------------------------------------------
def spot_files(shared_data) -> list:
    return sorted(shared_data("rajaperf-quartz").rglob("*.cali"))


def test_spot_cali_shows_avg_time_per_rank(shared_data):
    gf = perflake.read(spot_files(shared_data)[0])
    assert "time" not in gf.dataframe.columns
    assert gf.default_metric == "Avg time/rank" and shown_metric(gf) == "Avg time/rank"
    text = gf.tree(depth=1, colour=False)
    root = gf.dataframe[gf.dataframe["name"] == "RAJAPerf"]["Avg time/rank"].iloc[0]
    assert text == f"perflake v{perflake.__version__} \u00b7 metric: Avg time/rank\n\n{root:.3f} RAJAPerf\n"


def tree_cli(capsys, *args) -> tuple[str, str]:
    assert cli.main(["tree", *map(str, args)]) == 0
    out = capsys.readouterr()
    return out.out, out.err


def test_tree_shows_the_same_inclusive_metric_from_lake_files_and_export(shared_data, tmp_path, capsys):
    """``perflake tree`` of a run from the lake, from its files and from its Hatchet JSON export: the same
    inclusive metric, named in the header, and the same tree."""
    sources = {"caliper": spot_files(shared_data)[0], "tau": shared_data("tau-cpi-mpi"),
               "caliper_json": shared_data("caliper-lulesh-json") / "lulesh-annotation-profile.json"}
    expected = {"caliper": "Avg time/rank", "tau": "time (inc)", "caliper_json": "time (inc)"}
    lake = perflake.Lake(tmp_path / "lake")
    for kind, source in sources.items():
        (run,) = lake.ingest([source]).ingested
        exported = tmp_path / f"{run}.json"
        assert cli.main(["export", run, "--lake", str(lake.root), "-o", str(exported)]) == 0
        capsys.readouterr()
        texts = [tree_cli(capsys, run, "--lake", lake.root)[0], tree_cli(capsys, source)[0],
                 tree_cli(capsys, exported)[0]]
        header = f"perflake v{perflake.__version__} \u00b7 metric: {expected[kind]}"
        for text in texts:
            assert text.splitlines()[0] == header, kind
        assert texts[0] == texts[1] == texts[2], kind
        gf = lake.graphframe(run)
        assert expected[kind] in gf.inc_metrics
        root = gf.graph.roots[0]
        first = gf.dataframe.xs(root, level="node") if "rank" in gf.dataframe.index.names else gf.dataframe.loc[[root]]
        assert texts[0].splitlines()[2].startswith(f"{first[expected[kind]].iloc[0]:.3f} ")


def test_tree_names_the_metric_on_stderr_without_header(shared_data, capsys):
    out, err = tree_cli(capsys, shared_data("tau-cpi-mpi"), "--no-header", "--depth", 1)
    assert out == "51781.000 .TAU application\n"
    assert err == "perflake: showing metric 'time (inc)' (choose with --metric)\n"
    out, err = tree_cli(capsys, shared_data("tau-cpi-mpi"), "--metric", "time", "--depth", 1)
    assert out == f"perflake v{perflake.__version__} \u00b7 metric: time\n\n449.000 .TAU application\n" and err == ""


def test_caliper_json_default_stays_hatchets_but_the_tree_is_inclusive(shared_data, capsys):
    path = shared_data("caliper-lulesh-json") / "lulesh-annotation-profile.json"
    gf = perflake.read_caliper(path)
    assert gf.default_metric == "time"  # Hatchet's from_caliper: code ported from Hatchet sees the same column
    assert gf.tree(depth=1, render_header=False, colour=False) == "121489.000 main\n"  # gf.tree() is Hatchet's
    out, _ = tree_cli(capsys, path, "--depth", 1)
    assert out.endswith("\n5882425.000 main\n") and "metric: time (inc)" in out.splitlines()[0]


@pytest.mark.parametrize("fmt", sorted(WRITERS))
def test_tree_of_any_generated_input_shows_an_inclusive_metric(tmp_path, capsys, fmt):
    (path,) = WRITERS[fmt](tmp_path / fmt, nodes=30, ranks=2, runs=1, seed=4)
    out, _ = tree_cli(capsys, path, "--depth", 1)
    metric = out.splitlines()[0].split("metric: ", 1)[1]
    assert metric in perflake.read(path).inc_metrics


# -- ensemble / scaling without --metric on a Spot lake ------------------------------------------------------
@pytest.fixture
def spot_lake(shared_data, tmp_path):
    lake = perflake.Lake(tmp_path / "lake")
    lake.ingest(spot_files(shared_data))
    return lake


def test_ensemble_and_scaling_default_to_avg_time_per_rank(spot_lake):
    assert default_metric(spot_lake) == ("Avg time/rank", 5, 5)
    got = ensemble(spot_lake, stats=("count", "mean"))
    assert set(got["metric"]) == {"Avg time/rank"} and got["count"].max() == 5
    explicit = ensemble(spot_lake, metric="Avg time/rank", stats=("count", "mean"))
    assert got.drop(columns="path").equals(explicit.drop(columns="path"))
    table = scaling_table(spot_lake, by="meta:ProblemSizeRunParam")
    assert table.attrs["metric"] == "Avg time/rank" and list(table.columns[2:]) == [1048576, 2097152]
    assert table.equals(scaling_table(spot_lake, "Avg time/rank", by="meta:ProblemSizeRunParam"))


def test_cli_ensemble_and_scaling_without_metric(spot_lake, shared_data, capsys):
    root = str(spot_lake.root)
    for command in (["ensemble", "--lake", root, "--format", "json"],
                    ["scaling", "--lake", root, "--by", "meta:ProblemSizeRunParam", "--format", "json"]):
        assert cli.main(command) == 0
        out = capsys.readouterr()
        assert out.err == "perflake: metric 'Avg time/rank' (5 of 5 selected runs have it; choose with --metric)\n"
        rows = json.loads(out.out)
        assert rows and rows[0]["name"] == "RAJAPerf"
    spot_lake.ingest([shared_data("tau-cpi-mpi")])  # a mixed lake: the metric most runs have
    assert default_metric(spot_lake) == ("Avg time/rank", 5, 6)
    assert default_metric(spot_lake, where="format = 'tau'") == ("time (inc)", 1, 1)
    proc = subprocess.run([sys.executable, "-m", "perflake.cli.app", "ensemble", "--lake", root, "--where",
                           "format = 'tau'", "--format", "csv"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "metric 'time (inc)' (1 of 1" in proc.stderr
    # the TAU root's inclusive time, the mean over its ranks: (51781 + 55329 + 54029 + 52908) / 4
    assert proc.stdout.splitlines()[1].startswith(".TAU application,.TAU application,time (inc),1,53511.75,")


def test_imbalance_compare_and_plot_without_metric(spot_lake, shared_data, tmp_path, capsys):
    """Per-rank commands read ``time`` when every selected run has it (as always), else the selection's default:
    a Spot-only lake works without --metric and the chosen metric is said on stderr."""
    root = str(spot_lake.root)
    ids = sorted(spot_lake.runs()["run_id"])
    note = "perflake: metric 'Avg time/rank' (5 of 5 selected runs have it; choose with --metric)\n"
    assert cli.main(["imbalance", "--lake", root, "--format", "json"]) == 0
    out = capsys.readouterr()
    assert out.err == note and json.loads(out.out)
    assert cli.main(["compare", ids[0], ",".join(ids[1:]), "--lake", root, "--format", "json"]) == 0
    out = capsys.readouterr()
    assert "metric 'Avg time/rank' (5 of 5" in out.err
    rows = json.loads(out.out)
    raja = next(r for r in rows if r["path"] == "RAJAPerf")
    want = spot_lake.compare(ids[0], ids[1:], metric="Avg time/rank")
    assert raja["a"] == pytest.approx(float(want.loc[want["path"].map(len) == 1, "a"].iloc[0]))
    assert cli.main(["plot", "imbalance", "--lake", root, "-o", str(tmp_path / "i.svg")]) == 0
    assert capsys.readouterr().err == note and (tmp_path / "i.svg").stat().st_size > 0
    spot_lake.ingest([shared_data("tau-cpi-mpi")])
    runs = spot_lake.runs()
    tau = runs.loc[runs["format"] == "tau", "run_id"].iloc[0]
    assert cli.main(["imbalance", tau, "--lake", root, "--format", "json"]) == 0
    out = capsys.readouterr()
    assert out.err == ""  # TAU has time: the old default, silently
    assert cli.main(["imbalance", tau, "--lake", root, "--metric", "time", "--format", "json"]) == 0
    assert capsys.readouterr().out == out.out
