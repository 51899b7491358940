"""Scaling models of every call path across runs (Thicket's Extra-P integration, computed by perflake).

The points: the per-run value of each call path (the mean over the run's locations, as in
:mod:`perflake.analytics.ensemble`), aggregated over the runs at each value of a catalog column or metadata
key (``nprocs``, ``meta:problem_size``) with ``stat`` (Extra-P's default: the mean of the repetitions;
``median`` is its other choice).  That is :func:`~perflake.analytics.ensemble.scaling_table`, one DuckDB query.
The models: :func:`perflake.analytics.pmnf.fit`, Extra-P's single-parameter modeler over all call paths at once.

>>> m = lake.model(by="nprocs", metric="time")        # or perflake.analytics.models.scaling_models(lake, ...)
>>> m.table[["name", "model", "smape", "ar2"]]       # one row per call path
>>> m.predict(4096)                                   # each call path's model at p = 4096
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from perflake.analytics import pmnf
from perflake.analytics.ensemble import parse_key, scaling_table
from perflake.errors import UsageError

LABELS = ("name", "path")


@dataclass
class ScalingModels:
    """The models of a scaling study.

    ``table``: one row per call path (index node_id): name, path, the columns of :func:`perflake.analytics.pmnf.fit`
    (model, c0, c1, poly, log, smape, ar2, rss, re, points) and, when a prediction was asked for, ``predicted``;
    ``points``: the values fitted (the scaling table: name, path, one column per value of the key);
    ``key``, ``metric``, ``stat``: what was modelled; ``at``: the prediction's point (or None).
    """

    table: pd.DataFrame
    points: pd.DataFrame
    key: str
    metric: str
    stat: str
    at: float | None = None

    def predict(self, p) -> pd.Series:
        """Each call path's model evaluated at ``p`` (NaN where no model was fitted), indexed by node_id."""
        p = _point(p)
        t = self.table
        return pd.Series(pmnf.evaluate(t["c0"], t["c1"], t["poly"], t["log"], p), index=t.index, name=f"at {p:g}")

    def values(self) -> pd.DataFrame:
        """The fitted points as a numeric matrix (call paths x key values)."""
        return self.points[[c for c in self.points.columns if c not in LABELS]]

    def __repr__(self) -> str:
        return (f"ScalingModels({len(self.table)} call paths, {self.metric} by {self.key} at "
                f"{list(self.values().columns)})")


def _point(p) -> float:
    try:
        value = float(p)
    except (TypeError, ValueError):
        raise UsageError(f"predict: {p!r} is not a number") from None
    if not np.isfinite(value) or value <= 0:
        raise UsageError(f"predict: the point must be a positive number, not {p!r}")
    return value


def points_of(table: pd.DataFrame, key: str) -> tuple[pd.DataFrame, np.ndarray]:
    """The value columns of a scaling table that models can use (numeric, positive) and their x values; a
    UsageError when too few remain.  Runs without the key (a NaN column) are left out with a warning."""
    keys = [c for c in table.columns if c not in LABELS]
    missing = [c for c in keys if pd.isna(c)]
    if missing:
        warnings.warn(f"{key}: some selected runs have no value of the key; they are left out of the models",
                      stacklevel=3)
    keys = [c for c in keys if not pd.isna(c)]
    bad = [c for c in keys if isinstance(c, bool) or not isinstance(c, (int, float, np.integer, np.floating))]
    if bad:
        raise UsageError(f"{key}: scaling models need numeric values of the key, not {bad[0]!r}")
    if any(float(c) <= 0 for c in keys):
        raise UsageError(f"{key}: scaling models need positive values of the key, not {min(keys)!r}")
    return table[[*[c for c in LABELS if c in table.columns], *keys]], np.array([float(c) for c in keys])


def scaling_models(lake, by: str = "nprocs", metric: str | None = None, *, where: str | None = None, runs=None,
                   stat: str = "mean", predict=None, negative: bool = False, log_terms: bool = True,
                   min_points: int = 3, scheduler=None, unknown_keys: str = "warn") -> ScalingModels:
    """Fit ``c0 + c1 * p^i * log2(p)^j`` per call path of ``metric`` over the values ``p`` of ``by``.

    ``where``/``runs``: the runs (SQL on the catalog / ids or prefixes); ``metric``: default as in
    :func:`perflake.analytics.ensemble.ensemble`; ``stat``: how the runs of one point combine (mean, median,
    min, max, pNN); ``negative``: also try Extra-P's negative exponents (strong scaling: time falling with p);
    ``log_terms``: allow log2 factors; ``min_points``: fewer points give no model (Extra-P asks for 5);
    ``predict``: a point p at which to evaluate every model (column ``predicted``); ``unknown_keys``: as in
    :func:`perflake.analytics.ensemble.ensemble`.
    """
    if isinstance(min_points, bool) or not isinstance(min_points, (int, np.integer)) or min_points < 3:
        raise UsageError(f"min_points must be a whole number >= 3 (leave-one-out fits of two coefficients), "
                         f"not {min_points!r}")
    at = _point(predict) if predict is not None else None
    key = parse_key(by)[2]
    table = scaling_table(lake, metric, by, where=where, stat=stat, runs=runs, scheduler=scheduler,
                          unknown_keys=unknown_keys)
    used, x = points_of(table, key)
    if len(x) < min_points:
        raise UsageError(f"{key}: {len(x)} distinct values {list(used.columns[len(LABELS):])}; a scaling model "
                         f"needs at least {min_points} (Extra-P asks for 5)")
    fits = pmnf.fit(x, used.drop(columns=[c for c in LABELS if c in used.columns]), negative=negative,
                    log_terms=log_terms, min_points=min_points, key=key.removeprefix("meta:"))
    out = used[[c for c in LABELS if c in used.columns]].join(fits)
    if at is not None:
        out["predicted"] = pmnf.evaluate(out["c0"], out["c1"], out["poly"], out["log"], at)
    return ScalingModels(out, used, key, table.attrs.get("metric", metric), stat, at)


def ranked(models: ScalingModels, top: int | None = None) -> pd.DataFrame:
    """The table, most expensive call paths first: by the predicted value when a prediction was asked for, else
    by the value at the largest point measured (NaN last)."""
    t = models.table
    if models.at is not None:
        score = t["predicted"].to_numpy(dtype=float)
    else:
        v = models.values().to_numpy(dtype=float)
        score = np.array([row[np.isfinite(row)][-1] if np.isfinite(row).any() else np.nan for row in v])
    order = np.argsort(-np.nan_to_num(score, nan=-np.inf), kind="stable")
    out = t.iloc[order]
    return out.head(top) if top else out
