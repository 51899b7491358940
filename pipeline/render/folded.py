"""Folded stacks (``to_flamegraph``) and Graphviz DOT (``to_dot``) of a GraphFrame, as Hatchet writes them.

Values come from :mod:`perflake.frame.node_values` (one value per call-path node, at a location or aggregated).

Hatchet's ``GraphFrame.to_flamegraph(metric, name, rank, thread, threshold)`` (llnl-hatchet 2026.2.0) writes one
line per node in pre-order, ``root; child; node value``: frame names joined by ``"; "`` (semicolon *and*
space), then the node's own value at (rank, thread) rounded with Python's ``round`` (an integer, ties to
even).  ``threshold`` is accepted and ignored, by Hatchet as here.  perflake differs on purpose in two places:
the default metric is the *exclusive* counterpart of ``default_metric`` (flamegraph.pl sums the lines of a
stack's descendants itself, so inclusive values would be counted twice; Hatchet uses ``default_metric`` as is,
which for TAU is ``time (inc)``), and a value that was not measured (NaN) is written as 0 where Hatchet fails.

Hatchet's ``to_dot`` writes a ``strict digraph``: one ``"<nid>" [color=..., label=...]`` line per node whose
value is at least ``threshold`` times the largest value, coloured by matplotlib's ``Reds`` colour map between
the smallest and largest value, then one ``"<parent>" -> "<child>"`` line per edge to such a child.  Here the
colour scale spans the values drawn (Hatchet's spans every row of the column, all ranks), children come in
perflake's child order, NaN counts as 0 and quotes in names are escaped.
"""

from __future__ import annotations

import numpy as np

from perflake.frame.graph import ordered
from perflake.frame.node_values import exclusive_metric, node_labels, node_values

HATCHET_SEPARATOR = "; "


# -- folded stacks ------------------------------------------------------------------------------------------------
def _rounded(value: float) -> int:
    return round(float(value)) if np.isfinite(value) else 0


def to_flamegraph(gf, metric: str | None = None, name: str = "name", rank: int = 0, thread: int = 0,
                  threshold: float = 0.0, *, aggregate: str | None = None, sep: str = HATCHET_SEPARATOR,
                  scale: float = 1.0) -> str:
    """Folded stacks for flamegraph.pl: ``a; b; c value`` per node (see the module docstring).

    Parameters
    ----------
    metric : exclusive metric to write (default: the exclusive partner of ``gf.default_metric``).
    name : the column whose text names a frame.
    rank, thread : the location written (Hatchet's selection); ignored when ``aggregate`` is given.
    threshold : accepted for Hatchet compatibility and ignored, as Hatchet does.
    aggregate : ``"sum"``, ``"mean"``, ``"min"`` or ``"max"`` over all locations instead of one location.
    sep : between frame names; Hatchet's ``"; "`` by default, ``";"`` is flamegraph.pl's own convention.
    scale : values are multiplied by it before rounding (``1e6``: seconds written as microseconds).
    """
    del threshold
    metric = metric or exclusive_metric(gf, None)
    values = node_values(gf, metric, rank=rank, thread=thread, aggregate=aggregate) * scale
    labels = node_labels(gf, name)
    nodes = list(gf.graph)
    position = {id(n): i for i, n in enumerate(nodes)}
    stacks: dict[int, str] = {}

    def stack(node) -> str:  # the first-parent path, as Hatchet's Node.path(); memoised, no recursion
        chain = []
        while node is not None and id(node) not in stacks:
            chain.append(node)
            node = node.parents[0] if node.parents else None
        text = stacks[id(node)] if node is not None else None
        for n in reversed(chain):
            label = labels[position[id(n)]]
            text = label if text is None else f"{text}{sep}{label}"
            stacks[id(n)] = text
        return text

    return "".join(f"{stack(n)} {_rounded(values[i])}\n" for i, n in enumerate(nodes))


# -- DOT ------------------------------------------------------------------------------------------------------
def _dot_text(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ")


def to_dot(gf, metric: str | None = None, name: str = "name", rank: int = 0, thread: int = 0,
           threshold: float = 0.0, *, aggregate: str | None = None) -> str:
    """The graph in Graphviz DOT, as Hatchet's ``to_dot`` (see the module docstring)."""
    from matplotlib import colormaps
    from matplotlib.colors import rgb2hex

    metric = metric or gf.default_metric
    raw = node_values(gf, metric, rank=rank, thread=thread, aggregate=aggregate)
    values = np.where(np.isfinite(raw), raw, 0.0)
    labels = node_labels(gf, name)
    nodes = list(gf.graph)
    position = {id(n): i for i, n in enumerate(nodes)}
    lo, hi = (float(values.min()), float(values.max())) if len(values) else (0.0, 0.0)
    reds = colormaps["Reds"]
    kept = values >= threshold * hi
    node_lines, edge_lines, shown = [], [], set()
    todo = [(root, None) for root in reversed(ordered(gf.graph.roots))]
    while todo:
        node, parent = todo.pop()
        i = position[id(node)]
        if parent is not None:
            edge_lines.append(f'"{parent}" -> "{i}";\n')
        if not kept[i] or i in shown:
            continue
        shown.add(i)
        colour = rgb2hex(reds((values[i] - lo) / (hi - lo) if hi > lo else 0.0))
        node_lines.append(f'"{i}" [color="{colour}", label="{_dot_text(labels[i])}" shape=oval];\n')
        todo.extend((c, i) for c in reversed(ordered(node.children)) if kept[position[id(c)]])
    header = ("strict digraph {\ngraph [bgcolor=transparent];\nnode [penwidth=4, shape=circle];\n"
              "edge [penwidth=2];\n\n")
    return header + "".join(node_lines) + "\n" + "".join(edge_lines) + "\n}\n"


def lost_to_rounding(gf, metric: str | None = None, *, rank: int = 0, thread: int = 0,
                     aggregate: str | None = None, scale: float = 1.0) -> float:
    """The share of the measured (non-zero) values that ``flamegraph.save`` would write as 0 in folded stacks
    (below 0.5): those of the exclusive partner of ``metric``."""
    values = node_values(gf, exclusive_metric(gf, metric), rank=rank, thread=thread, aggregate=aggregate)
    measured = np.abs(values[np.isfinite(values) & (values != 0)]) * scale
    return float((measured < 0.5).mean()) if len(measured) else 0.0
