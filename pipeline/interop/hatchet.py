"""Interop with llnl-hatchet: ``to_hatchet(gf)`` builds a ``hatchet.GraphFrame``; ``from_hatchet(hgf)`` turns
one (or any object laid out as Hatchet's: ``graph.traverse()``, ``node.frame.attrs``/``parents``, a dataframe
indexed by node[, rank][, thread], ``exc_metrics``/``inc_metrics``) into a perflake GraphFrame.

**Installing Hatchet.**  llnl-hatchet 2026.2.0 requires ``pandas<3`` and perflake requires pandas>=3.1, so pip
cannot install both in one environment (a fresh venv gives ``ResolutionImpossible``) and perflake has no
``perflake[hatchet]`` extra.  :func:`to_hatchet` imports Hatchet when called and raises
:class:`~perflake.errors.InteropError` when it is not importable.  Two ways to use it:

* next to perflake, against Hatchet's declared requirement: ``pip install --no-deps 'llnl-hatchet==2026.2.0'
  pydot pyyaml textx multiprocess caliper-reader``.  The conversions here and the Hatchet operations of
  ``tests/test_parity_guide.py`` (tree, drop_index_levels, filter with ``num_procs=1``, squash, ``-``, ``/``)
  pass on pandas 3.1; Hatchet's ``from_hpctoolkit`` does not (a read-only buffer under copy-on-write), and the
  rest of Hatchet is untested there;
* across environments, through a file: :mod:`perflake.interop.json_files` writes Hatchet's JSON, which
  ``hatchet.GraphFrame.from_json`` reads in Hatchet's own (pandas 2) environment (``perflake export``).

**to_hatchet.**  One Hatchet ``Node`` per perflake node, linked the same way; its ``Frame`` holds ``name`` and
``type`` (as Hatchet's own readers make frames: file, line and module stay dataframe columns) and
``_hatchet_nid`` is the pre-order position, as Hatchet numbers nodes.  The dataframe is a copy of ours with the
``node`` index level holding the Hatchet nodes: indexed by node[, rank][, thread], same columns;
``exc_metrics``, ``inc_metrics``, ``default_metric`` and ``metadata`` are carried over.  A value that was not
measured stays NaN (Hatchet's readers often write 0 there).

**from_hatchet.**  Goes through perflake's one table path: Hatchet's nodes become reader rows (frames with
parent links, one value row per dataframe row), :func:`perflake.ingest.normalize.normalize` derives the call-path ids
and merges equal sibling frames (summing their values), and ``GraphFrame.from_tables`` builds the result; no id
is computed here.  Frame attributes: ``name`` and ``type`` from the Hatchet frame (``type`` ``'None'``, the
placeholder Hatchet writes for a frame without a type, is read as missing); ``file``, ``line``, ``end_line``,
``module`` from the frame when it has them, else from the dataframe column of that name (the node's first
non-null value).  Hatchet's TAU reader writes 0 for an unknown file or module: read as missing, as is a line 0
of a frame without a file.  Metrics are the numeric columns other than those attributes and Hatchet's ``nid``:
exclusive when listed in ``exc_metrics``, inclusive when in ``inc_metrics``, 'other' otherwise; ``m`` and
``m (inc)`` are a pair, and (as for every reader) the missing half of a pair is derived.  Roots and children
keep the order of Hatchet's lists.  A node with several parents (a DAG, e.g. from gprof) is kept once, under
the parent that comes first in a pre-order walk of those lists: perflake's model is call paths.  String
columns other than the attributes (Caliper's ``spot.channel``) are not carried over; ``default_metric`` and
``metadata`` are.
"""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd

from perflake.errors import InteropError
from perflake.readers.base import ProfileRows
from perflake.readers.hatchet_layout import ATTRIBUTES, LOCATIONS, layout_rows

INSTALL_HINT = ("llnl-hatchet 2026.2 requires pandas<3, so it is not a perflake extra: install it next to perflake "
                "with pip install --no-deps 'llnl-hatchet==2026.2.0' pydot pyyaml textx multiprocess caliper-reader, "
                "or write Hatchet's JSON (perflake export RUN --to hatchet-json -o run.json) and load it with "
                "hatchet.GraphFrame.from_json in Hatchet's own environment")


def hatchet_classes():
    """(Frame, Node, Graph, GraphFrame) of llnl-hatchet, imported now; InteropError when it is not installed."""
    try:
        from hatchet.frame import Frame
        from hatchet.graph import Graph
        from hatchet.graphframe import GraphFrame
        from hatchet.node import Node
    except ImportError as exc:
        raise InteropError(f"llnl-hatchet is not importable ({exc}); {INSTALL_HINT}") from None
    return Frame, Node, Graph, GraphFrame


def _with_nodes(index: pd.Index, convert) -> pd.Index:
    """``index`` with every value of its ``node`` level replaced by ``convert(value)``."""
    if isinstance(index, pd.MultiIndex):
        level = index.names.index("node")
        new = pd.Index([convert(n) for n in index.levels[level]], dtype=object, name="node")
        return index.set_levels(new, level=level, verify_integrity=False)
    return pd.Index([convert(n) for n in index], dtype=object, name="node")


def to_hatchet(gf):
    """A ``hatchet.GraphFrame`` with the same graph, values, metric lists and metadata (module docstring)."""
    Frame, Node, Graph, HatchetGraphFrame = hatchet_classes()
    ours = list(gf.graph)  # pre-order
    theirs = {id(node): Node(Frame(dict(node.frame.attrs)), hnid=i, depth=node.depth) for i, node in enumerate(ours)}
    for node in ours:
        parent = theirs[id(node)]
        for child in node.children:
            parent.add_child(theirs[id(child)])
            theirs[id(child)].add_parent(parent)
    graph = Graph([theirs[id(root)] for root in gf.graph.roots])
    graph.enumerate_traverse()

    def convert(node):
        try:
            return theirs[id(node)]
        except KeyError:
            raise InteropError(f"the dataframe has rows of a node that is not in the graph: {node!r}") from None

    df = gf.dataframe.copy()
    df.index = _with_nodes(df.index, convert)
    return HatchetGraphFrame(graph, df, list(gf.exc_metrics), list(gf.inc_metrics),
                             default_metric=gf.default_metric, metadata=copy.deepcopy(gf.metadata))


def _node_codes(index: pd.Index) -> tuple[np.ndarray, pd.Index]:
    """(code of each row, the distinct node objects) of the ``node`` level."""
    if isinstance(index, pd.MultiIndex):
        level = index.names.index("node")
        return np.asarray(index.codes[level]), index.levels[level]
    codes, uniques = pd.factorize(index)
    return codes, uniques


def _input_order(graph) -> list:
    """Every node once, depth-first from the roots with roots and children in their lists' order (the order the
    reader met them: it becomes the nodes' child_order through normalisation)."""
    out, seen = [], set()
    stack = list(reversed(graph.roots))
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        out.append(node)
        stack.extend(reversed(node.children))
    return out


def from_hatchet(hgf, *, frame_class=None):
    """A perflake GraphFrame of a Hatchet GraphFrame, through perflake's table path (module docstring);
    ``frame_class`` as for :func:`to_graphframe`."""
    nodes = _input_order(hgf.graph)
    local = {id(n): i for i, n in enumerate(nodes)}
    by_nid = {getattr(n, "_hatchet_nid", None): i for i, n in enumerate(nodes)}
    parents = [min((local[id(p)] for p in n.parents if id(p) in local), default=-1) for n in nodes]
    df = hgf.dataframe
    names = list(df.index.names)
    if "node" not in names:
        raise InteropError(f"a Hatchet dataframe is indexed by node; this one by {names}")
    extra = [n for n in names if n not in ("node", *LOCATIONS)]
    if extra:
        raise InteropError(f"cannot convert a dataframe indexed by {extra}: only node, rank and thread "
                           "(drop the other index levels first)")
    codes, uniques = _node_codes(df.index)
    lut = np.empty(len(uniques), dtype=np.int64)
    for i, u in enumerate(uniques):
        pos = local.get(id(u), by_nid.get(getattr(u, "_hatchet_nid", None)))
        if pos is None:
            raise InteropError(f"the dataframe has rows of a node that is not in the graph ({u}); squash first")
        lut[i] = pos
    locations = {lv: df.index.get_level_values(lv).to_numpy() for lv in LOCATIONS if lv in names}
    rows = layout_rows([dict(n.frame.attrs) for n in nodes], parents, lut[codes], locations,
                       df.reset_index(drop=True), hgf.exc_metrics or [], hgf.inc_metrics or [],
                       metadata=getattr(hgf, "metadata", None), source="<hatchet GraphFrame>")
    return to_graphframe(rows, getattr(hgf, "default_metric", None), frame_class=frame_class)


def to_graphframe(rows: ProfileRows, default_metric: str | None = None, *, frame_class=None):
    """normalize -> ``frame_class.from_tables``, as :func:`perflake.read.read` does; keeps ``default_metric`` if
    it names a metric of the result.  ``frame_class``: the class to build (GraphFrame's classmethods pass their
    own); a direct call without it gets perflake's GraphFrame from :func:`perflake.read.frame_class`, the entry
    layer, so that no module of interop/ imports GraphFrame."""
    from perflake.ingest.normalize import normalize

    if frame_class is None:
        from perflake.read import frame_class as default_frame_class

        frame_class = default_frame_class()
    n = normalize(rows)
    gf = frame_class.from_tables(n.nodes, n.metrics, n.metric_info, rows.metadata)
    if default_metric in gf.exc_metrics + gf.inc_metrics or (
            default_metric in gf.dataframe.columns and default_metric not in ATTRIBUTES):
        gf.default_metric = default_metric
    return gf
