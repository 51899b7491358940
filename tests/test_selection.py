"""Run selection (perflake.analytics.selection): one resolution of run ids and prefixes for Lake, ensemble,
compare, imbalance and lake-wide queries, and private scopes for the inputs of sql/ files."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pytest

from perflake import Lake
from perflake.analytics.compare import compare
from perflake.analytics.imbalance import imbalance
from perflake.analytics.selection import resolve_ids, resolve_runs, select, select_runs
from perflake.engine import sqlfiles
from perflake.errors import LakeError, UnknownRun, UsageError
from perflake.generators import write_tau_runs

CATALOG = pa.table({"run_id": ["ab", "abc", "b1", "c9"], "n": [1, 2, 3, 4]})


def test_an_exact_id_wins_over_a_longer_id_it_prefixes():
    assert resolve_ids(CATALOG, "ab") == ["ab"]
    assert resolve_ids(CATALOG, ["abc"]) == ["abc"]


def test_a_prefix_resolves_only_when_unique():
    assert resolve_ids(CATALOG, ["b", "c"]) == ["b1", "c9"]
    with pytest.raises(LakeError, match="run id prefix 'a' is ambiguous: ab, abc"):
        resolve_ids(CATALOG, "a")
    with pytest.raises(UnknownRun):
        resolve_ids(CATALOG, ["b", "zz"])


def test_ids_keep_the_order_given_rows_keep_the_catalog_order():
    assert resolve_ids(CATALOG, ["c", "ab", "c"]) == ["c9", "ab", "c9"]
    assert resolve_runs(CATALOG, ["c", "ab"]).column("n").to_pylist() == [1, 4]


@pytest.fixture(scope="module")
def three(tmp_path_factory):
    lake = Lake(tmp_path_factory.mktemp("lake"))
    lake.ingest(write_tau_runs(tmp_path_factory.mktemp("gen"), nodes=40, ranks=2, runs=3, seed=3))
    return lake, sorted(lake.runs()["run_id"])


def test_lake_and_analytics_resolve_prefixes_the_same_way(three):
    lake, ids = three
    prefixes = [i[:8] for i in ids]
    assert lake.resolve(prefixes[1])["run_id"] == ids[1]
    assert select_runs(lake, [prefixes[2], prefixes[0]]) == [ids[2], ids[0]]
    catalog_order = [i for i in lake.runs()["run_id"] if i in ids[:2]]
    assert select(lake, runs=prefixes[1::-1]).runs["run_id"].tolist() == catalog_order
    by_prefix = compare(lake, prefixes[0], prefixes[1:])
    assert by_prefix.equals(compare(lake, ids[0], ids[1:]))
    assert imbalance(lake, prefixes[2]).equals(imbalance(lake, [ids[2]]))
    for call in (lambda: lake.resolve(""), lambda: select(lake, runs=""), lambda: compare(lake, "", ids[0])):
        with pytest.raises(LakeError, match="is ambiguous"):
            call()
    with pytest.raises(UsageError):
        select_runs(lake, [ids[0], 3])


def test_where_errors_name_the_condition(three):
    lake, _ = three
    with pytest.raises(LakeError, match="^where 'nope > 1': "):
        select(lake, where="nope > 1")
    with pytest.raises(LakeError, match="^--where 'nope > 1': "):
        select_runs(lake, where="nope > 1")
    assert select_runs(lake, where="run_id in (select run_id from metrics where rank = 1)") == select_runs(lake)


def test_a_scope_keeps_its_inputs_to_itself():
    """What replaced normalize._release: names registered or materialised in a scope are seen by no other cursor
    and are gone when it ends, so the same name can be an Arrow table in one scope and a temp table in the next."""
    con = duckdb.connect()
    other = con.cursor()
    with sqlfiles.scope(con, tables={"metrics_t": pa.table({"x": [1, 2]})}) as cur:
        cur.execute("create temp table closure_t as select 1 as y").fetchall()
        assert cur.sql("select sum(x) from metrics_t").fetchall() == [(3,)]
        for name in ("metrics_t", "closure_t"):
            with pytest.raises(duckdb.CatalogException):
                other.sql(f"select * from {name}").fetchall()
    with sqlfiles.scope(con) as cur:
        cur.execute("create temp table metrics_t as select 5 as x").fetchall()  # the name is free again
        assert cur.sql("select x from metrics_t").fetchall() == [(5,)]
    edges = pa.table({"run_id": [0, 0], "parent_id": pa.array([None, 1], pa.uint64()),
                      "child_id": pa.array([1, 2], pa.uint64())})
    with sqlfiles.scope(con, tables={"edges_t": edges}, views={"closure_v": ("closure", {"max_depth": 8})}) as cur:
        pairs = cur.sql("select ancestor_id, descendant_id from closure_v").fetchall()
    assert sorted(pairs) == [(1, 1), (1, 2), (2, 2)]
