"""Dask fan-out (perflake.engine.parallel): the task plan, local schedulers, and a real dask.distributed
LocalCluster (2 worker processes, 1 thread each, on loopback) giving the same results as the local
scheduler; the cluster is closed at the end of the module."""

from __future__ import annotations

import pandas as pd
import pytest

from perflake import Lake
from perflake.analytics.compare import compare
from perflake.analytics.ensemble import ensemble
from perflake.analytics.imbalance import imbalance
from perflake.engine import parallel
from perflake.generators import write_tau_runs


def rows(*spec):
    """Catalog-like rows: (run_id, batch, n_nodes, ranks, threads)."""
    return [dict(zip(("run_id", "batch", "n_nodes", "ranks", "threads"), r)) for r in spec]


def test_plan_packs_runs_of_a_batch_and_splits_big_runs():
    spec = rows(("r2", "b1", 10, 4, 1), ("r1", "b1", 10, 4, 1), ("r3", "b2", 10, 4, 1), ("big", "b1", 100, 64, 2))
    tasks = parallel.plan(spec, lambda b: [f"{b}.parquet"], task_rows=100)
    small = [t for t in tasks if t["run_ids"] != ["big"]]
    assert [t["run_ids"] for t in small] == [["r1", "r2"], ["r3"]]  # sorted, packed per batch
    assert all(t["rank_lo"] == 0 and t["rank_hi"] == parallel.RANK_MAX for t in small)
    big = [(t["rank_lo"], t["rank_hi"]) for t in tasks if t["run_ids"] == ["big"]]
    assert big[0][0] == 0 and big[-1][1] == parallel.RANK_MAX and len(big) == 64  # 12,800 rows: one rank a task
    assert all(hi + 1 == lo for (_, hi), (lo, _) in zip(big, big[1:]))  # contiguous, disjoint
    assert all(t["files"] == ["b1.parquet"] for t in tasks if "r1" in t["run_ids"] or t["run_ids"] == ["big"])
    whole = parallel.plan(spec, lambda b: [b], task_rows=100, split_ranks=False)
    assert [t["run_ids"] for t in whole] == [["big"], ["r1", "r2"], ["r3"]]  # one task for the big run
    assert parallel.plan(spec, lambda b: [b]) == parallel.plan(list(reversed(spec)), lambda b: [b])  # deterministic


def square(x):
    return x * x


def test_fan_out_local_schedulers():
    tasks = [{"x": i} for i in range(5)]
    for scheduler in (None, "synchronous", "threads", "sync"):
        assert parallel.fan_out(square, tasks, scheduler=scheduler) == [0, 1, 4, 9, 16]
    assert parallel.fan_out(square, [], scheduler="threads") == []
    with pytest.raises(ValueError, match="scheduler 'gpu'"):
        parallel.fan_out(square, tasks, scheduler="gpu")


def test_sql_task_opens_its_own_connection(tmp_path):
    lake = Lake(tmp_path / "lake")
    lake.ingest(write_tau_runs(tmp_path / "gen", nodes=20, ranks=2, runs=1, seed=2))
    row = lake.runs().iloc[0]
    scan = {"files": lake.catalog().files("metrics", [row["batch"]]), "run_ids": [row["run_id"]],
            "batch": row["batch"], "metric": "time", "rank_lo": 1, "rank_hi": 1}
    table = parallel.sql_task("imbalance_scan", scan)
    assert set(table.column("rank").to_pylist()) == {1} and table.num_rows == row["n_nodes"]


@pytest.fixture(scope="module")
def cluster():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, host="127.0.0.1",
                                  dashboard_address=None, silence_logs=40) as cluster:
        with distributed.Client(cluster, set_as_default=False) as client:
            yield cluster, client


@pytest.fixture(scope="module")
def multi_lake(tmp_path_factory):
    root = tmp_path_factory.mktemp("par")
    lake = Lake(root / "lake")
    lake.ingest(write_tau_runs(root / "a", nodes=60, ranks=8, threads=2, runs=3, seed=8))
    lake.ingest(write_tau_runs(root / "b", nodes=60, ranks=4, runs=3, seed=9))
    return lake


def test_local_cluster_gives_the_local_results(cluster, multi_lake):
    cl, client = cluster
    # imbalance: the same tasks (chunks of runs and rank ranges), so the very same bits
    local = imbalance(multi_lake, task_rows=300, scheduler="synchronous")
    for scheduler in (client, cl.scheduler_address):
        remote = imbalance(multi_lake, task_rows=300, scheduler=scheduler)
        pd.testing.assert_frame_equal(remote.drop(columns=["top_ranks", "path"]),
                                      local.drop(columns=["top_ranks", "path"]), check_exact=True)
        assert [list(r) for r in remote["top_ranks"]] == [list(r) for r in local["top_ranks"]]
    zero = imbalance(multi_lake, absent="zero", task_rows=300, scheduler=client)
    here = imbalance(multi_lake, absent="zero", task_rows=300)
    pd.testing.assert_frame_equal(zero.drop(columns=["top_ranks", "path"]), here.drop(columns=["top_ranks", "path"]),
                                  check_exact=True)
    # ensemble and compare: per-run values on the workers, the statistics in one SQL step here
    one = ensemble(multi_lake, group_by="nprocs")
    two = ensemble(multi_lake, group_by="nprocs", scheduler=client, task_rows=500)
    pd.testing.assert_frame_equal(two.drop(columns="path"), one.drop(columns="path"), check_exact=False, rtol=1e-12)
    assert (two["count"] == one["count"]).all() and (two["min"] == one["min"]).all()
    ids = sorted(multi_lake.runs()["run_id"])
    on_cluster = compare(multi_lake, ids[:3], ids[3:], scheduler=cl.scheduler_address).drop(columns="path")
    pd.testing.assert_frame_equal(on_cluster, compare(multi_lake, ids[:3], ids[3:]).drop(columns="path"),
                                  check_exact=False, rtol=1e-12)
    assert client.status == "running"  # a Client passed in is used, not closed


def test_a_scheduler_that_does_not_answer_is_a_one_line_error(tmp_path):
    """Nothing listens on 127.0.0.1:1: one line naming the address and the connect limit, exit 2 (the limit
    itself is read back in tests/test_connect_timeouts.py: tests assert no wall-clock time)."""
    import subprocess
    import sys

    from perflake.generators import write_tau_runs

    write_tau_runs(tmp_path / "in", nodes=10, ranks=2, runs=2, seed=1)
    cli = [sys.executable, "-m", "perflake.cli"]
    subprocess.run([*cli, "ingest", str(tmp_path / "in"), "--lake", str(tmp_path / "lake")], check=True,
                   capture_output=True, timeout=120)
    proc = subprocess.run([*cli, "imbalance", "--lake", str(tmp_path / "lake"), "--scheduler", "tcp://127.0.0.1:1"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("perflake: scheduler tcp://127.0.0.1:1: cannot connect within 3 s")
    assert len(proc.stderr.strip().splitlines()) == 1
