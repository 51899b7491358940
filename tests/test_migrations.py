"""Schema versions: an older lake is migrated by named, recorded migrations; a newer or unknown one is refused
with what to do; a read-only old lake is left alone with the command to run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from perflake import Lake
from perflake.catalogs import migrations
from perflake.catalogs.schema import INGEST_LOG, MARKER, RANK_SUMMARY, SCHEMA_VERSION
from perflake.cli.app import main
from perflake.errors import LakeError
from perflake.generators.tau import write_tau_runs

FIXTURE = Path(__file__).parent / "data" / "lake-schema4" / "lake"  # written by the last perflake of schema 4


def _as_version_1(root) -> None:
    """What a lake written by perflake with schema version 1 looks like: the legacy layout (one Parquet file per
    table per batch) without ingest_log/ nor rank_summary/, marker version 1."""
    for folder in (INGEST_LOG, RANK_SUMMARY):
        shutil.rmtree(root / folder)
    info = json.loads((root / MARKER).read_text())
    info["schema_version"] = 1
    info.pop("migrations", None)
    (root / MARKER).write_text(json.dumps(info))


def _fixture_tau_inputs(out: Path) -> list:
    """The fixture's first batch's inputs again (tests/rank_lakes.py build_mixed: deterministic generators)."""
    return write_tau_runs(out, nodes=12, ranks=3, threads=2, runs=4, seed=21, metrics=("TIME", "PAPI_L1"))


@pytest.fixture
def old_lake(tmp_path):
    root = tmp_path / "lake"
    shutil.copytree(FIXTURE, root)
    runs = pa.concat_tables([pq.read_table(p) for p in sorted((root / "runs").glob("part-*.parquet"))])
    before = runs.select(["run_id", "n_nodes"]).sort_by("run_id").to_pandas()
    _as_version_1(root)
    return root, _fixture_tau_inputs(tmp_path / "src"), before


def test_the_migration_path_reaches_this_version():
    assert SCHEMA_VERSION == 5
    assert [m.name for m in migrations.pending(1)] == ["0001-ingest-log", "0002-child-order", "0003-rank-summary",
                                                       "0004-delta-tables"]
    assert [m.name for m in migrations.pending(3)] == ["0003-rank-summary", "0004-delta-tables"]
    assert [m.name for m in migrations.pending(4)] == ["0004-delta-tables"]
    assert migrations.pending(SCHEMA_VERSION) == []
    names = [m.name for m in migrations.MIGRATIONS]
    assert len(set(names)) == len(names) and all(m.to_version == m.from_version + 1 for m in migrations.MIGRATIONS)


ALL = ["0001-ingest-log", "0002-child-order", "0003-rank-summary", "0004-delta-tables"]


def test_opening_an_old_lake_migrates_it_and_records_the_migration(old_lake):
    root, src, before = old_lake
    lake = Lake(root)
    assert lake.catalog().migrated == ALL
    info = json.loads((root / MARKER).read_text())
    assert info["schema_version"] == SCHEMA_VERSION
    assert [(m["name"], m["from"], m["to"]) for m in info["migrations"]] == [
        ("0001-ingest-log", 1, 2), ("0002-child-order", 2, 3), ("0003-rank-summary", 3, 4),
        ("0004-delta-tables", 4, 5)]
    assert (root / INGEST_LOG).is_dir()
    got = lake.sql("select run_id, n_nodes from runs order by run_id")
    assert got.to_dict("list") == before.to_dict("list")  # data untouched
    assert Lake(root).catalog().migrated == []  # once
    report = Lake(root).ingest(src)  # and the lake works on: already-present runs recognised
    assert not report.ingested and len(report.skipped) == 4
    assert Lake(root).sql("select count(*) as n from ingest_log").loc[0, "n"] >= 4


def test_a_newer_lake_is_refused_with_what_to_do(old_lake):
    root, _, _ = old_lake
    info = json.loads((root / MARKER).read_text())
    info["schema_version"] = SCHEMA_VERSION + 1
    (root / MARKER).write_text(json.dumps(info))
    with pytest.raises(LakeError, match="written by a newer perflake .*upgrade perflake"):
        Lake(root).runs()


def test_an_unknown_version_is_refused_with_what_to_do(old_lake):
    root, _, _ = old_lake
    info = json.loads((root / MARKER).read_text())
    info["schema_version"] = 0
    (root / MARKER).write_text(json.dumps(info))
    with pytest.raises(LakeError, match="no migration to version .*ingest the inputs again into a new lake"):
        Lake(root).runs()


def test_a_read_only_old_lake_is_not_touched(old_lake, monkeypatch):
    """Storage that refuses writes (simulated: the tests run as root, which chmod cannot stop)."""
    import contextlib
    import errno

    from perflake.catalogs.catalog import Catalog

    root, _, _ = old_lake
    marker = (root / MARKER).read_bytes()

    @contextlib.contextmanager
    def read_only(self, timeout=None):
        raise OSError(errno.EROFS, "Read-only file system")
        yield

    monkeypatch.setattr(Catalog, "commit_lock", read_only)
    with pytest.raises(LakeError, match="not writable here .*perflake migrate --lake .* with write access"):
        Lake(root).runs()
    assert (root / MARKER).read_bytes() == marker and not (root / INGEST_LOG).exists()


def test_migrate_command(old_lake, capsys):
    root, _, _ = old_lake
    assert main(["migrate", "--lake", str(root)]) == 0
    out = capsys.readouterr().out
    assert "applied 0001-ingest-log" in out and f"schema version {SCHEMA_VERSION}, up to date" in out
    assert main(["migrate", "--lake", str(root)]) == 0
    assert "applied" not in capsys.readouterr().out


def _as_version_2(root) -> None:
    """A lake written by perflake with schema version 2: legacy nodes files without child_order, no
    rank_summary/, marker version 2."""
    for part in (root / "nodes").glob("part-*.parquet"):
        table = pq.read_table(part)
        pq.write_table(table.drop_columns(["child_order"]), part)
    shutil.rmtree(root / RANK_SUMMARY)
    info = json.loads((root / MARKER).read_text())
    info["schema_version"] = 2
    info["migrations"] = info.get("migrations", [])[:1]
    (root / MARKER).write_text(json.dumps(info))


def test_a_version_2_lake_opens_and_lists_children_in_frame_order(tmp_path):
    """Schema 3 adds nodes.child_order (siblings in the input's order); runs ingested before have none: their
    children come in frame order, as they did, and runs ingested after the migration have it."""
    shutil.copytree(FIXTURE, tmp_path / "current")
    current_lake = Lake(tmp_path / "current")
    run = current_lake.sql("select run_id from runs where format = 'tau' order by run_id limit 1")["run_id"][0]
    current = current_lake.graphframe(run)
    root = tmp_path / "lake"
    shutil.copytree(FIXTURE, root)
    _as_version_2(root)
    lake = Lake(root)
    assert lake.catalog().migrated == ["0002-child-order", "0003-rank-summary", "0004-delta-tables"]
    old = lake.graphframe(run)
    assert old.graph == current.graph and old.dataframe.equals(current.dataframe)  # same values, same pre-order
    for node in old.graph:
        assert [c.frame.tuple_repr for c in node.children] == sorted(c.frame.tuple_repr for c in node.children)
    assert lake.sql("select count(*) as n from nodes where child_order is null").loc[0, "n"] == len(
        lake.sql("select * from nodes"))
    orders = [[c.frame["name"] for c in n.children] for n in current.graph]
    assert any(o != sorted(o) for o in orders)  # the generator's order is not the frame order: a real check
