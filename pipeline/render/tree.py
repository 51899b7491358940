"""Text rendering of a GraphFrame's tree in Hatchet's layout (``GraphFrame.tree``, llnl-hatchet 2026.2.0).

One line per node: ``{indent}{metric}[ {metric2}...][ [{annotation}]] {name}[ ◀ | ▶ ][ {context}]``; children
under ``├─ `` / ``└─ `` with ``│  `` continuation, in the graph's order; values with ``precision`` decimals;
names longer than 39 characters shortened to 18 + ``...`` + 18 unless ``expand_name``.  ◀ / ▶ mark a node
present only in the left / right operand of an arithmetic operation or ``unify`` (the ``_missing_node``
column).  A node with several parents (a DAG, e.g. after ``groupby_aggregate``) is printed under each of them
and its children are shown the first time only, as Hatchet does.  Colour (ANSI 256) only on a terminal
without ``$NO_COLOR``, or when asked (perflake.render.safe_text.colour_wanted), with the legend Hatchet prints;
``highlight_name`` shows in colour only, as in Hatchet.  Linear in the number of nodes (rows are looked up
once, in a dict).

Names, contexts, annotations and metric names are shown with their control characters escaped
(perflake.render.safe_text.escape: ``\x1b``, ``\n``...), so a profile cannot drive the terminal.  With
``width`` (the CLI passes the terminal's), each line fits it: first the context is shortened from its start
(``…/dir/file.c``) or left out, then the name is shortened in the middle, then the line is cut; ``expand_name``
turns that off with Hatchet's 39-character rule.

Differences from Hatchet, on purpose: the header (``render_header``) is perflake's own line, ``perflake
v<version> · metric: <shown>``, not Hatchet's banner and version (printing them would claim to be Hatchet);
a missing context (None, NaN) prints nothing where Hatchet prints
``None`` (or ``0`` for TAU, whose reader writes 0 for a missing file), except HPCToolkit's unknown file, printed
``<unknown file>`` as Hatchet prints it; ``colormap`` may name any matplotlib
colour map (Hatchet 2026.2.0 accepts only its default, ``RdYlGn``); ``colormap_annotations`` colours the
annotation: a list of colours (names or xterm-256 numbers) taken in turn by the sorted distinct values, a
dict value -> colour, or a matplotlib colour map name.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from perflake.errors import RenderError
from perflake.frame.graph import node_number as _number
from perflake.frame.node_values import location_mask, metric_names
from perflake.render.safe_text import colour_wanted, display_width, escape, shorten

# tree() arguments Hatchet renamed: the old name is a ValueError naming the new one, both names a TypeError
RENAMED_TREE_ARGS = {"metric": "metric_column", "name": "name_column", "expand_names": "expand_name",
                     "context": "context_column", "invert_colors": "invert_colormap"}


def renamed_arguments(old_to_new: dict):
    """Decorator: a keyword argument under an old name fails loudly, as Hatchet's ``tree()`` does, rather than
    being silently ignored or mistaken for another argument."""

    def wrap(func):
        @functools.wraps(func)
        def checked(*args, **kwargs):
            for old, new in old_to_new.items():
                if old in kwargs:
                    if new in kwargs:
                        raise TypeError(f'{func.__name__}() received both "{old}=" and "{new}="')
                    raise ValueError(f'{func.__name__}() parameter "{old}=" has been renamed: use "{new}="')
            return func(*args, **kwargs)

        return checked

    return wrap


def header(metrics) -> str:
    """perflake's own header line (not Hatchet's banner: this is not Hatchet), naming the metric(s) shown."""
    from perflake._version import __version__

    label = "metric" if len(metrics) == 1 else "metrics"
    return f"perflake v{__version__} \u00b7 {label}: {', '.join(escape(m) for m in metrics)}\n\n"


# An HPCToolkit (experiment.xml) profile -- its run metadata has this key -- spells an unknown file as HPCToolkit
# and Hatchet do; the lake stores it as null (the canonical model), the tree prints HPCToolkit's spelling.
HPCTOOLKIT_MARK = "hpctoolkit.xml_version"
UNKNOWN_FILE = "<unknown file>"
RESET = "\033[0m"
FAINT = "\033[2m"
HIGHLIGHT = "\033[48;5;246m\033[38;5;232m"
NAN_COLOUR = "\033[34m"
LEFT_MARK = ("\u25c0", "160")  # only in the left operand (_missing_node == 1)
RIGHT_MARK = ("\u25b6", "28")  # only in the right operand (_missing_node == 2)
MISSING = "_missing_node"
_BANDS = (0.9, 0.7, 0.5, 0.3, 0.1, 0.0)
_COLOURS = {"RdYlGn": ("196", "208", "220", "46", "34", "22")}
_NAMED = {"black": "16", "red": "196", "green": "46", "yellow": "226", "blue": "21", "magenta": "201",
          "cyan": "51", "white": "231", "orange": "208", "grey": "246", "gray": "246", "purple": "93"}


def _fmt(value, precision: int) -> str:
    try:
        return f"{float(value):.{precision}f}"
    except (TypeError, ValueError):
        return str(value)


def _xterm(rgb) -> str:
    """The nearest colour of the xterm-256 6x6x6 cube."""
    r, g, b = (int(round(float(c) * 5)) for c in rgb[:3])
    return str(16 + 36 * r + 6 * g + b)


def _colour_map(name: str, n: int) -> tuple[str, ...]:
    """``n`` xterm-256 colours sampled from a matplotlib colour map, its start first."""
    try:
        from matplotlib import colormaps

        cmap = colormaps[name]
    except (KeyError, ValueError, ImportError) as exc:
        raise RenderError(f"unknown colormap {name!r} (use RdYlGn or a matplotlib colour map name)") from exc
    return tuple(_xterm(cmap(i / max(n - 1, 1))) for i in range(n))


def _colour_code(colour) -> str:
    """A colour given as an xterm-256 number or a basic name, as its number."""
    if isinstance(colour, (int, np.integer)) or str(colour).isdigit():
        return str(int(colour))
    return _NAMED.get(str(colour).lower(), "231")


class _Palette:
    def __init__(self, values: np.ndarray, colormap: str, invert: bool, min_value, max_value):
        finite = values[np.isfinite(values)]
        # Hatchet treats 0 as "not given" for min_value / max_value; so does perflake
        self.lo = float(min_value) if min_value else (float(finite.min()) if finite.size else 0.0)
        self.hi = float(max_value) if max_value else (float(finite.max()) if finite.size else 0.0)
        colours = _COLOURS[colormap] if colormap in _COLOURS else _colour_map(colormap, len(_BANDS))
        self.colours = tuple(reversed(colours)) if invert else colours

    def code(self, value: float) -> str:
        if value is None or math.isnan(value):
            return NAN_COLOUR
        span = self.hi - self.lo
        p = (value - self.lo) / span if span else 1.0
        for band, colour in zip(_BANDS, self.colours):
            if p > band or (band == 0.0 and p >= 0.0):
                return f"\033[38;5;{colour}m"
        return NAN_COLOUR  # below the minimum (-inf included), as Hatchet

    def legend(self, metric: str, highlight: bool) -> str:
        span = self.hi - self.lo
        lines = [f"\n\033[4mLegend{RESET} (Metric: {escape(metric)} Min: {self.lo:.2f} Max: {self.hi:.2f})\n"]
        upper = 1.0
        for band, colour in zip(_BANDS, self.colours):
            low, high = self.lo + band * span, self.lo + upper * span
            lines.append(f"\033[38;5;{colour}m\u2588 {RESET}{low:.2f} - {high:.2f}\n")
            upper = band
        name = f"{HIGHLIGHT if highlight else ''}name{RESET}"
        left, right = (f"\033[38;5;{code}m{mark} {RESET}" for mark, code in (LEFT_MARK, RIGHT_MARK))
        lines.append(f"\n{name} User code    {left} Only in left graph    {right} Only in right graph\n")
        return "".join(lines)


def _annotation_colours(values, spec) -> dict:
    """value -> escape sequence for ``colormap_annotations`` (module docstring); {} when not given."""
    if spec is None:
        return {}
    distinct = sorted({v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))}, key=str)
    if isinstance(spec, dict):
        codes = {v: _colour_code(c) for v, c in spec.items()}
    elif isinstance(spec, str):
        sampled = _colour_map(spec, max(len(distinct), 2))
        codes = dict(zip(distinct, sampled))
    else:
        colours = [_colour_code(c) for c in spec] or ["231"]
        codes = {v: colours[i % len(colours)] for i, v in enumerate(distinct)}
    return {v: f"\033[38;5;{c}m" for v, c in codes.items()}


def _present(value) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def _fit(segs: list, name: list, width: int, has_context: bool) -> list:
    """A line's segments within ``width`` columns: the context (file) shortened from its start or left out, then
    the name shortened in the middle, then whatever is still too long cut at the end."""
    def over():
        return sum(display_width(t) for t, _, _ in segs) - width

    if over() > 0 and has_context:
        ctx = segs[-1]
        room = display_width(ctx[0]) - over()
        if room >= 8:
            ctx[0] = shorten(ctx[0], room, "left")
        else:
            segs = segs[:-2]
    if over() > 0:
        name[0] = shorten(name[0], max(display_width(name[0]) - over(), 1), "middle")
    if over() <= 0:
        return segs
    kept, used = [], 0
    for seg in segs:
        w = display_width(seg[0])
        if used + w > width:
            if width - used > 0:
                kept.append([shorten(seg[0], width - used), seg[1], seg[2]])
            break
        kept.append(seg)
        used += w
    return kept


def render(
    gf,
    metric_column=None,
    annotation_column: str | None = None,
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
    colormap_annotations=None,
    render_header: bool = True,
    min_value=None,
    max_value=None,
    colour: bool | None = None,
    width: int | None = None,
) -> str:
    several = isinstance(metric_column, (list, tuple))
    metrics = list(metric_column) if several else [metric_column or gf.default_metric]
    df = gf.dataframe
    for m in metrics:
        if m is None:
            raise RenderError("this frame has no metric column to show")
        if m not in df.columns:  # a typo must not print a tree of NaN
            raise RenderError(f"no metric {m!r} in this frame (metrics: {', '.join(metric_names(gf)) or 'none'})")
    levels = list(df.index.names)
    for level, want in (("rank", rank), ("thread", thread)):
        if want != 0 and level not in levels:
            raise RenderError(f"{level} {want} is not in this frame: it has one {level} (its index is "
                              f"{', '.join(map(str, levels))})")
    if "rank" in levels or "thread" in levels:
        df = df[location_mask(df, rank, thread)]
    nodes = df.index.get_level_values("node")
    extras = [c for c in (annotation_column, context_column, MISSING) if c and c in df.columns]
    cols = list(dict.fromkeys(c for c in [*metrics, name_column, *extras] if c in df.columns))
    table = {c: df[c].to_numpy() for c in cols}
    has_context = bool(context_column) and context_column in table
    unknown_context = UNKNOWN_FILE if context_column == "file" and HPCTOOLKIT_MARK in gf.metadata else None
    annotations = table.get(annotation_column) if annotation_column else None
    sides = np.asarray(table[MISSING], dtype=np.int64) if MISSING in table else None
    row_of = {node: i for i, node in enumerate(nodes)}
    use_colour = colour_wanted(colour)
    palette = None
    if use_colour:
        first = table.get(metrics[0], np.zeros(0))
        palette = _Palette(np.asarray(first, dtype=float), colormap, invert_colormap, min_value, max_value)
    ann_colour = {}
    if use_colour and annotations is not None:
        ann_colour = _annotation_colours(annotations, colormap_annotations)

    out = [header(metrics)] if render_header else []
    if render_header and width:
        out = [shorten(out[0].rstrip("\n"), width) + "\n\n"]

    def line(node, prefix: str) -> str:
        i = row_of.get(node)
        vals = [table[m][i] if i is not None and m in table else float("nan") for m in metrics]
        text = [_fmt(v, precision) for v in vals]
        segs = [[prefix, "", ""]]  # [text, colour before, after]: a line cut to the width keeps its codes paired
        if use_colour:
            try:
                first = float(vals[0])
            except (TypeError, ValueError):
                first = float("nan")
            segs.append([text[0], palette.code(first), RESET])
            for t in text[1:]:
                segs += [[" ", "", ""], [t, FAINT, RESET]]
        else:
            segs.append([" ".join(text), "", ""])
        if annotations is not None and i is not None:
            ann = annotations[i]
            segs += [[" [", "", ""], [escape(ann), ann_colour.get(ann, ""), RESET if ann in ann_colour else ""],
                     ["]", "", ""]]
        name = table[name_column][i] if i is not None and name_column in table else node.frame.get("name")
        name = str(name)  # Hatchet's rule on the name itself, then each part escaped (no escape cut in two)
        name = escape(name[:18]) + "..." + escape(name[-18:]) if not expand_name and len(name) > 39 else escape(name)
        name_seg = [name, HIGHLIGHT if use_colour and highlight_name else "", RESET if use_colour else ""]
        segs += [[" ", "", ""], name_seg]
        side = sides[i] if sides is not None and i is not None else 0
        if side in (1, 2):
            mark, code = LEFT_MARK if side == 1 else RIGHT_MARK
            segs += [[" ", "", ""], [f"{mark} ", f"\033[38;5;{code}m", RESET] if use_colour else [f"{mark} ", "", ""]]
        ctx = table[context_column][i] if has_context and i is not None else None
        if not _present(ctx):
            ctx = unknown_context if has_context and i is not None else None
        if ctx is not None:
            segs += [[" ", "", ""], [escape(ctx), FAINT if use_colour else "", RESET if use_colour else ""]]
        if width and not expand_name:
            segs = _fit(segs, name_seg, width, ctx is not None)
        return "".join(f"{before}{t}{after}" for t, before, after in segs) + "\n"

    # iterative pre-order walk carrying the indentation; a node reached again (DAG) is printed, not expanded
    stack = [(root, "", "", 1) for root in sorted(gf.graph.roots, key=_number, reverse=True)]
    expanded = set()
    while stack:
        node, prefix, cont, level = stack.pop()
        out.append(line(node, prefix))
        if level >= depth or id(node) in expanded:
            continue
        expanded.add(id(node))
        kids = sorted(node.children, key=_number)  # Hatchet's tree: children by number (= frame order)
        for j in range(len(kids) - 1, -1, -1):
            last = j == len(kids) - 1
            stack.append((kids[j], cont + ("└─ " if last else "├─ "), cont + ("   " if last else "│  "), level + 1))
    if use_colour:
        out.append(palette.legend(metrics[0], highlight_name))
    return "".join(out)
