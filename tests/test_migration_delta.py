"""A lake written by the last perflake of schema 4 (tests/data/lake-schema4: one Parquet file per table per batch)
opened by this one: the migration 0004-delta-tables turns every table into a Delta Lake table.  Every row is
the same (call-path ids keep 63 bits: old & 2**63-1), every answer is what that perflake gave, the legacy files
are gone, a migration stopped midway is finished by the next opener, and ``perflake migrate`` says what it did."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from perflake import Lake
from perflake.catalogs import legacy, migrations
from perflake.catalogs.catalog import Catalog
from perflake.catalogs.schema import MARKER, SCHEMA_VERSION, TABLES
from rank_lakes import answers, load, normalized

FIXTURE = Path(__file__).parent / "data" / "lake-schema4"
MASK = np.uint64(2**63 - 1)


def _legacy(table: str) -> pd.DataFrame:
    """The fixture's rows of ``table`` as the old perflake stored them (all its part files)."""
    parts = sorted((FIXTURE / "lake" / table).glob("part-*.parquet"))
    table = pa.concat_tables([pq.read_table(p) for p in parts], promote_options="permissive")
    return table.to_pandas(types_mapper={pa.uint64(): pd.UInt64Dtype()}.get)  # (ids with nulls stay exact)


def _masked(df: pd.DataFrame) -> pd.DataFrame:
    df = df.copy()
    for col in ("node_id", "parent_id", "child_id"):
        if col in df.columns:
            df[col] = df[col].astype("UInt64") & MASK
    return df


def _canonical(df: pd.DataFrame) -> pd.DataFrame:
    df = df[sorted(df.columns)].copy()
    for c in df.columns:
        if df[c].map(lambda v: isinstance(v, (list, dict, np.ndarray))).any():
            df[c] = df[c].map(lambda v: repr(list(v)) if v is not None else "None")
        elif isinstance(df[c].dtype, pd.CategoricalDtype) or not pd.api.types.is_numeric_dtype(df[c]):
            df[c] = df[c].astype(object).map(lambda v: "None" if v is None or v is pd.NA or v != v else str(v))
    return df.sort_values(list(df.columns)).reset_index(drop=True)


@pytest.fixture(scope="module")
def migrated(tmp_path_factory):
    root = tmp_path_factory.mktemp("v4") / "lake"
    shutil.copytree(FIXTURE / "lake", root)
    assert json.loads((root / MARKER).read_text())["schema_version"] == 4
    lake = Lake(root)
    assert lake.catalog().migrated == ["0004-delta-tables"]
    return root, lake


def test_the_lake_is_delta_tables_and_the_legacy_files_are_gone(migrated):
    import deltalake

    root, lake = migrated
    info = json.loads((root / MARKER).read_text())
    assert info["schema_version"] == SCHEMA_VERSION == 5
    assert [m["name"] for m in info["migrations"]] == ["0004-delta-tables"]
    for table in TABLES:
        assert deltalake.DeltaTable.is_deltatable(str(root / table)), table
        assert not [p for p in (root / table).iterdir() if legacy.PART.match(p.name) or p.name.endswith(".tmp")]
    assert (root / "README.md").is_file()
    assert Lake(root).catalog().migrated == []  # once


@pytest.mark.parametrize("table", ["runs", "nodes", "edges", "metrics", "rank_summary", "ingest_log"])
def test_every_row_is_kept(migrated, table):
    _, lake = migrated
    now = lake.sql(f"select * from {table}")
    old = _masked(_legacy(table))
    if table == "rank_summary":
        old["mean"] = old["total"] / old["count"]
    assert set(now.columns) == set(old.columns)
    assert len(now) == len(old) > 0
    for col in ("node_id", "parent_id", "child_id"):
        if col in now.columns:
            now[col] = now[col].astype("UInt64")
    pd.testing.assert_frame_equal(_canonical(now), _canonical(old[now.columns]), check_dtype=False)


def test_every_answer_is_what_the_old_perflake_gave(migrated):
    _, lake = migrated
    now, before = answers(lake), load(FIXTURE / "answers")
    assert now.keys() == before.keys()
    for name, want in before.items():
        got = normalized(now[name])
        want = _masked(want)
        for col in ("node_id",):
            if col in got.columns:
                got[col] = got[col].astype("UInt64")
        a, b = _canonical(got), _canonical(want)
        assert list(a.columns) == list(b.columns), name
        assert len(a) == len(b), name
        for col in a.columns:  # sums of floats: equal to 1e-9 of the column's scale (DuckDB's order of additions)
            if pd.api.types.is_float_dtype(a[col]):
                scale = max(1.0, float(np.nanmax(np.abs(b[col].to_numpy(dtype=float)))) if len(b) else 1.0)
                np.testing.assert_allclose(a[col].to_numpy(dtype=float), b[col].to_numpy(dtype=float),
                                           rtol=0, atol=1e-9 * scale, err_msg=f"{name}.{col}")
            else:
                assert (a[col].astype(str) == b[col].astype(str)).all(), f"{name}.{col}"


def test_a_migration_stopped_midway_is_finished_by_the_next_opener(tmp_path, monkeypatch):
    root = tmp_path / "lake"
    shutil.copytree(FIXTURE / "lake", root)
    real = migrations._delta_tables

    def stopped(cat):
        real(cat)
        raise KeyboardInterrupt  # after the Delta tables were written, before the marker says 5

    monkeypatch.setattr(migrations, "MIGRATIONS", tuple(m if m.name != "0004-delta-tables" else
                                                        migrations.Migration(m.name, 4, 5, stopped, m.summary,
                                                                             m.cleanup)
                                                        for m in migrations.MIGRATIONS))
    with pytest.raises(KeyboardInterrupt):
        Catalog(root)
    monkeypatch.undo()
    assert json.loads((root / MARKER).read_text())["schema_version"] == 4
    assert list((root / "metrics").glob("part-2*.parquet"))  # the legacy files are still there
    lake = Lake(root)
    assert lake.catalog().migrated == ["0004-delta-tables"]
    assert len(lake.runs()) == len(_legacy("runs"))
    assert lake.sql("select count(*) as n from metrics")["n"][0] == len(_legacy("metrics"))  # once, not twice


def test_cli_migrate(tmp_path, capsys):
    from perflake.cli.app import main

    root = tmp_path / "lake"
    shutil.copytree(FIXTURE / "lake", root)
    assert main(["migrate", "--lake", str(root)]) == 0
    out = capsys.readouterr().out
    assert "applied 0004-delta-tables" in out and "schema version 5" in out
    assert main(["migrate", "--lake", str(root)]) == 0
    assert "applied" not in capsys.readouterr().out


def test_a_new_ingest_after_the_migration_joins_the_old_call_paths(migrated, tmp_path):
    from rank_lakes import sparse_caliper

    root, _ = migrated
    copy = tmp_path / "lake"
    shutil.copytree(root, copy)
    lake = Lake(copy)
    old_ids = set(lake.sql("select distinct node_id from nodes")["node_id"])
    src = FIXTURE.parent.parent / "data"  # (unused) the fixture's inputs are not kept: regenerate one like them
    del src
    paths = sparse_caliper(tmp_path / "in", nodes=12, ranks=5, runs=1, seed=22, drop=0.3, levels=True)
    assert lake.ingest(paths).ingested or lake.ingest(paths).skipped
    new_ids = set(lake.sql("select distinct node_id from nodes")["node_id"])
    assert old_ids <= new_ids and len(new_ids & old_ids) > 0
