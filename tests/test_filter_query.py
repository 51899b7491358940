"""GraphFrame.filter with call-path queries, and queries over the lake (API and CLI)."""

from __future__ import annotations

import json
import subprocess
import sys

from perflake.generators import write_tau_runs
from perflake.query import QueryMatcher
from test_squash import by_path, frame_of
from trees import small_exclusive_only


def test_filter_with_object_query_squashes():
    gf = frame_of(small_exclusive_only())
    out = gf.filter([{"name": "main"}, "*", {"name": "c"}], multi_index_mode="mean")  # every path main ... c
    assert by_path(out, "time") == {("main",): 1, ("main", "a"): 66, ("main", "a", "c"): 4, ("main", "b"): 16,
                                    ("main", "b", "c"): 32}
    assert by_path(out, "time (inc)")[("main",)] == 1 + 66 + 4 + 16 + 32


def test_filter_with_string_and_matcher_queries_agree():
    gf = frame_of(small_exclusive_only())
    a = gf.filter('MATCH (".", p)->("*", q) WHERE p."name" = "b" AND q."time" >= 0', squash=False,
                  multi_index_mode="mean")
    # multi-rank data: like Hatchet, a matcher predicate receives the node's rows (a DataFrame)
    b = gf.filter(QueryMatcher().match(".", lambda rows: (rows["name"] == "b").all()).rel("*"), squash=False)
    assert sorted(a.dataframe["name"]) == sorted(b.dataframe["name"]) == ["b", "b", "c", "c"]


def test_lake_query_over_runs_and_cli(tmp_path, lake):
    runs = write_tau_runs(tmp_path / "gen", nodes=60, ranks=2, runs=2, seed=4)
    lake.ingest(runs)
    df = lake.query([{"name": "MPI_.*"}])
    assert set(df["run_id"]) == set(lake.runs()["run_id"]) and df["name"].str.startswith("MPI_").all()
    one = lake.query('MATCH (".", p) WHERE p."name" STARTS WITH "MPI_"', where="n_nodes = (select max(n_nodes) from "
                                                                               "runs)")
    assert one["run_id"].nunique() == 1
    frames = lake.query([{"name": "MPI_.*"}], graphframes=True)
    assert all(set(gf.dataframe["name"]) >= {"MPI_Init()"} for gf in frames.values())
    proc = subprocess.run([sys.executable, "-m", "perflake.cli.app", "query", 'MATCH (".", p) WHERE p."name" = '
                                                                              '"MPI_Init()"',
                           "--lake", str(tmp_path / "lake"), "--format", "json"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert {r["name"] for r in json.loads(proc.stdout)} == {"MPI_Init()"} and len(json.loads(proc.stdout)) == 2
    bad = subprocess.run([sys.executable, "-m", "perflake.cli.app", "query", 'MATCH (".", p) WHERE p."name" =',
                          "--lake", str(tmp_path / "lake")], capture_output=True, text=True)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and bad.stderr.startswith("perflake: ")
