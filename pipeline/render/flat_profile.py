"""Flat profiles: a metric summed per function (or per file, module, type) across all calling contexts.

This is Hatchet's flat-profile recipe (user guide, "Generating a flat profile": ``gf.drop_index_levels()`` then
``gf.dataframe.groupby("name").sum()`` sorted by ``time``, descending) and the Chopper API's
``GraphFrame.flat_profile(groupby_column="name")`` of the hatchet/hatchet fork:

* ranks and threads are first reduced per node with the **mean** (``drop_index_levels``' default ``np.mean``);
  ``aggregate="sum" | "min" | "max"`` chooses another reduction, ``aggregate=None`` takes one location
  (``rank``, ``thread``) instead;
* the per-node values are then **summed** over the nodes of each group.  Exclusive sums are exact; an inclusive
  sum counts a function that calls itself (directly or further down) more than once, in Hatchet as here;
* the result is indexed by the group column and sorted descending by ``sort_by``: by default the exclusive
  partner of ``default_metric`` (``time`` for TAU's ``time (inc)``), as the user guide sorts by ``time``
  (Chopper sorts by ``default_metric`` itself).

Differences on purpose: a group in which no node was measured keeps NaN (Hatchet's ``sum`` writes 0; perflake
never turns "not measured" into 0) and sorts last; only metric columns are summed (Hatchet's ``sum()`` also
runs over ``line`` and other frame columns).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from perflake.errors import RenderError
from perflake.frame.graph import frame_type
from perflake.frame.node_values import align, exclusive_metric, metric_names, per_node
from perflake.frame.tables import node_ids


def _group_keys(gf, by: str, ids: np.ndarray) -> np.ndarray:
    """The ``by`` value of each node id (a dataframe column, or the frame's ``type``)."""
    df = gf.dataframe
    if by in df.columns and by not in metric_names(gf):
        first = pd.Series(df[by].to_numpy(dtype=object)).groupby(node_ids(df), sort=True).first()
        first.index = first.index.astype(np.uint64)
        return align(first, ids, fill=None)
    if by == "type":
        frames = gf.graph.node_by_id()
        return np.array([frame_type(frames[int(i)].frame) for i in ids], dtype=object)
    columns = [c for c in df.columns if c not in metric_names(gf)]
    raise RenderError(f"cannot group by {by!r} (choose from {', '.join(map(str, columns + ['type']))})")


def flat_profile(gf, by: str = "name", metrics=None, *, aggregate: str | None = "mean", rank: int = 0,
                 thread: int = 0, sort_by: str | None = None) -> pd.DataFrame:
    """Metrics summed per ``by`` value across calling contexts, sorted descending (see the module docstring).

    Parameters
    ----------
    by : the grouping column: ``name`` (functions), ``file``, ``module``, or ``type``.
    metrics : a metric name or a list of them (default: every metric of the frame).
    aggregate : reduction over ranks/threads per node before the sum: ``mean`` (Hatchet's), ``sum``, ``min``,
        ``max``; ``None`` takes the single location ``rank``/``thread``.
    sort_by : the metric to sort by (default: the exclusive partner of ``default_metric``).

    Returns
    -------
    DataFrame indexed by ``by`` with one column per metric.
    """
    metrics = [metrics] if isinstance(metrics, str) else list(metrics or metric_names(gf))
    table = per_node(gf, metrics, rank=rank, thread=thread, aggregate=aggregate)
    keys = _group_keys(gf, by, table.index.to_numpy(np.uint64))
    out = table.groupby(pd.Index(keys, name=by), sort=True, dropna=False).sum(min_count=1)
    if sort_by is None:
        default = exclusive_metric(gf, gf.default_metric)
        sort_by = default if default in metrics else metrics[0]
    if sort_by not in out.columns:
        raise RenderError(f"cannot sort by {sort_by!r}: not among the metrics {', '.join(metrics)}")
    return out.sort_values(sort_by, ascending=False, kind="stable", na_position="last")
