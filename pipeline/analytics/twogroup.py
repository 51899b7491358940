"""Two-group tests from per-group summaries, vectorised over call paths: Welch's t, Mann-Whitney U,
Benjamini-Hochberg, Hedges' g.

The inputs are what one DuckDB pass computes per call path (counts, means, sample variances; rank sums and
tie terms), so no per-run value reaches Python.  The formulas follow SciPy 1.16-1.17 exactly, and SciPy
supplies the distribution functions (Student's t and the normal survival functions):

- ``welch``: ``scipy.stats.ttest_ind(candidate, baseline, equal_var=False)``: t = (m1 - m0) / sqrt(v1/n1 +
  v0/n0), Welch-Satterthwaite df (1 where both variances are 0, as SciPy), two-sided p = 2 sf(|t|, df).
  NaN with fewer than 2 values on a side; both variances 0 and different means: t = +-inf, p = 0.
- ``mann_whitney``: ``scipy.stats.mannwhitneyu(candidate, baseline)`` with its defaults (two-sided,
  continuity correction, ``method="auto"``): the exact null distribution when a side has at most 8 values
  and there are no ties, else the normal approximation with the tie correction.  The exact distribution is
  computed here (the Gaussian binomial coefficient [n0 + n1 choose n1]_q holds the counts of each U) with
  Python integers, so it is exact at any size.
- ``benjamini_hochberg``: adjusted p-values (``scipy.stats.false_discovery_control``), NaN entries left out
  of the family and kept NaN.
"""

from __future__ import annotations

import functools

import numpy as np
from scipy import special, stats

EXACT_MAX = 8  # SciPy's "auto": exact when a side has at most 8 values and nothing is tied


def welch(n0, m0, v0, n1, m1, v1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(t, df, p) of Welch's t-test of group 1 against group 0, per element."""
    n0, m0, v0, n1, m1, v1 = (np.asarray(a, dtype=float) for a in (n0, m0, v0, n1, m1, v1))
    with np.errstate(divide="ignore", invalid="ignore"):
        vn0, vn1 = v0 / n0, v1 / n1
        df = (vn0 + vn1) ** 2 / (vn0 ** 2 / (n0 - 1) + vn1 ** 2 / (n1 - 1))
        df = np.where(np.isnan(df) & (n0 >= 2) & (n1 >= 2), 1.0, df)
        t = (m1 - m0) / np.sqrt(vn0 + vn1)
    bad = (n0 < 2) | (n1 < 2)
    t = np.where(bad, np.nan, t)
    p = np.where(np.isnan(t), np.nan, 2.0 * stats.t.sf(np.abs(t), np.where(bad, 1.0, df)))
    return t, np.where(bad, np.nan, df), p


@functools.lru_cache(maxsize=256)
def _u_counts(small: int, large: int) -> tuple[np.ndarray, int]:
    """Counts of each U = 0 .. small * large under the null for sizes (small, large), and their total
    C(small + large, small): the coefficients of the Gaussian binomial [small + large choose small]_q."""
    size = small * large + 1
    poly = np.zeros(size, dtype=object)
    poly[0] = 1
    for i in range(1, small + 1):  # multiply by (1 - q^(large + i)) / (1 - q^i)
        k = large + i
        if k < size:
            poly[k:] = poly[k:] - poly[:-k].copy()
        pad = (-size) % i
        grid = np.concatenate([poly, np.zeros(pad, dtype=object)]).reshape(-1, i)
        poly = np.add.accumulate(grid, axis=0).reshape(-1)[:size]
    total = int(sum(poly))
    return poly, total


def _exact_sf(u: float, n0: int, n1: int) -> float:
    """P(U >= u) under the null, exactly (u an integer-valued statistic)."""
    counts, total = _u_counts(min(n0, n1), max(n0, n1))
    k = int(round(u))
    return float(sum(counts[k:]) / total) if k < len(counts) else 0.0


def mann_whitney(n0, n1, rank_sum1, tie_term) -> tuple[np.ndarray, np.ndarray]:
    """(U1, p): U of group 1 (its rank sum minus n1 (n1 + 1) / 2) and the two-sided p, per element."""
    n0, n1, r1, ties = (np.asarray(a, dtype=float) for a in (n0, n1, rank_sum1, tie_term))
    u1 = r1 - n1 * (n1 + 1) / 2
    u = np.maximum(u1, n0 * n1 - u1)
    n = n0 + n1
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.sqrt(n0 * n1 / 12 * ((n + 1) - ties / (n * (n - 1))))
        z = (u - n0 * n1 / 2 - 0.5) / s
    p = special.ndtr(-z)
    exact = ((n0 <= EXACT_MAX) | (n1 <= EXACT_MAX)) & (ties == 0) & (n0 >= 1) & (n1 >= 1)
    for i in np.flatnonzero(exact):
        p[i] = _exact_sf(u[i], int(n0[i]), int(n1[i]))
    p = np.clip(2.0 * p, 0.0, 1.0)
    empty = (n0 < 1) | (n1 < 1)
    return np.where(empty, np.nan, u1), np.where(empty, np.nan, p)


def benjamini_hochberg(p) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values over the finite entries of ``p`` (NaN stays NaN)."""
    p = np.asarray(p, dtype=float)
    q = np.full(p.shape, np.nan)
    ok = np.flatnonzero(np.isfinite(p))
    m = len(ok)
    if not m:
        return q
    order = ok[np.argsort(p[ok], kind="stable")]
    scaled = p[order] * m / np.arange(1, m + 1)
    q[order] = np.minimum(np.minimum.accumulate(scaled[::-1])[::-1], 1.0)
    return q


def hedges_g(n0, m0, v0, n1, m1, v1) -> np.ndarray:
    """Standardised mean difference (m1 - m0) / pooled sd, times the small-sample correction
    1 - 3 / (4 (n0 + n1) - 9); +-inf for different constant groups, NaN for equal ones or n0 + n1 < 3."""
    n0, m0, v0, n1, m1, v1 = (np.asarray(a, dtype=float) for a in (n0, m0, v0, n1, m1, v1))
    dof = n0 + n1 - 2
    with np.errstate(divide="ignore", invalid="ignore"):
        pooled = np.sqrt((np.where(n0 > 1, (n0 - 1) * v0, 0) + np.where(n1 > 1, (n1 - 1) * v1, 0)) / dof)
        d = (m1 - m0) / pooled
        j = 1 - 3 / (4 * (n0 + n1) - 9)
    return np.where((dof >= 1) & (n0 >= 1) & (n1 >= 1), d * j, np.nan)
