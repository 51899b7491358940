"""Regressions between two groups of runs (perflake.analytics.regress / .twogroup, ``perflake regress``).

p-values are compared with SciPy's on the same numbers: the per-run values are read back from the lake with
an independent query (``lake.sql``) and given to ``scipy.stats.ttest_ind(equal_var=False)`` and
``scipy.stats.mannwhitneyu`` call path by call path.
"""

from __future__ import annotations

import json

import duckdb
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from perflake import Lake
from perflake.analytics import twogroup
from perflake.analytics.regress import regress
from perflake.cli.app import main
from perflake.engine import sqlfiles
from perflake.generators.nightly import nightly_series, write_nightly

BUILD = "cast(metadata->>'$.build' as int)"


_CON = duckdb.connect()


def _ranks_sql(base, cand) -> dict:
    """sql/regress_ranks.sql on two samples."""
    con = _CON
    rows = ([(0, f"b{i}", 1, float(v)) for i, v in enumerate(base)]
            + [(1, f"c{i}", 1, float(v)) for i, v in enumerate(cand)])
    con.register("run_values_t", pd.DataFrame(rows, columns=["group_id", "run_id", "node_id", "value"]))
    return sqlfiles.relation(con, "regress_ranks").df().iloc[0].to_dict()


samples = st.lists(st.integers(0, 12).map(float), min_size=1, max_size=25)  # small integers: many ties


@settings(max_examples=200, deadline=None)
@given(samples, samples)
def test_mann_whitney_equals_scipy(base, cand):
    r = _ranks_sql(base, cand)
    assert (r["n0"], r["n1"]) == (len(base), len(cand))
    allv = np.r_[base, cand]
    assert r["rank_sum1"] == stats.rankdata(allv)[len(base):].sum()
    _, counts = np.unique(allv, return_counts=True)
    assert r["tie_term"] == float((counts ** 3 - counts).sum())
    u, p = twogroup.mann_whitney([r["n0"]], [r["n1"]], [r["rank_sum1"]], [r["tie_term"]])
    ref = stats.mannwhitneyu(cand, base)
    assert u[0] == ref.statistic
    assert p[0] == pytest.approx(ref.pvalue, rel=1e-12, abs=1e-15) or (np.isnan(p[0]) and np.isnan(ref.pvalue))


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 8), st.integers(1, 40), st.integers(0, 2**32 - 1))
def test_exact_mann_whitney_without_ties(n0, n1, seed):
    rng = np.random.default_rng(seed)
    base, cand = rng.normal(0, 1, n0), rng.normal(0.7, 1, n1)
    allv = np.r_[base, cand]
    u, p = twogroup.mann_whitney([n0], [n1], [stats.rankdata(allv)[n0:].sum()], [0.0])
    assert p[0] == pytest.approx(stats.mannwhitneyu(cand, base).pvalue, rel=1e-12)


@pytest.mark.filterwarnings("ignore:Precision loss occurred:RuntimeWarning")
@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-1e3, 1e3), min_size=1, max_size=30), st.lists(st.floats(-1e3, 1e3), min_size=1, max_size=30))
def test_welch_equals_scipy(base, cand):
    b, c = np.array(base), np.array(cand)
    var = lambda x: x.var(ddof=1) if len(x) > 1 else np.nan  # noqa: E731
    t, df, p = twogroup.welch([len(b)], [b.mean()], [var(b)], [len(c)], [c.mean()], [var(c)])
    with np.errstate(all="ignore"):
        ref = stats.ttest_ind(c, b, equal_var=False)
    if len(b) < 2 or len(c) < 2 or np.isnan(ref.statistic):  # too few values, or two equal constant groups
        assert np.isnan(p[0]) and np.isnan(t[0])
        return
    assert t[0] == pytest.approx(ref.statistic, rel=1e-9)
    assert p[0] == pytest.approx(ref.pvalue, rel=1e-7, abs=1e-300)


def test_benjamini_hochberg_equals_scipy():
    rng = np.random.default_rng(4)
    p = rng.uniform(size=200) ** 4
    np.testing.assert_allclose(twogroup.benjamini_hochberg(p), stats.false_discovery_control(p), rtol=1e-12)
    with_nan = np.r_[p[:50], np.nan, p[50:60]]
    q = twogroup.benjamini_hochberg(with_nan)
    assert np.isnan(q[50])
    np.testing.assert_allclose(np.r_[q[:50], q[51:]], stats.false_discovery_control(np.r_[p[:50], p[50:60]]))


def test_hedges_g_by_hand():
    b, c = np.array([1.0, 2.0, 3.0, 4.0]), np.array([3.0, 4.0, 5.0, 6.0, 7.0])
    pooled = np.sqrt((3 * b.var(ddof=1) + 4 * c.var(ddof=1)) / 7)
    g = twogroup.hedges_g([4], [b.mean()], [b.var(ddof=1)], [5], [c.mean()], [c.var(ddof=1)])
    assert g[0] == pytest.approx((c.mean() - b.mean()) / pooled * (1 - 3 / (4 * 9 - 9)))


# -- on a lake ----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def nightly(tmp_path_factory):
    """200 nightly runs: the 10% shift at run 120 (build 121), the 3% one at 150, 30% at 180."""
    root = tmp_path_factory.mktemp("regress")
    series = nightly_series(runs=200, seed=3, shifts=((0.03, 150), (0.10, 120), (0.30, 180)))
    lake = Lake(root / "lake")
    assert lake.ingest(write_nightly(series, root / "in")).ok
    return series, lake


def _values(lake, where: str, metric: str) -> pd.DataFrame:
    """Per run and call path: the mean over ranks -- an independent query over the lake's views."""
    return lake.sql(f"""select m.run_id, m.node_id, avg(m."{metric}") as value
                        from metrics m join runs r using (run_id)
                        where m.rank >= 0 and ({where}) group by all""")


def test_injected_slowdown_is_flagged(nightly):
    series, lake = nightly
    ten = next(s for s in series.shifts if s.size == 0.10)
    result = regress(lake, f"{BUILD} between 60 and 120", f"{BUILD} between 121 and 150", metric="time")
    assert result.exit_code == 1
    flagged = result.flagged
    assert [tuple(p) for p in flagged["path"]] == [ten.path]
    row = flagged.iloc[0]
    assert row["change"] == pytest.approx(0.10, abs=0.03) and row["q_welch"] < 0.05
    assert (result.n_baseline, result.n_candidate) == (61, 30)
    # the 10% call path is first: flagged first, then by |effect|
    assert tuple(result.table["path"].iloc[0]) == ten.path


def test_no_change_passes(nightly):
    series, lake = nightly
    result = regress(lake, f"{BUILD} <= 60", f"{BUILD} between 61 and 120", metric="time", test="both")
    assert result.exit_code == 0 and not result.table["flagged"].any()
    # the noise is noise: no adjusted p below 0.05 anywhere
    assert (result.table["q_welch"].dropna() >= 0.05).all()


def test_gate_settings(nightly):
    series, lake = nightly
    base, cand = f"{BUILD} between 60 and 120", f"{BUILD} between 121 and 150"
    ten = next(s for s in series.shifts if s.size == 0.10)
    share = regress(lake, base, cand, metric="time").flagged["share"].iloc[0]
    assert regress(lake, base, cand, metric="time", min_share=share * 1.01).exit_code == 0
    assert regress(lake, base, cand, metric="time", threshold=0.2).exit_code == 0
    both = regress(lake, base, cand, metric="time", test="both")
    assert [tuple(p) for p in both.flagged["path"]] == [ten.path]
    # the share: the call path's baseline mean over the sum of every call path's (exclusive metric)
    v = _values(lake, base, "time")
    node = int(both.flagged["node_id"].iloc[0])
    means = v.groupby("node_id")["value"].mean()
    assert share == pytest.approx(means.loc[node] / means.sum(), rel=1e-9)


@pytest.mark.parametrize("metric", ["time", "time (inc)"])
@pytest.mark.parametrize("groups", [("between 60 and 120", "between 121 and 150"),
                                    ("between 1 and 6", "between 190 and 194")])
def test_p_values_equal_scipy(nightly, metric, groups):
    """Large groups (normal approximation of U) and small ones (U's exact distribution: 6 vs 5 runs)."""
    _, lake = nightly
    base, cand = f"{BUILD} {groups[0]}", f"{BUILD} {groups[1]}"
    result = regress(lake, base, cand, metric=metric).table.set_index("node_id")
    vb, vc = _values(lake, base, metric), _values(lake, cand, metric)
    assert len(result) == vb["node_id"].nunique()
    for node, b in vb.groupby("node_id"):
        c = vc.loc[vc["node_id"] == node, "value"].to_numpy()
        row = result.loc[node]
        w = stats.ttest_ind(c, b["value"].to_numpy(), equal_var=False)
        u = stats.mannwhitneyu(c, b["value"].to_numpy())
        assert row["t"] == pytest.approx(w.statistic, rel=1e-9)
        assert row["p_welch"] == pytest.approx(w.pvalue, rel=1e-8)
        assert row["p_mwu"] == pytest.approx(u.pvalue, rel=1e-12)
        assert row["prob_slower"] == pytest.approx(u.statistic / (len(b) * len(c)), rel=1e-12)
    np.testing.assert_allclose(result["q_welch"], stats.false_discovery_control(result["p_welch"]), rtol=1e-12)


def test_cli_exit_codes_and_reports(nightly, tmp_path, capsys):
    series, lake = nightly
    ten = next(s for s in series.shifts if s.size == 0.10)
    out_json, out_md = tmp_path / "r.json", tmp_path / "r.md"
    code = main(["regress", "--lake", str(lake.root), "--metric", "time", "--baseline", f"{BUILD} between 60 and 120",
                 "--candidate", f"{BUILD} between 121 and 150", "--json", str(out_json), "--markdown", str(out_md)])
    assert code == 1
    printed = capsys.readouterr().out
    assert "SLOWER" in printed and ten.path[-1] in printed
    doc = json.loads(out_json.read_text())
    assert doc["exit_code"] == 1 and doc["flagged"] == 1 and doc["call_paths"][0]["path"] == list(ten.path)
    assert doc["call_paths"][0]["flagged"] is True and len(doc["call_paths"]) == len(series.tree)
    md = out_md.read_text()
    assert md.startswith("### :red_circle: Performance regression") and f"`{' > '.join(ten.path[-3:])}`" in md
    assert main(["regress", "--lake", str(lake.root), "--metric", "time", "--baseline", f"{BUILD} <= 60",
                 "--candidate", f"{BUILD} between 61 and 120"]) == 0
    assert "no call path significantly slower" in capsys.readouterr().out
    assert main(["regress", "--lake", str(lake.root), "--baseline", "nokey = 1", "--candidate", "true"]) == 2
    assert "nokey" in capsys.readouterr().err
    assert main(["regress", "--lake", str(lake.root), "--baseline", f"{BUILD} > 1000", "--candidate", "true"]) == 2
    assert "no run selected" in capsys.readouterr().err


def test_overlapping_groups_warn(nightly):
    _, lake = nightly
    with pytest.warns(UserWarning, match="both the baseline and the candidate"):
        result = regress(lake, f"{BUILD} <= 20", f"{BUILD} between 11 and 30", metric="time")
    assert result.notes
