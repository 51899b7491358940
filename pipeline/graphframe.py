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
        """Build from a run's nodes table and metrics table (node_id, rank, thread, <metrics>)."""
        graph = Graph.from_nodes_table(nodes)
        by_id = graph.node_by_id()
        names = [m.name for m in metric_info if m.name in metrics.column_names]
        frame = metrics.select(["node_id", "rank", "thread", *names]).to_pandas()
        frame = frame.astype({"rank": np.int64, "thread": np.int64})
        ranks = np.unique(frame["rank"].to_numpy()) if len(frame) else np.array([0])
        threads = np.unique(frame["thread"].to_numpy()) if len(frame) else np.array([0])
        levels = ["rank"] * (len(ranks) > 1) + ["thread"] * (len(threads) > 1)
        # every (node, location) gets a row; unmeasured values stay NaN
        locs = frame[["rank", "thread"]].drop_duplicates()
        full = pd.MultiIndex.from_arrays(
            [np.repeat(np.fromiter(by_id.keys(), np.uint64, len(by_id)), len(locs)),
             np.tile(locs["rank"].to_numpy(), len(by_id)), np.tile(locs["thread"].to_numpy(), len(by_id))],
            names=["node_id", "rank", "thread"],
        ) if len(locs) else pd.MultiIndex.from_arrays([np.fromiter(by_id.keys(), np.uint64, len(by_id)), np.zeros(len(by_id), int), np.zeros(len(by_id), int)], names=["node_id", "rank", "thread"])
        frame = frame.set_index(["node_id", "rank", "thread"]).reindex(full).reset_index()
        attrs = nodes.select(["node_id", "name", *[c for c in EXTRA_FRAME_COLUMNS if c in nodes.column_names]]).to_pandas()
        attrs = attrs.astype({c: object for c in attrs.columns if c != "node_id"}).replace({np.nan: None})
        frame = frame.merge(attrs, on="node_id", how="left")
        node_objs = [by_id[i] for i in frame["node_id"].tolist()]
        frame.insert(0, "node", node_objs)
        frame["_nid"] = [n._hatchet_nid for n in node_objs]
        frame = frame.sort_values(["_nid", "rank", "thread"], kind="stable")
        frame = frame.drop(columns=["_nid", "node_id", *[c for c in ("rank", "thread") if c not in levels]])
        frame = frame.set_index(["node", *levels])
        columns = ["name", *[c for c in EXTRA_FRAME_COLUMNS if c in frame.columns], *names]
        frame = frame[columns]
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

    def copy(self) -> "GraphFrame":
        """A new GraphFrame sharing the (immutable) graph, with a copy of the dataframe."""
        return GraphFrame(self.graph, self.dataframe.copy(), self.exc_metrics, self.inc_metrics,
                          self.default_metric, _copy.deepcopy(self.metadata))

    def __repr__(self) -> str:
        levels = ", ".join(self.dataframe.index.names)
        return (f"GraphFrame({len(self.graph)} nodes, {len(self.dataframe)} rows indexed by ({levels}), "
                f"exc={self.exc_metrics}, inc={self.inc_metrics})")
