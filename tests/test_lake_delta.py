"""The lake as Delta Lake tables (issue 17): one schema any engine reads, snapshots (``as_of``), compaction.

The lake of ``rank_lakes.build_mixed`` (TAU, Caliper and HPCToolkit runs in 4 ingest batches, different metric
columns per batch) is read by perflake and by DuckDB, polars and pyarrow with the recipes of the lake's own
README (catalogs/describe.py: the README's "Reading a lake without perflake"), which must give the same rows.
"""

from __future__ import annotations

import datetime as dt
import re
import shutil
import threading

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from perflake import Lake
from perflake.catalogs import compaction, describe
from perflake.catalogs.schema import DATA_TABLES, TABLES
from rank_lakes import build_mixed, sparse_caliper

VIEWS = ("runs", "nodes", "edges", "metrics", "rank_summary", "ingest_log")


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    root = tmp_path_factory.mktemp("mixed")
    build_mixed(root)
    return root / "lake"


def _sorted(df: pd.DataFrame) -> pd.DataFrame:
    """Rows in a canonical order (nested values compared as text)."""
    df = df[sorted(df.columns)].copy()
    for c in df.columns:
        if df[c].map(lambda v: isinstance(v, (list, dict, np.ndarray))).any():
            df[c] = df[c].map(repr)
    return df.sort_values(list(df.columns)).reset_index(drop=True)


def _views(lake: Lake) -> dict[str, pd.DataFrame]:
    return {v: _sorted(lake.sql(f"select * from {v}")) for v in VIEWS}


def test_every_table_has_one_schema_and_the_same_key_types(mixed):
    import deltalake

    types = {}
    for name in TABLES:
        schema = pa.schema(deltalake.DeltaTable(str(mixed / name)).schema())
        types[name] = schema
        if name in DATA_TABLES:
            assert schema.names[:2] == ["run_id", "batch"]
    assert {types[t].field("run_id").type for t in TABLES} == {pa.string()}  # the same type everywhere
    assert {types[t].field("node_id").type for t in ("nodes", "metrics", "rank_summary")} == {pa.int64()}
    metrics = set(types["metrics"].names) - {"run_id", "batch", "node_id", "rank", "thread"}
    assert {"time", "time (inc)", "PAPI_L1"} <= metrics  # every batch's metric columns, merged
    lake = Lake(mixed)
    assert set(lake.sql("select * from metrics limit 0").columns) == set(types["metrics"].names) - {"batch"}


def _recipe(kind: str, url: str):
    """Run the README's recipe for ``kind`` (its code blocks, in the lake's description) and return the metrics."""
    text = describe.text(url)
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    code = {"duckdb": blocks[0], "polars": blocks[1], "pyarrow": blocks[2]}[kind]
    scope: dict = {}
    exec(compile(code, f"<recipe {kind}>", "exec"), scope)  # the recipe as a user pastes it
    if kind == "duckdb":
        return scope["metrics"], code
    if kind == "polars":
        return scope["metrics"].collect().to_pandas().drop(columns=["batch"]), code
    return scope["metrics"].to_pandas().drop(columns=["batch"]), code


@pytest.mark.parametrize("kind", ["duckdb", "polars", "pyarrow"])
def test_the_readme_recipes_read_what_perflake_reads(mixed, kind):
    pytest.importorskip("polars") if kind == "polars" else None
    got, code = _recipe(kind, str(mixed))
    assert len(code.strip().splitlines()) <= 4  # a short recipe (the DuckDB statement spans two lines)
    want = Lake(mixed).sql("select * from metrics")
    assert set(got.columns) == set(want.columns)
    got["node_id"] = got["node_id"].astype("uint64")  # stored int64 (63-bit ids): the same values
    cols = ["run_id", "node_id", "rank", "thread"]
    a = got[sorted(got.columns)].sort_values(cols).reset_index(drop=True)
    b = want[sorted(want.columns)].sort_values(cols).reset_index(drop=True)
    pd.testing.assert_frame_equal(a, b, check_dtype=False)
    assert len(a) == Lake(mixed).sql("select count(*) as n from metrics")["n"][0] > 100


def test_rows_of_an_uncommitted_batch_are_invisible_to_perflake_and_to_the_recipes(mixed, tmp_path):
    root = tmp_path / "lake"
    shutil.copytree(mixed, root)
    lake = Lake(root)
    before = lake.sql("select count(*) as n from metrics")["n"][0]
    cat = lake.catalog()
    rows = cat.tables.read("metrics").slice(0, 50).to_pandas()
    stray = pa.Table.from_pandas(rows.assign(batch="20990101T000000000000-deadbeef"), preserve_index=False)
    cat.tables.append("metrics", stray)  # a writer killed before its runs commit
    assert Lake(root).sql("select count(*) as n from metrics")["n"][0] == before
    for kind in ("duckdb", "pyarrow"):
        assert len(_recipe(kind, str(root))[0]) == before


def test_as_of_reads_the_older_snapshot(tmp_path):
    lake = Lake(tmp_path / "lake")
    sets = [sparse_caliper(tmp_path / f"in{i}", nodes=8, ranks=2, runs=2, seed=40 + i, drop=0.1, levels=False)
            for i in range(3)]
    versions, times, counts = [], [], []
    for paths in sets:
        lake.ingest(paths)
        versions.append(lake.catalog().tables.table("runs").version())
        times.append(dt.datetime.now(dt.timezone.utc))
        counts.append(lake.sql("select count(*) as n from metrics")["n"][0])
    assert [len(lake.runs()) for _ in (0,)] == [6]
    for i, v in enumerate(versions):
        old = Lake(tmp_path / "lake", as_of=v)
        assert len(old.runs()) == 2 * (i + 1)
        assert old.sql("select count(*) as n from metrics")["n"][0] == counts[i]
        assert set(old.sql("select distinct run_id from nodes")["run_id"]) == set(old.runs()["run_id"])
        assert len(Lake(tmp_path / "lake", as_of=times[i]).runs()) == 2 * (i + 1)
    lake.compact()  # compaction merges the batches' files: older snapshots still read right
    for i, v in enumerate(versions):
        assert Lake(tmp_path / "lake", as_of=v).sql("select count(*) as n from metrics")["n"][0] == counts[i]
    with pytest.raises(Exception, match="read-only"):
        Lake(tmp_path / "lake", as_of=versions[0]).ingest(sets[0])


def test_compaction_changes_no_answer(mixed, tmp_path):
    root = tmp_path / "lake"
    shutil.copytree(mixed, root)
    lake = Lake(root)
    for i in range(4):  # more small batches
        lake.ingest(sparse_caliper(tmp_path / f"more{i}", nodes=9, ranks=2, runs=1, seed=60 + i, drop=0.2,
                                   levels=False))
    before = _views(Lake(root))
    files_before = {t: len(lake.catalog().tables.table(t).file_uris()) for t in TABLES}
    done = Lake(root).compact()
    files_after = {t: len(Lake(root).catalog().tables.table(t).file_uris()) for t in TABLES}
    assert all(files_after[t] < files_before[t] for t in TABLES), (files_before, files_after)
    assert {c.table for c in done if c.rewritten} == set(TABLES)
    after = _views(Lake(root))
    for v in VIEWS:
        pd.testing.assert_frame_equal(after[v], before[v], obj=v)
    assert Lake(root).compact() and all(c.rewritten == 0 for c in Lake(root).compact())  # nothing left to merge
    run = Lake(root).runs()["run_id"][0]  # one run's frame from a compacted file
    assert len(Lake(root).graphframe(run).dataframe) > 0


def test_compaction_beside_a_concurrent_ingest(mixed, tmp_path):
    root = tmp_path / "lake"
    shutil.copytree(mixed, root)
    inputs = [sparse_caliper(tmp_path / f"c{i}", nodes=9, ranks=2, runs=2, seed=80 + i, drop=0.2, levels=False)
              for i in range(6)]
    errors = []

    def feed():
        try:
            for paths in inputs:
                Lake(root).ingest(paths)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    t = threading.Thread(target=feed)
    t.start()
    while t.is_alive():
        compaction.compact(Lake(root).catalog(), tables=DATA_TABLES)
    t.join()
    assert not errors, errors
    lake = Lake(root)
    assert len(lake.runs()) == len(Lake(mixed).runs()) + 12
    per_run = lake.sql("select run_id, count(*) as n from metrics group by run_id")
    assert set(per_run["run_id"]) == set(lake.runs()["run_id"])
    n_nodes = lake.sql("select run_id, count(*) as n from nodes group by run_id").set_index("run_id")["n"]
    assert (n_nodes == lake.runs().set_index("run_id")["n_nodes"].loc[n_nodes.index]).all()  # every run once


def test_ingest_compacts_past_the_threshold(tmp_path, monkeypatch):
    monkeypatch.setattr(compaction, "AUTO_FILES", 3)
    lake = Lake(tmp_path / "lake")
    for i in range(5):
        lake.ingest(sparse_caliper(tmp_path / f"in{i}", nodes=6, ranks=2, runs=1, seed=i, drop=0.0, levels=False))
    files = {t: len(lake.catalog().tables.table(t).file_uris()) for t in TABLES}
    assert all(n <= 4 for n in files.values()), files  # 5 batches, compacted once past 3 small files
    assert len(lake.runs()) == 5


def test_cli_compact(mixed, tmp_path, capsys):
    from perflake.cli.app import main

    root = tmp_path / "lake"
    shutil.copytree(mixed, root)
    before = _views(Lake(root))
    assert main(["compact", "--lake", str(root)]) == 0
    out = capsys.readouterr().out
    assert "metrics:" in out and "files" in out
    after = _views(Lake(root))
    for v in VIEWS:
        pd.testing.assert_frame_equal(after[v], before[v], obj=v)


def test_the_lake_describes_itself(mixed):
    text = (mixed / "README.md").read_text()
    for name in TABLES:
        assert f"### `{name}`" in text
    assert "Delta Lake" in text and "semi join" in text and str(mixed) in text


def test_a_lake_deleted_and_created_again_in_one_process(tmp_path):
    """Table handles and file lists are shared within a process (catalogs/delta.py): a lake removed and created
    again at the same path (a benchmark's repetitions, a notebook) is read afresh, not from the old handles."""
    root = tmp_path / "lake"
    first = sparse_caliper(tmp_path / "a", nodes=8, ranks=2, runs=2, seed=1, drop=0.0, levels=False)
    second = sparse_caliper(tmp_path / "b", nodes=9, ranks=2, runs=3, seed=2, drop=0.0, levels=False)
    for paths in (first, second, first):
        shutil.rmtree(root, ignore_errors=True)
        lake = Lake(root)
        assert len(lake.ingest(paths).ingested) == len(paths)
        assert len(Lake(root).runs()) == len(paths)
        assert set(Lake(root).sql("select distinct run_id from metrics")["run_id"]) == set(Lake(root).runs()["run_id"])


def test_a_lake_half_created_is_finished_and_a_foreign_folder_refused(tmp_path):
    """Several ingests create one new lake at once, or one was killed while creating it: a folder holding only
    lake tables (no marker yet) is finished by the next ingest; a folder with anything else is refused."""
    from perflake.catalogs.delta import DeltaTables
    from perflake.catalogs.schema import stored_schema
    from perflake.errors import LakeError

    half = tmp_path / "half"
    DeltaTables(str(half)).create("metrics", stored_schema("metrics"))  # killed after one table
    paths = sparse_caliper(tmp_path / "in", nodes=6, ranks=2, runs=2, seed=3, drop=0.0, levels=False)
    assert len(Lake(half).ingest(paths).ingested) == 2 and (half / "perflake.json").is_file()
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    with pytest.raises(LakeError, match="not empty, but is not a perflake lake"):
        Lake(foreign).ingest(paths)
    assert [p.name for p in foreign.iterdir()] == ["notes.txt"]


def test_a_new_lake_is_created_while_the_inputs_are_read_and_its_failure_is_one_error(tmp_path):
    """An ingest into a new lake creates its six tables in a thread while it reads the inputs: the lake is
    whole when ingest returns (marker, tables, runs); a table that cannot be created (a file where its folder
    goes, a damaged log) stops the ingest with one LakeError naming the lake (checked before each input), and
    leaves the folder as it was."""
    from perflake.catalogs.catalog import Catalog
    from perflake.errors import LakeError

    paths = sparse_caliper(tmp_path / "in", nodes=6, ranks=2, runs=3, seed=4, drop=0.0, levels=False)
    lake = Lake(tmp_path / "new")
    assert len(lake.ingest(paths).ingested) == 3
    assert sorted(p.name for p in (tmp_path / "new").iterdir()) == sorted([*TABLES, "README.md", "perflake.json",
                                                                          ".commit.lock"])
    assert len(Lake(tmp_path / "new").runs()) == 3
    for name in TABLES:  # every table a Delta table whose log begins with the creation
        assert (tmp_path / "new" / name / "_delta_log" / f"{0:020d}.json").is_file()
    cat = Catalog(str(tmp_path / "fresh"), create=True)
    assert cat.runs().num_rows == 0 and cat.read_log().num_rows == 0  # waits for the tables, then reads them
    assert not cat.creating()

    blocked = tmp_path / "blocked"
    blocked.mkdir()
    (blocked / "runs").write_text("not a table")
    with pytest.raises(LakeError, match=f"{re.escape(str(blocked))}: cannot create the lake") as err:
        Lake(blocked).ingest(paths)
    assert "\n" not in str(err.value)
    assert [p.name for p in blocked.iterdir()] == ["runs"]
