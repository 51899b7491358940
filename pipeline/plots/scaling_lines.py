"""A metric across a scaling study: one line per call path, x = the scaling key (e.g. nprocs), y = the metric.

Input: the DataFrame of ``Lake.scaling_table(metric, by)`` (indexed by node_id; columns ``name``, ``path``,
then one column per value of the key, ascending; NaN where a call path does not occur).  The N call paths
with the largest value anywhere in the study are drawn, largest first; a gap in a line is a scale at which
the call path was not measured.  Each line's y values are the table's row exactly.

With numeric keys the x axis is numeric (ticks at the study's values, optionally logarithmic); ``ideal``
adds, for each line, the ideal strong-scaling curve ``y0 * x0 / x`` from its first point (dotted, same
colour).  Non-numeric keys (a compiler, a machine) are placed side by side as categories.
"""

from __future__ import annotations

import numbers

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.ticker import NullFormatter, NullLocator

from perflake.errors import PlotError
from perflake.plots.figure import Plot, new_figure, path_labels

LABEL_COLUMNS = ("name", "path")
IDEAL_GID = "ideal"


def _key_columns(table: pd.DataFrame) -> list:
    keys = [c for c in table.columns if c not in LABEL_COLUMNS]
    if not keys:
        raise PlotError("nothing to plot: the scaling table has no value columns")
    bad = [c for c in keys if not pd.api.types.is_numeric_dtype(table[c])]
    if bad:
        raise PlotError(f"the scaling table's column {bad[0]!r} is not numeric (is this a Lake.scaling_table result?)")
    return keys


def _numeric_keys(keys: list) -> bool:
    return all(isinstance(k, numbers.Real) and not isinstance(k, bool) and np.isfinite(k) for k in keys)


def _select(table: pd.DataFrame, keys: list, top: int | None) -> pd.DataFrame:
    if top is not None and top < 1:
        raise PlotError(f"top must be >= 1, not {top}")
    values = table[keys].to_numpy(dtype=float)
    finite = np.isfinite(values).any(axis=1)
    if not finite.any():
        raise PlotError("nothing to plot: the scaling table has no values")
    peak = np.where(finite, np.nanmax(np.where(np.isfinite(values), values, -np.inf), axis=1), -np.inf)
    order = np.argsort(-peak, kind="stable")[: int(finite.sum())]  # largest first; all-NaN rows dropped
    return table.iloc[order[:top] if top else order]


def _paths(rows: pd.DataFrame) -> list[tuple[str, ...]]:
    if "path" in rows.columns:
        return [tuple(str(x) for x in p) if p is not None else ("",) for p in rows["path"]]
    if "name" in rows.columns:
        return [(str(n),) for n in rows["name"]]
    return [(str(i),) for i in rows.index]


def _ideal(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """The ideal strong-scaling curve from the line's first finite point: y0 * x0 / x for x >= x0."""
    first = np.flatnonzero(np.isfinite(y) & (x > 0))
    if not len(first):
        return None
    i = first[0]
    xs = x[i:]
    return xs, y[i] * x[i] / xs


def plot_scaling(table: pd.DataFrame, *, top: int | None = 8, metric: str | None = None, logx: bool = False,
                 logy: bool = False, ideal: bool = False, title: str | None = None, frames: int = 2,
                 width: float = 10.0, height: float = 5.5) -> Plot:
    """Lines of a scaling study (``Lake.scaling_table`` output): the ``top`` call paths by their largest value.

    ``metric``: the metric's name for the axis and title (the table does not record it); ``logx``/``logy``:
    logarithmic axes (logx needs numeric keys); ``ideal``: ideal strong-scaling reference per line.
    ``Plot.data`` holds the plotted rows (a slice of ``table`` plus a ``label`` column), largest first.
    """
    if not isinstance(table, pd.DataFrame):
        raise PlotError(f"plot_scaling needs the DataFrame of Lake.scaling_table, not {type(table).__name__}")
    keys = _key_columns(table)
    numeric = _numeric_keys(keys)
    if (logx or ideal) and not numeric:
        raise PlotError(f"{'a log x axis' if logx else 'ideal scaling'} needs numeric values of "
                        f"{table.columns.name or 'the key'}, not {keys!r}")
    if logx and min(keys) <= 0:
        raise PlotError(f"a log x axis needs positive values of {table.columns.name or 'the key'}")
    rows = _select(table, keys, top)
    labels = path_labels(_paths(rows), frames=frames)
    key_name = table.columns.name or "key"
    x = np.asarray(keys, dtype=float) if numeric else np.arange(len(keys), dtype=float)

    fig = new_figure(width, height)
    ax = fig.add_subplot()
    palette = matplotlib.colormaps["tab10" if len(rows) <= 10 else "tab20"]
    ax.set_prop_cycle(color=[palette(i % palette.N) for i in range(len(rows))])
    handles = []
    for label, (node_id, row) in zip(labels, rows.iterrows()):
        y = row[keys].to_numpy(dtype=float)
        (line,) = ax.plot(x, y, marker="o", markersize=4, linewidth=1.6, label=label)
        line.set_gid(str(node_id))
        handles.append(line)
        ref = _ideal(x, y) if ideal else None
        if ref is not None:
            ax.plot(*ref, linestyle=":", linewidth=1.2, color=line.get_color(), alpha=0.8, gid=IDEAL_GID)
    if ideal:
        handles.append(Line2D([], [], linestyle=":", color="#555555",
                              label="ideal strong scaling (y\u2080\u00b7x\u2080/x)"))
    if logx:
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xticks(x, [_key_text(k) for k in keys])
    ax.set_xlabel(key_name)
    ax.set_ylabel(metric or "value")
    ax.grid(color="#e5e5e5")
    ax.spines[["top", "right"]].set_visible(False)
    ax.set_title(title if title is not None else
                 f"{metric or 'Value'} by {key_name}: top {len(rows)} call paths", fontsize=10, loc="left")
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False,
              title="call path", title_fontsize=8, alignment="left")
    return Plot(fig, kind="scaling", data=rows.assign(label=labels))


def _key_text(key) -> str:
    if isinstance(key, float) and key.is_integer():
        return str(int(key))
    return str(key)
