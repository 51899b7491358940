"""Lake behaviour: idempotent and atomic ingest, stable call-path ids across runs and processes."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pyarrow as pa
import pytest

from conftest import lake_files as _lake_files
from perflake import Lake
from perflake.catalogs.catalog import Catalog
from perflake.errors import LakeError
from perflake.generators import write_tau_runs


def lake_files(root):
    """The lake's files except its ingest log (which records every attempt, including failed ones)."""
    return {k: v for k, v in _lake_files(root).items() if not k.startswith("ingest_log/")}


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    out = tmp_path_factory.mktemp("gen")
    return write_tau_runs(out, nodes=120, ranks=4, runs=2, seed=7)


def test_reingest_same_bytes_adds_nothing(two_runs, tmp_path, lake):
    first = lake.ingest(two_runs)
    assert len(first.ingested) == 2 and not first.failed
    before = lake_files(tmp_path / "lake")
    moved = tmp_path / "elsewhere"
    shutil.copytree(two_runs[0], moved)  # same bytes at another path: still the same run
    again = lake.ingest([*two_runs, moved])
    assert again.ingested == [] and len(again.skipped) == 3
    assert again.summary() == "ingested 0 runs, skipped 3 already present, 0 failed"
    assert lake_files(tmp_path / "lake") == before


def test_bad_input_leaves_lake_unchanged(two_runs, tmp_path, lake):
    lake.ingest([two_runs[0]])
    before = lake_files(tmp_path / "lake")
    bad = tmp_path / "bad"
    shutil.copytree(two_runs[1], bad)
    victim = sorted(bad.glob("profile.*"))[1]
    victim.write_bytes(victim.read_bytes()[:2000])  # truncated mid-file
    report = lake.ingest([bad])
    assert report.ingested == [] and len(report.failed) == 1
    assert str(victim) in report.failed[0][1] and "truncated" in report.failed[0][1]
    assert lake_files(tmp_path / "lake") == before


def test_failure_while_committing_leaves_no_partial_run(two_runs, tmp_path, lake, monkeypatch):
    lake.ingest([two_runs[0]])
    before = lake_files(tmp_path / "lake")

    before = table_rows(tmp_path / "lake")

    def broken_commit(self, head, runs):
        raise OSError("disk full (injected)")

    monkeypatch.setattr(Catalog, "commit", broken_commit)
    with pytest.raises(OSError, match="injected"):
        lake.ingest([two_runs[1]])
    assert table_rows(tmp_path / "lake") == before  # the batch's rows were deleted again (and nothing logged:
    # a failed commit is tried again by the next ingest, as before Delta)
    monkeypatch.undo()
    assert len(Lake(tmp_path / "lake").ingest([two_runs[1]]).ingested) == 1


def table_rows(root) -> dict[str, int]:
    """Rows of each of the lake's Delta tables (the latest version, committed or not)."""
    import deltalake

    from perflake.catalogs.schema import TABLES

    return {t: deltalake.DeltaTable(str(root / t)).to_pyarrow_table().num_rows for t in TABLES}


def test_same_call_path_same_id_across_runs(two_runs, lake):
    lake.ingest(two_runs)
    shared = lake.sql(
        """
        select count(*) as n from (
            select node_id from nodes group by node_id having count(distinct run_id) = 2
        )
        """
    ).loc[0, "n"]
    per_run = lake.sql("select run_id, count(*) as n from nodes group by run_id")["n"]
    assert shared >= 0.9 * per_run.min()  # perturbed runs share most call paths...
    assert shared < per_run.max()  # ...but not all
    # and a shared id means the same path of names in both runs
    bad = lake.sql(
        "select node_id from nodes group by node_id having count(distinct name) > 1 or count(distinct depth) > 1"
    )
    assert bad.empty


def test_ids_are_stable_across_processes(shared_data):
    code = (
        "import perflake;"
        f"gf = perflake.read_tau({str(shared_data('tau-cpi-mpi'))!r});"
        "print(sorted(n.node_id for n in gf.graph.traverse()))"
    )
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={"PYTHONHASHSEED": seed, "PATH": ""}).stdout for seed in ("1", "2")}
    assert len(outs) == 1 and len(eval(outs.pop())) == 12


def test_one_batch_file_per_table_and_sorted(two_runs, tmp_path, lake):
    lake.ingest(two_runs)
    cat = lake.catalog()
    for table in ("nodes", "edges", "metrics", "runs", "rank_summary"):
        assert len(cat.tables.table(table).file_uris()) == 1
    df = lake.sql("select run_id, node_id, rank, thread from metrics")
    assert df.equals(df.sort_values(["run_id", "node_id", "rank", "thread"]).reset_index(drop=True))


def test_reading_a_missing_lake_is_a_clear_error(tmp_path):
    with pytest.raises(LakeError, match="not a perflake lake"):
        Lake(tmp_path / "nothing").runs()


def test_graphframe_from_lake_equals_direct_read(two_runs, lake):
    import perflake

    lake.ingest([two_runs[0]])
    run_id = lake.runs().loc[0, "run_id"]
    a = lake.graphframe(run_id[:8]).dataframe
    b = perflake.read_tau(two_runs[0]).dataframe
    assert a.shape == b.shape
    assert (a.index == b.index).all()
    assert a[["time", "time (inc)"]].equals(b[["time", "time (inc)"]])


def test_memory_filesystem_lake_is_refused(two_runs):
    """fsspec's memory:// lives in one process, and Delta Lake's writer (delta-rs) has no access to it: a lake
    needs a local disk or S3, and says so in one line."""
    from perflake.errors import StorageError

    with pytest.raises(StorageError, match="memory:// is not supported"):
        Lake("memory://perflake-test-lake").ingest([two_runs[0]])


def test_graphframe_from_lake_keeps_metric_roles(two_runs, lake):
    lake.ingest([two_runs[0]])
    gf = lake.graphframe(lake.runs().loc[0, "run_id"])
    assert gf.default_metric == "time (inc)" and gf.exc_metrics == ["time"] and gf.inc_metrics == ["time (inc)"]
    df = gf.dataframe.xs(0, level="rank")
    for node in gf.graph.traverse():  # an inclusive value covers its children's
        assert df.loc[node, "time (inc)"] >= sum(df.loc[c, "time (inc)"] for c in node.children)


def test_catalog_counts_match_the_tables(two_runs, lake):
    lake.ingest(two_runs)
    df = lake.sql(
        """
        select r.run_id, r.n_nodes, r.ranks, r.threads,
               (select count(*) from nodes n where n.run_id = r.run_id) as nodes_rows,
               (select count(distinct rank) from metrics m where m.run_id = r.run_id) as ranks_seen
        from runs r
        """
    )
    assert (df["n_nodes"] == df["nodes_rows"]).all() and (df["ranks"] == df["ranks_seen"]).all()
    assert (df["ranks"] == 4).all() and (df["threads"] == 1).all()


def test_vacuum_removes_only_old_leftovers(two_runs, tmp_path, lake):
    lake.ingest([two_runs[0]])
    root = tmp_path / "lake"
    cat = lake.catalog()
    committed = table_rows(root)
    rows = cat.tables.read("nodes").slice(0, 5).to_pandas()
    for batch in ("20200101T000000000000-deadbeef", "29990101T000000000000-cafef00d"):  # crashed; still running
        cat.tables.append("nodes", pa.Table.from_pandas(rows.assign(batch=batch), preserve_index=False))
    assert table_rows(root)["nodes"] == committed["nodes"] + 10
    assert lake.vacuum(older_than=3600) == ["nodes/batch=20200101T000000000000-deadbeef"]
    assert table_rows(root)["nodes"] == committed["nodes"] + 5  # the young batch stays
    young = cat.tables.read("nodes").to_pandas()
    assert set(young["batch"]) == set(lake.runs()["batch"]) | {"29990101T000000000000-cafef00d"}
    assert len(lake.runs()) == 1 and len(lake.sql("select * from nodes")) == committed["nodes"]


def test_concurrent_ingests_duplicate_nothing(tmp_path):
    """Issue 7 acceptance: four CLI processes ingest the same 200 files into one new lake at once: exactly 200
    runs, each once, no error, and one 'ingested' log row per run."""
    from perflake.generators import write_caliper_json_runs

    gen = write_caliper_json_runs(tmp_path / "gen", nodes=20, ranks=2, runs=200, seed=11)
    lake_dir = tmp_path / "lake"
    procs = [subprocess.Popen([sys.executable, "-m", "perflake.cli.app", "ingest", str(tmp_path / "gen"), "--lake",
                               str(lake_dir), "--quiet"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(4)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs) and all(err == "" for _, err in outs), outs
    lake = Lake(lake_dir)
    runs = lake.sql("select run_id, count(*) as n from runs group by run_id")
    assert len(gen) == 200 and len(runs) == 200 and (runs["n"] == 1).all()
    rows = lake.sql("select count(*) as n from (select distinct run_id, node_id, rank, thread from metrics)")
    total = lake.sql("select count(*) as n from metrics")
    assert rows.loc[0, "n"] == total.loc[0, "n"]  # no duplicated metric rows either
    log = lake.sql("select status, count(*) as n, count(distinct run_id) as runs from ingest_log group by status")
    log = log.set_index("status")
    assert log.loc["ingested", "n"] == log.loc["ingested", "runs"] == 200 and "failed" not in log.index
