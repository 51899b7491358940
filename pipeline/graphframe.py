"""GraphFrame: a Hatchet-compatible result object (``.graph`` + ``.dataframe``), built once from tables.

The dataframe is indexed by ``node`` plus ``rank`` / ``thread`` when the run has more than one of them (the
levels that vary, as Hatchet does).  Unlike Hatchet's TAU reader, a value that was not measured stays NaN
rather than becoming 0, and a missing file/module is None rather than the integer 0.
"""

from __future__ import annotations

import copy as _copy

import numpy as np
import pandas as pd
import pyarrow as pa

from perflake.graph import Graph
from perflake.readers.base import EXCLUSIVE, INCLUSIVE, Metric

EXTRA_FRAME_COLUMNS = ("file", "module", "line", "end_line")


def _default_metric(metrics: list[Metric]) -> str | None:
    names = {m.name: m for m in metrics}
    if "time" in names and names["time"].pair in names:
        return names["time"].pair  # Hatchet's TAU reader shows inclusive time by default
    for role in (EXCLUSIVE, INCLUSIVE):
        for m in metrics:
            if m.role == role:
                return m.name
    return metrics[0].name if metrics else None


class GraphFrame:
    def __init__(self, graph: Graph, dataframe: pd.DataFrame, exc_metrics=None, inc_metrics=None,
                 default_metric: str | None = None, metadata: dict | None = None):
        self.graph = graph
        self.dataframe = dataframe
        self.exc_metrics = list(exc_metrics or [])
        self.inc_metrics = list(inc_metrics or [])
        self.default_metric = default_metric or (self.inc_metrics or self.exc_metrics or [None])[0]
        self.metadata = dict(metadata or {})

    @classmethod
    def from_tables(cls, nodes: pa.Table, metrics: pa.Table, metric_info: list[Metric], metadata: dict | None = None):
        """Build from a run's nodes table and metrics table (node_id, rank, thread, <metrics>).

        Dense layout: one row per (node in pre-order, location), unmeasured values NaN; the index is built
        from integer codes (no hashing of Node objects).
        """
        graph = Graph.from_nodes_table(nodes)
        order = np.empty(len(graph), dtype=object)
        order[:] = list(graph)
        pre_ids = np.fromiter((n.node_id for n in order), np.uint64, len(order))
        sorter = np.argsort(pre_ids)
        names = [m.name for m in metric_info if m.name in metrics.column_names]

        def position(ids: np.ndarray) -> np.ndarray:
            return sorter[np.searchsorted(pre_ids, ids, sorter=sorter)]

        rank = metrics.column("rank").to_numpy().astype(np.int64)
        thread = metrics.column("thread").to_numpy().astype(np.int64)
        keys = (rank << 32) | (thread & 0xFFFFFFFF)
        uloc, loc_code = np.unique(keys, return_inverse=True) if len(keys) else (np.zeros(1, np.int64), keys)
        n_nodes, n_locs = len(order), len(uloc)
        rows = position(metrics.column("node_id").to_numpy()) * n_locs + loc_code
        data = {}
        for name in names:
            dense = np.full(n_nodes * n_locs, np.nan)
            dense[rows] = metrics.column(name).to_numpy(zero_copy_only=False)
            data[name] = dense
        loc_rank, loc_thread = uloc >> 32, (uloc & 0xFFFFFFFF).astype(np.int64)
        loc_thread[loc_thread >= 2**31] -= 2**32
        ranks, rank_codes = np.unique(loc_rank, return_inverse=True)
        threads, thread_codes = np.unique(loc_thread, return_inverse=True)
        levels, codes, level_names = [order], [np.repeat(np.arange(n_nodes), n_locs)], ["node"]
        for lname, values, lcodes in (("rank", ranks, rank_codes), ("thread", threads, thread_codes)):
            if len(values) > 1:
                levels.append(pd.Index(values, dtype=np.int64))
                codes.append(np.tile(lcodes, n_nodes))
                level_names.append(lname)
        if len(levels) > 1:
            index = pd.MultiIndex(levels=levels, codes=codes, names=level_names, verify_integrity=False)
        else:
            index = pd.Index(np.repeat(order, n_locs), name="node", dtype=object)
        node_pos = position(nodes.column("node_id").to_numpy())
        columns = {}
        for c in ("name", *[c for c in EXTRA_FRAME_COLUMNS if c in nodes.column_names]):
            per_node = np.empty(n_nodes, dtype=object)
            per_node[node_pos] = nodes.column(c).to_pylist()
            columns[c] = np.repeat(per_node, n_locs)
        frame = pd.DataFrame({**columns, **data}, index=index)
        return cls(
            graph,
            frame,
            exc_metrics=[m.name for m in metric_info if m.role == EXCLUSIVE and m.name in names],
            inc_metrics=[m.name for m in metric_info if m.role == INCLUSIVE and m.name in names],
            default_metric=_default_metric([m for m in metric_info if m.name in names]),
            metadata=metadata,
        )

    # -- Hatchet API --------------------------------------------------------------------------------------
    def tree(self, metric_column=None, precision: int = 3, name_column: str = "name", expand_name: bool = False,
             context_column: str | None = "file", rank: int = 0, thread: int = 0, depth: int = 10000,
             highlight_name: bool = False, colormap: str = "RdYlGn", invert_colormap: bool = False,
             render_header: bool = True, min_value=None, max_value=None, *, colour: bool | None = None) -> str:
        """The call tree as text, laid out as Hatchet's ``tree()`` (colour only on a terminal unless ``colour``)."""
        from perflake.tree import render

        return render(self, metric_column=metric_column, precision=precision, name_column=name_column,
                      expand_name=expand_name, context_column=context_column, rank=rank, thread=thread,
                      depth=depth, highlight_name=highlight_name, colormap=colormap,
                      invert_colormap=invert_colormap, render_header=render_header, min_value=min_value,
                      max_value=max_value, colour=colour)

    def update_inclusive_columns(self) -> None:
        """Recompute inclusive columns from exclusive ones, in place (Hatchet's name: ``time`` -> ``time (inc)``)."""
        from perflake.inclusive import update_inclusive_columns

        update_inclusive_columns(self)

    def squash(self, update_inclusive_columns: bool = True) -> "GraphFrame":
        """Keep only nodes present in the dataframe, re-parented to their nearest kept ancestor (a new frame)."""
        from perflake.squash import squash

        return squash(self, update_inclusive_columns=update_inclusive_columns)

    def filter(self, filter_obj, squash: bool = True, update_inclusive_columns: bool = True,
               num_procs=None, rec_limit=None, multi_index_mode: str = "off") -> "GraphFrame":
        """Rows for which ``filter_obj`` holds (a callable on rows, or a call-path query), then squash."""
        from perflake.filter import filter_rows

        out = filter_rows(self, filter_obj, multi_index_mode=multi_index_mode)
        return out.squash(update_inclusive_columns=update_inclusive_columns) if squash else out

    # -- arithmetic between runs (join on call-path ids; see perflake.compare) --------------------------------
    def _op(self, other, name: str):
        from perflake import compare

        return getattr(compare, name)(self, other)

    def add(self, other):
        return self._op(other, "add")

    def sub(self, other):
        return self._op(other, "sub")

    def mul(self, other):
        return self._op(other, "mul")

    def div(self, other):
        return self._op(other, "div")

    __add__, __sub__, __mul__, __truediv__ = add, sub, mul, div

    def __iadd__(self, other):
        self._op(other, "iadd")
        return self

    def __isub__(self, other):
        self._op(other, "isub")
        return self

    def __imul__(self, other):
        self._op(other, "imul")
        return self

    def __itruediv__(self, other):
        self._op(other, "idiv")
        return self

    def load_imbalance(self, metric=None, *, top: int | None = None, absent: str = "exclude", k: int = 3, ddof: int = 1):
        """Per node: mean/min/max/std over ranks, max/mean and the top-k ranks (see perflake.imbalance)."""
        from perflake.imbalance import graphframe_imbalance

        return graphframe_imbalance(self, metric=metric, top=top, absent=absent, k=k, ddof=ddof)

    # -- views for people and other tools (perflake.folded, .flamegraph, .flat_profile, .hot_path) ------------
    def to_flamegraph(self, metric=None, name: str = "name", rank: int = 0, thread: int = 0, threshold: float = 0.0,
                      *, aggregate: str | None = None, sep: str = "; ") -> str:
        """Folded stacks for flamegraph.pl, as Hatchet writes them (see perflake.folded)."""
        from perflake.folded import to_flamegraph

        return to_flamegraph(self, metric, name, rank, thread, threshold, aggregate=aggregate, sep=sep)

    def to_dot(self, metric=None, name: str = "name", rank: int = 0, thread: int = 0, threshold: float = 0.0,
               *, aggregate: str | None = None) -> str:
        """The graph in Graphviz DOT, as Hatchet writes it (see perflake.folded)."""
        from perflake.folded import to_dot

        return to_dot(self, metric, name, rank, thread, threshold, aggregate=aggregate)

    def flamegraph_svg(self, metric=None, *, rank: int = 0, thread: int = 0, aggregate: str | None = None,
                       icicle: bool = False, color_by: str | None = None, **style) -> str:
        """A flame graph (or icicle chart) of the inclusive ``metric`` as SVG text (see perflake.flamegraph)."""
        from perflake import flamegraph

        lay = flamegraph.layout(self, metric, rank=rank, thread=thread, aggregate=aggregate, color_by=color_by)
        return flamegraph.to_svg(lay, icicle=icicle, **style)

    def write_flamegraph(self, path, metric=None, **options) -> int:
        """Write ``path``: ``.svg``, ``.png`` or ``.folded`` by suffix; returns the frames written."""
        from perflake.flamegraph import save

        return save(self, path, metric, **options)

    def flat_profile(self, by: str = "name", metrics=None, **options):
        """Metrics summed per function (or ``by`` column) across contexts, Hatchet's recipe (perflake.flat_profile)."""
        from perflake.flat_profile import flat_profile

        return flat_profile(self, by, metrics, **options)

    def hot_path(self, start_node=None, metric=None, threshold: float = 0.5, **options) -> list:
        """Nodes from the start along the largest child, as Hatchet's hot_path (see perflake.hot_path)."""
        from perflake.hot_path import hot_path

        return hot_path(self, start_node, metric, threshold, **options)

    def _repr_html_(self) -> str:
        from perflake.flamegraph import repr_html

        return repr_html(self)

    def copy(self) -> "GraphFrame":
        """A new GraphFrame sharing the (immutable) graph, with a copy of the dataframe."""
        return GraphFrame(self.graph, self.dataframe.copy(), self.exc_metrics, self.inc_metrics,
                          self.default_metric, _copy.deepcopy(self.metadata))

    def __repr__(self) -> str:
        levels = ", ".join(self.dataframe.index.names)
        return (f"GraphFrame({len(self.graph)} nodes, {len(self.dataframe)} rows indexed by ({levels}), "
                f"exc={self.exc_metrics}, inc={self.inc_metrics})")
