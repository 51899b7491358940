"""Extra-P's single-parameter performance models, fitted to many call paths at once with numpy.

A model is the performance-model normal form with one term, ``f(p) = c0 + c1 * p^i * log2(p)^j``, or the
constant ``c0``.  For each call path (a row of values over the points ``p``) the fitter does what Extra-P's
``Basic`` single-parameter modeler (extrap 4.2, the one Thicket's ``Modeling`` uses) does:

- the constant model is the mean of the values; its cost is its residual sum of squares (the total sum of
  squares, TSS) and its SMAPE over all points.  A row with TSS = 0 is constant.
- every hypothesis ``(i, j)`` of Extra-P's default exponent set (:data:`EXPONENTS`; with ``negative`` also
  its negative set, for strong scaling) is scored by leave-one-out cross-validation: for each point, fit
  ``c0, c1`` by least squares on the other points (``c0`` set to 0 when ``|c0 / min(y)| < 5e-4``), predict
  the left-out point, and add up the squared errors (RSS), the SMAPE (``2|d| / (|y| + |f|)``, in percent,
  averaged over the points) and the relative error.  Log terms are left out when a point is < 1 (<= 1 with
  negative exponents), as Extra-P does.
- the coefficients reported are the least-squares fit to all points; adjusted R^2 is
  ``1 - (RSS_cv / TSS) * (n - 1) / (n - 2)``.
- a hypothesis is dropped when its final ``c1`` is 0 or its term contributes less than 5e-4 of the value
  at every point; the model is the first hypothesis (in Extra-P's order) with the smallest cross-validated
  SMAPE, if that SMAPE is below the constant model's (in-sample) SMAPE, else the constant.

Rows are grouped by which points they have (NaN = the call path was not measured at that point) and every
group is fitted with one least-squares solve per (hypothesis, left-out point) for all its rows together.
The cross-check against the ``extrap`` package itself is tests/test_models.py.
"""

from __future__ import annotations

from fractions import Fraction
from typing import NamedTuple

import numpy as np
import pandas as pd

EPSILON = 0.0005  # Extra-P: a cross-validation fit's c0 below this fraction of min(y) is set to 0
MIN_TERM_CONTRIBUTION = 0.0005  # Extra-P: a term contributing less than this at every point is dropped

# Extra-P's default building blocks (polynomial exponent as a fraction, log exponent), in its order
EXPONENTS = [(Fraction(a, b), c) for a, b, c in [
    (0, 1, 1), (0, 1, 2), (1, 4, 0), (1, 3, 0), (1, 4, 1), (1, 3, 1), (1, 4, 2), (1, 3, 2), (1, 2, 0), (1, 2, 1),
    (1, 2, 2), (2, 3, 0), (3, 4, 0), (2, 3, 1), (3, 4, 1), (4, 5, 0), (2, 3, 2), (3, 4, 2), (1, 1, 0), (1, 1, 1),
    (1, 1, 2), (5, 4, 0), (5, 4, 1), (4, 3, 0), (4, 3, 1), (3, 2, 0), (3, 2, 1), (3, 2, 2), (5, 3, 0), (7, 4, 0),
    (2, 1, 0), (2, 1, 1), (2, 1, 2), (9, 4, 0), (7, 3, 0), (5, 2, 0), (5, 2, 1), (5, 2, 2), (8, 3, 0), (11, 4, 0),
    (3, 1, 0), (3, 1, 1)]]
# added with negative=True (Extra-P's allow_negative_exponents), after the default ones
NEGATIVE_EXPONENTS = [(Fraction(a, b), c) for a, b, c in [
    (0, 1, -1), (0, 1, -2), (-1, 4, -1), (-1, 3, -1), (-1, 4, -2), (-1, 3, -2), (-1, 2, -1), (-1, 2, -2),
    (-2, 3, -1), (-3, 4, -1), (-2, 3, -2), (-3, 4, -2), (-1, 1, -1), (-1, 1, -2), (-5, 4, -1), (-4, 3, -1),
    (-3, 2, -1), (-3, 2, -2), (-2, 1, -1), (-2, 1, -2), (-5, 2, -1), (-5, 2, -2), (-3, 1, -1)]] + [
    (Fraction(-a, b), 0) for a, b in [(1, 4), (1, 3), (1, 2), (2, 3), (3, 4), (4, 5), (1, 1), (5, 4), (4, 3), (3, 2),
                                      (5, 3), (7, 4), (2, 1), (9, 4), (7, 3), (5, 2), (8, 3), (11, 4), (3, 1)]]
COLUMNS = ["model", "c0", "c1", "poly", "log", "smape", "ar2", "rss", "re", "points"]


class Hypotheses(NamedTuple):
    poly: list[Fraction]
    log: list[int]


def hypotheses(*, negative: bool = False, log_terms: bool = True) -> Hypotheses:
    """The exponent pairs tried, in Extra-P's order (its default set; with ``negative`` the negative set)."""
    pairs = EXPONENTS + (NEGATIVE_EXPONENTS if negative else [])
    if not log_terms:
        pairs = [(a, c) for a, c in pairs if c == 0]
    return Hypotheses([a for a, _ in pairs], [c for _, c in pairs])


def term(x, poly, log) -> np.ndarray:
    """``x^poly * log2(x)^log`` (no coefficient)."""
    x = np.asarray(x, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = x ** float(poly) if poly != 0 else np.ones_like(x)
        return out * np.log2(x) ** float(log) if log != 0 else out


def evaluate(c0, c1, poly, log, x) -> np.ndarray:
    """Each model (arrays of c0, c1, poly, log; constant models have poly = log = 0 and c1 = 0) at ``x``."""
    c0, c1 = np.asarray(c0, dtype=float), np.asarray(c1, dtype=float)
    poly, log = np.asarray(poly, dtype=float), np.asarray(log, dtype=float)
    x = float(x)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(poly != 0, x**poly, 1.0) * np.where(log != 0, np.log2(x) ** log, 1.0)
    return c0 + np.where(c1 != 0, c1 * t, 0.0)


def describe(c0: float, c1: float, poly, log, key: str = "p", digits: int = 4) -> str:
    """A model as text in Extra-P's notation: ``3 + 0.5 * p^(1) * log2(p)^(1)``."""
    if c1 == 0 or (poly == 0 and log == 0):
        return f"{c0:.{digits}g}"
    parts = [f"{key}^({Fraction(poly)})"] if poly != 0 else []
    parts += [f"log2({key})^({int(log)})"] if log != 0 else []
    sign = "-" if c1 < 0 else "+"
    return f"{c0:.{digits}g} {sign} {abs(c1):.{digits}g} * {' * '.join(parts)}"


def _constant(y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean, TSS and in-sample SMAPE of the constant model of each row (Extra-P's ConstantHypothesis)."""
    mean = y.mean(axis=1)
    d = mean[:, None] - y
    tss = (d * d).sum(axis=1)
    abssum = np.abs(y) + np.abs(mean)[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        smape = np.where(abssum != 0, 2 * np.abs(d) / abssum, 0.0).sum(axis=1) / y.shape[1] * 100
    return mean, tss, smape


def _solve(a: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Least-squares coefficients (2 x rows) of ``a @ c = y_row`` for every row of ``y``: the pseudo-inverse of
    the small design matrix (an SVD, as lstsq's), applied to all rows in one product (lstsq itself with 10,000
    right-hand sides is 50x slower)."""
    return np.linalg.pinv(a, rcond=np.finfo(float).eps * max(a.shape)) @ y.T


def _fit_group(x: np.ndarray, y: np.ndarray, hyp: Hypotheses, negative: bool) -> dict[str, np.ndarray]:
    """Fit every row of ``y`` (rows x points, no NaN) over the points ``x``; the arrays of COLUMNS[1:-1]."""
    rows, n = y.shape
    mean, tss, const_smape = _constant(y)
    log_ok = x.min() > 1.0 if negative else x.min() >= 1.0  # Extra-P: log terms need every point >= 1 (> 1)
    usable = [h for h in range(len(hyp.poly)) if hyp.log[h] == 0 or log_ok]
    smape = np.full((len(usable), rows), np.inf)
    stats = {k: np.zeros((len(usable), rows)) for k in ("c0", "c1", "rss", "re")}
    for u, h in enumerate(usable):
        t = term(x, hyp.poly[h], hyp.log[h])
        rss, sm, re = np.zeros(rows), np.zeros(rows), np.zeros(rows)
        for i in range(n):
            keep = np.arange(n) != i
            a = np.column_stack([np.ones(n - 1), t[keep]])
            coef = _solve(a, y[:, keep])
            c0, c1 = coef[0], coef[1]
            low = y[:, keep].min(axis=1)
            with np.errstate(divide="ignore", invalid="ignore"):
                tiny = np.where(low == 0, np.abs(c0) < EPSILON, np.abs(c0 / low) < EPSILON)
            c0 = np.where(tiny, 0.0, c0)
            actual = y[:, i]
            d = c0 + c1 * t[i] - actual
            rss += d * d
            abssum = np.abs(actual) + np.abs(c0 + c1 * t[i])
            with np.errstate(divide="ignore", invalid="ignore"):
                sm += np.where(abssum != 0, 2 * np.abs(d) / abssum, 0.0) / n * 100
                re += np.where(actual != 0, np.abs(d / actual), 0.0) / n
        coef = _solve(np.column_stack([np.ones(n), t]), y)
        with np.errstate(divide="ignore", invalid="ignore"):
            contribution = np.abs(coef[1][:, None] * t[None, :] / y).max(axis=1)
        dropped = (coef[1] == 0) | (contribution < MIN_TERM_CONTRIBUTION) | ~np.isfinite(rss)
        smape[u] = np.where(dropped, np.inf, sm)
        stats["c0"][u], stats["c1"][u], stats["rss"][u], stats["re"][u] = coef[0], coef[1], rss, re
    best = np.argmin(smape, axis=0) if usable else np.zeros(rows, np.int64)
    cols = np.arange(rows)
    chosen = (smape[best, cols] < const_smape) & (tss != 0) if usable else np.zeros(rows, bool)
    pick = lambda k, default: np.where(chosen, stats[k][best, cols], default) if usable else default  # noqa: E731
    hyp_index = np.array(usable)[best] if usable else np.zeros(rows, np.int64)
    with np.errstate(divide="ignore", invalid="ignore"):
        rss = pick("rss", tss)
        ar2 = np.where(chosen, 1.0 - rss / tss * (n - 1.0) / (n - 2.0) if n > 2 else np.nan, 1.0)
        const_re = np.abs(mean[:, None] - y) / np.abs(y)
    return {
        "c0": pick("c0", mean), "c1": pick("c1", np.zeros(rows)),
        "poly": np.where(chosen, np.array([float(p) for p in hyp.poly])[hyp_index], 0.0),
        "log": np.where(chosen, np.array(hyp.log, dtype=float)[hyp_index], 0.0),
        "smape": np.where(chosen, smape[best, cols] if usable else 0.0, const_smape), "ar2": ar2, "rss": rss,
        "re": pick("re", np.where(np.isfinite(const_re), const_re, np.nan).mean(axis=1)),
    }


def fit(x, values, *, negative: bool = False, log_terms: bool = True, min_points: int = 3,
        key: str = "p") -> pd.DataFrame:
    """The model of each row of ``values`` (a DataFrame or 2-D array: rows x points, NaN = not measured) over
    the points ``x`` (positive numbers, one per column).

    Returns one row per input row (same index) with COLUMNS: ``model`` (text), ``c0``, ``c1``, ``poly`` (the
    exponent i of p, a float), ``log`` (the exponent j of log2 p), ``smape`` (cross-validated, percent),
    ``ar2`` (adjusted R^2), ``rss`` (cross-validated residual sum of squares), ``re`` (mean relative error),
    ``points`` (how many points the row has).  Rows with fewer than ``min_points`` points are NaN (Extra-P
    asks for 5; the cross-validation needs 3).  The constant model has ``c1 = poly = log = 0``, and ``smape``,
    ``rss``, ``re`` in sample with ``ar2 = 1``, as Extra-P reports it.
    """
    frame = values if isinstance(values, pd.DataFrame) else pd.DataFrame(np.asarray(values, dtype=float))
    y = frame.to_numpy(dtype=float)
    x = np.asarray(x, dtype=float)
    if y.ndim != 2 or x.shape != (y.shape[1],):
        raise ValueError(f"{len(x)} points for values of shape {y.shape}")
    if not (np.isfinite(x).all() and (x > 0).all()):
        raise ValueError(f"the points must be positive numbers, not {list(x)}")
    if len(np.unique(x)) != len(x):
        raise ValueError(f"the points must be distinct, not {list(x)}")
    if min_points < 3:
        raise ValueError("min_points must be >= 3 (leave-one-out fits of two coefficients)")
    hyp = hypotheses(negative=negative, log_terms=log_terms)
    out = {k: np.full(len(y), np.nan) for k in COLUMNS[1:]}
    mask = np.isfinite(y)
    patterns, group = np.unique(mask, axis=0, return_inverse=True) if len(y) else (np.empty((0, len(x)), bool), [])
    for g, pattern in enumerate(patterns):
        rows = np.flatnonzero(np.asarray(group).reshape(-1) == g)
        out["points"][rows] = pattern.sum()
        if pattern.sum() < min_points:
            continue
        for k, v in _fit_group(x[pattern], y[np.ix_(rows, pattern)], hyp, negative).items():
            out[k][rows] = v
    df = pd.DataFrame(out, index=frame.index)
    df["points"] = df["points"].astype("int64")
    df.insert(0, "model", [describe(c0, c1, p, j, key) if np.isfinite(c0) else None
                           for c0, c1, p, j in zip(df["c0"], df["c1"], df["poly"], df["log"])])
    return df
