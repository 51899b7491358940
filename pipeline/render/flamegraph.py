"""Flame graphs and icicle charts drawn by perflake itself (no flamegraph.pl): a layout computed from the graph,
an SVG writer of plain XML strings, and a PNG of the same layout through matplotlib's object API.

Layout.  Every node of the graph is one box: ``depth`` is its level (roots 0), its width is its inclusive value,
children sit left to right from their parent's left edge in the graph's child order (``tree()``'s order), and
the picture is as wide as the roots together.  The inclusive value is the metric's inclusive column (``time``
and ``time (inc)`` both mean ``time (inc)``); a metric without an inclusive partner is summed over each subtree
here.  Choices, on purpose:

* NaN (not measured), negative and infinite values count as 0.  A box of width 0 is laid out and counted (the
  SVG's ``data-nodes``) but not drawn (``data-drawn``): an invisible rectangle says nothing.
* Children whose inclusive values add up to more than their parent (measured values that disagree, or a
  ``min``/``max`` aggregate over ranks) are narrowed together to fit inside it; the tooltip keeps the real value.
* A node with several parents (possible only in a hand-built DAG: normalised frames are trees of call-path
  ids) is drawn once, under the parent through which the pre-order walk meets it first, as ``tree()`` prints it.
* Boxes are not dropped for being narrow (flamegraph.pl drops those under 0.1 px) unless ``min_width`` says so:
  every node with a positive value is one ``<rect class="node">``.

Colour is a hash of the frame name (flamegraph.pl's warm palette, crc32 so it is stable across processes), or
a metric through a matplotlib colour map (``color_by``: linear from the smallest to the largest value, mapped
onto the upper 80% of the map so that small values stay visible; NaN grey).  Flame graphs put the root at the bottom,
icicle charts (``icicle=True``) at the top.
"""

from __future__ import annotations

import html
import re
import zlib
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

import numpy as np

from perflake.errors import RenderError
from perflake.frame.graph import ordered
from perflake.frame.node_values import inclusive_metric, node_labels, node_values

PAD, TOP, NAN_GREY = 10.0, 44.0, "#c8c8c8"
COLOUR_FLOOR = 0.2  # the smallest value takes the colour map at 20%, not its near-background start
_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f]")


@dataclass(frozen=True)
class Box:
    node: object
    name: str
    depth: int
    x: float  # left edge, in metric units from the left of the picture
    width: float  # in metric units, after fitting inside the parent
    value: float  # the node's inclusive value as measured (NaN if not)
    colour_value: float = float("nan")


@dataclass(frozen=True)
class Layout:
    boxes: list[Box]
    metric: str
    total: float  # the width of the picture in metric units (the roots together)
    depth: int  # number of levels
    selection: str  # "rank 0", "mean over locations"...
    color_by: str | None = None


def layout(gf, metric: str | None = None, *, rank: int = 0, thread: int = 0, aggregate: str | None = None,
           color_by: str | None = None, name: str = "name") -> Layout:
    """Boxes of every node (see the module docstring); values at (rank, thread) or aggregated over locations."""
    column = inclusive_metric(gf, metric)
    order, parent, depth = [], [], []
    seen: set[int] = set()
    todo = [(root, -1, 0) for root in reversed(ordered(gf.graph.roots))]
    while todo:
        node, p, d = todo.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        order.append(node), parent.append(p), depth.append(d)
        todo.extend((c, len(order) - 1, d + 1) for c in reversed(ordered(node.children)))
    position = {id(n): i for i, n in enumerate(gf.graph)}
    pick = np.fromiter((position[id(n)] for n in order), dtype=np.int64, count=len(order))
    kw = dict(rank=rank, thread=thread, aggregate=aggregate)
    raw = node_values(gf, column, **kw)[pick]
    inc = np.where(np.isfinite(raw) & (raw > 0), raw, 0.0)
    parents = np.asarray(parent, dtype=np.int64)
    if column not in gf.inc_metrics:  # no inclusive column: sum each subtree here
        raw = inc = inc.copy()
        for i in range(len(order) - 1, -1, -1):
            if parents[i] >= 0:
                inc[parents[i]] += inc[i]
    child_sum = np.zeros(len(order))
    np.add.at(child_sum, parents[parents >= 0], inc[parents >= 0])
    width, x, cursor, total = np.zeros(len(order)), np.zeros(len(order)), np.zeros(len(order)), 0.0
    for i, p in enumerate(parent):
        if p < 0:
            width[i], x[i] = inc[i], total
            total += inc[i]
        else:
            share = width[p] / child_sum[p] if child_sum[p] > 0 else 0.0  # child_sum[p] >= inc[i] >= 0
            width[i] = inc[i] * min(1.0, share)
            x[i] = cursor[p]
            cursor[p] += width[i]
        cursor[i] = x[i]
    colour = node_values(gf, color_by, **kw)[pick] if color_by else np.full(len(order), np.nan)
    labels = node_labels(gf, name)
    boxes = [Box(n, labels[pick[i]], depth[i], float(x[i]), float(width[i]), float(raw[i]), float(colour[i]))
             for i, n in enumerate(order)]
    selection = f"{aggregate} over locations" if aggregate else _location(gf, rank, thread)
    suffix = "" if column in gf.inc_metrics else " summed over subtrees"
    return Layout(boxes, f"{column}{suffix}", total, max(depth, default=-1) + 1, selection, color_by)


def _location(gf, rank: int, thread: int) -> str:
    names = gf.dataframe.index.names
    parts = [f"{n} {v}" for n, v in (("rank", rank), ("thread", thread)) if n in names]
    return ", ".join(parts) or "single location"


# -- geometry and colour shared by the SVG and PNG writers ------------------------------------------------------------
def _frames(lay: Layout, width: float, frame_height: float, icicle: bool, min_width: float):
    scale = (width - 2 * PAD) / lay.total if lay.total > 0 else 0.0
    for i, b in enumerate(lay.boxes):
        w = b.width * scale
        if w > 0 and w >= min_width:
            level = b.depth if icicle else lay.depth - 1 - b.depth
            yield i, b, PAD + b.x * scale, TOP + level * frame_height, w


def _name_colour(name: str) -> str:
    h = zlib.crc32(name.encode("utf-8", "replace"))
    v1, v2, v3 = (h & 0xFF) / 255, ((h >> 8) & 0xFF) / 255, ((h >> 16) & 0xFF) / 255
    return f"#{205 + int(50 * v3):02x}{int(230 * v1):02x}{int(55 * v2):02x}"


def _colours(lay: Layout, colormap: str) -> list[str]:
    if not lay.color_by:
        return [_name_colour(b.name) for b in lay.boxes]
    from matplotlib import colormaps
    from matplotlib.colors import rgb2hex

    if colormap not in colormaps:
        raise RenderError(f"unknown colour map {colormap!r} (any matplotlib colour map name, e.g. YlOrRd, viridis)")
    cmap, values = colormaps[colormap], np.array([b.colour_value for b in lay.boxes])
    finite = values[np.isfinite(values)]
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 0.0)
    share = (values - lo) / (hi - lo) if hi > lo else np.full(len(values), 0.5)
    return [rgb2hex(cmap(COLOUR_FLOOR + (1 - COLOUR_FLOOR) * s)) if np.isfinite(s) else NAN_GREY for s in share]


def _label(name: str, width_px: float, char_px: float) -> str | None:
    fits = int((width_px - 6) // char_px)
    if fits < 3:
        return None
    return name if len(name) <= fits else name[: fits - 2] + ".."


def _subtitle(lay: Layout) -> str:
    colour = f", colour: {lay.color_by}" if lay.color_by else ""
    return f"width: {lay.metric} ({lay.selection}), total {lay.total:.6g}, {len(lay.boxes)} nodes{colour}"


def _xml(text: str) -> str:
    return escape(_XML_INVALID.sub("?", text))


# -- SVG ------------------------------------------------------------------------------------------------------------
def to_svg(lay: Layout, *, width: float = 1200, frame_height: float = 16, icicle: bool = False,
           title: str | None = None, min_width: float = 0.0, colormap: str = "YlOrRd", font_size: float = 11) -> str:
    """The layout as an SVG document: per drawn node ``<g class="frame"><title>name (value, percent)</title>
    <rect class="node" .../>[<text>label</text>]</g>``; ``data-nodes`` / ``data-drawn`` on the root element."""
    height = TOP + lay.depth * frame_height + PAD
    colours = _colours(lay, colormap)
    title = title or ("Icicle chart" if icicle else "Flame graph")
    body = []
    for i, b, x, y, w in _frames(lay, width, frame_height, icicle, min_width):
        share = 100.0 * b.width / lay.total
        value = f"{b.value:.6g}" if np.isfinite(b.value) else "not measured"
        tip = f"{b.name} ({value} {lay.metric}, {share:.2f}%)"
        node_id = getattr(b.node, "node_id", i)
        rect = (f'<rect class="node" x="{x:.3f}" y="{y:g}" width="{w:.6g}" height="{frame_height - 1:g}" '
                f'fill="{colours[i]}" data-id="{node_id:x}" data-depth="{b.depth}"/>')
        label = _label(b.name, w, font_size * 0.6)
        text = (f'<text x="{x + 3:.3f}" y="{y + frame_height / 2:g}" dominant-baseline="central">{_xml(label)}</text>'
                if label else "")
        body.append(f'<g class="frame"><title>{_xml(tip)}</title>{rect}{text}</g>\n')
    head = (
        '<?xml version="1.0" encoding="UTF-8" standalone="no"?>\n'
        f'<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="{width:g}" height="{height:g}" '
        f'viewBox="0 0 {width:g} {height:g}" data-nodes="{len(lay.boxes)}" data-drawn="{len(body)}" '
        f"data-metric={quoteattr(_XML_INVALID.sub('?', lay.metric))} data-total=\"{lay.total:.17g}\">\n"
        f"<style>text {{ font-family: Verdana, 'DejaVu Sans', sans-serif; font-size: {font_size:g}px; fill: #000; }}\n"
        "text.title { font-size: 17px; } text.subtitle { fill: #555; }\n"
        "g.frame:hover rect { stroke: #000; stroke-width: 0.5; } g.frame text { pointer-events: none; }</style>\n"
        f'<rect class="background" x="0" y="0" width="{width:g}" height="{height:g}" fill="#f8f8f8"/>\n'
        f'<text class="title" x="{width / 2:g}" y="20" text-anchor="middle">{_xml(title)}</text>\n'
        f'<text class="subtitle" x="{width / 2:g}" y="36" text-anchor="middle">{_xml(_subtitle(lay))}</text>\n'
    )
    return head + "".join(body) + "</svg>\n"


# -- PNG ------------------------------------------------------------------------------------------------------------
def write_png(lay: Layout, target, *, width: float = 1200, frame_height: float = 16, icicle: bool = False,
              title: str | None = None, min_width: float = 0.0, colormap: str = "YlOrRd", dpi: float = 100,
              font_size: float = 11) -> int:
    """The same picture as :func:`to_svg`, as a PNG file (matplotlib ``Figure``, no pyplot); returns the number
    of boxes drawn."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.collections import PolyCollection
    from matplotlib.figure import Figure

    height = TOP + lay.depth * frame_height + PAD
    fig = Figure(figsize=(width / dpi, height / dpi), dpi=dpi, facecolor="#f8f8f8")
    FigureCanvasAgg(fig)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, width), ax.set_ylim(height, 0), ax.set_axis_off()
    colours = _colours(lay, colormap)
    frames = list(_frames(lay, width, frame_height, icicle, min_width))
    h = frame_height - 1
    polys = [((x, y), (x + w, y), (x + w, y + h), (x, y + h)) for _, _, x, y, w in frames]
    ax.add_collection(PolyCollection(polys, facecolors=[colours[i] for i, *_ in frames], edgecolors="none",
                                     linewidths=0))
    points = font_size * 72 / dpi
    for _, b, x, y, w in frames:
        label = _label(b.name, w, font_size * 0.6)
        if label:
            ax.text(x + 3, y + h / 2, label, fontsize=points, va="center", ha="left", clip_on=True)
    ax.text(width / 2, 20, title or ("Icicle chart" if icicle else "Flame graph"), fontsize=17 * 72 / dpi,
            ha="center", va="center")
    ax.text(width / 2, 36, _subtitle(lay), fontsize=points, ha="center", va="center", color="#555555")
    fig.savefig(target, format="png", dpi=dpi, facecolor=fig.get_facecolor())
    return len(frames)


# -- one call from a GraphFrame to a file ---------------------------------------------------------------------
OUTPUTS = (".svg", ".png", ".folded")


def save(gf, path, metric: str | None = None, *, rank: int = 0, thread: int = 0, aggregate: str | None = None,
         icicle: bool = False, color_by: str | None = None, title: str | None = None, sep: str = ";",
         scale: float = 1.0, **style) -> int:
    """Write ``path`` by its suffix: ``.svg``, ``.png`` or ``.folded`` (flamegraph.pl stacks of the exclusive
    partner of ``metric``, joined by ``sep``, values x ``scale`` rounded).  Returns the number of frames (lines)
    written."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in OUTPUTS:
        raise RenderError(f"{path}: cannot write {suffix or 'a file without suffix'!r} (use {', '.join(OUTPUTS)})")
    if suffix == ".folded":
        from perflake.frame.node_values import exclusive_metric
        from perflake.render.folded import to_flamegraph

        text = to_flamegraph(gf, exclusive_metric(gf, metric), rank=rank, thread=thread, aggregate=aggregate, sep=sep,
                             scale=scale)
        path.write_text(text, encoding="utf-8")
        return text.count("\n")
    lay = layout(gf, metric, rank=rank, thread=thread, aggregate=aggregate, color_by=color_by)
    if suffix == ".svg":
        svg = to_svg(lay, icicle=icicle, title=title, **style)
        path.write_text(svg, encoding="utf-8")
        return svg.count('<rect class="node"')
    return write_png(lay, path, icicle=icicle, title=title, **style)


# -- Jupyter --------------------------------------------------------------------------------------------------------
def repr_html(gf, *, max_lines: int = 30, max_rows: int = 10) -> str:
    """A compact HTML view: the first lines of ``tree()`` (no colour) and the top rows of the dataframe."""
    lines = gf.tree(render_header=False, colour=False).splitlines()
    more = f"\n... {len(lines) - max_lines} more nodes" if len(lines) > max_lines else ""
    summary = html.escape(repr(gf))
    tree = html.escape("\n".join(lines[:max_lines]) + more)
    table = gf.dataframe.head(max_rows).to_html(max_cols=12, notebook=False)
    return f"<div><p><code>{summary}</code></p><pre>{tree}</pre>{table}</div>"
