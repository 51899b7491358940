"""The Ensemble (issue 16 item 1): Thicket's dataframe / metadata / statsframe over runs of a lake, read lazily,
and the operations that make new ensembles.  Values are checked against the lake itself (each run's
GraphFrame, SQL over the metrics table) and, for the Thicket JSON export, against llnl-thicket's reader."""

from __future__ import annotations

import json
import sys
import warnings

import numpy as np
import pandas as pd
import pytest

import thicket_stats
from conftest import DATA, ROOT, _need, need_bench_python

sys.path.insert(0, str(ROOT / "bench"))
import cali_writer  # noqa: E402

from perflake import Ensemble, Lake  # noqa: E402
from perflake.analytics import ensemble_tables  # noqa: E402
from perflake.errors import MetadataKeyWarning, UsageError  # noqa: E402
from perflake.generators import write_tau_runs  # noqa: E402

M = "Avg time/rank"


def path_of(node) -> tuple:
    return tuple(str(n.frame.get("name")) for n in node.path())


@pytest.fixture(scope="module")
def raja(tmp_path_factory):
    lake = Lake(tmp_path_factory.mktemp("raja") / "lake")
    lake.ingest([_need(DATA / "rajaperf-quartz")])
    return lake


@pytest.fixture(scope="module")
def gapped(tmp_path_factory):
    """16 RAJAPerf-like runs (4 variants), each lacking about a fifth of the kernels."""
    root = tmp_path_factory.mktemp("gapped")
    cali_writer.write_cali_profiles(root / "cali", 16, seed=11, missing=0.2)
    lake = Lake(root / "lake")
    lake.ingest([root / "cali"])
    return lake


def test_nothing_is_read_until_asked_and_nothing_twice(gapped, monkeypatch):
    calls = {"values": 0, "nodes": 0}
    for name in calls:
        real = getattr(ensemble_tables, f"read_{name}")

        def counted(*a, _real=real, _name=name, **k):
            calls[_name] += 1
            return _real(*a, **k)

        monkeypatch.setattr(ensemble_tables, f"read_{name}", counted)
    ens = gapped.ensemble_of(metric=M)
    assert calls == {"values": 0, "nodes": 0} and len(ens) == 16
    ens.stats.mean([M])
    assert calls == {"values": 1, "nodes": 1} and ens._dataframe is None  # statistics never build pandas rows
    groups = ens.groupby("variant")
    for sub in groups.values():
        sub.stats.median([M])
        assert len(sub.dataframe) == len(ens.graph) * 4
    sub.filter_profile(sub.profile[:2]).query([{"name": "Stream.*"}]).stats.std([M])
    assert calls == {"values": 1, "nodes": 1}  # sub-ensembles slice the parent's tables


def test_dataframe_holds_each_runs_values(raja):
    ens = raja.ensemble_of()
    df = ens.dataframe
    assert list(df.index.names) == ["node", "profile"] and len(df) == 74 * 5
    assert ens.profile == sorted(raja.runs()["run_id"]) and set(ens.metrics) >= {M, "Bytes/Rep", "Reps"}
    assert ens.inc_metrics[:4] == ["Min time/rank", "Max time/rank", M, "Total time"] and ens.default_metric == M
    for run in ens.profile:
        gf = raja.graphframe(run)
        want = {path_of(n): v for n, v in gf.dataframe[M].items()}
        part = df.xs(run, level="profile")
        assert {path_of(n): v for n, v in part[M].items()} == want
        assert list(part["name"]) == [n.frame.get("name") for n in part.index]
    assert [n for n in df.index.get_level_values("node")[::5]] == list(ens.graph)  # pre-order, then profile


def test_metadata_is_every_catalog_column_and_key_typed(raja):
    ens = raja.ensemble_of(metric=M)
    md = ens.metadata
    assert md.index.name == "profile" and list(md.index) == ens.profile
    runs = raja.runs()
    assert set(runs.columns) - {"run_id", "metadata"} <= set(md.columns)
    keys = set().union(*(json.loads(m) for m in runs["metadata"]))
    assert keys <= set(md.columns) and len(keys) == 30
    assert md["omp_max_threads"].dtype == "Int64" and (md["omp_max_threads"] == 72).all()  # Adiak's "72"
    assert md["launchdate"].dtype == np.int64 and md["ProblemSizeRunParam"].dtype == np.float64
    assert md["compiler_version"].iloc[0] == "10.3.1" and isinstance(md["libraries"].iloc[0], list)
    assert md.loc[ens.profile[0], "source"].endswith(".cali")


def test_missing_call_paths_intersection_and_union(gapped):
    ens = gapped.ensemble_of(metric=M)
    df = ens.dataframe
    have = gapped.sql("select node_id, count(distinct run_id) as n from nodes group by node_id")
    n_runs = dict(zip(have["node_id"].astype("uint64"), have["n"]))
    assert len(ens.graph) == len(n_runs) and len(df) == len(n_runs) * 16
    absent = df["name"].isna()
    assert absent.any() and df.loc[absent, M].isna().all() and df.loc[~absent, M].notna().all()
    per_node = (~absent).groupby(level="node").sum()
    assert {n.node_id: int(c) for n, c in per_node.items()} == n_runs
    inter = ens.intersection()
    assert sorted(n.node_id for n in inter.graph) == sorted(k for k, v in n_runs.items() if v == 16)
    assert inter.dataframe["name"].notna().all()
    base = ens.groupby("variant")[("Base_Seq",)]
    assert len(base.graph) == len(ens.graph)  # a sub-ensemble keeps its parent's tree (Thicket's fill_perfdata)
    mine = base.union()
    present = base.dataframe.groupby(level="node")["name"].count()
    assert sorted(n.node_id for n in mine.graph) == sorted(n.node_id for n, c in present.items() if c > 0)


def test_filter_metadata_with_a_callable_or_sql(gapped):
    ens = gapped.ensemble_of(metric=M)
    md = ens.metadata
    a = ens.filter_metadata(lambda row: row["variant"] == "RAJA_Seq" and row["ProblemSizeRunParam"] < 2e6)
    b = ens.filter_metadata("variant = 'RAJA_Seq' and ProblemSizeRunParam < 2e6")
    want = md[(md["variant"] == "RAJA_Seq") & (md["ProblemSizeRunParam"] < 2e6)].index.tolist()
    assert a.profile == b.profile == want and len(want) == 1
    assert list(a.metadata.index) == want and set(a.dataframe.index.get_level_values("profile")) == set(want)
    assert ens.filter_metadata("omp_max_threads > 1").profile == md[md["omp_max_threads"] > 1].index.tolist()
    with pytest.raises(UsageError, match="did you mean 'variant'"):
        ens.filter_metadata(lambda row: row["varaint"] == "x")
    with pytest.raises(UsageError, match="varaint"):
        ens.filter_metadata("varaint = 'x'")
    with pytest.raises(UsageError, match="no profile satisfies"):
        ens.filter_metadata("variant = 'CUDA'")


def test_groupby_keys_are_tuples_and_a_missing_key_is_never_silent(gapped, tmp_path):
    ens = gapped.ensemble_of(metric=M)
    groups = ens.groupby(["variant", "meta:ProblemSizeRunParam"])
    md = ens.metadata
    assert sorted(groups) == sorted(set(zip(md["variant"], md["ProblemSizeRunParam"])))
    for (variant, size), sub in groups.items():
        assert set(sub.metadata["variant"]) == {variant} and set(sub.metadata["ProblemSizeRunParam"]) == {size}
    with pytest.raises(UsageError, match="no profile has metadata key 'meta:nokey'"):
        ens.groupby("meta:nokey")
    gapped_root = gapped.root
    mixed = Lake(tmp_path / "mixed")
    mixed.ingest([f"{gapped_root}/../cali", write_tau_runs(tmp_path / "tau", nodes=20, ranks=2, runs=2, seed=3)[0]])
    both = mixed.ensemble_of(where="format = 'caliper' or format = 'tau'")
    with pytest.warns(MetadataKeyWarning, match="1 of 17 profiles have no metadata key 'variant'"):
        parts = both.groupby("variant")
    nan_key = [k for k in parts if pd.isna(k[0])]
    assert len(nan_key) == 1 and len(parts[nan_key[0]]) == 1


def test_query_across_profiles(gapped):
    ens = gapped.ensemble_of(metric=M)
    q = 'MATCH (".", p)->("*", k) WHERE p."name" = "Stream"'
    got = ens.query(q)
    per_run = gapped.query(q)
    assert sorted(n.node_id for n in got.graph) == sorted(set(per_run["node_id"].astype("uint64")))
    assert set(got.profile) == set(ens.profile) and got.dataframe.index.get_level_values("node").nunique() == len(
        got.graph)
    # a metric condition: "any" profile's row, "all" rows (a profile without the call path fails it),
    # "mean" the mean over the profiles that have it ("off" refuses several rows per node, as Hatchet)
    df = ens.dataframe
    kernels = df[df.index.get_level_values("node").map(lambda n: "_" in str(n.frame.get("name")))]
    median = float(kernels[M].median())
    for mode, threshold, reduce in (("any", median, lambda s, t: (s > t).any()),
                                    ("all", 0.0, lambda s, t: (s > t).all()),  # NaN (absent) is not > 0
                                    ("mean", median, lambda s, t: s.mean() > t)):
        sub = ens.query([{"name": ".*_.*", M: f"> {threshold}"}], multi_index_mode=mode)
        want = {n.node_id for n, s in kernels[M].groupby(level="node") if reduce(s, threshold)}
        assert {n.node_id for n in sub.graph} == want and 0 < len(want) < 67, mode
    kept = ens.query([{"name": "Basic"}, "*", {"name": "Basic_DAXPY"}])
    assert [path_of(n) for n in kept.graph] == [("Basic",), ("Basic", "Basic_DAXPY")]  # below its nearest kept
    # nodes hash by their graph's pre-order number (Hatchet's): the parent's node is found by call-path id
    same = next(n for n in ens.graph if n.node_id == kept.graph.roots[0].node_id)
    assert kept.dataframe.xs(kept.graph.roots[0], level="node")[M].equals(  # ancestor, values as measured
        ens.dataframe.xs(same, level="node")[M])
    root_less = ens.query([{"name": "Basic_DAXPY$|Stream_ADD$"}])  # squashed: two roots, as Thicket
    assert [path_of(n) for n in root_less.graph] == [("Basic_DAXPY",), ("Stream_ADD",)]
    with pytest.raises(UsageError, match="matches no call path"):
        ens.query([{"name": "nothing"}])


def test_concat_by_columns_and_by_index(gapped):
    ens = gapped.ensemble_of(metric=[M, "Bytes/Rep"])
    groups = ens.groupby("variant")
    a, b = groups[("Base_Seq",)], groups[("RAJA_OpenMP",)]
    both = Ensemble.concat([a, b], axis="columns", headers=["base", "omp"])
    df = both.dataframe
    assert list(df.columns) == [("name", ""), ("base", M), ("base", "Bytes/Rep"), ("omp", M), ("omp", "Bytes/Rep")]
    assert list(df.index.names) == ["node", "profile"] and both.profile == [0, 1, 2, 3]
    for i, (run_a, run_b) in enumerate(zip(a.profile, b.profile)):
        got = df.xs(i, level="profile")
        assert got[("base", M)].to_numpy() == pytest.approx(
            a.dataframe.xs(run_a, level="profile")[M].to_numpy(), nan_ok=True)
        assert got[("omp", M)].to_numpy() == pytest.approx(
            b.dataframe.xs(run_b, level="profile")[M].to_numpy(), nan_ok=True)
    assert both.metadata[("omp", "variant")].tolist() == ["RAJA_OpenMP"] * 4
    both.stats.mean([("base", M)])
    assert both.statsframe[("base", f"{M}_mean")].to_numpy() == pytest.approx(
        a.dataframe[M].groupby(level="node", sort=False).mean().to_numpy(), nan_ok=True)
    uneven = Ensemble.concat([a, b.filter_profile(b.profile[:3])], axis="columns", headers=["x", "y"])
    assert uneven.dataframe.xs(3, level="profile")[("y", M)].isna().all()
    inter = Ensemble.concat([a, b], axis="columns", headers=["x", "y"], calltree="intersection")
    present = (df[[("base", M), ("omp", M)]].notna().groupby(level="node").all()).all(axis=1)
    assert {n.node_id for n in inter.graph} == {n.node_id for n, ok in present.items() if ok}
    together = Ensemble.concat([a, b], axis="index")
    assert together.profile == sorted(a.profile + b.profile) and together.metrics == [M, "Bytes/Rep"]
    with pytest.raises(UsageError, match="before concat"):
        both.groupby("variant")


def test_tree_of_a_stats_column_or_of_one_profile(raja):
    ens = raja.ensemble_of(metric=M)
    ens.stats.mean([M])
    text = ens.tree(f"{M}_mean", depth=1, colour=False)
    mean_root = ens.dataframe.xs(ens.graph.roots[0], level="node")[M].mean()
    assert f"{mean_root:.3f} RAJAPerf" in text and f"metric: {M}_mean" in text
    first = ens.tree(M, indices=ens.profile[1], depth=1, colour=False)
    assert f"{ens.dataframe.loc[(ens.graph.roots[0], ens.profile[1]), M]:.3f} RAJAPerf" in first
    with pytest.raises(Exception, match="no column 'nope'"):
        ens.tree("nope")


def test_per_rank_rows_and_the_per_run_value(tmp_path):
    lake = Lake(tmp_path / "lake")
    lake.ingest(write_tau_runs(tmp_path / "tau", nodes=30, ranks=4, threads=2, runs=3, seed=21))
    metric = "time (inc)"
    by_rank = lake.ensemble_of(metric=metric, per_rank=True)
    df = by_rank.dataframe
    assert list(df.index.names) == ["node", "profile", "rank"]
    want = lake.sql(f'select node_id, run_id, rank, avg("{metric}") as v from metrics where rank >= 0 '
                    "group by all")
    got = df[metric].dropna()
    keyed = {(n.node_id, p, r): v for (n, p, r), v in got.items()}
    assert len(keyed) == len(want)
    for row in want.itertuples():
        assert keyed[(np.uint64(row.node_id), row.run_id, row.rank)] == pytest.approx(row.v, rel=1e-12)
    by_rank.stats.mean([metric])  # statistics over the dataframe's rows: here every (profile, rank)
    means = df[metric].groupby(level="node", sort=False).mean()
    assert by_rank.statsframe[f"{metric}_mean"].to_numpy() == pytest.approx(means.to_numpy(), rel=1e-12, nan_ok=True)
    per_run = lake.ensemble_of(metric=metric)  # the run's value: the mean over its locations (Lake.ensemble's)
    per_run.stats.describe([metric], ["mean", "std", "p75"])
    old = lake.ensemble(metric=metric, stats=("mean", "std", "p75")).set_index("node_id")
    sf = per_run.statsframe.set_index(per_run.statsframe.index.map(lambda n: n.node_id))
    for s in ("mean", "std", "p75"):
        name = f"{metric}_percentiles_75" if s == "p75" else f"{metric}_{s}"
        assert sf.loc[old.index, name].to_numpy() == pytest.approx(old[s].to_numpy(), rel=1e-9, nan_ok=True)


def test_to_thicket_json_reads_back_in_thicket(raja, tmp_path):
    need_bench_python()
    ens = raja.ensemble_of(metric=[M, "Bytes/Rep"])
    ens.stats.describe([M], ["mean", "p90"])
    ens.stats.calc_boxplot_statistics([M])
    out = tmp_path / "ens.json"
    ens.to_thicket_json(out)
    seen = thicket_stats.load_json(out)
    assert seen["index_names"] == ["node", "profile"] and seen["n_nodes"] == 74 and len(seen["profile"]) == 5
    assert "run_id" in seen["metadata_columns"] and "variant" in seen["metadata_columns"]
    runs = {str(r["run_id"]): p for p, r in seen["metadata"].items()}
    assert sorted(runs) == ens.profile
    for (node, run), value in ens.dataframe[M].items():
        assert seen["dataframe"][f"{json.dumps(list(path_of(node)))}|{runs[run]}"][M] == value
    for node, row in ens.statsframe.iterrows():
        theirs = seen["stats"][json.dumps(list(path_of(node)))]
        assert theirs[f"{M}_mean"] == row[f"{M}_mean"] and theirs[f"{M}_percentiles_90"] == row[f"{M}_percentiles_90"]
        assert theirs[f"{M}_q3(0.25, 0.5, 0.75)"] == row[f"{M}_q3(0.25, 0.5, 0.75)"]


def test_lake_ensemble_and_bad_requests(raja):
    assert len(raja.ensemble(metric=M)) == 74  # the tabular Lake.ensemble keeps working
    with pytest.raises(UsageError, match="no selected run has metric 'Avg time'"):
        raja.ensemble_of(metric="Avg time")
    with pytest.raises(UsageError, match="no runs selected by 'nprocs > 4096'"):
        raja.ensemble_of(where="nprocs > 4096", metric=M)


def test_lake_ensemble_warns_about_a_metadata_key_typo(gapped):
    with pytest.warns(MetadataKeyWarning, match="no selected run has metadata key 'varaint' \\(did you mean 'variant'"):
        got = gapped.ensemble(group_by="meta:varaint", metric=M, stats=("count",))
    assert got["meta:varaint"].isna().all()  # still the answer it was: one group where the key is missing
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert set(gapped.ensemble(group_by="meta:variant", metric=M)["meta:variant"]) == {
            "Base_Seq", "RAJA_Seq", "Base_OpenMP", "RAJA_OpenMP"}


def test_statsframe_command(raja, capsys, tmp_path):
    from perflake.cli.app import main

    out = tmp_path / "tk.json"
    assert main(["statsframe", "--lake", raja.root, "--stats", "count,mean,p90", "--boxplot", "--format", "csv",
                 "--thicket-json", str(out)]) == 0
    got = pd.read_csv(__import__("io").StringIO(capsys.readouterr().out))
    ens = raja.ensemble_of(metric=M)
    ens.stats.describe([M], ["count", "mean", "p90"])
    assert list(got.columns[:5]) == ["path", "name", f"{M}_count", f"{M}_mean", f"{M}_percentiles_90"]
    assert got["path"].iloc[1] == "RAJAPerf > Algorithm" and (got[f"{M}_count"] == 5).all()
    assert got[f"{M}_mean"].to_numpy() == pytest.approx(ens.statsframe[f"{M}_mean"].to_numpy(), rel=1e-12)
    assert json.loads(out.read_text())["stats"][0][f"{M}_mean"] == pytest.approx(got[f"{M}_mean"].iloc[0])
    assert main(["statsframe", "--lake", raja.root, "--metric", "nope"]) == 2
    assert "no selected run has metric 'nope'" in capsys.readouterr().err


def test_per_rank_thicket_json_keeps_the_rank_level(tmp_path):
    need_bench_python()
    lake = Lake(tmp_path / "lake")
    lake.ingest(write_tau_runs(tmp_path / "tau", nodes=15, ranks=3, runs=2, seed=4))
    ens = lake.ensemble_of(metric="time (inc)", per_rank=True)
    ens.stats.mean(["time (inc)"])
    ens.to_thicket_json(tmp_path / "tk.json")
    seen = thicket_stats.load_json(tmp_path / "tk.json")
    assert seen["index_names"] == ["node", "profile", "rank"] and seen["n_nodes"] == len(ens.graph)
    rows = ens.sparse_dataframe()["time (inc)"]
    assert len(seen["dataframe"]) == len(rows) == 6 * len(ens.graph) - int(ens.dataframe["name"].isna().sum())
    profile = {str(r["run_id"]): p for p, r in seen["metadata"].items()}
    for (node, run, rank), value in rows.items():
        assert seen["dataframe"][f"{json.dumps(list(path_of(node)))}|{profile[run]}|{rank}"]["time (inc)"] == value
