"""Text rendering of a GraphFrame's tree in Hatchet's layout.

One line per node: ``{indent}{metric}[ {metric2}...] {name}[ {context}]``; children under ``├─ `` / ``└─ ``
with ``│  `` continuation; values with ``precision`` decimals; names longer than 39 characters shortened to
18 + ``...`` + 18 unless ``expand_name``.  Colour (ANSI 256) only on a terminal or when asked, with the
legend Hatchet prints.  Linear in the number of nodes (rows are looked up once, in a dict).
"""

from __future__ import annotations

import math
import sys

import numpy as np

BANNER = (
    "    __          __       __         __ \n"
    "   / /_  ____ _/ /______/ /_  ___  / /_\n"
    "  / __ \\/ __ `/ __/ ___/ __ \\/ _ \\/ __/\n"
    " / / / / /_/ / /_/ /__/ / / /  __/ /_  \n"
    "/_/ /_/\\__,_/\\__/\\___/_/ /_/\\___/\\__/  v2026.2.0\n"
    "\n"
)
RESET = "\033[0m"
FAINT = "\033[2m"
_BANDS = (0.9, 0.7, 0.5, 0.3, 0.1, 0.0)
_COLOURS = {"RdYlGn": ("196", "208", "220", "46", "34", "22")}


def _use_colour(colour: bool | None) -> bool:
    if colour is not None:
        return colour
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def _fmt(value, precision: int) -> str:
    try:
        return f"{float(value):.{precision}f}"
    except (TypeError, ValueError):
        return str(value)


class _Palette:
    def __init__(self, values: np.ndarray, colormap: str, invert: bool, min_value, max_value):
        finite = values[np.isfinite(values)]
        self.lo = float(min_value) if min_value else (float(finite.min()) if finite.size else 0.0)
        self.hi = float(max_value) if max_value else (float(finite.max()) if finite.size else 0.0)
        colours = _COLOURS.get(colormap, _COLOURS["RdYlGn"])
        self.colours = tuple(reversed(colours)) if invert else colours

    def code(self, value: float) -> str:
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return "\033[34m"
        if math.isinf(value):
            return f"\033[38;5;{self.colours[0]}m"
        span = self.hi - self.lo
        p = (value - self.lo) / span if span else 1.0
        for band, colour in zip(_BANDS, self.colours):
            if p > band or (band == 0.0 and p >= 0.0):
                return f"\033[38;5;{colour}m"
        return "\033[34m"

    def legend(self, metric: str) -> str:
        span = self.hi - self.lo
        lines = [f"\n\033[4mLegend{RESET} (Metric: {metric} Min: {self.lo:.2f} Max: {self.hi:.2f})\n"]
        upper = 1.0
        for band, colour in zip(_BANDS, self.colours):
            lines.append(f"\033[38;5;{colour}m\u2588 {RESET}{self.lo + band * span:.2f} - {self.lo + upper * span:.2f}\n")
            upper = band
        lines.append(
            f"\nname{RESET} User code    \033[38;5;160m\u25c0 {RESET} Only in left graph    "
            f"\033[38;5;28m\u25b6 {RESET} Only in right graph\n"
        )
        return "".join(lines)


def render(
    gf,
    metric_column=None,
    precision: int = 3,
    name_column: str = "name",
    expand_name: bool = False,
    context_column: str | None = "file",
    rank: int = 0,
    thread: int = 0,
    depth: int = 10000,
    highlight_name: bool = False,
    colormap: str = "RdYlGn",
    invert_colormap: bool = False,
    render_header: bool = True,
    min_value=None,
    max_value=None,
    colour: bool | None = None,
) -> str:
    metrics = [metric_column or gf.default_metric] if not isinstance(metric_column, (list, tuple)) else list(metric_column)
    df = gf.dataframe
    levels = list(df.index.names)
    if "rank" in levels or "thread" in levels:
        mask = np.ones(len(df), dtype=bool)
        if "rank" in levels:
            mask &= df.index.get_level_values("rank").to_numpy() == rank
        if "thread" in levels:
            mask &= df.index.get_level_values("thread").to_numpy() == thread
        df = df[mask]
    nodes = df.index.get_level_values("node")
    cols = [c for c in [*metrics, name_column] if c in df.columns]
    has_context = bool(context_column) and context_column in df.columns
    if has_context:
        cols.append(context_column)
    table = {c: df[c].to_numpy() for c in cols}
    row_of = {node: i for i, node in enumerate(nodes)}
    use_colour = _use_colour(colour)
    palette = _Palette(np.asarray(table[metrics[0]], dtype=float), colormap, invert_colormap, min_value, max_value) if use_colour else None

    out = [BANNER] if render_header else []

    def line(node, prefix: str) -> str:
        i = row_of.get(node)
        vals = [table[m][i] if i is not None and m in table else float("nan") for m in metrics]
        text = [_fmt(v, precision) for v in vals]
        if use_colour:
            text[0] = f"{palette.code(float(vals[0]))}{text[0]}{RESET}"
            text[1:] = [f"{FAINT}{t}{RESET}" for t in text[1:]]
        name = table[name_column][i] if i is not None and name_column in table else node.frame.get("name")
        name = str(name)
        if not expand_name and len(name) > 39:
            name = name[:18] + "..." + name[-18:]
        if use_colour:
            name = (f"\033[1;30;43m{name}" if highlight_name else name) + RESET
        parts = [prefix, " ".join(text), " ", name]
        if has_context and i is not None:
            ctx = table[context_column][i]
            if ctx is not None and not (isinstance(ctx, float) and math.isnan(ctx)):
                parts.append(f" {FAINT}{ctx}{RESET}" if use_colour else f" {ctx}")
        parts.append("\n")
        return "".join(parts)

    # iterative pre-order walk carrying the indentation
    stack = [(root, "", "", 1) for root in reversed(gf.graph.roots)]
    visited = set()
    while stack:
        node, prefix, cont, level = stack.pop()
        if id(node) in visited:
            continue
        visited.add(id(node))
        out.append(line(node, prefix))
        if level >= depth:
            continue
        kids = node.children
        for j in range(len(kids) - 1, -1, -1):
            last = j == len(kids) - 1
            stack.append((kids[j], cont + ("└─ " if last else "├─ "), cont + ("   " if last else "│  "), level + 1))
    if use_colour:
        out.append(palette.legend(metrics[0]))
    return "".join(out)
