"""The TAU reader against llnl-hatchet 2026.2.0's reading of the real cpi-mpi profiles (../shared/golden).

Deviation from Hatchet (formats.md B.24): Hatchet fills a missing file/module with the integer 0; perflake
keeps them missing (None).  The golden compares names and metrics only, so this does not show here.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

import perflake

METRICS = ["Calls", "Subrs", "time", "time (inc)"]


def _by_callpath(df: pd.DataFrame) -> pd.DataFrame:
    """Rows keyed by (call path of names, rank), same-name siblings summed, as the golden is written."""
    return df.groupby(["callpath", "rank"], sort=True)[METRICS].sum(min_count=1)


def _from_graphframe(gf) -> pd.DataFrame:
    df = gf.dataframe.reset_index()
    df["callpath"] = [tuple(n.frame["name"] for n in node.path()) for node in df["node"]]
    return _by_callpath(df)


def _check(ours: pd.DataFrame, gold: pd.DataFrame) -> None:
    gold = _by_callpath(gold)
    assert sorted(ours.index) == sorted(gold.index)
    pd.testing.assert_frame_equal(ours.loc[gold.index, METRICS], gold[METRICS], check_exact=False, rtol=1e-9)


def test_read_tau_matches_golden(shared_data, golden):
    import golden as golden_check

    gf = perflake.read_tau(shared_data("tau-cpi-mpi"))
    golden_check.compare(gf, golden("tau-cpi-mpi"))
    assert len(gf.graph) == 12  # formats.md section 7: 12 nodes, 4 ranks, 48 rows
    assert len(gf.dataframe) == 48
    assert list(gf.dataframe.index.names) == ["node", "rank"]
    assert gf.exc_metrics == ["time"] and gf.inc_metrics == ["time (inc)"]
    assert gf.default_metric == "time (inc)"
    _check(_from_graphframe(gf), golden("tau-cpi-mpi"))


def test_lake_sql_matches_golden(shared_data, golden, lake):
    report = lake.ingest([shared_data("tau-cpi-mpi")])
    assert len(report.ingested) == 1
    rows = lake.sql(
        """
        with recursive p as (
            select node_id, [name] as callpath from nodes where parent_id is null
            union all
            select n.node_id, list_append(p.callpath, n.name) from nodes n join p on n.parent_id = p.node_id
        )
        select p.callpath, m.rank, m."Calls", m."Subrs", m."time", m."time (inc)"
        from metrics m join p using (node_id)
        """
    )
    rows["callpath"] = [tuple(c) for c in rows["callpath"]]
    rows["rank"] = rows["rank"].astype("int64")  # the lake stores rank as INTEGER
    _check(_by_callpath(rows), golden("tau-cpi-mpi"))


def test_root_inclusive_is_sum_of_exclusive(shared_data):
    """TAU callpath profiles are additive (formats.md section 6): per rank, root inc = sum of all exc."""
    df = perflake.read_tau(shared_data("tau-cpi-mpi")).dataframe.reset_index()
    root = df[df["name"] == ".TAU application"].set_index("rank")["time (inc)"]
    total = df.groupby("rank")["time"].sum()
    np.testing.assert_allclose(root.sort_index().to_numpy(), total.sort_index().to_numpy())
    assert root.loc[0] == 51781 and root.loc[1] == 55329


def test_run_metadata_is_typed(shared_data, lake):
    lake.ingest([shared_data("tau-cpi-mpi")])
    runs = lake.runs()
    assert runs.loc[0, "format"] == "tau" and runs.loc[0, "ranks"] == 4 and runs.loc[0, "threads"] == 1
    assert runs.loc[0, "app"] == "cpi-mpi" and runs.loc[0, "hostname"] == "nid01045"
    assert str(runs.loc[0, "launch_time"]).startswith("2021-03-01 15:16:01")
    meta = lake.sql("select metadata->>'$.\"TAU Version\"' as v, (metadata->'$.\"CPU Cores\"')::int as cores from runs")
    assert meta.loc[0, "cores"] == 16 and meta.loc[0, "v"]
    roles = {m["name"]: m["role"] for m in runs.loc[0, "metrics"]}
    assert roles == {"time": "exclusive", "time (inc)": "inclusive", "Calls": "other", "Subrs": "other"}
