"""Box and violin plots: how a metric is distributed across profiles at the top call paths, optionally one box
per group of profiles side by side.

Input: an :class:`~perflake.analytics.ensemble_frame.Ensemble` (``lake.ensemble_of(...)``), or a Lake and
``where`` (SQL on the runs catalog).  The values are the ensemble's dataframe rows: one per profile and call
path (the run's mean over its locations), or per (profile, rank) of a ``per_rank`` ensemble; a profile without
the call path adds no value.  The caller's ensemble is left as it is (the statistics go to a copy's statsframe).

Which call paths: the ``top`` with the largest mean of the metric over all the ensemble's profiles (the
statsframe's ``<metric>_mean``, computed in DuckDB, missing values skipped), the largest at the top; equal means
are ordered by the call path (its frame names from the root, compared as text), then by call-path id.  With
``group_by`` the ranking is still over the whole ensemble, so every group shows the same call paths.

Boxes are Thicket's boxplot statistics as :func:`perflake.analytics.ensemble_stats.calc_boxplot_statistics`
computes them in DuckDB, drawn as they are by ``Axes.bxp`` (nothing is recomputed): the box from q1 to q3
(quantiles by linear interpolation, numpy's default), a line at the median q2, the whiskers out to the most
extreme values inside the fences q1 - 1.5 IQR and q3 + 1.5 IQR, and every value outside the fences as a point.
Violins: matplotlib's Gaussian kernel density (Scott's bandwidth) of the same values, cut at their minimum and
maximum, every violin scaled to the same width, with the same DuckDB statistics inside (a thick bar from q1 to
q3, a thin line between the whiskers, a white dot at the median).  One value, or equal values, have no
density: that violin is a flat line at the value.

Call paths are on the y axis (labelled with their last frames, shortened; ``Plot.data["path"]`` holds the full
path), the metric and its unit on the x axis.
"""

from __future__ import annotations

import matplotlib
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from matplotlib import cbook, mlab
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

from perflake.analytics import ensemble_stats as stats
from perflake.errors import PlotError
from perflake.plots.figure import Plot, new_figure, node_path, path_labels

KINDS = ("box", "violin")
QUARTILES = (0.25, 0.5, 0.75)
COLOUR = "#4c72b0"
EDGE = "#333333"
BAND = 0.8  # the part of a call path's row its boxes share
VIOLIN_POINTS = 100
MISSING = "(missing)"
_STATS = {"q1": "q1", "median": "q2", "q3": "q3", "iqr": "iqr", "lowerfence": "lowerfence",
          "upperfence": "upperfence", "whisker_low": "whisker_low", "whisker_high": "whisker_high",
          "n_outliers": "n_outliers"}


def _ensemble(source, metric, where):
    """(an Ensemble of ``metric`` with its own statsframe, the metric)."""
    from perflake.analytics.ensemble_frame import Ensemble

    if isinstance(source, Ensemble):
        if where is not None:
            raise PlotError("where= selects the runs of a Lake; narrow an Ensemble with filter_metadata")
        metric = source.default_metric if metric is None else metric
        if metric not in source.metrics:
            raise PlotError(f"no metric {metric!r} in the ensemble (metrics: {', '.join(map(str, source.metrics))})")
        return source._derive(), metric  # shares the cached tables; its statsframe is a new one
    if not hasattr(source, "ensemble_of"):
        raise PlotError(f"plot_distributions needs an Ensemble or a Lake, not {type(source).__name__}")
    if metric is None:
        metric = source.ensemble_of(where).default_metric  # the catalog's metric list: no value is read
    return source.ensemble_of(where, metric=[metric]), metric


def top_call_paths(ens, metric, top: int | None) -> pd.DataFrame:
    """The call paths to draw (module docstring: largest mean first, then call path, then id): node, node_id,
    path (frame names from the root) and mean, in drawing order."""
    column = stats.describe(ens, [metric], ["mean"])[0]
    sf = ens.statsframe
    rows = [(float(m), node_path(n), int(n.node_id), n) for n, m in zip(sf.index, sf[column].to_numpy(float))
            if np.isfinite(m)]
    rows.sort(key=lambda r: (-r[0], r[1], r[2]))
    rows = rows[:top] if top else rows
    return pd.DataFrame({"node": [r[3] for r in rows], "node_id": np.array([r[2] for r in rows], np.uint64),
                         "path": [r[1] for r in rows], "mean": [r[0] for r in rows]})


def _value_text(value) -> str:
    if value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value)):
        return MISSING
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _groups(ens, group_by) -> tuple[list[str], list[tuple[str | None, object]]]:
    """(the group keys, [(group text, sub-ensemble)]) in the order of ``Ensemble.groupby`` (sorted, missing
    last); one unnamed group without ``group_by``."""
    if group_by is None:
        return [], [(None, ens)]
    keys = [group_by] if isinstance(group_by, str) else list(group_by)
    parts = ens.groupby(keys)
    return keys, [(", ".join(_value_text(v) for v in key), sub) for key, sub in parts.items()]


def _box_table(sub, metric, ids: np.ndarray) -> pd.DataFrame:
    """Per call path of ``ids``: count, mean and Thicket's boxplot statistics of ``sub`` (DuckDB, written to
    its statsframe), plus the values outside the fences (``outlier_values``) and all values (``values``)."""
    stats.describe(sub, [metric], ["count", "mean"])
    stats.calc_boxplot_statistics(sub, [metric], QUARTILES)
    sf = sub.statsframe
    tag = str(QUARTILES)
    table = pd.DataFrame({"count": sf[sub.stat_name(metric, "count")].to_numpy(),
                          "mean": sf[sub.stat_name(metric, "mean")].to_numpy(float),
                          **{out: sf[sub.stat_name(metric, f"{name}{tag}")].to_numpy(float)
                             for out, name in _STATS.items()}},
                         index=pd.Index(sub.node_ids(), dtype=np.uint64, name="node_id"))
    table = table.reindex(pd.Index(np.asarray(ids, np.uint64), name="node_id"))
    values = _samples(sub, metric, table.index.to_numpy())
    table["values"] = values
    table["outlier_values"] = [v[(v < lo) | (v > hi)] for v, lo, hi in
                               zip(values, table["lowerfence"], table["upperfence"])]
    return table


def _samples(sub, metric, ids: np.ndarray) -> list[np.ndarray]:
    """The sorted non-NaN values of each call path of ``ids`` (only their rows leave Arrow)."""
    t = sub.column_values([metric])
    t = t.filter(pc.is_in(t.column("node_id"), pa.array(ids, pa.uint64())))
    nodes = t.column("node_id").to_numpy(zero_copy_only=False)
    vals = t.column("value").to_numpy(zero_copy_only=False).astype(np.float64)
    ok = ~np.isnan(vals)
    return [np.sort(vals[ok & (nodes == i)]) for i in ids]


def _density(values: np.ndarray, coords: np.ndarray) -> np.ndarray:
    """matplotlib's Gaussian KDE (Scott's rule); constant for one value or equal values (a flat violin)."""
    if len(values) < 2 or values.min() == values.max():
        return np.ones_like(coords)
    return mlab.GaussianKDE(values, "scott").evaluate(coords)


def _draw_boxes(ax, table, positions, width, colour, gid):
    bxp = [{"med": r.median, "q1": r.q1, "q3": r.q3, "whislo": r.whisker_low, "whishi": r.whisker_high,
            "fliers": r.outlier_values} for r in table.itertuples()]
    art = ax.bxp(bxp, positions=positions, widths=width, orientation="horizontal", patch_artist=True,
                 manage_ticks=False,
                 boxprops={"facecolor": matplotlib.colors.to_rgba(colour, 0.8), "edgecolor": EDGE, "linewidth": 0.9},
                 medianprops={"color": EDGE, "linewidth": 1.6}, whiskerprops={"color": EDGE, "linewidth": 0.9},
                 capprops={"color": EDGE, "linewidth": 0.9},
                 flierprops={"marker": "o", "markersize": 3.2, "markerfacecolor": "none",
                             "markeredgecolor": colour, "linestyle": "none"})
    for k, key in enumerate(gid):
        art["boxes"][k].set_gid(f"box {key}")
        art["medians"][k].set_gid(f"median {key}")
        art["fliers"][k].set_gid(f"outliers {key}")
        for side, i in (("low", 2 * k), ("high", 2 * k + 1)):
            art["whiskers"][i].set_gid(f"whisker-{side} {key}")
            art["caps"][i].set_gid(f"cap-{side} {key}")


def _draw_violins(ax, table, positions, width, colour, gid):
    vp = cbook.violin_stats(list(table["values"]), _density, points=VIOLIN_POINTS)
    art = ax.violin(vp, positions=positions, widths=width, orientation="horizontal", showmeans=False,
                    showextrema=False, showmedians=False)
    for body, key, r, y in zip(art["bodies"], gid, table.itertuples(), positions):
        body.set(facecolor=colour, edgecolor=EDGE, linewidth=0.6, alpha=0.75, gid=f"violin {key}")
        ax.plot([r.whisker_low, r.whisker_high], [y, y], color=EDGE, linewidth=1.0, gid=f"whiskers {key}")
        ax.plot([r.q1, r.q3], [y, y], color=EDGE, linewidth=4.0, solid_capstyle="butt", gid=f"quartiles {key}")
        ax.plot([r.median], [y], linestyle="none", marker="o", markersize=3.6, markerfacecolor="white",
                markeredgecolor=EDGE, gid=f"median {key}")


def _axis_label(ens, metric) -> str:
    unit = next((m.unit for m in getattr(ens, "_metric_info", ()) if m.name == metric and m.unit), None)
    name = metric if isinstance(metric, str) else "/".join(map(str, metric))
    where = "per profile and rank" if getattr(ens, "per_rank", False) else "per profile"
    return f"{name}{f' [{unit}]' if unit else ''}, one value {where}"


def plot_distributions(source, metric=None, *, top: int | None = 10, group_by=None, kind: str = "box",
                       where: str | None = None, log: bool = False, title: str | None = None, frames: int = 2,
                       width: float = 9.0) -> Plot:
    """Box (``kind="box"``) or violin (``kind="violin"``) plots of ``metric`` across the profiles of an Ensemble
    (or of the runs of a Lake ``where`` selects) at the ``top`` call paths with the largest mean (module
    docstring); ``group_by``: metadata key(s) (a name, ``meta:KEY`` or a list), one box per group side by side
    and a legend; ``log``: logarithmic value axis.

    ``Plot.data``: one row per box or violin in drawing order: node_id, label, path, group (text, None without
    ``group_by``), position (on the y axis), count, mean, q1, median, q3, iqr, lowerfence, upperfence,
    whisker_low, whisker_high, n_outliers (DuckDB's, as the statsframe holds them), outlier_values (the points
    drawn) and values (the sample).  Artists carry gids ``"<part> <node_id> <group number>"``.
    """
    if kind not in KINDS:
        raise PlotError(f"kind must be 'box' or 'violin', not {kind!r}")
    if top is not None and top < 1:
        raise PlotError(f"top must be >= 1, not {top}")
    ens, metric = _ensemble(source, metric, where)
    chosen = top_call_paths(ens, metric, top)
    if chosen.empty:
        raise PlotError(f"nothing to plot: no call path has a value of {metric!r}")
    keys, groups = _groups(ens, group_by)
    n, g = len(chosen), len(groups)
    labels = path_labels(chosen["path"].tolist(), frames=frames)
    slot = BAND / g
    palette = matplotlib.colormaps["tab10" if g <= 10 else "tab20"]

    longest = max(len(t) for t in labels)
    legend = 0.0 if not keys else 0.07 * max(len(t or "") for t, _ in groups) + 1.4
    row = max(0.55 if kind == "violin" else 0.45, 0.3 * g)
    fig = new_figure(max(width, 0.058 * longest + 6.5 + legend), 1.4 + row * n)
    ax = fig.add_subplot()
    data = []
    for j, (text, sub) in enumerate(groups):
        table = _box_table(sub, metric, chosen["node_id"].to_numpy())
        table["label"], table["path"], table["group"] = labels, chosen["path"].tolist(), text
        table["position"] = (n - 1 - np.arange(n)) + BAND / 2 - slot * (j + 0.5)
        table["order"], table["j"] = np.arange(n), j
        table = table[table["count"].fillna(0).to_numpy() > 0]  # a group without the call path: no box
        colour = COLOUR if not keys else palette(j % palette.N)
        if len(table):
            draw = _draw_boxes if kind == "box" else _draw_violins
            draw(ax, table, table["position"].to_numpy(), slot * (0.8 if kind == "box" else 0.95), colour,
                 [f"{node} {j}" for node in table.index])
        data.append(table)
    y = n - 1 - np.arange(n)
    ax.set_yticks(y, labels, fontsize=8)
    ax.set_ylim(-0.6, n - 0.4)
    if g > 1:
        for edge in np.arange(n - 1) + 0.5:
            ax.axhline(edge, color="#e4e4e4", linewidth=0.8, zorder=0)
    if keys:
        handles = [Patch(facecolor=palette(j % palette.N), edgecolor=EDGE, label=text)
                   for j, (text, _) in enumerate(groups)]
        ax.legend(handles=handles, title=", ".join(map(str, keys)), fontsize=8, title_fontsize=8,
                  loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    if log:
        ax.set_xscale("log")
    else:
        ax.xaxis.set_major_locator(MaxNLocator(nbins=7))
    ax.set_xlabel(_axis_label(ens, metric))
    ax.grid(axis="x", color="#dddddd", zorder=0)
    ax.set_axisbelow(True)
    ax.spines[["top", "right"]].set_visible(False)
    what = "box plots" if kind == "box" else "violins"
    by = f", by {', '.join(map(str, keys))}" if keys else ""
    fig.suptitle(title if title is not None else
                 f"{metric} across {len(ens)} profiles ({what}): top {n} call paths by mean{by}",
                 fontsize=10, x=0.01, ha="left")
    out = pd.concat(data).reset_index().sort_values(["order", "j"], kind="stable")
    columns = ["node_id", "label", "path", "group", "position", "count", "mean", *_STATS, "outlier_values",
               "values"]
    out = out[columns].reset_index(drop=True)
    out["count"] = out["count"].astype(np.int64)
    return Plot(fig, kind=kind, data=out)
