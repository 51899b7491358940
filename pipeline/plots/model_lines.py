"""Scaling models over the points they were fitted to: one colour per call path, the measured values as markers,
the fitted model as a line through them (dashed where it extrapolates), and the prediction, when one was asked
for, as an open marker.

Input: the :class:`perflake.analytics.models.ScalingModels` of ``Lake.model(by, metric[, predict=p])``.  The
``top`` call paths are drawn, the most expensive first (by the predicted value, else by the value at the
largest point; :func:`perflake.analytics.models.ranked`); each legend entry names the call path, its model and
its cross-validated SMAPE.  The x axis is logarithmic by default (scaling studies double p).
"""

from __future__ import annotations

import matplotlib
import numpy as np
from matplotlib.lines import Line2D
from matplotlib.ticker import NullFormatter, NullLocator

from perflake.analytics import pmnf
from perflake.analytics.models import ScalingModels, ranked
from perflake.errors import PlotError
from perflake.plots.figure import Plot, new_figure, path_labels
from perflake.plots.scaling import _key_text, _paths

CURVE_POINTS = 200


def plot_models(models: ScalingModels, *, top: int | None = 6, logx: bool = True, logy: bool = False,
                title: str | None = None, frames: int = 2, width: float = 11.0, height: float = 6.0) -> Plot:
    """Measured points and fitted models of the ``top`` most expensive call paths.

    ``Plot.data``: the drawn rows of ``models.table`` with a ``label`` column, in drawing order.
    """
    if not isinstance(models, ScalingModels):
        raise PlotError(f"plot_models needs the ScalingModels of Lake.model, not {type(models).__name__}")
    if top is not None and top < 1:
        raise PlotError(f"top must be >= 1, not {top}")
    rows = ranked(models)
    rows = rows[rows["model"].notna()]
    if rows.empty:
        raise PlotError("nothing to plot: no call path has a model")
    rows = rows.head(top) if top else rows
    keys = list(models.values().columns)
    x = np.array([float(k) for k in keys])
    hi = max(x.max(), models.at or 0.0)
    grid = np.geomspace(x.min(), hi, CURVE_POINTS) if logx else np.linspace(x.min(), hi, CURVE_POINTS)
    grid = np.union1d(grid, x)
    labels = path_labels(_paths(rows), frames=frames)

    fig = new_figure(width, height)
    ax = fig.add_subplot()
    palette = matplotlib.colormaps["tab10" if len(rows) <= 10 else "tab20"]
    handles = []
    for i, (label, (node_id, row)) in enumerate(zip(labels, rows.iterrows())):
        colour = palette(i % palette.N)
        y = models.points.loc[node_id, keys].to_numpy(dtype=float)
        ax.plot(x, y, linestyle="none", marker="o", markersize=5, color=colour, gid=f"points {node_id}")
        curve = np.array([pmnf.evaluate(row["c0"], row["c1"], row["poly"], row["log"], g) for g in grid])
        inside = grid <= x.max()
        ax.plot(grid[inside], curve[inside], color=colour, linewidth=1.5, gid=f"model {node_id}")
        if hi > x.max():
            ax.plot(grid[~inside | (grid == x.max())], curve[~inside | (grid == x.max())], color=colour,
                    linewidth=1.2, linestyle="--", gid=f"extrapolation {node_id}")
        if models.at is not None:
            ax.plot([models.at], [row["predicted"]], marker="o", markerfacecolor="white", color=colour,
                    markersize=7, gid=f"prediction {node_id}")
        handles.append(Line2D([], [], color=colour, marker="o", markersize=4,
                              label=f"{label}\n{row['model']}  (SMAPE {row['smape']:.2g}%)"))
    handles.append(Line2D([], [], linestyle="none", marker="o", color="#555555", label="measured"))
    handles.append(Line2D([], [], color="#555555", label="model c0 + c1 * p^i * log2(p)^j"))
    if models.at is not None:
        handles.append(Line2D([], [], linestyle="none", marker="o", markerfacecolor="white", color="#555555",
                              label=f"predicted at {_key_text(models.at)}"))
    if logx:
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    ticks = list(x) + ([models.at] if models.at is not None and models.at not in x else [])
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xticks(ticks, [_key_text(float(k)) for k in ticks])
    ax.set_xlabel(models.key)
    ax.set_ylabel(f"{models.metric} ({models.stat} over runs)")
    ax.grid(color="#e5e5e5")
    ax.spines[["top", "right"]].set_visible(False)
    ax.set_title(title if title is not None else
                 f"{models.metric} by {models.key}: scaling models of the top {len(rows)} call paths",
                 fontsize=10, loc="left")
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False,
              title="call path and model", title_fontsize=8, alignment="left")
    return Plot(fig, kind="models", data=rows.assign(label=labels))
