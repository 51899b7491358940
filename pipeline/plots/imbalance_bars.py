"""Load imbalance per call path as horizontal bars: the N most imbalanced call paths, worst at the top.

Input: the DataFrame of ``Lake.imbalance(...)`` (columns run_id, node_id, name, path, metric, mean, min, max,
std, imbalance, top_ranks, ...) or of ``GraphFrame.load_imbalance(...)`` (indexed by node, no path or run
column).  Bars are the values of ``column`` (``imbalance`` = max / mean over ranks by default; any numeric
column such as ``max`` or ``std`` works) exactly as the DataFrame holds them.  When the frame holds several
runs or metrics, each label carries the run id prefix and/or the metric so that equal call paths stay apart.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.ticker import MaxNLocator

from perflake.errors import PlotError
from perflake.plots.figure import Plot, fmt_value, new_figure, node_path, path_labels

BAR_COLOUR = "#4c72b0"
RUN_ID_CHARS = 8
_AXIS_TEXT = {"imbalance": "imbalance = max / mean over ranks (dashed: 1, balanced)", "mean": "mean over ranks",
              "max": "max over ranks", "min": "min over ranks", "std": "std over ranks"}


def _paths(df: pd.DataFrame) -> list[tuple[str, ...]]:
    """Each row's call path: the ``path`` column, else the Node index of a GraphFrame's table, else the name."""
    if "path" in df.columns:
        return [tuple(str(x) for x in p) if p is not None else ("",) for p in df["path"]]
    if len(df) and all(hasattr(n, "path") and hasattr(n, "frame") for n in df.index):
        return [node_path(n) for n in df.index]
    if "name" in df.columns:
        return [(str(n),) for n in df["name"]]
    raise PlotError("the imbalance table has no 'path' or 'name' column and is not indexed by call-tree nodes")


def _numeric_columns(df: pd.DataFrame) -> list[str]:
    skip = {"node_id", "locations", "present"}
    return [c for c in df.columns if c not in skip and pd.api.types.is_numeric_dtype(df[c])]


def _select(df: pd.DataFrame, column: str, top: int | None) -> pd.DataFrame:
    if column not in df.columns or not pd.api.types.is_numeric_dtype(df[column]):
        raise PlotError(f"no numeric column {column!r} in the imbalance table "
                        f"(use one of: {', '.join(_numeric_columns(df))})")
    if top is not None and top < 1:
        raise PlotError(f"top must be >= 1, not {top}")
    rows = df[np.isfinite(df[column].to_numpy(dtype=float))]
    if rows.empty:
        raise PlotError(f"nothing to plot: no call path has a finite {column!r}")
    order = np.argsort(-rows[column].to_numpy(dtype=float), kind="stable")  # largest first, ties keep input order
    return rows.iloc[order[:top] if top else order]


def _suffixes(rows: pd.DataFrame, full: pd.DataFrame) -> list[str]:
    """' [run] (metric)' parts for frames mixing runs and/or metrics (judged on the whole input)."""
    parts = [[""] * len(rows)]
    if "run_id" in full.columns and full["run_id"].nunique() > 1:
        parts.append([f" [{str(r)[:RUN_ID_CHARS]}]" for r in rows["run_id"]])
    if "metric" in full.columns and full["metric"].nunique() > 1:
        parts.append([f" ({m})" for m in rows["metric"]])
    return ["".join(p) for p in zip(*parts)]


def _value_text(row, column: str) -> str:
    text = fmt_value(row[column])
    ranks = row.get("top_ranks")
    if column == "imbalance" and ranks is not None and len(ranks):
        text += "  (top ranks " + ", ".join(str(int(r)) for r in list(ranks)[:3]) + ")"
    return text


def _xlabel(rows: pd.DataFrame, column: str) -> str:
    text = _AXIS_TEXT.get(column, column)
    metrics = rows["metric"].dropna().unique() if "metric" in rows.columns else []
    return f"{metrics[0]}: {text}" if column != "imbalance" and len(metrics) == 1 else text


def _title(df: pd.DataFrame, column: str, n: int) -> str:
    metrics = sorted(df["metric"].dropna().unique()) if "metric" in df.columns else []
    what = "load imbalance" if column == "imbalance" else column
    of = f" of {', '.join(map(str, metrics))}" if metrics else ""
    runs = df["run_id"].nunique() if "run_id" in df.columns else 1
    where = f", {runs} runs" if runs > 1 else (f", run {str(df['run_id'].iloc[0])[:RUN_ID_CHARS]}"
                                                if "run_id" in df.columns and len(df) else "")
    return f"{what.capitalize()}{of}: top {n} call paths{where}"


def plot_imbalance(df: pd.DataFrame, *, column: str = "imbalance", top: int | None = 20, title: str | None = None,
                   frames: int = 2, annotate: bool = True, width: float = 9.0) -> Plot:
    """Horizontal bars of ``column`` for the ``top`` call paths with the largest values, largest at the top.

    ``df``: ``Lake.imbalance(...)`` or ``GraphFrame.load_imbalance(...)``; ``frames``: call-path frames per
    label; ``annotate``: write each value (and, for imbalance, the top ranks) at the end of its bar.  For
    ``imbalance`` a dashed line marks a perfectly balanced call path (1).  ``Plot.data`` holds the plotted
    rows, largest first.
    """
    if not isinstance(df, pd.DataFrame):
        raise PlotError(f"plot_imbalance needs a DataFrame from Lake.imbalance or GraphFrame.load_imbalance, "
                        f"not {type(df).__name__}")
    rows = _select(df, column, top)
    labels = path_labels(_paths(rows), _suffixes(rows, df), frames=frames)
    values = rows[column].to_numpy(dtype=float)
    n = len(rows)

    longest = max((len(t) for t in labels), default=0)
    fig = new_figure(max(width, 0.058 * longest + 7.0), 1.3 + 0.32 * n)  # labels, then bars and their values
    ax = fig.add_subplot()
    y = np.arange(n)[::-1]  # the first (largest) row at the top
    ax.barh(y, values, height=0.7, color=BAR_COLOUR, zorder=2)
    ax.set_yticks(y, labels, fontsize=8)
    ax.set_ylim(-0.6, n - 0.4)
    ax.set_xlabel(_xlabel(rows, column))
    fig.suptitle(title if title is not None else _title(df, column, n), fontsize=10, x=0.01, ha="left")
    ax.xaxis.set_major_locator(MaxNLocator(nbins=6))
    ax.grid(axis="x", color="#dddddd", zorder=0)
    ax.spines[["top", "right"]].set_visible(False)
    lo = min(0.0, float(values.min()))
    hi = max(float(values.max()), 0.0)
    if column == "imbalance":
        ax.axvline(1.0, color="#555555", linestyle="--", linewidth=1, zorder=3)
        hi = max(hi, 1.0)
    if annotate:
        for yi, (_, row) in zip(y, rows.iterrows()):
            v = float(row[column])
            ax.text(v, yi, " " + _value_text(row, column), va="center", ha="left" if v >= 0 else "right",
                    fontsize=7, color="#333333", zorder=4)
    ax.set_xlim(lo, hi + (hi - lo) * (0.28 if annotate else 0.05))
    return Plot(fig, kind="imbalance", data=rows.assign(label=labels))
