"""A lake written by perflake of schema 3 (tests/data/lake-schema3: generated, written by the perflake before the
rank summary) opened by this one: the migration 0003-rank-summary builds every batch's rank summary from its
metrics rows, then 0004-delta-tables turns the lake into Delta tables, and every per-rank question answers from
the summary exactly what that perflake answered from the metrics rows (call-path ids: 63 bits since schema 5)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from perflake import Lake
from perflake.catalogs.catalog import Catalog
from perflake.catalogs.schema import MARKER, RANK_SUMMARY, SCHEMA_VERSION
from perflake.ingest.summarize import summarize
from rank_lakes import answers, load, masked_ids, normalized, same_rows

FIXTURE = Path(__file__).parent / "data" / "lake-schema3"


@pytest.fixture(scope="module")
def migrated(tmp_path_factory):
    root = tmp_path_factory.mktemp("old") / "lake"
    shutil.copytree(FIXTURE / "lake", root)
    assert json.loads((root / MARKER).read_text())["schema_version"] == 3 and not (root / RANK_SUMMARY).exists()
    lake = Lake(root)
    assert lake.catalog().migrated == ["0003-rank-summary", "0004-delta-tables"]
    return root, lake


def _legacy_metrics(batch: str) -> pa.Table:
    table = pq.read_table(FIXTURE / "lake" / "metrics" / f"part-{batch}.parquet")
    ids = pa.compute.bit_wise_and(table.column("node_id"), pa.scalar(2**63 - 1, pa.uint64()))
    return table.set_column(table.column_names.index("node_id"), "node_id", ids)


def test_the_migration_builds_every_batch_summary(migrated):
    root, lake = migrated
    info = json.loads((root / MARKER).read_text())
    assert info["schema_version"] == SCHEMA_VERSION == 5
    assert [m["name"] for m in info["migrations"]] == ["0003-rank-summary", "0004-delta-tables"]
    cat = lake.catalog()
    batches = cat.batches()
    assert len(batches) == 4 and cat.having(RANK_SUMMARY, batches) == set(batches)
    for batch in batches:  # the summary of each batch is the one ingest computes from its metrics rows
        stored = cat.batch_rows(RANK_SUMMARY, batch).drop_columns(["batch"])
        want = summarize(_legacy_metrics(batch))
        assert stored.num_rows == want.num_rows > 0
        key = [("metric", "ascending"), ("run_id", "ascending"), ("node_id", "ascending")]
        stored = stored.sort_by(key).to_pandas()
        want = want.sort_by(key).to_pandas()
        stored["node_id"] = stored["node_id"].astype("uint64")
        for col in want.columns:
            a, b = stored[col].to_numpy(), want[col].to_numpy()
            if a.dtype.kind == "f":
                assert np.array_equal(a, b, equal_nan=True), col
            else:
                assert [list(x) if isinstance(x, np.ndarray) else x for x in a] == [
                    list(x) if isinstance(x, np.ndarray) else x for x in b], col
    assert Lake(root).catalog().migrated == []  # once


def test_every_answer_is_what_the_old_perflake_gave(migrated, monkeypatch):
    _, lake = migrated
    files = Catalog.files

    def no_metrics_rows(self, table, batches, **kw):  # (Lake.connect names the files of its views: no read)
        callers = {sys._getframe(up).f_code.co_name for up in (1, 2, 3)}
        assert table != "metrics" or "connect" in callers, "a question read the metrics rows"
        return files(self, table, batches, **kw)

    monkeypatch.setattr(Catalog, "files", no_metrics_rows)
    now, before = answers(lake), load(FIXTURE / "answers")
    assert now.keys() == before.keys()
    for name, want in before.items():  # imbalance's share: the run totals summed by DuckDB's fsum, by pandas before
        same_rows(normalized(now[name]), masked_ids(want), name)
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
    assert lake.sql("select count(distinct run_id) as n from rank_summary")["n"][0] == 14
    assert np.isfinite(lake.imbalance(metric="time", source="summary")["mean"]).all()
