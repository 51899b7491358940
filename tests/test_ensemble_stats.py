"""Thicket's statistics on perflake's Ensemble (issue 16 item 2) against llnl-thicket 2026.1.1 itself, run in
.bench-venv in the same test (tests/thicket_stats.py), and the two-group tests against SciPy.

Tolerance: relative 1e-9, plus an absolute 1e-12 of the column's largest magnitude so that a statistic that is
exactly 0 on one side (a variance or IQR of equal values) may be a rounding residue on the other.

Documented differences (perflake.analytics.ensemble_stats): Thicket feeds NaN to numpy/SciPy in the boxplot,
normality and correlation statistics (NaN quartiles, an AttributeError in check_normality, NaN correlations
where a profile lacks the call path); perflake uses the values present.  Those statistics are therefore
compared with Thicket's on ``tk.intersection()`` (every profile has the call path) and, on the other call
paths, with numpy/SciPy over the values present.  Thicket's ``_normality`` is the text "True"/"False",
perflake's a boolean.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest

import thicket_stats
from conftest import ROOT, need_bench_python

sys.path.insert(0, str(ROOT / "bench"))
import cali_writer  # noqa: E402  (RAJAPerf-like .cali profiles, optionally lacking kernels)

from perflake import Ensemble, Lake  # noqa: E402
from perflake.analytics import ensemble_stats as stats  # noqa: E402
from perflake.analytics import ensemble_two_groups as two  # noqa: E402

RTOL = 1e-9
COLS = ["Avg time/rank", "Bytes/Rep", "Min time/rank"]
PCTS = [0.1, 0.25, 0.5, 0.9]
CORR = [["Avg time/rank", "Bytes/Rep", "pearson"], ["Avg time/rank", "Bytes/Rep", "spearman"],
        ["Avg time/rank", "Min time/rank", "kendall"], ["Avg time/rank", "Flops/Rep", "kendall"]]


def by_path(frame) -> dict:
    return {json.dumps([str(n.frame.get("name")) for n in node.path()]): row for node, row in frame.iterrows()}


def sources(ens) -> dict:
    return {p: os.path.realpath(s) for p, s in ens.metadata["source"].items()}


def assert_same(ours, theirs, scale: float, what: str) -> None:
    if theirs is None:
        assert ours is None or (isinstance(ours, float) and np.isnan(ours)), f"{what}: {ours} vs NaN"
        return
    assert ours is not None and not (isinstance(ours, float) and np.isnan(ours)), f"{what}: NaN vs {theirs}"
    assert abs(float(ours) - theirs) <= RTOL * abs(theirs) + 1e-12 * scale, f"{what}: {ours!r} vs {theirs!r}"


def compare(ens, ours: dict, theirs: dict, files: dict, only=None) -> int:
    """Every statistic Thicket wrote, per call path; returns how many values were compared."""
    scales: dict = {}
    for row in theirs.values():
        for c, v in row.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                scales[c] = max(scales.get(c, 0.0), abs(v))
    n = 0
    for path, row in theirs.items():
        assert path in ours, f"call path {path} is missing from perflake's statsframe"
        for c, v in row.items():
            if only is not None and not only(c):
                continue
            mine = ours[path][c]
            if isinstance(v, list):  # outliers: profiles, as files
                assert sorted(files[p] for p in mine) == sorted(v), f"{path} {c}"
            elif isinstance(v, str):  # check_normality writes "True"/"False"
                assert bool(mine) is (v == "True"), f"{path} {c}: {mine} vs {v}"
            else:
                assert_same(None if mine is None or mine is pd_na() else mine, v, scales.get(c, 0.0), f"{path} {c}")
            n += 1
    return n


def pd_na():
    import pandas as pd

    return pd.NA


def all_statistics(ens, cols=COLS) -> None:
    ens.stats.mean(cols)
    ens.stats.median(cols)
    ens.stats.minimum(cols)
    ens.stats.maximum(cols)
    ens.stats.std(cols)
    ens.stats.variance(cols)
    ens.stats.percentiles(cols, PCTS)


def other_statistics(ens, cols=COLS) -> None:
    ens.stats.calc_boxplot_statistics(cols)
    ens.stats.check_normality(cols)
    for c1, c2, method in CORR:
        ens.stats.correlation_nodewise(c1, c2, method)


@pytest.fixture(scope="module")
def rajaperf(tmp_path_factory):
    from conftest import DATA, _need

    data = _need(DATA / "rajaperf-quartz")
    lake = Lake(tmp_path_factory.mktemp("raja") / "lake")
    lake.ingest([data])
    return lake, sorted(str(p) for p in data.rglob("*.cali"))


def test_rajaperf_every_statistic_equals_thickets(rajaperf):
    need_bench_python()
    lake, files = rajaperf
    ens = lake.ensemble_of(metric=[*COLS, "Flops/Rep"])
    all_statistics(ens)
    other_statistics(ens)
    a = [f for f in files if "1048576/O3/1/" in f or "1048576/O3/2/" in f]
    b = [f for f in files if "1048576/O3/3/" in f or "1048576/O3/4/" in f]
    ref = thicket_stats.run({"files": files, "columns": COLS, "percentiles": PCTS, "corr": CORR,
                             "columnar": {"groups": [a, b], "column": "Avg time/rank"}})
    assert not ref["errors"]
    ours = by_path(ens.statsframe)
    n = compare(ens, ours, ref["stats"], sources(ens))
    assert n >= 74 * (6 * 3 + 4 * 3 + 7 * 3 + 3 + 4)  # every call path, every statistic
    # the dataframe itself: the same value for every (call path, file)
    files_of = sources(ens)
    df = {(json.dumps([str(x.frame.get("name")) for x in node.path()]), files_of[p]): row
          for (node, p), row in ens.dataframe.iterrows()}
    assert len(df) == len(ref["dataframe"]) == 74 * 5
    for path, f, values in ref["dataframe"]:
        for c, v in values.items():
            assert_same(df[(path, f)][c], v, 0.0, f"dataframe {path} {f} {c}")
    # distances between two groups side by side (Thicket's columnar join)
    src = {os.path.realpath(f): p for p, f in files_of.items()}
    ga = ens.filter_profile([src[os.path.realpath(f)] for f in a])
    gb = ens.filter_profile([src[os.path.realpath(f)] for f in b])
    both = Ensemble.concat([ga, gb], axis="columns", headers=["A", "B"])
    pair = [("A", "Avg time/rank"), ("B", "Avg time/rank")]
    both.stats.bhattacharyya_distance(pair)
    both.stats.hellinger_distance(pair)
    mine = {p: {"|".join(map(str, c)) if c[0] != "Union statistics" else f"{c[1]}|": v for c, v in row.items()}
            for p, row in by_path(both.statsframe).items()}
    assert compare(both, mine, ref["columnar"], files_of) == 74 * 6


@pytest.fixture(scope="module")
def gapped(tmp_path_factory):
    """12 RAJAPerf-like runs that each lack about a quarter of the kernels (NaN in Thicket's dataframe)."""
    root = tmp_path_factory.mktemp("gapped")
    files = [str(p) for p in cali_writer.write_cali_profiles(root / "cali", 12, seed=5, missing=0.25)]
    lake = Lake(root / "lake")
    lake.ingest([root / "cali"])
    return lake, files


def test_missing_call_paths_skip_nan_as_thicket(gapped):
    need_bench_python()
    lake, files = gapped
    ens = lake.ensemble_of(metric=[*COLS, "Flops/Rep"])
    all_statistics(ens)
    ref = thicket_stats.run({"files": files, "columns": COLS, "percentiles": PCTS, "corr": CORR,
                             "complete_only": True})
    assert not ref["errors"]
    ours = by_path(ens.statsframe)
    compare(ens, ours, ref["stats"], sources(ens),
            only=lambda c: not any(k in c for k in ("(0.25", "normality", "_vs_")))
    # the moments of a call path some runs lack are over the runs that have it
    partial = [p for p, row in ref["stats"].items() if 0 < sum(1 for r in ref["dataframe"] if r[0] == p and
                                                                r[2]["Avg time/rank"] is not None) < 12]
    assert len(partial) > 20
    # boxplot, normality and correlations: Thicket's on the call paths all runs have ...
    inter = ens.intersection()
    assert set(by_path(inter.statsframe)) == set(ref["other"])
    other_statistics(inter)
    assert compare(inter, by_path(inter.statsframe), ref["other"], sources(ens),
                   only=lambda c: any(k in c for k in ("(0.25", "normality", "_vs_"))) > 0
    # ... and on the others perflake's over the values present (Thicket: NaN / AttributeError)
    other_statistics(ens)
    ids, samples = stats.samples(ens, "Avg time/rank")
    sf = ens.statsframe.set_index(ens.statsframe.index.map(lambda n: n.node_id))
    from scipy import stats as sps

    for nid, values in zip(ids, samples):
        row = sf.loc[nid]
        q1, q3 = np.quantile(values, [0.25, 0.75])
        assert row["Avg time/rank_q1(0.25, 0.5, 0.75)"] == pytest.approx(q1, rel=RTOL)
        out = (values < q1 - 1.5 * (q3 - q1)) | (values > q3 + 1.5 * (q3 - q1))
        assert row["Avg time/rank_n_outliers(0.25, 0.5, 0.75)"] == out.sum()
        assert len(row["Avg time/rank_outliers(0.25, 0.5, 0.75)"]) == out.sum()
        if (~out).any():
            assert row["Avg time/rank_whisker_high(0.25, 0.5, 0.75)"] == values[~out].max()
        if len(values) >= 3:
            assert row["Avg time/rank_normality_pvalue"] == pytest.approx(sps.shapiro(values).pvalue, rel=RTOL)


def test_describe_is_one_pass_of_several_statistics_with_ddof(gapped):
    lake, _ = gapped
    ens = lake.ensemble_of(metric=["Avg time/rank"])
    names = ens.stats.describe(["Avg time/rank"], ["count", "sum", "mean", "var", "p12.5", "p100"], ddof=0)
    assert names == ["Avg time/rank_count", "Avg time/rank_sum", "Avg time/rank_mean", "Avg time/rank_var",
                     "Avg time/rank_percentiles_12.5", "Avg time/rank_percentiles_100"]
    ids, samples = stats.samples(ens, "Avg time/rank")
    sf = ens.statsframe.set_index(ens.statsframe.index.map(lambda n: n.node_id))
    for nid, v in zip(ids, samples):
        row = sf.loc[nid]
        assert row["Avg time/rank_count"] == len(v)
        assert row["Avg time/rank_var"] == pytest.approx(np.var(v, ddof=0), rel=RTOL, abs=1e-15)
        assert row["Avg time/rank_percentiles_12.5"] == pytest.approx(np.quantile(v, 0.125), rel=RTOL)
        assert row["Avg time/rank_percentiles_100"] == v.max()
    one = ens.filter_profile(ens.profile[:1])
    one.stats.std(["Avg time/rank"])  # one value: std with ddof=1 is NaN, as pandas
    assert one.statsframe["Avg time/rank_std"].isna().all()
    with pytest.raises(Exception, match="unknown statistic"):
        ens.stats.describe(["Avg time/rank"], ["mode"])
    with pytest.raises(Exception, match="no column"):
        ens.stats.mean(["Avg time/rnak"])


def _groups(lake, key_a, key_b, n=None):
    ens = lake.ensemble_of(metric=["Avg time/rank", "Bytes/Rep"])
    groups = ens.groupby("variant")
    a, b = groups[(key_a,)], groups[(key_b,)]
    if n:
        a, b = a.filter_profile(a.profile[:n]), b.filter_profile(b.profile[:n])
    return Ensemble.concat([a, b], axis="columns", headers=["A", "B"]), a, b


@pytest.fixture(scope="module")
def forty(tmp_path_factory):
    root = tmp_path_factory.mktemp("forty")
    cali_writer.write_cali_profiles(root / "cali", 40, seed=9, missing=0.15)
    lake = Lake(root / "lake")
    lake.ingest([root / "cali"])
    return lake


@pytest.mark.parametrize("n", [None, 5])  # 10 runs a side (normal approximation), 5 (exact null distribution)
@pytest.mark.parametrize("column", ["Avg time/rank", "Bytes/Rep"])  # Bytes/Rep has ties
def test_welch_and_mann_whitney_equal_scipy(forty, n, column):
    from scipy import stats as sps

    both, a, b = _groups(forty, "Base_Seq", "RAJA_Seq", n)
    pair = [("A", column), ("B", column)]
    both.stats.welch_ttest(pair)
    both.stats.mannwhitneyu(pair)
    both.stats.mannwhitneyu(pair, alternative="less")  # same columns: overwrites u, p and q
    both.stats.mannwhitneyu(pair)
    sa, sb = (dict(zip(*stats.samples(e, column))) for e in (a, b))
    sf = both.statsframe
    ps = []
    for node, row in sf.iterrows():
        x, y = sa.get(node.node_id), sb.get(node.node_id)
        name = f"A_{column}_vs_B_{column}"
        if x is None or y is None:
            assert np.isnan(row[("Union statistics", f"{name}_mwu_p")])
            continue
        t = sps.ttest_ind(x, y, equal_var=False)
        u = sps.mannwhitneyu(x, y)
        for got, want in ((row[("Union statistics", f"{name}_welch_t")], t.statistic),
                          (row[("Union statistics", f"{name}_welch_p")], t.pvalue),
                          (row[("Union statistics", f"{name}_welch_df")], t.df),
                          (row[("Union statistics", f"{name}_mwu_u")], u.statistic),
                          (row[("Union statistics", f"{name}_mwu_p")], u.pvalue)):
            assert got == pytest.approx(want, rel=RTOL, abs=1e-300, nan_ok=True), (node, column)
        ps.append((row[("Union statistics", f"{name}_mwu_q")], u.pvalue))
    q = sps.false_discovery_control([p for _, p in ps], method="bh")
    assert [a for a, _ in ps] == pytest.approx(list(q), rel=RTOL)
    assert len(ps) >= 40


def test_exact_null_distribution_and_alternatives_equal_scipy():
    from scipy import stats as sps

    rng = np.random.default_rng(3)
    for n0, n1 in [(1, 1), (2, 7), (5, 5), (8, 3), (3, 30), (8, 8)]:
        x, y = rng.normal(size=n0), rng.normal(0.7, size=n1)
        import pandas as pd

        g = pd.DataFrame({"n0": [n0], "n1": [n1], "rank_sum0": [sps.rankdata(np.r_[x, y])[:n0].sum()],
                          "tie_term": [0.0]})
        for alt in ("two-sided", "less", "greater"):
            u, p = two.mwu(g, alt)
            want = sps.mannwhitneyu(x, y, alternative=alt)
            assert (u[0], p[0]) == pytest.approx((want.statistic, want.pvalue), rel=RTOL), (n0, n1, alt)


def test_benjamini_hochberg_equals_scipy():
    from scipy import stats as sps

    p = np.random.default_rng(1).uniform(size=300) ** 3
    p[[5, 77]] = np.nan
    got = two.benjamini_hochberg(p)
    assert np.isnan(got[[5, 77]]).all()
    ok = ~np.isnan(p)
    assert got[ok] == pytest.approx(sps.false_discovery_control(p[ok], method="bh"), rel=RTOL)


def test_correlation_of_two_groups_paired_by_metadata(forty):
    """Columns under two headers are paired by profile (here the metadata key that names the problem size
    and variant's run slot); the correlations equal SciPy's over the pairs where both have a value."""
    from scipy import stats as sps

    ens = forty.ensemble_of(metric=["Avg time/rank"])
    groups = ens.groupby("variant")
    a, b = groups[("Base_Seq",)], groups[("RAJA_Seq",)]
    slot = {p: i // 4 for p, i in zip(ens.profile, [int(Path(s).stem[1:]) for s in ens.metadata["source"]])}
    for e in (a, b):
        e.metadata["slot"] = [slot[p] for p in e.profile]
    both = Ensemble.concat([a, b], axis="columns", headers=["A", "B"], metadata_key="slot")
    assert both.profile == list(range(10))
    x, y = ("A", "Avg time/rank"), ("B", "Avg time/rank")
    for method in ("pearson", "spearman", "kendall"):
        both.stats.correlation_nodewise(x, y, method)
    df = both.dataframe
    checked = 0
    for node, row in both.statsframe.iterrows():
        part = df.xs(node, level="node")
        ok = part[x].notna() & part[y].notna()
        xs, ys = part[x][ok].to_numpy(), part[y][ok].to_numpy()
        if len(xs) < 3:
            continue
        for method, fn in (("pearson", sps.pearsonr), ("spearman", sps.spearmanr), ("kendall", sps.kendalltau)):
            got = row[("Union statistics", f"Avg time/rank_vs_Avg time/rank {method}")]
            assert got == pytest.approx(fn(xs, ys)[0], rel=1e-9, abs=1e-12), (node, method)
        checked += 1
    assert checked > 30
