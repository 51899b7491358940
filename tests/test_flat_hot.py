"""Flat profiles (sums per function across contexts) and hot paths, against hand values and plain pandas."""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pytest

import perflake
from literal import MOCK_GRAPH, RANKS_GRAPH, SPECIAL_GRAPH, graphframe
from perflake.cli.app import main
from perflake.errors import RenderError
from perflake.generators import WRITERS
from perflake.render.flat_profile import flat_profile
from perflake.render.hot_path import hot_path, hot_path_table


def names(path):
    return [n.frame["name"] for n in path]


# -- flat profile --------------------------------------------------------------------------------------------------
def test_flat_profile_by_hand_on_hatchets_mock_graph():
    flat = graphframe(MOCK_GRAPH).flat_profile()
    assert list(flat.columns) == ["time (inc)", "time"] and flat.index.name == "name"
    # grault: 4 contexts of 10; garply: 3 of 15; bar: 3 contexts of inclusive 20 (its own 5 exclusive each)
    assert flat.loc["grault", "time"] == 40.0 and flat.loc["garply", "time"] == 45.0
    assert (flat.loc["bar", "time"], flat.loc["bar", "time (inc)"]) == (15.0, 60.0)
    # waldo: a root (inc 30, exc 10) and under foo (inc 55, exc 0)
    assert (flat.loc["waldo", "time"], flat.loc["waldo", "time (inc)"]) == (10.0, 85.0)
    # sorted by "time" (the exclusive partner of the default "time (inc)"), descending; ties by name
    assert list(flat.index[:4]) == ["garply", "grault", "baz", "bar"]
    assert flat["time"].is_monotonic_decreasing  # not a timing


def test_flat_profile_equals_an_independent_pandas_groupby():
    gf = graphframe(MOCK_GRAPH)
    expected = gf.dataframe.groupby("name")[["time (inc)", "time"]].sum()
    pd.testing.assert_frame_equal(gf.flat_profile().sort_index(), expected.sort_index(), check_names=False)


def test_flat_profile_multi_rank_mean_then_sum_as_hatchet(tmp_path):
    run = WRITERS["tau"](tmp_path, nodes=300, ranks=3, runs=1, seed=4)[0]
    gf = perflake.read_tau(run)
    df = gf.dataframe.reset_index()
    df["path"] = [tuple(f.frame["name"] for f in n.path()) for n in df["node"]]
    per_node = df.groupby("path").agg(name=("name", "first"), time=("time", "mean"), Calls=("Calls", "mean"))
    expected = per_node.groupby("name")[["time", "Calls"]].sum().sort_values("time", ascending=False, kind="stable")
    got = flat_profile(gf, metrics=["time", "Calls"])
    pd.testing.assert_frame_equal(got, expected, check_names=False, rtol=1e-12)
    assert len(got) < len(gf.graph)  # functions are called from several contexts


def test_flat_profile_aggregates_and_single_rank():
    gf = graphframe(RANKS_GRAPH)  # time: a [20, 4], c [8, 24] (c only under b)
    assert gf.flat_profile().loc["c", "time"] == 16.0  # mean over ranks
    assert gf.flat_profile(aggregate="sum").loc["c", "time"] == 32.0
    assert gf.flat_profile(aggregate="max").loc["a", "time"] == 20.0
    one = gf.flat_profile(aggregate=None, rank=1)
    assert (one.loc["c", "time"], one.loc["a", "time"]) == (24.0, 4.0)
    assert list(one.index) == ["c", "a", "b", "main"]


def test_flat_profile_by_file_and_type_keeps_unmeasured_as_nan():
    gf = graphframe(SPECIAL_GRAPH)  # flops: main 2, mpi_send NaN, kernel_a inf, kernel_b 3, io -inf
    by_file = flat_profile(gf, "file", ["time", "flops"])
    assert by_file.loc["mpi.c", "time"] == 5.0 and np.isnan(by_file.loc["mpi.c", "flops"])
    missing = by_file.index.isna()
    assert by_file.loc[missing, "time"].tolist() == [14.0]  # kernel_b 10 + io 4 have no file
    by_name = flat_profile(gf, metrics="flops", sort_by="flops")
    assert by_name.index[-1] == "mpi_send"  # NaN sorts last
    by_type = flat_profile(graphframe(MOCK_GRAPH), "type", "time")
    # every exclusive value (165) but those of the frames without a type: bar 3 x 5, grault 4 x 10, quux 5
    assert by_type.loc["function", "time"] == 165.0 - 3 * 5.0 - 4 * 10.0 - 5.0
    assert by_type.loc[by_type.index.isna(), "time"].tolist() == [60.0]


def test_flat_profile_errors():
    gf = graphframe(MOCK_GRAPH)
    with pytest.raises(RenderError, match="cannot group by 'colour'"):
        gf.flat_profile("colour")
    with pytest.raises(RenderError, match="no metric 'nope' in this frame"):
        gf.flat_profile(metrics=["nope"])
    with pytest.raises(RenderError, match="cannot sort by 'time'"):
        gf.flat_profile(metrics=["time (inc)"], sort_by="time")


# -- hot path --------------------------------------------------------------------------------------------------------
def test_hot_path_stops_after_the_first_child_under_the_threshold():
    gf = graphframe(MOCK_GRAPH)
    # foo 135: largest child qux 60 < 0.5 x 135 -> appended, then stop
    assert names(gf.hot_path()) == ["foo", "qux"]
    # 0.4: qux 60 >= 54, quux 60, corge 55 >= 24; corge's largest child bar 20 < 22 -> stop after bar
    assert names(hot_path(gf, threshold=0.4)) == ["foo", "qux", "quux", "corge", "bar"]
    # 0: down to a leaf, bar's largest child grault 10
    assert names(hot_path(gf, threshold=0.0)) == ["foo", "qux", "quux", "corge", "bar", "grault"]


def test_hot_path_from_a_start_node():
    gf = graphframe(MOCK_GRAPH)
    # foo/waldo 55 -> fred 40 -> xyzzy 30 -> thud 25 -> garply 15 (>= 12.5), a leaf
    assert names(gf.hot_path("waldo")) == ["waldo", "fred", "xyzzy", "thud", "garply"]
    waldo_root = next(r for r in gf.graph.roots if r.frame["name"] == "waldo")
    assert names(gf.hot_path(waldo_root)) == ["waldo", "bar", "grault"]  # 30 -> 20 -> 10 (>= 10)
    with pytest.raises(RenderError, match="no node named 'nope'"):
        gf.hot_path("nope")


def test_hot_path_over_ranks():
    gf = graphframe(RANKS_GRAPH)  # time (inc): main [31, 31], a [20, 4], b [10, 26], c [8, 24]
    assert names(gf.hot_path()) == ["main", "b", "c"]  # mean: b 18 >= 15.5, c 16 >= 9
    assert names(gf.hot_path(aggregate=None, rank=0)) == ["main", "a"]  # a 20 >= 15.5, a leaf
    assert names(gf.hot_path(aggregate=None, rank=1)) == ["main", "b", "c"]
    table = hot_path_table(gf, gf.hot_path())
    assert table["time (inc)"].tolist() == [31.0, 18.0, 16.0]
    np.testing.assert_allclose(table["% of parent"], [100.0, 100 * 18 / 31, 100 * 16 / 18])
    np.testing.assert_allclose(table["% of start"], [100.0, 100 * 18 / 31, 100 * 16 / 31])


# -- command line ----------------------------------------------------------------------------------------------------
def test_cli_flat_and_hotpath(tmp_path, capsys):
    run = WRITERS["tau"](tmp_path, nodes=200, ranks=2, runs=1, seed=3)[0]
    gf = perflake.read_tau(run)
    assert main(["flat", str(run), "--format", "csv", "--top", "0", "--metric", "time"]) == 0
    got = pd.read_csv(io.StringIO(capsys.readouterr().out), keep_default_na=False)
    expected = flat_profile(gf, metrics="time")
    assert got["name"].tolist() == [str(n) for n in expected.index]
    np.testing.assert_allclose(got["time"], expected["time"])
    assert main(["flat", str(run), "--top", "3", "--rank", "1"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 4
    assert main(["hotpath", str(run), "--format", "json", "--threshold", "0.3"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in rows] == names(hot_path(gf, threshold=0.3))
    assert main(["flat", str(run), "--by", "colour"]) == 2
    assert capsys.readouterr().err.startswith("perflake: cannot group by 'colour'")
