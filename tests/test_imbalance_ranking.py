"""Imbalance ranking that finds what matters (perflake.analytics.imbalance_ranking): ``lake.imbalance(by=...,
min_share=...)`` and ``perflake imbalance --by ... --min-share ...`` on two hand-written Caliper json-split runs of
two ranks whose statistics, shares and orders are computed by hand below.

Run A, exclusive time per rank (rank 0, rank 1); io runs on rank 0 only::

    main                 1     1        inclusive 41.51  53.07   (run total 94.58)
      solve             30    50                  40     52
        MPI_Allreduce   10     2                  10      2
      io               0.5     -                  0.5     -
      tiny            0.01  0.07                  0.01   0.07

Run B is run A with io = 50 on rank 0 (run total 144.08).
"""

from __future__ import annotations

import json
import math

import pytest

from perflake import Lake
from perflake.cli import main
from perflake.errors import UsageError

TREE = [("main", None), ("solve", 0), ("MPI_Allreduce", 1), ("io", 0), ("tiny", 0)]
A = {"main": (1, 1), "solve": (30, 50), "MPI_Allreduce": (10, 2), "io": (0.5, None), "tiny": (0.01, 0.07)}
B = {**A, "io": (50.0, None)}
TOTAL_A, TOTAL_B = 94.58, 144.08


def write_run(path, exclusive: dict) -> None:
    names = [n for n, _ in TREE]
    inc = {n: list(v) for n, v in exclusive.items()}
    for i in range(len(TREE) - 1, 0, -1):  # children after parents
        name, parent = TREE[i]
        for r in range(2):
            if inc[name][r] is not None:
                inc[names[parent]][r] += inc[name][r]
    data = [[inc[n][r], r, exclusive[n][r], i] for i, n in enumerate(names) for r in range(2)
            if exclusive[n][r] is not None]
    doc = {"data": data, "columns": ["inclusive#sum#time.duration", "mpi.rank", "sum#time.duration", "path"],
           "column_metadata": [{"is_value": True, "attribute.unit": "sec"}, {"is_value": True},
                               {"is_value": True, "attribute.unit": "sec"}, {"is_value": False}],
           "nodes": [{"column": "path", "label": n, **({} if p is None else {"parent": p})} for n, p in TREE],
           "cali.caliper.version": "2.10.0", "mpi.world.size": "2", "run": path.stem}
    path.write_text(json.dumps(doc))


@pytest.fixture(scope="module")
def lake(tmp_path_factory):
    root = tmp_path_factory.mktemp("ranking")
    (root / "in").mkdir()
    write_run(root / "in" / "a.json", A)
    write_run(root / "in" / "b.json", B)
    lake = Lake(root / "lake")
    assert len(lake.ingest([root / "in" / "a.json", root / "in" / "b.json"]).ingested) == 2
    return lake


@pytest.fixture(scope="module")
def run_a(lake):
    runs = lake.sql("select run_id, source from runs")
    return runs.loc[runs["source"].str.endswith("a.json"), "run_id"].iloc[0]


def names(rows) -> list:
    return [r["name"] for r in rows] if isinstance(rows, list) else list(rows["name"])


def test_statistics_total_and_share_by_hand(lake, run_a):
    df = lake.imbalance(run_a, metric="time").set_index("name")
    want = {  # name: mean, max, std (ddof 1), imbalance, total
        "main": (1, 1, 0, 1, 2),
        "solve": (40, 50, math.sqrt(200), 1.25, 80),
        "MPI_Allreduce": (6, 10, math.sqrt(32), 10 / 6, 12),
        "io": (0.5, 0.5, math.nan, 1, 0.5),
        "tiny": (0.04, 0.07, math.sqrt(0.0018), 1.75, 0.08),
    }
    for name, (mean, mx, std, imb, total) in want.items():
        row = df.loc[name]
        assert row["mean"] == pytest.approx(mean) and row["max"] == pytest.approx(mx)
        assert (math.isnan(row["std"]) if math.isnan(std) else row["std"] == pytest.approx(std)), name
        assert row["imbalance"] == pytest.approx(imb) and row["total"] == pytest.approx(total)
        assert row["share"] == pytest.approx(total / TOTAL_A), name
    # an inclusive metric: the run's total is the root's, so main's share is 1
    inc = lake.imbalance(run_a, metric="time (inc)").set_index("name")
    assert inc.loc["main", "share"] == pytest.approx(1.0) and inc.loc["main", "total"] == pytest.approx(TOTAL_A)
    assert inc.loc["solve", "share"] == pytest.approx(92 / TOTAL_A)
    # absent='zero': io's rank 1 counts as 0, its total (and share) unchanged
    zero = lake.imbalance(run_a, metric="time", absent="zero").set_index("name")
    assert zero.loc["io", "imbalance"] == pytest.approx(2) and zero.loc["io", "share"] == pytest.approx(0.5 / TOTAL_A)


@pytest.mark.parametrize("by, min_share, order", [
    ("imbalance", 0.0, ["tiny", "MPI_Allreduce", "solve", "main", "io"]),  # the 80 ms 'tiny' tops max/mean
    ("imbalance", 0.01, ["MPI_Allreduce", "solve", "main"]),  # io (0.53%) and tiny (0.085%) dropped
    ("max", 0.0, ["solve", "MPI_Allreduce", "main", "io", "tiny"]),
    ("std", 0.0, ["solve", "MPI_Allreduce", "tiny", "main", "io"]),  # io's std is NaN (one location): last
    ("time", 0.0, ["solve", "MPI_Allreduce", "main", "io", "tiny"]),
    ("mean", 0.0, ["solve", "MPI_Allreduce", "main", "io", "tiny"]),
    ("time", 0.1, ["solve", "MPI_Allreduce"]),  # 84.6% and 12.7%; main is 2.1%
])
def test_orders_by_hand(lake, run_a, by, min_share, order):
    assert names(lake.imbalance(run_a, metric="time", by=by, min_share=min_share)) == order


def test_shares_are_per_run(lake):
    df = lake.imbalance(metric="time", min_share=0.01)
    runs = lake.sql("select run_id, source from runs").set_index("run_id")["source"]
    kept = {(runs[r].rsplit("/", 1)[-1], n) for r, n in zip(df["run_id"], df["name"])}
    assert kept == {("a.json", "MPI_Allreduce"), ("a.json", "solve"), ("a.json", "main"),
                    ("b.json", "MPI_Allreduce"), ("b.json", "solve"), ("b.json", "main"), ("b.json", "io")}
    io = df[df["name"] == "io"].iloc[0]
    assert io["share"] == pytest.approx(50 / TOTAL_B)
    assert names(lake.imbalance(metric="time", min_share=0.01, top=2)) == ["MPI_Allreduce", "MPI_Allreduce"]


def test_errors(lake):
    with pytest.raises(UsageError, match="use imbalance, max, std, mean, time"):
        lake.imbalance(metric="time", by="median")
    with pytest.raises(UsageError, match="between 0 and 1"):
        lake.imbalance(metric="time", min_share=5)


def test_cli(lake, run_a, capsys):
    root = str(lake.root)
    assert main(["imbalance", run_a, "--lake", root, "--metric", "time", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert names(rows) == ["MPI_Allreduce", "solve", "main"]  # --min-share 0.01 by default
    assert rows[0]["share"] == pytest.approx(12 / TOTAL_A) and rows[0]["total"] == pytest.approx(12)
    assert main(["imbalance", run_a, "--lake", root, "--metric", "time", "--format", "json", "--by", "max",
                 "--min-share", "0"]) == 0
    assert names(json.loads(capsys.readouterr().out)) == ["solve", "MPI_Allreduce", "main", "io", "tiny"]
    with pytest.raises(SystemExit):
        main(["imbalance", "--lake", root, "--by", "median"])
    assert main(["imbalance", "--lake", root, "--metric", "time", "--min-share", "2"]) == 2
    assert "between 0 and 1" in capsys.readouterr().err
