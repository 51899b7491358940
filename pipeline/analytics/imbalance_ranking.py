"""Which imbalanced call paths matter: each call path's share of its run's time, and the ranking of the
per-rank imbalance table (perflake.analytics.imbalance) by a chosen column, without the negligible call paths.

Ranked by max/mean alone, the top of the table is full of call paths of a few milliseconds: a 5 ms function
run by one rank in eight is as "imbalanced" as a solver that takes half the run.  So every row gets

- ``total``: the call path's metric summed over the run's locations (``mean * locations``: the same under
  ``absent="exclude"`` and ``"zero"``), and
- ``share``: ``total`` divided by the run's total, the inclusive time of the run's root(s) summed over its
  locations.  For an inclusive metric that is the sum of the totals of the root call paths (paths of one
  frame); for an exclusive metric (or one of another role), whose values add up to the root's inclusive
  value, the sum of the totals of all the run's call paths.

and :func:`rank` drops the rows with ``share < min_share`` (NaN shares, of runs whose total is 0, count as 0)
and orders the rest by ``by``, largest first (NaN last), ties by the larger mean, then the table's order:

- ``imbalance`` (max / mean, the default), ``max`` (the slowest location: the critical path's view),
  ``std``, ``mean``, or ``time`` (``total``: where the metric goes, imbalanced or not).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from perflake.errors import UsageError

BY = {"imbalance": "imbalance", "max": "max", "std": "std", "mean": "mean", "time": "total", "total": "total"}
INCLUSIVE = "inclusive"


def check(by: str, min_share: float) -> str:
    """The column ``by`` ranks on; a UsageError for an unknown ``by`` or a share outside [0, 1]."""
    if by not in BY:
        raise UsageError(f"imbalance by {by!r}: use {', '.join(k for k in BY if k != 'total')}")
    if not 0.0 <= float(min_share) <= 1.0:
        raise UsageError(f"min_share {min_share!r}: a fraction of the run's total, between 0 and 1")
    return BY[by]


def roles(catalog: pa.Table) -> pd.DataFrame:
    """run_id, metric, role of every metric of the catalog rows (its ``metrics`` list of structs)."""
    metrics = catalog.column("metrics").combine_chunks()
    flat = pc.list_flatten(metrics)
    owners = pc.list_parent_indices(metrics).to_numpy()
    return pd.DataFrame({"run_id": np.asarray(catalog.column("run_id").to_pylist(), dtype=object)[owners],
                         "metric": pc.struct_field(flat, "name").to_pylist(),
                         "role": pc.struct_field(flat, "role").to_pylist()})


def with_share(df: pd.DataFrame, metric_roles: pd.DataFrame) -> pd.DataFrame:
    """``df`` (the imbalance statistics of every call path of each run: run_id, metric, path, mean, locations...)
    with the columns ``total`` and ``share`` (module docstring)."""
    out = df.copy()
    out["total"] = out["mean"].to_numpy(dtype=float) * out["locations"].to_numpy(dtype=float)
    role = out[["run_id", "metric"]].merge(metric_roles.drop_duplicates(["run_id", "metric"]), how="left")["role"]
    root = np.array([p is not None and len(p) == 1 for p in out["path"]], dtype=bool)
    counted = np.where(role.to_numpy() == INCLUSIVE, root, True)
    run_total = (out["total"].where(counted, 0.0).fillna(0.0)
                 .groupby([out["run_id"], out["metric"]]).transform("sum").to_numpy(dtype=float))
    with np.errstate(divide="ignore", invalid="ignore"):
        out["share"] = np.where(run_total > 0, out["total"].to_numpy(dtype=float) / run_total, np.nan)
    return out


def rank(df: pd.DataFrame, *, by: str = "imbalance", min_share: float = 0.0, top: int | None = None) -> pd.DataFrame:
    """The rows with ``share >= min_share``, largest ``by`` first (module docstring); the first ``top``."""
    column = check(by, min_share)
    if min_share > 0:
        df = df[np.nan_to_num(df["share"].to_numpy(dtype=float), nan=0.0) >= min_share]
    key, mean = df[column].to_numpy(dtype=float), df["mean"].to_numpy(dtype=float)
    idx = np.lexsort((-np.nan_to_num(mean, nan=-np.inf), -np.nan_to_num(key, nan=-np.inf)))
    if top:
        idx = idx[:top]
    return df.take(idx).reset_index(drop=True)
