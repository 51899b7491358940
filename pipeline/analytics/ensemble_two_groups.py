"""Two columns of an Ensemble compared per call path: Thicket's distances, Welch's t-test and the Mann-Whitney U
test, with Benjamini-Hochberg correction across call paths.

The two columns are two groups of runs side by side (``Ensemble.concat([cpu, gpu], axis="columns",
headers=["CPU", "GPU"])`` then ``columns=[("CPU", "time"), ("GPU", "time")]``, Thicket's layout), or two
metrics of one ensemble.  Each group is the column's values at the call path (NULL/NaN left out: SciPy's
``nan_policy="omit"``); the groups may differ in size.

One DuckDB statement (``sql/statsframe_two_groups.sql``) gives per call path each group's count, mean and
sample variance, the rank sum of the first group in the combined sample (average ranks for ties) and the tie
term; SciPy is used only for distribution functions (Student's t and the normal CDF, ``scipy.special``).

* ``bhattacharyya_distance`` / ``hellinger_distance``: Thicket's formulas for two normals from each column's
  mean and std (ddof=1), named ``<a>_<b>_bhattacharyya_distance`` as Thicket; like Thicket they also add
  ``<a>_mean``, ``<a>_std``... to the statsframe;
* ``welch_ttest``: ``t``, Welch-Satterthwaite ``df``, ``p`` as ``scipy.stats.ttest_ind(a, b, equal_var=False)``
  and ``q`` (Benjamini-Hochberg over the call paths with a p): ``<a>_vs_<b>_welch_t`` / ``_df`` / ``_p`` / ``_q``;
* ``mannwhitneyu``: U of the first column and p as ``scipy.stats.mannwhitneyu`` (method "auto": the exact null
  distribution when a group has at most 8 values and there are no ties, else the normal approximation with
  tie correction and, by default, continuity correction), plus ``q``: ``<a>_vs_<b>_mwu_u`` / ``_p`` / ``_q``.
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd

from perflake.engine import duck, sqlfiles
from perflake.errors import UsageError

PUBLIC = frozenset({"bhattacharyya_distance", "hellinger_distance", "welch_ttest", "mannwhitneyu"})
ALTERNATIVES = ("two-sided", "less", "greater")


def _two_columns(ens, columns) -> list:
    if not isinstance(columns, list) or len(columns) != 2:
        raise UsageError("columns: a list of two columns")
    return ens.check_columns(columns)


def group_table(ens, columns) -> pd.DataFrame:
    """sql/statsframe_two_groups.sql over the two columns: node_id, n0, n1, mean0, mean1, var0, var1,
    rank_sum0, tie_term."""
    values = ens.column_values(_two_columns(ens, columns))
    values = values.rename_columns(["grp" if c == "col" else c for c in values.column_names])
    con = duck.connection()
    try:
        con.register("group_values_t", values)
        return sqlfiles.relation(con, "statsframe_two_groups").df()
    finally:
        con.close()


def benjamini_hochberg(p) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values (NaN stays NaN and is not counted), as
    ``scipy.stats.false_discovery_control(p, method="bh")`` on the p that are not NaN."""
    p = np.asarray(p, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(~np.isnan(p))
    m = len(ok)
    if m == 0:
        return out
    order = ok[np.argsort(p[ok], kind="stable")]
    scaled = p[order] * m / np.arange(1, m + 1)
    out[order] = np.minimum(np.minimum.accumulate(scaled[::-1])[::-1], 1.0)
    return out


def _distances(ens, columns, output_column_name, kind: str) -> list:
    from perflake.analytics.ensemble_stats import describe

    a, b = _two_columns(ens, columns)
    describe(ens, [a, b], ["mean", "std"])
    sf = ens.statsframe
    m1, m2 = (sf[ens.stat_name(c, "mean")].to_numpy(np.float64) for c in (a, b))
    s1, s2 = (sf[ens.stat_name(c, "std")].to_numpy(np.float64) for c in (a, b))
    with np.errstate(all="ignore"):
        v1, v2 = s1 ** 2, s2 ** 2
        if kind == "bhattacharyya":
            value = 0.25 * np.log(0.25 * (v1 / v2 + v2 / v1 + 2)) + 0.25 * ((m1 - m2) ** 2 / (v1 + v2))
        else:
            value = 1 - np.sqrt((2 * s1 * s2) / (v1 + v2)) * np.exp(-0.25 * ((m1 - m2) ** 2) / (v1 + v2))
    name = output_column_name or ens.pair_name(a, b, f"_{kind}_distance")
    sf[name] = value
    return [name]


def bhattacharyya_distance(ens, columns=None, output_column_name=None) -> list:
    """Thicket's Bhattacharyya distance of two columns per call path, from their means and stds."""
    return _distances(ens, columns, output_column_name, "bhattacharyya")


def hellinger_distance(ens, columns=None, output_column_name=None) -> list:
    """Thicket's Hellinger distance of two columns per call path, from their means and stds."""
    return _distances(ens, columns, output_column_name, "hellinger")


def _check_alternative(alternative: str) -> None:
    if alternative not in ALTERNATIVES:
        raise UsageError(f"alternative: one of {', '.join(ALTERNATIVES)}")


def welch(g: pd.DataFrame, alternative: str = "two-sided") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(t, df, p) of Welch's t-test from a group table."""
    from scipy import special

    n0, n1 = g["n0"].to_numpy(np.float64), g["n1"].to_numpy(np.float64)
    m0, m1 = (g[c].to_numpy(np.float64, na_value=np.nan) for c in ("mean0", "mean1"))
    v0, v1 = (g[c].to_numpy(np.float64, na_value=np.nan) for c in ("var0", "var1"))
    with np.errstate(all="ignore"):
        a, b = v0 / n0, v1 / n1
        se2 = a + b
        t = (m0 - m1) / np.sqrt(se2)
        df = se2 ** 2 / (a ** 2 / (n0 - 1) + b ** 2 / (n1 - 1))
        if alternative == "two-sided":
            p = 2 * special.stdtr(df, -np.abs(t))
        elif alternative == "less":
            p = special.stdtr(df, t)
        else:
            p = special.stdtr(df, -t)
    return t, df, np.where(np.isnan(t), np.nan, np.minimum(p, 1.0))


def welch_ttest(ens, columns=None, *, alternative: str = "two-sided") -> list:
    """Welch's t-test of two columns per call path, Benjamini-Hochberg ``q`` across call paths."""
    _check_alternative(alternative)
    g = group_table(ens, columns)
    t, df, p = welch(g, alternative)
    a, b = columns
    name = functools.partial(ens.test_name, a, b)
    return ens.put_stats(g["node_id"].to_numpy(), {name("_welch_t"): t, name("_welch_df"): df, name("_welch_p"): p,
                                                    name("_welch_q"): benjamini_hochberg(p)})


@functools.lru_cache(maxsize=256)
def _u_counts(k: int, m: int) -> tuple[np.ndarray, int]:
    """How many of the C(k+m, k) orderings of two samples (k <= m values, no ties) give each U = 0..k*m: the
    coefficients of the Gaussian binomial prod_{i=1..k} (1 - q^(m+i)) / (1 - q^i), in exact integers."""
    poly = np.zeros(k * m + 1, dtype=object)
    poly[0] = 1
    for i in range(1, k + 1):
        shifted = np.zeros_like(poly)
        shifted[m + i:] = poly[:len(poly) - (m + i)]
        poly = poly - shifted  # times (1 - q^(m+i))
        for r in range(i):  # divided by (1 - q^i): a running sum along each residue class modulo i
            poly[r::i] = np.cumsum(poly[r::i])
    tails = np.cumsum(poly[::-1])[::-1]  # tails[u] = orderings with U >= u
    return tails, int(tails[0])


def exact_sf(u: float, n0: int, n1: int) -> float:
    """P(U >= u) under the null hypothesis, for samples of n0 and n1 values without ties."""
    k, m = min(n0, n1), max(n0, n1)
    tails, total = _u_counts(k, m)
    u = int(u)  # as SciPy (np.int64(U)): with ties forced into the exact test, U = 3.5 reads 3
    return 1.0 if u <= 0 else 0.0 if u > k * m else tails[u] / total


def mwu(g: pd.DataFrame, alternative: str = "two-sided", use_continuity: bool = True,
        method: str = "auto") -> tuple[np.ndarray, np.ndarray]:
    """(U of the first group, p) of the Mann-Whitney U test from a group table."""
    from scipy import special

    n0, n1 = g["n0"].to_numpy(np.float64), g["n1"].to_numpy(np.float64)
    u0 = g["rank_sum0"].to_numpy(np.float64) - n0 * (n0 + 1) / 2
    u1 = n0 * n1 - u0
    if alternative == "two-sided":
        u, f = np.maximum(u0, u1), 2.0
    else:
        u, f = (u0, 1.0) if alternative == "greater" else (u1, 1.0)
    tie = g["tie_term"].to_numpy(np.float64, na_value=0.0)
    n = n0 + n1
    exact = np.zeros(len(g), bool) if method == "asymptotic" else np.ones(len(g), bool) if method == "exact" else (
        ~((n0 > 8) & (n1 > 8)) & (tie == 0))
    with np.errstate(all="ignore"):
        s = np.sqrt(n0 * n1 / 12 * ((n + 1) - tie / (n * (n - 1))))
        z = (u - n0 * n1 / 2 - (0.5 if use_continuity else 0.0)) / s
        p = special.ndtr(-z)
    for i in np.flatnonzero(exact & (n0 > 0) & (n1 > 0)):
        p[i] = exact_sf(u[i], int(n0[i]), int(n1[i]))
    p = np.clip(p * f, 0.0, 1.0)
    bad = (n0 == 0) | (n1 == 0)
    return np.where(bad, np.nan, u0), np.where(bad, np.nan, p)


def mannwhitneyu(ens, columns=None, *, alternative: str = "two-sided", use_continuity: bool = True,
                 method: str = "auto") -> list:
    """The Mann-Whitney U test of two columns per call path, Benjamini-Hochberg ``q`` across call paths."""
    _check_alternative(alternative)
    if method not in ("auto", "exact", "asymptotic"):
        raise UsageError("method: auto, exact or asymptotic")
    g = group_table(ens, columns)
    u, p = mwu(g, alternative, use_continuity, method)
    a, b = columns
    name = functools.partial(ens.test_name, a, b)
    return ens.put_stats(g["node_id"].to_numpy(), {name("_mwu_u"): u, name("_mwu_p"): p,
                                                    name("_mwu_q"): benjamini_hochberg(p)})
