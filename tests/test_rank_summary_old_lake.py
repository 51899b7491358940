"""A lake written by perflake of schema 3 (tests/data/lake-schema3: generated, written by the perflake before the
rank summary) opened by this one: the migration 0003-rank-summary builds every batch's rank_summary file, and
every per-rank question answers from it exactly what that perflake answered from the metrics rows."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from perflake import Lake
from perflake.catalogs.catalog import Catalog
from perflake.catalogs.schema import MARKER, RANK_SUMMARY, RANK_SUMMARY_FILE_SCHEMA, SCHEMA_VERSION
from perflake.ingest.summarize import summarize
from rank_lakes import answers, load, normalized, same

FIXTURE = Path(__file__).parent / "data" / "lake-schema3"


@pytest.fixture(scope="module")
def migrated(tmp_path_factory):
    root = tmp_path_factory.mktemp("old") / "lake"
    shutil.copytree(FIXTURE / "lake", root)
    assert json.loads((root / MARKER).read_text())["schema_version"] == 3 and not (root / RANK_SUMMARY).exists()
    lake = Lake(root)
    assert lake.catalog().migrated == ["0003-rank-summary"]
    return root, lake


def test_the_migration_builds_every_batch_summary(migrated):
    root, lake = migrated
    info = json.loads((root / MARKER).read_text())
    assert info["schema_version"] == SCHEMA_VERSION == 4
    assert [m["name"] for m in info["migrations"]] == ["0003-rank-summary"]
    cat = lake.catalog()
    batches = cat.batches()
    assert len(batches) == 4 and cat.having(RANK_SUMMARY, batches) == set(batches)
    assert not [p for p in (root / RANK_SUMMARY).iterdir() if not p.name.startswith("part-")]  # no temporary file
    for batch in batches:
        written = pq.read_table(cat.path(RANK_SUMMARY, batch))
        assert written.schema.remove_metadata() == RANK_SUMMARY_FILE_SCHEMA
        assert written.equals(summarize(cat.read_parquet(cat.path("metrics", batch))))
    for table in ("runs", "nodes", "edges", "metrics"):  # the old files are untouched
        for part in (FIXTURE / "lake" / table).glob("*.parquet"):
            assert (root / table / part.name).read_bytes() == part.read_bytes()
    assert Lake(root).catalog().migrated == []  # once


def test_every_answer_is_what_the_old_perflake_gave(migrated, monkeypatch):
    _, lake = migrated
    files = Catalog.files

    def no_metrics_rows(self, table, batches):  # (Lake.connect names the files of its views: no read)
        assert table != "metrics" or sys._getframe(1).f_code.co_name == "connect", "a question read the metrics rows"
        return files(self, table, batches)

    monkeypatch.setattr(Catalog, "files", no_metrics_rows)
    now, before = answers(lake), load(FIXTURE / "answers")
    assert now.keys() == before.keys()
    for name, want in before.items():  # imbalance's share: the run totals summed by DuckDB's fsum, by pandas before
        same(normalized(now[name]), want, name)
    assert len(before["imbalance-default"]) > 300 and before["changes-values"].shape[1] == 12


def test_a_new_batch_gets_its_summary_with_the_old_ones(migrated, tmp_path):
    from rank_lakes import sparse_caliper

    root, _ = migrated
    copy = tmp_path / "lake"
    shutil.copytree(root, copy)
    lake = Lake(copy)
    assert lake.ingest(sparse_caliper(tmp_path / "in", nodes=10, ranks=3, runs=2, seed=9, drop=0.2, levels=False)).ok
    cat = lake.catalog()
    assert len(cat.batches()) == 5 and cat.having(RANK_SUMMARY, cat.batches()) == set(cat.batches())
    new = next(b for b in cat.batches() if not (root / RANK_SUMMARY / f"part-{b}.parquet").exists())
    assert pq.read_table(cat.path(RANK_SUMMARY, new)).equals(summarize(cat.read_parquet(cat.path("metrics", new))))
    assert lake.sql("select count(distinct run_id) as n from rank_summary")["n"][0] == 14
    assert np.isfinite(lake.imbalance(metric="time", source="summary")["mean"]).all()
