"""GraphFrame: a Hatchet-compatible result object (``.graph`` + ``.dataframe``), built once from tables.

The dataframe is indexed by ``node`` plus ``rank`` / ``thread`` when the run has more than one of them (the
levels that vary, as Hatchet does; a json-split file with an ``mpi.rank`` column has its ``rank`` level even
with one rank, as Hatchet's json reader gives it: perflake.frame.defaults.index_levels).
Columns are typed as Hatchet types them: ``name``, ``file``, ``module``
object dtype, ``line``/``end_line`` int64 when every line is known (else object, None where unknown), metrics
float64.  Unlike Hatchet's TAU reader, a value that was not measured stays NaN rather than becoming 0, and a
missing file/module/line is None rather than the integer 0 (README "Differences from Hatchet").

The methods are Hatchet's (names, arguments, behaviour); each is a thin call into its own module:
perflake.interop.literal (from_literal, from_lists, to_literal), .aggregate (drop_index_levels, groupby_aggregate),
.subtree (subtree_sum, subgraph_sum, generate_exclusive_columns), .unify (unify, deepcopy, the one-sided marks of
arithmetic), .graph_ops (graph ==, union, copy), .tree, .compare, .squash, .filter, .inclusive, .folded.
No operation mutates a graph: a graph may be shared by several frames (``copy`` shares it, as Hatchet's does).
"""

from __future__ import annotations

import copy as _copy
import os

import numpy as np
import pandas as pd
import pyarrow as pa

from perflake.errors import EmptyFilter, GraphFrameArgumentError, InvalidFilter, UsageError  # noqa: F401 (Hatchet's names live here too)
from perflake.frame.defaults import frame_default, node_ordered
from perflake.frame.defaults import index_levels as format_levels
from perflake.frame.graph import Graph
from perflake.frame.tables import EXTRA_FRAME_COLUMNS, typed_frame_column
from perflake.frame.tables import rehashed as _rehashed
from perflake.readers.base import EXCLUSIVE, INCLUSIVE, Metric
from perflake.render.tree import RENAMED_TREE_ARGS, renamed_arguments


class GraphFrame:
    def __init__(self, graph: Graph, dataframe: pd.DataFrame, exc_metrics=None, inc_metrics=None,
                 default_metric: str | None = None, metadata: dict | None = None):
        """Hatchet's constructor: ``graph`` and a ``dataframe`` indexed by its nodes (level ``node``, maybe
        ``rank``/``thread``).  A graph built by hand gets its call-path ids here (perflake.frame.graph_ids)."""
        if graph is None:
            raise GraphFrameArgumentError("GraphFrame() requires a Graph")
        if dataframe is None:
            raise GraphFrameArgumentError("GraphFrame() requires a DataFrame")
        if "node" not in list(dataframe.index.names):
            raise GraphFrameArgumentError("the dataframe given to GraphFrame() must have an index level called "
                                          f"'node', not {list(dataframe.index.names)}")
        if not graph.has_ids():
            from perflake.frame.graph_ids import assign_ids

            assign_ids(graph)
            dataframe.index = _rehashed(dataframe.index)  # the nodes' hashes changed with their ids
        self.graph = graph
        self.dataframe = dataframe
        self.exc_metrics = list(exc_metrics or [])
        self.inc_metrics = list(inc_metrics or [])
        self.default_metric = default_metric or (self.inc_metrics or self.exc_metrics or [None])[0]
        self.metadata = dict(metadata or {})

    @classmethod
    def from_tables(cls, nodes: pa.Table, metrics: pa.Table, metric_info: list[Metric], metadata: dict | None = None,
                    fmt: str | None = None, *, sparse: bool = False, levels=None, node_ordering: bool | None = None):
        """Build from a run's nodes table and metrics table (node_id, rank, thread, <metrics>); ``fmt`` (the reader
        kind) picks the default metric for that format (perflake.frame.defaults.frame_default).

        Dense layout: one row per (node in pre-order, location), unmeasured values NaN; ``sparse``: one row per
        row of ``metrics`` only, in the same order (what squash needs: a row a filter removed stays removed).
        The index has the levels ``rank``/``thread`` that vary, or exactly ``levels`` when given.  It is built
        from integer codes (no hashing of Node objects).  ``node_ordering`` (default: by the format and metadata,
        perflake.frame.defaults.node_ordered) makes a node-ordered graph (perflake.frame.graph).
        """
        if node_ordering is None:
            node_ordering = node_ordered(fmt, metadata)
        if levels is None and not sparse:
            levels = format_levels(fmt, metadata)
        graph = Graph.from_nodes_table(nodes, node_ordering=node_ordering)
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
        row_pos = position(metrics.column("node_id").to_numpy())
        data = {}
        if sparse:  # the metrics rows themselves, sorted by (pre-order, location)
            take = np.lexsort((loc_code, row_pos))
            row_node, row_loc = row_pos[take], loc_code[take]
            per_row = lambda a: a[row_node]  # noqa: E731
            loc_of_row = lambda a: a[row_loc]  # noqa: E731
            for name in names:
                data[name] = metrics.column(name).to_numpy(zero_copy_only=False)[take].astype(np.float64)
        else:
            row_node = np.repeat(np.arange(n_nodes), n_locs)
            per_row = lambda a: np.repeat(a, n_locs)  # noqa: E731
            loc_of_row = lambda a: np.tile(a, n_nodes)  # noqa: E731
            rows = row_pos * n_locs + loc_code
            for name in names:
                dense = np.full(n_nodes * n_locs, np.nan)
                dense[rows] = metrics.column(name).to_numpy(zero_copy_only=False)
                data[name] = dense
        loc_rank, loc_thread = uloc >> 32, (uloc & 0xFFFFFFFF).astype(np.int64)
        loc_thread[loc_thread >= 2**31] -= 2**32
        ranks, rank_codes = np.unique(loc_rank, return_inverse=True)
        threads, thread_codes = np.unique(loc_thread, return_inverse=True)
        index_levels, codes, level_names = [order], [row_node], ["node"]
        for lname, values, lcodes in (("rank", ranks, rank_codes), ("thread", threads, thread_codes)):
            if (lname in levels) if levels is not None else len(values) > 1:
                index_levels.append(pd.Index(values, dtype=np.int64))
                codes.append(loc_of_row(lcodes))
                level_names.append(lname)
        if len(index_levels) > 1:
            index = pd.MultiIndex(levels=index_levels, codes=codes, names=level_names, verify_integrity=False)
        else:
            index = pd.Index(per_row(order), name="node", dtype=object)
        node_pos = position(nodes.column("node_id").to_numpy())
        columns = {}
        for c in ("name", *[c for c in EXTRA_FRAME_COLUMNS if c in nodes.column_names]):
            per_node = np.empty(n_nodes, dtype=object)
            per_node[node_pos] = nodes.column(c).to_pylist()
            columns[c] = typed_frame_column(c, per_node, per_row, index)
        frame = pd.DataFrame({**columns, **data}, index=index)
        return cls(
            graph,
            frame,
            exc_metrics=[m.name for m in metric_info if m.role == EXCLUSIVE and m.name in names],
            inc_metrics=[m.name for m in metric_info if m.role == INCLUSIVE and m.name in names],
            default_metric=frame_default([m for m in metric_info if m.name in names], fmt),
            metadata=metadata,
        )

    # -- Hatchet's constructors from profiles (perflake.read: the readers and normalisation of ingest) --------
    @staticmethod
    def from_tau(dirname) -> "GraphFrame":
        """A TAU profile directory (Hatchet's ``from_tau``)."""
        from perflake.read import read_tau

        return read_tau(dirname)

    @staticmethod
    def from_caliper(filename_or_stream, query=None, node_ordering=True) -> "GraphFrame":
        """A Caliper json-split or ``.cali`` file path (Hatchet's ``from_caliper``; no CalQL ``query``).  With
        ``node_ordering`` (Hatchet's default) the graph is node-ordered when the file carries Caliper's ``Node
        order`` (children and traversals in it) or is a ``.cali`` file (then in file order, as Hatchet); else,
        and for a json-split file without Node order (where Hatchet fails), children are walked in frame order."""
        from perflake.read import read_caliper

        if query is not None:
            raise UsageError("from_caliper(query=...) is not supported: perflake reads .cali files itself")
        if not isinstance(filename_or_stream, (str, os.PathLike)):
            raise UsageError("from_caliper takes a file path (perflake's readers do not read streams)")
        return read_caliper(filename_or_stream, node_ordering=None if node_ordering else False)

    @staticmethod
    def from_caliperreader(filename_or_caliperreader, native=False, string_attributes=None,
                           node_ordering=True) -> "GraphFrame":
        """A ``.cali`` file, or a ``caliperreader.CaliperReader`` that has read one (Hatchet's
        ``from_caliperreader``: its non-native names such as ``time``; ``node_ordering`` as in from_caliper)."""
        from perflake.read import read_caliper, read_rows
        from perflake.readers.caliper_records import is_caliper_reader, read_caliper_reader

        if native:
            raise UsageError("from_caliperreader(native=True) is not supported: metrics get Hatchet's default names")
        if is_caliper_reader(filename_or_caliperreader):
            return read_rows(read_caliper_reader(filename_or_caliperreader), None if node_ordering else False)
        return read_caliper(filename_or_caliperreader, node_ordering=None if node_ordering else False)

    @staticmethod
    def from_hpctoolkit(dirname) -> "GraphFrame":
        """An HPCToolkit database, old (experiment.xml) or v4 (meta.db), sniffed (Hatchet's ``from_hpctoolkit``)."""
        from perflake.read import read_hpctoolkit

        return read_hpctoolkit(dirname)

    @classmethod
    def from_hpctoolkit_latest(cls, dirname, *args, **kwargs) -> "GraphFrame":
        """Hatchet's view of a v4 database, with Hatchet's keywords (main thread, summary time/time (inc); per
        thread with parallel_profiles_mode: perflake.interop.hpctoolkit_latest); perflake's full view is
        ``from_hpctoolkit``."""
        from perflake.interop.hpctoolkit_latest import from_hpctoolkit_latest

        return from_hpctoolkit_latest(dirname, *args, frame_class=cls, **kwargs)

    @classmethod
    def from_perfflowaspect(cls, filename, scan_cpu_mem=False) -> "GraphFrame":
        """A PerfFlowAspect trace as Hatchet shows it: one node per event, ``ts``/``dur`` in seconds
        (perflake.interop.perfflow_trace); perflake's call-path profile of it is ``perflake.read``."""
        from perflake.interop.perfflow_trace import from_perfflowaspect

        return from_perfflowaspect(filename, scan_cpu_mem, frame_class=cls)

    @staticmethod
    def from_gprof_dot(filename) -> "GraphFrame":
        """gprof2dot's DOT output (Hatchet's ``from_gprof_dot``; the call graph as a tree:
        perflake.readers.call_graph)."""
        from perflake.read import read_gprof_dot

        return read_gprof_dot(filename)

    @staticmethod
    def from_cprofile(filename) -> "GraphFrame":
        """A cProfile ``.pstats`` file (Hatchet's ``from_cprofile``; the call graph as a tree:
        perflake.readers.call_graph)."""
        from perflake.read import read_cprofile

        return read_cprofile(filename)

    @staticmethod
    def from_pyinstrument(filename) -> "GraphFrame":
        """pyinstrument's JSON output (Hatchet's ``from_pyinstrument``)."""
        from perflake.read import read_pyinstrument

        return read_pyinstrument(filename)

    # -- Hatchet's constructors from literals (perflake.interop.literal) -------------------------------------
    @classmethod
    def from_literal(cls, graph_dict) -> "GraphFrame":
        """A GraphFrame of a Hatchet literal: a list of ``{"frame", "metrics", "children"}`` roots."""
        from perflake.interop.literal import from_literal

        return from_literal(graph_dict, frame_class=cls)

    @classmethod
    def from_lists(cls, *lists) -> "GraphFrame":
        """A GraphFrame from nested ``(name, child, ...)`` tuples, ``time`` = 1 per node."""
        from perflake.interop.literal import from_lists

        return from_lists(*lists, frame_class=cls)

    def to_literal(self, name: str = "name", rank: int = 0, thread: int = 0, cat_columns=()) -> list:
        """The graph as a Hatchet literal with the values at (rank, thread)."""
        from perflake.interop.literal import to_literal

        return to_literal(self, name, rank, thread, cat_columns)

    # -- Hatchet API --------------------------------------------------------------------------------------
    @renamed_arguments(RENAMED_TREE_ARGS)
    def tree(self, metric_column=None, annotation_column=None, precision: int = 3, name_column: str = "name",
             expand_name: bool = False, context_column: str | None = "file", rank: int = 0, thread: int = 0,
             depth: int = 10000, highlight_name: bool = False, colormap: str = "RdYlGn",
             invert_colormap: bool = False, colormap_annotations=None, render_header: bool = True,
             min_value=None, max_value=None, *, colour: bool | None = None) -> str:
        """The call tree as text, laid out as Hatchet's ``tree()`` (colour only on a terminal unless ``colour``).
        Hatchet's old argument names (``metric``, ``name``, ``expand_names``, ``context``, ``invert_colors``) raise
        ValueError naming the new one, as in Hatchet."""
        from perflake.render.tree import render

        return render(self, metric_column=metric_column, annotation_column=annotation_column, precision=precision,
                      name_column=name_column, expand_name=expand_name, context_column=context_column, rank=rank,
                      thread=thread, depth=depth, highlight_name=highlight_name, colormap=colormap,
                      invert_colormap=invert_colormap, colormap_annotations=colormap_annotations,
                      render_header=render_header, min_value=min_value, max_value=max_value, colour=colour)

    def traverse(self, order: str = "pre", attrs=None):
        """The graph's nodes depth-first (``gf.graph.traverse``); ``attrs`` yields frame values instead."""
        return self.graph.traverse(order=order, attrs=attrs)

    def show_metric_columns(self) -> list[str]:
        """The exclusive then inclusive metric names."""
        return list(self.exc_metrics + self.inc_metrics)

    def update_inclusive_columns(self) -> None:
        """Recompute inclusive columns from exclusive ones, in place (Hatchet's name: ``time`` -> ``time (inc)``)."""
        from perflake.ops.inclusive import update_inclusive_columns

        update_inclusive_columns(self)

    def generate_exclusive_columns(self, inc_metrics=None) -> None:
        """Exclusive columns from inclusive ones that lack them (``X (inc)`` -> ``X``, ``Y`` -> ``Y (exc)``)."""
        from perflake.ops.subtree import generate_exclusive_columns

        generate_exclusive_columns(self, inc_metrics)

    def subtree_sum(self, columns, out_columns=None, function=None) -> None:
        """``out_columns`` = ``function`` (default: sum, NaN skipped) over each node and its descendants."""
        from perflake.ops.subtree import subtree_sum

        subtree_sum(self, columns, out_columns, function)

    def subgraph_sum(self, columns, out_columns=None, function=None) -> None:
        """As subtree_sum, but a descendant reachable by several paths counts once."""
        from perflake.ops.subtree import subgraph_sum

        subgraph_sum(self, columns, out_columns, function)

    def drop_index_levels(self, function=np.mean) -> None:
        """One row per node: metrics reduced over ranks/threads with ``function``, other columns' first row."""
        from perflake.ops.aggregate import drop_index_levels

        drop_index_levels(self, function)

    def groupby_aggregate(self, groupby_function, agg_function) -> "GraphFrame":
        """A new GraphFrame with one node per value of a column, values aggregated with ``agg_function``."""
        from perflake.ops.aggregate import groupby_aggregate

        return groupby_aggregate(self, groupby_function, agg_function)

    def unify(self, other: "GraphFrame") -> None:
        """Put both frames on one (new) union graph; this frame gains NaN rows for the nodes it lacked."""
        from perflake.ops.unify import unify

        unify(self, other)

    def squash(self, update_inc_cols: bool = True, *, update_inclusive_columns: bool | None = None) -> "GraphFrame":
        """Keep only nodes present in the dataframe, re-parented to their nearest kept ancestor (a new frame).

        ``update_inc_cols`` is Hatchet's name; ``update_inclusive_columns`` the same flag, spelled out."""
        from perflake.ops.squash import squash

        update = update_inc_cols if update_inclusive_columns is None else update_inclusive_columns
        return squash(self, update_inclusive_columns=update)

    def filter(self, filter_obj, squash: bool = True, update_inc_cols: bool = True, num_procs=None, rec_limit=None,
               multi_index_mode: str = "off", *, update_inclusive_columns: bool | None = None) -> "GraphFrame":
        """Rows for which ``filter_obj`` holds (a callable on rows, or a call-path query), then squash.

        The callable sees ``row["node"]`` (and ``rank``/``thread``), as in Hatchet; InvalidFilter for an argument of
        another kind, EmptyFilter when no row is left (see perflake.ops.filter)."""
        from perflake.ops.filter import filter_rows

        out = filter_rows(self, filter_obj, multi_index_mode=multi_index_mode)
        update = update_inc_cols if update_inclusive_columns is None else update_inclusive_columns
        return out.squash(update_inclusive_columns=update) if squash else out

    # -- arithmetic between runs (join on call-path ids; see perflake.analytics.compare); one-sided nodes marked ---
    def _op(self, other, name: str):
        from perflake.analytics import compare
        from perflake.ops.unify import mark_one_sided

        left, default = self.graph, self.default_metric
        out = mark_one_sided(getattr(compare, name)(self, other), left, other.graph)
        if default in out.dataframe.columns:  # Hatchet keeps the left operand's default metric
            out.default_metric = default
        return out

    def add(self, other):
        return self._op(other, "add")

    def sub(self, other):
        return self._op(other, "sub")

    def mul(self, other):
        return self._op(other, "mul")

    def div(self, other):
        return self._op(other, "div")

    def __iadd__(self, other):
        return self._op(other, "iadd")

    def __isub__(self, other):
        return self._op(other, "isub")

    def __imul__(self, other):
        return self._op(other, "imul")

    def __itruediv__(self, other):
        return self._op(other, "idiv")

    __add__, __sub__, __mul__, __truediv__ = add, sub, mul, div

    def load_imbalance(self, metric=None, *, top: int | None = None, absent: str = "exclude", k: int = 3,
                       ddof: int = 1):
        """Per node: mean/min/max/std over ranks, max/mean and the top-k ranks (see perflake.analytics.imbalance)."""
        from perflake.analytics.imbalance import graphframe_imbalance

        return graphframe_imbalance(self, metric=metric, top=top, absent=absent, k=k, ddof=ddof)

    # -- views for people and other tools (perflake.render.folded, .flamegraph, .flat_profile, .hot_path) -----
    def to_flamegraph(self, metric=None, name: str = "name", rank: int = 0, thread: int = 0, threshold: float = 0.0,
                      *, aggregate: str | None = None, sep: str = "; ") -> str:
        """Folded stacks for flamegraph.pl, as Hatchet writes them (see perflake.render.folded)."""
        from perflake.render.folded import to_flamegraph

        return to_flamegraph(self, metric, name, rank, thread, threshold, aggregate=aggregate, sep=sep)

    def to_dot(self, metric=None, name: str = "name", rank: int = 0, thread: int = 0, threshold: float = 0.0,
               *, aggregate: str | None = None) -> str:
        """The graph in Graphviz DOT, as Hatchet writes it (see perflake.render.folded)."""
        from perflake.render.folded import to_dot

        return to_dot(self, metric, name, rank, thread, threshold, aggregate=aggregate)

    def flamegraph_svg(self, metric=None, *, rank: int = 0, thread: int = 0, aggregate: str | None = None,
                       icicle: bool = False, color_by: str | None = None, **style) -> str:
        """A flame graph (or icicle chart) of the inclusive ``metric`` as SVG text (see perflake.render.flamegraph)."""
        from perflake.render import flamegraph

        lay = flamegraph.layout(self, metric, rank=rank, thread=thread, aggregate=aggregate, color_by=color_by)
        return flamegraph.to_svg(lay, icicle=icicle, **style)

    def write_flamegraph(self, path, metric=None, **options) -> int:
        """Write ``path``: ``.svg``, ``.png`` or ``.folded`` by suffix; returns the frames written."""
        from perflake.render.flamegraph import save

        return save(self, path, metric, **options)

    def flat_profile(self, by: str = "name", metrics=None, **options):
        """Metrics summed per function (or ``by`` column) across contexts, Hatchet's recipe
        (perflake.render.flat_profile)."""
        from perflake.render.flat_profile import flat_profile

        return flat_profile(self, by, metrics, **options)

    def hot_path(self, start_node=None, metric=None, threshold: float = 0.5, **options) -> list:
        """Nodes from the start along the largest child, as Hatchet's hot_path (see perflake.render.hot_path)."""
        from perflake.render.hot_path import hot_path

        return hot_path(self, start_node, metric, threshold, **options)

    def _repr_html_(self) -> str:
        from perflake.render.flamegraph import repr_html

        return repr_html(self)

    def copy(self) -> "GraphFrame":
        """A new GraphFrame sharing the (immutable) graph, with a copy of the dataframe."""
        return GraphFrame(self.graph, self.dataframe.copy(), self.exc_metrics, self.inc_metrics,
                          self.default_metric, _copy.deepcopy(self.metadata))

    def deepcopy(self) -> "GraphFrame":
        """A GraphFrame sharing nothing with this one: new graph nodes, dataframe re-pointed at them."""
        from perflake.ops.unify import deepcopy

        return deepcopy(self)

    # -- interop with llnl-hatchet (perflake.interop.hatchet, perflake.interop.json_files) ------------------
    def to_hatchet(self):
        """A hatchet.GraphFrame of this frame (llnl-hatchet must be importable; see perflake.interop.hatchet)."""
        from perflake.interop.hatchet import to_hatchet

        return to_hatchet(self)

    @classmethod
    def from_hatchet(cls, hgf) -> "GraphFrame":
        """A perflake GraphFrame of a Hatchet one, through perflake's normalisation (call-path ids)."""
        from perflake.interop.hatchet import from_hatchet

        return from_hatchet(hgf, frame_class=cls)

    def to_dict(self) -> dict:
        """Hatchet's dict form (``GraphFrame.to_dict``: Hatchet's keys only)."""
        from perflake.interop.json_files import to_dict

        return to_dict(self, extensions=False)

    def to_json(self) -> str:
        """Hatchet's JSON (``GraphFrame.to_json``: Hatchet's keys only), which Hatchet's ``from_json`` reads;
        ``perflake export`` (perflake.interop.json_files.write_hatchet_json) adds the default metric and metadata."""
        from perflake.interop.json_files import to_hatchet_json

        return to_hatchet_json(self, extensions=False)

    @classmethod
    def from_json(cls, json_spec: str) -> "GraphFrame":
        """A GraphFrame from Hatchet's JSON text."""
        from perflake.interop.json_files import from_hatchet_json

        return from_hatchet_json(json_spec, frame_class=cls)

    def to_hdf(self, filename, key: str = "hatchet_graphframe", **kwargs) -> None:
        """Store this frame in an HDF5 file under ``key`` (Hatchet's ``to_hdf``; ``perflake[hdf]``; hdf_store)."""
        from perflake.interop.hdf_store import to_hdf

        to_hdf(self, filename, key, **kwargs)

    @classmethod
    def from_hdf(cls, filename, key: str | None = None, **kwargs) -> "GraphFrame":
        """A frame stored by ``to_hdf`` (Hatchet's ``from_hdf``; ``key`` optional when the file has one)."""
        from perflake.interop.hdf_store import from_hdf

        return from_hdf(filename, key, frame_class=cls, **kwargs)

    def __repr__(self) -> str:
        levels = ", ".join(self.dataframe.index.names)
        return (f"GraphFrame({len(self.graph)} nodes, {len(self.dataframe)} rows indexed by ({levels}), "
                f"exc={self.exc_metrics}, inc={self.inc_metrics})")
