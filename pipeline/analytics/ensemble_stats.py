"""Thicket's statistics per call path, computed in DuckDB and written to ``Ensemble.statsframe``.

Every function takes the ensemble and its columns (metric names; ``(header, metric)`` on a columnar
ensemble), adds columns named as Thicket names them and returns those names::

    from perflake.analytics import ensemble_stats as stats
    stats.mean(ens, ["time"])                       # time_mean           (also: ens.stats.mean(["time"]))
    stats.percentiles(ens, ["time"], [0.1, 0.9])    # time_percentiles_10, time_percentiles_90
    stats.describe(ens, ["time"], ["mean", "std", "p90"])    # several statistics in one pass

What is computed, per call path, over the rows of ``ens.dataframe`` (one per profile, or per profile and rank):

* ``mean, median, minimum (_min), maximum (_max), std, variance (_var), sum, count, percentiles``
  (``_percentiles_<p*100>``): moments, extremes, counts and quantiles come out of ONE DuckDB statement
  (``sql/value_stats.sql``, quantiles only when one is asked for) for any
  number of columns; quantiles interpolate linearly (numpy's and
  pandas' default); ``std``/``var`` divide by count - ``ddof`` (``ddof=1``: pandas' and so Thicket's
  default) and are NaN when count <= ddof;
* ``calc_boxplot_statistics``: Thicket's ``_q1, _q2, _q3, _iqr, _lowerfence, _upperfence`` (fences at 1.5 IQR)
  and ``_outliers`` (the profiles outside the fences), each suffixed with the quartiles as Thicket does
  (``time_q1(0.25, 0.5, 0.75)``), plus ``_n_outliers`` and the whiskers ``_whisker_low``/``_whisker_high`` (the
  most extreme values inside the fences, as matplotlib draws them);
* ``check_normality``: the Shapiro-Wilk test (SciPy's ``shapiro``, a distribution function of the whole
  sample); ``_normality`` is True when p > alpha, False when p < alpha (a nullable boolean; Thicket writes the
  strings "True"/"False"), missing with fewer than 3 values; ``_normality_pvalue`` holds p;
* ``correlation_nodewise``: Pearson's r and Spearman's rho (SQL), Kendall's tau-b (SQL over every pair of rows:
  quadratic in the number of profiles), named ``<c1>_vs_<c2> <method>`` as Thicket does.

NaN semantics: a missing value (a profile without the call path, or a NULL/NaN metric) is skipped, as
pandas' ``groupby`` statistics skip NaN; ``count`` is the number of values used.  Differences from Thicket,
which feeds NaN to numpy/SciPy in these three: the boxplot quartiles and fences, the normality test and the
correlations use the values present (Thicket gives NaN quartiles and fences, no outliers, NaN correlations and
an AttributeError in ``check_normality``).  Percentile column names use the exact percentile
(``0.125 -> _percentiles_12.5``; Thicket truncates: ``_percentiles_12``, and ``0.29 -> _percentiles_28``).
"""

from __future__ import annotations

import functools
import re

import numpy as np
import pandas as pd

from perflake.engine import sqlfiles
from perflake.errors import UsageError

MOMENTS = {"count": "count", "sum": "sum", "mean": "mean", "std": "std", "var": "var", "min": "min", "max": "max"}
_PCT = re.compile(r"^(?:p|percentiles_)(\d+(?:\.\d+)?)$")


def _session(ens):
    """A DuckDB connection for the statistics (they read Arrow tables registered on it, no lake file)."""
    from perflake.engine import duck

    return duck.connection()


def moments(ens, columns, probs=(), *, ddof: int = 1) -> pd.DataFrame:
    """The one-pass table of sql/value_stats.sql (the quantiles only with ``probs``): col,
    node_id, count, sum, mean, var, std, min, max, quantiles (a list per ``probs``)."""
    probs = [float(p) for p in probs]
    if any(not 0.0 <= p <= 1.0 for p in probs):
        raise UsageError(f"percentiles must be in [0, 1], not {[p for p in probs if not 0 <= p <= 1][0]}")
    con = _session(ens)
    try:
        con.register("stat_values_t", ens.column_values(columns))
        out = sqlfiles.relation(con, "value_stats", key="col", ddof=int(ddof), probs=probs).df()
        return out if probs else out.assign(quantiles=None)  # none asked for: the statement drops them
    finally:
        con.close()


def _pct_name(p: float) -> str:
    return f"{p * 100:.10g}"


def describe(ens, columns, stats=("count", "mean", "median", "std", "min", "max"), *, ddof: int = 1) -> list:
    """Several statistics of several columns in one DuckDB pass: ``count, sum, mean, median, std, var, min,
    max`` and ``pNN`` / ``percentiles_NN`` (NN in 0..100)."""
    entries = []
    for s in [stats] if isinstance(stats, str) else list(stats):
        m = _PCT.match(s)
        if s == "median":
            entries.append((s, "median", 0.5))
        elif m:
            p = float(m.group(1)) / 100
            if not 0 <= p <= 1:
                raise UsageError(f"percentile {s!r}: NN must be in 0..100")
            entries.append((s, f"percentiles_{_pct_name(p)}", p))
        elif s in MOMENTS:
            entries.append((s, s, None))
        else:
            raise UsageError(f"unknown statistic {s!r}: use {', '.join(MOMENTS)}, median or pNN")
    return _describe(ens, columns, entries, ddof)


def _describe(ens, columns, entries, ddof: int) -> list:
    """``entries``: (moment or anything, output suffix, probability or None)."""
    columns = ens.check_columns(columns)
    probs = list(dict.fromkeys(p for _, _, p in entries if p is not None))
    raw = moments(ens, columns, probs, ddof=ddof)
    q = np.stack(raw["quantiles"].to_numpy()) if probs and len(raw) else np.empty((len(raw), len(probs)))
    written = []
    for i, c in enumerate(columns):
        part = raw["col"].to_numpy() == i
        ids = raw["node_id"].to_numpy()[part]
        cols = {}
        for s, name, p in entries:
            vals = (raw[MOMENTS[s]].to_numpy(dtype=np.float64, na_value=np.nan)[part] if p is None
                    else q[part, probs.index(p)])
            cols[ens.stat_name(c, name)] = vals
        written += ens.put_stats(ids, cols)
        for s, name, _ in entries:
            if s == "count":  # a call path without a value has a count of 0
                column = ens.stat_name(c, name)
                ens.statsframe[column] = ens.statsframe[column].fillna(0).astype(np.int64)
    return written


def _one(stat: str, doc: str):
    def fn(ens, columns=None, *, ddof: int = 1) -> list:
        return describe(ens, columns, [stat], ddof=ddof)

    fn.__doc__ = f"{doc} per call path across the dataframe's rows: ``<column>_{stat}``."
    return fn


mean = _one("mean", "The mean")
median = _one("median", "The median (linear interpolation)")
minimum = _one("min", "The minimum")
maximum = _one("max", "The maximum")
std = _one("std", "The standard deviation (divisor count - ddof)")
variance = _one("var", "The variance (divisor count - ddof)")
count = _one("count", "The number of values")
sum = _one("sum", "The sum")  # noqa: A001 (Thicket's name)


def percentiles(ens, columns=None, percentiles=(0.25, 0.5, 0.75)) -> list:
    """Quantiles (linear interpolation) ``<column>_percentiles_<p*100>`` for each p in ``percentiles``."""
    ps = [float(p) for p in (percentiles or (0.25, 0.5, 0.75))]
    bad = [p for p in ps if not 0 <= p <= 1]
    if bad:
        raise UsageError(f"percentile {bad[0]} is out of range of [0.0, 1.0]")
    return _describe(ens, columns, [("p", f"percentiles_{_pct_name(p)}", p) for p in ps], 1)


def calc_boxplot_statistics(ens, columns=None, quartiles=(0.25, 0.5, 0.75)) -> list:
    """Thicket's boxplot statistics plus outlier counts and whiskers (module docstring)."""
    if len(quartiles) != 3:
        raise UsageError("quartiles takes three numbers between 0 and 1")
    columns = ens.check_columns(columns)
    tag = str(tuple(quartiles))
    raw = moments(ens, columns, list(quartiles))
    q = np.stack(raw["quantiles"].to_numpy()) if len(raw) else np.empty((0, 3))
    iqr = q[:, 2] - q[:, 0]
    lower, upper = q[:, 0] - 1.5 * iqr, q[:, 2] + 1.5 * iqr
    fences = pd.DataFrame({"col": raw["col"].to_numpy(), "node_id": raw["node_id"].to_numpy(),
                           "lower": lower, "upper": upper})
    con = _session(ens)
    try:
        con.register("stat_values_t", ens.column_values(columns))
        con.register("fences_t", fences)
        out = sqlfiles.relation(con, "statsframe_outliers").df()
    finally:
        con.close()
    out = fences.merge(out, on=["col", "node_id"], how="left")
    written = []
    for i, c in enumerate(columns):
        part = raw["col"].to_numpy() == i
        ids = raw["node_id"].to_numpy()[part]
        o = out[out["col"].to_numpy() == i]
        lists = np.empty(int(part.sum()), dtype=object)
        lists[:] = [list(v) if isinstance(v, (list, np.ndarray)) else [] for v in o["outliers"]]
        name = functools.partial(ens.stat_name, c)
        written += ens.put_stats(ids, {
            name(f"q1{tag}"): q[part, 0], name(f"q2{tag}"): q[part, 1], name(f"q3{tag}"): q[part, 2],
            name(f"iqr{tag}"): iqr[part], name(f"lowerfence{tag}"): lower[part],
            name(f"upperfence{tag}"): upper[part], name(f"outliers{tag}"): lists,
            name(f"n_outliers{tag}"): o["n_outliers"].to_numpy(dtype=np.float64, na_value=0.0),
            name(f"whisker_low{tag}"): o["whisker_low"].to_numpy(dtype=np.float64, na_value=np.nan),
            name(f"whisker_high{tag}"): o["whisker_high"].to_numpy(dtype=np.float64, na_value=np.nan)})
    return written


def samples(ens, column) -> tuple[np.ndarray, list[np.ndarray]]:
    """(call-path ids, the non-NaN values of each) of one column, for tests that need whole samples."""
    t = ens.column_values([column])
    ids = t.column("node_id").to_numpy(zero_copy_only=False)
    vals = t.column("value").to_numpy(zero_copy_only=False).astype(np.float64)
    ok = ~np.isnan(vals)
    ids, vals = ids[ok], vals[ok]
    order = np.argsort(ids, kind="stable")
    ids, vals = ids[order], vals[order]
    uniq, start = np.unique(ids, return_index=True)
    return uniq, np.split(vals, start[1:])


def check_normality(ens, columns=None, *, alpha: float = 0.05) -> list:
    """Shapiro-Wilk per call path: ``<column>_normality`` (p > alpha) and ``<column>_normality_pvalue``."""
    from scipy import stats as sps

    written = []
    for c in ens.check_columns(columns):
        ids, groups = samples(ens, c)
        p = np.full(len(ids), np.nan)
        for i, g in enumerate(groups):
            if len(g) >= 3:
                p[i] = sps.shapiro(g).pvalue
        verdict = np.empty(len(ids), dtype=object)
        verdict[:] = [None if np.isnan(x) or x == alpha else bool(x > alpha) for x in p]
        frame = ens.statsframe
        written += ens.put_stats(ids, {ens.stat_name(c, "normality_pvalue"): p})
        name = ens.stat_name(c, "normality")
        ens.put_stats(ids, {name: verdict})
        frame[name] = frame[name].astype("boolean")
        written.append(name)
    return written


def correlation_nodewise(ens, column1=None, column2=None, correlation: str = "pearson") -> list:
    """Correlation of two columns per call path across the rows where both have a value."""
    if column1 is None or column2 is None:
        raise UsageError("correlation_nodewise needs column1 and column2")
    if correlation not in ("pearson", "spearman", "kendall"):
        raise UsageError("correlation: pearson, spearman or kendall")
    con = _session(ens)
    try:
        con.register("pair_values_t", ens.pair_values(column1, column2))
        out = sqlfiles.relation(con, ("statsframe_kendall" if correlation == "kendall"
                                      else "statsframe_correlation")).df()
    finally:
        con.close()
    name = ens.cross_name(column1, column2, f" {correlation}")
    values = out[correlation].to_numpy(dtype=np.float64, na_value=np.nan)
    return ens.put_stats(out["node_id"].to_numpy(), {name: values})


class Bound:
    """The statistics of this module and perflake.analytics.ensemble_two_groups, bound to one ensemble."""

    def __init__(self, ens):
        self._ens = ens

    def __getattr__(self, name: str):
        from perflake.analytics import ensemble_two_groups

        for module in (globals(), vars(ensemble_two_groups)):
            fn = module.get(name)
            if callable(fn) and name in PUBLIC | ensemble_two_groups.PUBLIC:
                return functools.partial(fn, self._ens)
        raise AttributeError(f"no statistic {name!r}")

    def __dir__(self):
        from perflake.analytics import ensemble_two_groups

        return sorted(PUBLIC | ensemble_two_groups.PUBLIC)


PUBLIC = frozenset({"mean", "median", "minimum", "maximum", "std", "variance", "count", "sum", "percentiles",
                    "describe", "calc_boxplot_statistics", "check_normality", "correlation_nodewise"})
