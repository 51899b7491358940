"""A heatmap of one run: call paths (rows) x ranks (columns), coloured by a metric.

Input: a GraphFrame (its dataframe indexed by node, rank[, thread]) or a Lake and a run id.  A cell is the
metric of one call path on one rank; with several threads per rank, the threads are combined by
``threads`` (mean by default, as Hatchet's ``drop_index_levels``; or sum, max, min; NaN skipped).  Rank -1,
a summary profile, is not a rank and is left out.  A frame with threads but no rank level gets threads as
columns.  Rows are the ``top`` call paths with the largest total over ranks, largest first.  A cell where
the call path was not measured on that rank is NaN and drawn grey, never as 0.
"""

from __future__ import annotations

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.colors import LogNorm, Normalize
from matplotlib.ticker import FuncFormatter, MaxNLocator

from perflake.errors import PlotError
from perflake.frame.tables import node_ids
from perflake.plots.figure import Plot, new_figure, node_path, path_labels

THREAD_AGGREGATES = ("mean", "sum", "max", "min")
ABSENT_COLOUR = "#d0d0d0"
RUN_ID_CHARS = 8


def _is_frame(source) -> bool:
    """A perflake GraphFrame, or one of its subclasses: a dataframe and the ``from_tables`` constructor every
    capability builds with (no capability module imports GraphFrame); a Hatchet GraphFrame has no from_tables."""
    return callable(getattr(type(source), "from_tables", None)) and isinstance(getattr(source, "dataframe", None),
                                                                                pd.DataFrame)


def _graphframe(source, run):
    """(GraphFrame, run label) from a GraphFrame, or from a Lake and a run id (or unique prefix)."""
    from perflake.lake import Lake

    if _is_frame(source):
        if run is not None:
            raise PlotError("plot_heatmap: give a run id only together with a Lake, not with a GraphFrame")
        return source, None
    if isinstance(source, Lake):
        if run is None:
            raise PlotError(f"{source.root}: plot_heatmap needs a run id to plot from a lake")
        row = source.resolve(run)
        return source.graphframe(row["run_id"]), row["run_id"]
    raise PlotError(f"plot_heatmap needs a GraphFrame or a Lake and a run id, not {type(source).__name__}")


def _default_metric(gf) -> str | None:
    """The first exclusive metric (where time is spent, not where it accumulates), else the frame's default."""
    return (gf.exc_metrics or [gf.default_metric])[0]


def _nodes(df: pd.DataFrame) -> dict:
    level = df.index.levels[df.index.names.index("node")] if isinstance(df.index, pd.MultiIndex) else df.index.unique()
    return {int(n.node_id): n for n in level}


def matrix(gf, metric: str, *, threads: str = "mean") -> tuple[pd.DataFrame, str]:
    """(call paths x locations DataFrame indexed by node_id, the column axis' name: rank/thread/location)."""
    if threads not in THREAD_AGGREGATES:
        raise PlotError(f"threads={threads!r}: use one of {', '.join(THREAD_AGGREGATES)}")
    df = gf.dataframe
    if metric not in df.columns or not pd.api.types.is_numeric_dtype(df[metric]):
        have = [*gf.exc_metrics, *gf.inc_metrics] or [c for c in df.columns if pd.api.types.is_numeric_dtype(df[c])]
        raise PlotError(f"no metric {metric!r} in the run (it has: {', '.join(have)})")
    names = list(df.index.names)
    axis = "rank" if "rank" in names else "thread" if "thread" in names else "location"
    loc = df.index.get_level_values(axis).to_numpy(np.int64) if axis != "location" else np.zeros(len(df), np.int64)
    keep = loc >= 0 if axis == "rank" else np.ones(len(df), bool)
    cells = pd.DataFrame({"node_id": node_ids(df)[keep], axis: loc[keep],
                          "value": df[metric].to_numpy(dtype=float)[keep]})
    g = cells.groupby(["node_id", axis], sort=True)["value"]
    agg = g.sum(min_count=1) if threads == "sum" else getattr(g, threads)()
    return agg.unstack(axis), axis


def _top(wide: pd.DataFrame, top: int | None) -> pd.DataFrame:
    if top is not None and top < 1:
        raise PlotError(f"top must be >= 1, not {top}")
    values = wide.to_numpy(dtype=float)
    present = np.isfinite(values).any(axis=1)
    if not present.any():
        raise PlotError("nothing to plot: the metric has no values on any rank")
    total = np.where(present, np.nansum(np.where(np.isfinite(values), values, 0.0), axis=1), -np.inf)
    order = np.argsort(-total, kind="stable")[: int(present.sum())]
    return wide.iloc[order[:top] if top else order]


def plot_heatmap(source, run: str | None = None, *, metric: str | None = None, top: int | None = 20,
                 threads: str = "mean", log: bool = False, cmap: str = "viridis", title: str | None = None,
                 frames: int = 2) -> Plot:
    """Call paths x ranks of ``metric`` for one run (``source``: a GraphFrame, or a Lake with ``run``).

    ``metric``: default the first exclusive metric; ``top``: rows, by total over ranks; ``threads``: how
    the threads of a rank combine; ``log``: logarithmic colour scale (values <= 0 then drawn as absent).
    ``Plot.data``: the matrix drawn, indexed by (node_id, label), one column per rank.
    """
    gf, run_id = _graphframe(source, run)
    metric = metric or _default_metric(gf)
    if metric is None:
        raise PlotError("nothing to plot: the run has no metrics")
    wide, axis = matrix(gf, metric, threads=threads)
    rows = _top(wide, top)
    nodes = _nodes(gf.dataframe)
    labels = path_labels([node_path(nodes[int(i)]) for i in rows.index], frames=frames)
    values = rows.to_numpy(dtype=float)
    n, m = values.shape

    label_inches = 0.062 * max(len(t) for t in labels)  # DejaVu Sans at 8 pt: about 0.06 in a character
    fig = new_figure(label_inches + max(4.0, min(10.0, 0.3 * m)) + 1.6, 1.6 + 0.3 * n)
    ax = fig.add_subplot()
    colours = matplotlib.colormaps[cmap].with_extremes(bad=ABSENT_COLOUR)
    shown = np.ma.masked_invalid(np.where(values > 0, values, np.nan) if log else values)
    if log and shown.count():
        norm = LogNorm(vmin=float(shown.min()), vmax=float(shown.max()))
    else:
        norm = Normalize()
    image = ax.imshow(shown, aspect="auto", interpolation="nearest", cmap=colours, norm=norm)
    ax.set_yticks(np.arange(n), labels, fontsize=8)
    columns = [int(c) for c in rows.columns]
    ax.xaxis.set_major_locator(MaxNLocator(nbins=min(m, 16), integer=True))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _pos: str(columns[int(x)]) if 0 <= x < m
                                               and float(x).is_integer() else ""))
    ax.set_xlabel(axis)
    ax.tick_params(axis="x", labelsize=8)
    bar = fig.colorbar(image, ax=ax, pad=0.02, aspect=max(20.0, 3.0 * fig.get_figheight()))  # slim when tall
    combined = f", {threads} over threads" if axis == "rank" and "thread" in gf.dataframe.index.names else ""
    bar.set_label(f"{metric}{combined}")
    if np.isnan(values).any():
        bar.ax.set_xlabel("grey:\nabsent", fontsize=7, color="#555555", loc="left")
    elif log and (values <= 0).any():
        bar.ax.set_xlabel("grey:\n<= 0", fontsize=7, color="#555555", loc="left")
    where = f"run {run_id[:RUN_ID_CHARS]}: " if run_id else ""
    ax.set_title(title if title is not None else f"{where}{metric} per {axis}, top {n} call paths by total",
                 fontsize=10, loc="left")
    data = rows.copy()
    data.index = pd.MultiIndex.from_arrays([rows.index.to_numpy(np.uint64), labels], names=["node_id", "label"])
    data.columns.name = axis
    return Plot(fig, kind="heatmap", data=data)
