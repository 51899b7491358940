"""A regression timeline: a metric per call path against run order, with the change points marked.

Input: the :class:`perflake.analytics.changes.ChangeResult` of ``changes(lake, order_by=...)``.  One panel
per call path (they share the x axis: the runs in order): each run's value as a dot, each segment between
two changes as a horizontal line at the segment's median (outlier runs far outside the 1st-99th percentile
range as open triangles at the panel's edge), and a dashed vertical line at the first run after
each change, labelled with the change (``+10.2%``) and the run's ``meta:commit`` (its first 8 characters)
when the result shows it.  Call paths: ``nodes`` (node ids or names), else those with a change (largest
change first), then the largest by share, ``top`` in all.  The x tick labels are the order key's values
(dates as YYYY-MM-DD).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from perflake.errors import PlotError
from perflake.plots.figure import Plot, new_figure, path_labels

POINT = "#4c72b0"
LEVEL = "#222222"
CHANGE_UP = "#c44e52"  # slower
CHANGE_DOWN = "#55a868"  # faster


def _pick(result, nodes, top: int) -> list[int]:
    paths = result.paths
    if nodes is not None:
        ids = paths["node_id"].to_numpy()
        rows = []
        for n in [nodes] if isinstance(nodes, (str, int, np.integer)) else nodes:
            hit = np.flatnonzero(ids == np.uint64(n)) if not isinstance(n, str) else \
                np.flatnonzero(paths["name"].to_numpy() == n)
            if not len(hit):
                raise PlotError(f"no call path {n!r} in the series")
            rows += [int(h) for h in hit if int(h) not in rows]
        return rows[:top] if top else rows
    changed = result.changes.assign(_abs=result.changes["change"].abs())
    changed = changed.sort_values("_abs", ascending=False, kind="stable").drop_duplicates("node_id")
    row_of = {int(n): i for i, n in enumerate(paths["node_id"].to_numpy())}
    rows = [row_of[int(n)] for n in changed["node_id"]]
    rest = paths.assign(_row=np.arange(len(paths)))[paths["analysed"].to_numpy()]
    rest = rest.sort_values("share", ascending=False, kind="stable")
    rows += [int(r) for r in rest["_row"] if int(r) not in rows]
    return rows[:top]


def _limits(y: np.ndarray) -> tuple[float, float]:
    """The y range of a panel: the 1st to 99th percentile widened by half its span (all points when that
    holds them all); points outside are drawn at the edge as open triangles."""
    if not len(y):
        return 0.0, 1.0
    q1, q99 = np.percentile(y, [1, 99])
    span = max(q99 - q1, abs(q99) * 1e-6, 1e-12)
    lo, hi = q1 - 0.5 * span, q99 + 0.5 * span
    return max(lo, float(y.min())), min(hi, float(y.max()))


def _tick_text(value) -> str:
    if isinstance(value, pd.Timestamp):
        return value.strftime("%Y-%m-%d")
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def plot_timeline(result, *, top: int = 6, nodes=None, title: str | None = None, width: float = 11.0,
                  panel_height: float = 1.9, frames: int = 2) -> Plot:
    """Small multiples of per-run values with change points (module docstring); ``Plot.data``: one row per
    (call path, run) drawn: node_id, label, position, run_id, value, level (the segment's median)."""
    if not hasattr(result, "changes") or not hasattr(result, "values"):
        raise PlotError(f"plot_timeline needs the result of perflake.analytics.changes.changes, not "
                        f"{type(result).__name__}")
    if top is not None and top < 1:
        raise PlotError(f"top must be >= 1, not {top}")
    rows = _pick(result, nodes, top)
    if not rows or result.values.shape[1] == 0:
        raise PlotError("nothing to plot: no call path with values")
    paths = result.paths
    labels = path_labels([tuple(str(x) for x in p) if p is not None else ("",) for p in paths["path"].iloc[rows]],
                         frames=frames)
    runs = result.runs
    commit = "meta:commit" if "meta:commit" in runs.columns else None
    x = runs["position"].to_numpy()
    fig = new_figure(width, 0.9 + panel_height * len(rows))
    axes = fig.subplots(len(rows), 1, sharex=True, squeeze=False)[:, 0]
    data = []
    for ax, row, label in zip(axes, rows, labels):
        node_id = int(paths["node_id"].iat[row])
        y = result.values[row]
        have = np.isfinite(y)
        lo, hi = _limits(y[have])
        inside = have & (y >= lo) & (y <= hi)
        ax.plot(x[inside], y[inside], linestyle="none", marker="o", markersize=2.2, color=POINT, alpha=0.75,
                gid=f"values-{node_id}")
        for mask, edge, marker in ((have & (y > hi), hi, "^"), (have & (y < lo), lo, "v")):
            if mask.any():  # outliers drawn at the panel's edge, so that they do not flatten the levels
                ax.plot(x[mask], np.full(mask.sum(), edge), linestyle="none", marker=marker, markersize=3.5,
                        markerfacecolor="none", color=POINT, gid=f"outliers-{node_id}")
        mine = result.changes[result.changes["node_id"] == np.uint64(node_id)]
        cuts = np.sort(mine["position"].to_numpy().astype(int))
        edges = np.concatenate([[0], cuts, [len(x)]])
        level = np.full(len(x), np.nan)
        for a, b in zip(edges[:-1], edges[1:]):
            seg = y[a:b][np.isfinite(y[a:b])]
            if len(seg):
                level[a:b] = np.median(seg)
                ax.hlines(level[a], a - 0.5, b - 0.5, color=LEVEL, linewidth=1.4)
        for _, ch in mine.iterrows():
            colour = CHANGE_UP if ch["change"] > 0 else CHANGE_DOWN
            ax.axvline(ch["position"] - 0.5, color=colour, linestyle="--", linewidth=1.1, gid=f"change-{node_id}")
            text = f"{ch['change']:+.1%}" + (f" @ {str(ch[commit])[:8]}" if commit and pd.notna(ch[commit]) else "")
            ax.annotate(text, (ch["position"] - 0.5, 1.0), xycoords=("data", "axes fraction"), xytext=(3, -2),
                        textcoords="offset points", va="top", fontsize=7.5, color=colour)
        ax.set_ylim(lo - 0.04 * (hi - lo), hi + 0.04 * (hi - lo))
        ax.set_title(label, fontsize=8.5, loc="left")
        ax.grid(color="#ececec")
        ax.spines[["top", "right"]].set_visible(False)
        ax.tick_params(labelsize=7.5)
        data.append(pd.DataFrame({"node_id": node_id, "label": label, "position": x, "run_id": runs["run_id"],
                                  "value": y, "level": level}))
    ticks = np.unique(np.linspace(0, len(x) - 1, min(len(x), 7)).round().astype(int))
    key = runs.columns[2]
    axes[-1].set_xticks(ticks, [_tick_text(v) for v in runs[key].iloc[ticks]])
    axes[-1].set_xlabel(f"runs ordered by {result.order_by}")
    fig.supylabel(result.metric, fontsize=9)
    fig.suptitle(title if title is not None else
                 f"{result.metric} over {len(x)} runs: {len(result.changes)} change point"
                 f"{'s' if len(result.changes) != 1 else ''}", fontsize=10, x=0.01, ha="left")
    return Plot(fig, kind="timeline", data=pd.concat(data, ignore_index=True))
