"""The Ensemble: Thicket's three tables over runs of a lake, materialised lazily with DuckDB.

    ens = lake.ensemble_of(where="app = 'lulesh'", metric=["time (inc)", "time"])
    ens.dataframe      # indexed (node, profile[, rank]): the metric columns and ``name``
    ens.metadata       # indexed by profile: every catalog column and metadata key, typed
    ens.statsframe     # indexed by node: ``name``, then the columns the statistics add (``time_mean``, ...)
    ens.stats.mean(["time"]); ens.stats.percentiles(["time"], [0.1, 0.9])      # perflake.analytics.ensemble_stats

A profile is a run id.  Rows: one per (call path, run), the run's value being the mean over its locations
(ranks, threads) where the call path has a row -- or one per (call path, run, rank) with ``per_rank=True``
(see perflake.analytics.ensemble_tables).  As Thicket's ``fill_perfdata``, the dataframe has a row for every
node of the call tree and every profile: NaN values and a None ``name`` where the profile lacks the call path.

Nothing is read until a table is asked for; each table is read once and cached.  Operations
(``filter_metadata``, ``filter_profile``, ``groupby``, ``query``, ``intersection``, ``union``, ``concat``) return
new Ensembles over the same lake: they share or slice the parent's cached Arrow tables and read nothing
twice.  Statistics read the values' Arrow table, never the pandas dataframe.

Differences from Thicket (llnl-thicket 2026.1.1), each on purpose:

* ``profile`` is the run id (text); Thicket's is an integer hash of the file path;
* ``statsframe`` is the DataFrame itself (Thicket's ``statsframe.dataframe``); the tree is ``ens.graph``;
* sub-ensembles of ``filter_metadata``/``groupby`` keep the parent's call tree (as Thicket's with fill_perfdata);
  ``union()`` narrows the tree to its own profiles' call paths, ``intersection()`` to those every profile has;
* ``query`` keeps the values as measured: no ``update_inc_cols`` (perflake's call-path ids and the lake's
  values stay as they are; a kept node hangs below its nearest kept ancestor).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from perflake.analytics import ensemble_tables as tables
from perflake.errors import UsageError
from perflake.vocabulary import EXCLUSIVE, INCLUSIVE, Metric


class Ensemble:
    """Runs of one lake as Thicket's tables (module docstring).  Build with :meth:`from_lake` /
    ``Lake.ensemble_of``."""

    profile_idx_name = "profile"

    def __init__(self, lake, runs: pd.DataFrame, metric_info: list[Metric], metrics: list[str], *,
                 per_rank: bool = False, tree_runs: pd.DataFrame | None = None, keep=None,
                 values: pa.Table | None = None,
                 metadata: pd.DataFrame | None = None, nodes: pa.Table | None = None):
        self._lake = lake
        self._runs = runs.reset_index(drop=True)
        self._metric_info = list(metric_info)
        self.metrics = list(metrics)
        self.per_rank = per_rank
        self._tree_runs = self._runs if tree_runs is None else tree_runs  # whose union of call paths is the tree
        self._keep = None if keep is None else np.unique(np.asarray(keep, np.uint64))
        self._values = values  # the runs' rows, every call path (the tree restriction is applied on top)
        self._kept_values = None
        self._metadata = metadata
        self._all_nodes = nodes  # union of the tree runs' call paths (not restricted by _keep)
        self._graph = None
        self._node_ids = None
        self._dataframe = None
        self._statsframe = None

    # -- construction ---------------------------------------------------------------------------------------
    @classmethod
    def from_lake(cls, lake, where: str | None = None, *, metric=None, runs=None, per_rank: bool = False) -> "Ensemble":
        """The runs ``where`` (SQL on the runs catalog) and ``runs`` (ids or prefixes) select; ``metric``: a
        name or a list (default: every metric the runs have)."""
        selected, info = tables.selected_runs(lake, where=where, runs=runs)
        if selected.empty:
            raise UsageError(f"no runs selected{f' by {where!r}' if where else ''} (list them with: perflake runs)")
        known = [m.name for m in info]
        wanted = known if metric is None else [metric] if isinstance(metric, str) else list(metric)
        unknown = [m for m in wanted if m not in known]
        if unknown:
            raise UsageError(f"no selected run has metric {unknown[0]!r} (they have: {', '.join(known) or 'no runs'})")
        return cls(lake, selected, info, wanted, per_rank=per_rank)

    def _derive(self, *, profiles=None, keep="same", tree_runs="same") -> "Ensemble":
        """A new Ensemble over a subset of the profiles and/or call paths, sharing what is cached."""
        runs = self._runs if profiles is None else self._runs[self._runs["run_id"].isin(set(profiles))]
        values = self._values
        if values is not None and profiles is not None:
            values = values.filter(pc.is_in(values.column("profile"), pa.array(list(runs["run_id"]), pa.string())))
        metadata = None if self._metadata is None else self._metadata.loc[list(runs["run_id"])]
        tree = self._tree_runs if isinstance(tree_runs, str) else tree_runs
        nodes = self._all_nodes if tree is self._tree_runs else None
        return Ensemble(self._lake, runs, self._metric_info, self.metrics, per_rank=self.per_rank, tree_runs=tree,
                        keep=self._keep if isinstance(keep, str) else keep, values=values, metadata=metadata,
                        nodes=nodes)

    # -- what the tables are made of ------------------------------------------------------------------------
    @property
    def lake(self):
        return self._lake

    @property
    def profile(self) -> list[str]:
        """The profiles (run ids), in the dataframe's order."""
        return self._runs["run_id"].tolist()

    @property
    def profile_mapping(self) -> dict[str, str]:
        """profile -> where the run came from (the catalog's ``source``)."""
        return self.metadata["source"].to_dict() if "source" in self.metadata else {p: p for p in self.profile}

    @property
    def exc_metrics(self) -> list[str]:
        return [m.name for m in self._metric_info if m.role == EXCLUSIVE and m.name in self.metrics]

    @property
    def inc_metrics(self) -> list[str]:
        return [m.name for m in self._metric_info if m.role == INCLUSIVE and m.name in self.metrics]

    @property
    def default_metric(self) -> str | None:
        from perflake.frame.defaults import selection_default

        wanted = [{"name": m.name, "role": m.role} for m in self._metric_info if m.name in self.metrics]
        return selection_default([wanted])[0] if wanted else None

    def values_table(self) -> pa.Table:
        """node_id, profile, [rank,] one column per metric: the dataframe's rows that exist, as Arrow."""
        if self._kept_values is None:
            if self._values is None:
                self._values = tables.read_values(self._lake, self._runs, self.metrics, per_rank=self.per_rank)
            kept = self._values
            if self._keep is not None:
                kept = kept.filter(pc.is_in(kept.column("node_id"), pa.array(self._keep, pa.uint64())))
            self._kept_values = kept
        return self._kept_values

    def nodes_table(self) -> pa.Table:
        """The call tree as a nodes table (node_id, parent_id, depth, name, ... path), restricted."""
        if self._all_nodes is None:
            self._all_nodes = tables.read_nodes(self._lake, self._tree_runs)
        return tables.restrict_nodes(self._all_nodes, self._keep)

    @property
    def graph(self):
        """The call tree (perflake Graph): the union of the runs' call paths, restricted by query/intersection."""
        if self._graph is None:
            self._graph = tables.graph_of(self.nodes_table())
        return self._graph

    def node_ids(self) -> np.ndarray:
        """Call-path ids of the graph's nodes, pre-order (the statsframe's row order)."""
        if self._node_ids is None:
            self._node_ids = tables.node_index(self.graph)[1]
        return self._node_ids

    # -- Thicket's three tables ----------------------------------------------------------------------------
    @property
    def dataframe(self) -> pd.DataFrame:
        if self._dataframe is None:
            self._dataframe = tables.dense_frame(self.values_table(), self.graph, self.profile, self.metrics,
                                                 per_rank=self.per_rank)
        return self._dataframe

    def sparse_dataframe(self) -> pd.DataFrame:
        """The dataframe's rows that exist (no padding for a profile that lacks a call path)."""
        if self._dataframe is not None:
            return self._dataframe[self._dataframe["name"].notna().to_numpy()]
        return tables.dense_frame(self.values_table(), self.graph, self.profile, self.metrics, per_rank=self.per_rank,
                                  fill=False)

    @property
    def metadata(self) -> pd.DataFrame:
        if self._metadata is None:
            self._metadata = tables.metadata_frame(self._lake, self.profile)
        return self._metadata

    @property
    def statsframe(self) -> pd.DataFrame:
        if self._statsframe is None:
            nodes = tables.node_index(self.graph)[0]
            self._statsframe = pd.DataFrame({"name": [n.frame.get("name") for n in nodes]},
                                            index=pd.Index(nodes, dtype=object, name="node"))
        return self._statsframe

    @statsframe.setter
    def statsframe(self, frame: pd.DataFrame) -> None:
        self._statsframe = frame

    @property
    def stats(self):
        """The statistics bound to this ensemble: ``ens.stats.mean(["time"])`` is
        ``perflake.analytics.ensemble_stats.mean(ens, ["time"])``."""
        from perflake.analytics.ensemble_stats import Bound

        return Bound(self)

    # -- what the statistics read ----------------------------------------------------------------------------
    def check_columns(self, columns) -> list:
        if columns is None or isinstance(columns, (str, tuple)):
            raise UsageError("columns: give a list of metric columns (see Ensemble.metrics)")
        missing = [c for c in columns if c not in self.metrics]
        if missing:
            raise UsageError(f"no column {missing[0]!r} in this ensemble (columns: {', '.join(self.metrics)})")
        return list(columns)

    def column_values(self, columns) -> pa.Table:
        """col (position in ``columns``), node_id, profile, value: every row of each column (nulls included)."""
        columns = self.check_columns(columns)
        t = self.values_table()
        parts = [pa.table({"col": pa.array(np.full(t.num_rows, i, np.int32)), "node_id": t.column("node_id"),
                           "profile": t.column("profile"), "value": t.column(c)}) for i, c in enumerate(columns)]
        return pa.concat_tables(parts)

    def pair_values(self, x, y) -> pa.Table:
        """node_id, k, x, y over the dataframe rows where both columns have a (non-NaN) value."""
        self.check_columns([x, y])
        t = self.values_table()
        xs, ys = t.column(x).to_numpy(zero_copy_only=False), t.column(y).to_numpy(zero_copy_only=False)
        ok = ~(np.isnan(xs) | np.isnan(ys))
        return pa.table({"node_id": t.column("node_id").filter(pa.array(ok)), "k": pa.array(np.flatnonzero(ok)),
                         "x": pa.array(xs[ok]), "y": pa.array(ys[ok])})

    def stat_name(self, column, suffix: str):
        return f"{column}_{suffix}"

    def pair_name(self, a, b, suffix: str):
        """Thicket's name of a distance between two columns: ``<a>_<b><suffix>``."""
        return f"{a}_{b}{suffix}"

    def cross_name(self, a, b, suffix: str):
        """Thicket's name of a correlation of two columns: ``<a>_vs_<b><suffix>``."""
        return f"{a}_vs_{b}{suffix}"

    def test_name(self, a, b, suffix: str):
        """The statsframe column of a two-group test: ``<a>_vs_<b><suffix>``."""
        return f"{a}_vs_{b}{suffix}"

    def put_stats(self, node_ids: np.ndarray, columns: dict) -> list:
        """Write ``columns`` (name -> values aligned with ``node_ids``) into the statsframe by call-path id
        (NaN / None for nodes without a value); returns the names written."""
        frame = self.statsframe
        ids = self.node_ids()
        sorter = np.argsort(ids)
        at = tables.positions(ids[sorter], sorter, np.asarray(node_ids, np.uint64))
        ok = at >= 0
        for name, vals in columns.items():
            vals = np.asarray(vals)
            if vals.dtype == object or vals.dtype == bool:
                out = np.empty(len(ids), dtype=object)
                out[:] = None
                out[at[ok]] = vals[ok]
                frame[name] = pd.array(out, dtype="boolean") if vals.dtype == bool else out
            else:
                out = np.full(len(ids), np.nan)
                out[at[ok]] = vals[ok].astype(np.float64)
                frame[name] = out
        return list(columns)

    # -- operations (perflake.analytics.ensemble_ops; concat in ensemble_columnar) --------------------------------
    def filter_metadata(self, select) -> "Ensemble":
        """The profiles whose metadata row ``select`` accepts: a callable of the row (Thicket's), or an SQL
        condition on the metadata table (``"nprocs >= 64 and compiler like 'clang%'"``)."""
        from perflake.analytics.ensemble_ops import filter_metadata

        return filter_metadata(self, select)

    def filter_profile(self, profiles) -> "Ensemble":
        """The ensemble of ``profiles`` (run ids of this ensemble), in this ensemble's order."""
        unknown = [p for p in profiles if p not in set(self.profile)]
        if unknown:
            raise UsageError(f"profile {unknown[0]!r} is not in this ensemble")
        return self._derive(profiles=profiles)

    def groupby(self, by) -> dict:
        """{key tuple: Ensemble} over the distinct values of metadata columns ``by`` (a name or a list)."""
        from perflake.analytics.ensemble_ops import groupby

        return groupby(self, by)

    def query(self, query, *, multi_index_mode: str = "mean") -> "Ensemble":
        """The call paths on a match of a call-path ``query`` (object or string dialect, or a query object),
        evaluated over every profile's rows (``multi_index_mode``: "mean" = per-node mean over profiles,
        "any", "all"; "off" refuses several rows per node, as Hatchet's)."""
        from perflake.analytics.ensemble_ops import query as run_query

        return run_query(self, query, multi_index_mode=multi_index_mode)

    def intersection(self) -> "Ensemble":
        """Only the call paths every profile has."""
        from perflake.analytics.ensemble_ops import intersection

        return intersection(self)

    def union(self) -> "Ensemble":
        """Every call path any of this ensemble's profiles has (and no other)."""
        return self._derive(keep=None, tree_runs=self._runs)

    def tree(self, metric_column=None, *, indices=None, **options) -> str:
        """The call tree as text: a statsframe column (``time_mean``) or a dataframe column at one profile
        (``indices``; default the first).  Options as ``GraphFrame.tree``."""
        from perflake.analytics.ensemble_ops import tree

        return tree(self, metric_column, indices=indices, **options)

    def to_thicket_json(self, path=None, *, stats: bool = True) -> str:
        """Thicket's JSON (``thicket.Thicket.from_json`` reads it), with the statsframe unless ``stats=False``;
        written to ``path`` when given."""
        from perflake.analytics.ensemble_ops import to_thicket_json

        return to_thicket_json(self, path, stats=stats)

    @staticmethod
    def concat(ensembles, axis: str = "columns", *, headers=None, metadata_key: str | None = None,
               calltree: str = "union"):
        """Thicket's ``concat_thickets``: ``axis="columns"`` puts the ensembles side by side under
        ``headers`` (profiles paired by ``metadata_key`` or by position); ``axis="index"`` unions the runs."""
        from perflake.analytics.ensemble_columnar import concat

        return concat(ensembles, axis=axis, headers=headers, metadata_key=metadata_key, calltree=calltree)

    def __len__(self) -> int:
        return len(self._runs)

    def __repr__(self) -> str:
        nodes = f"{len(self.graph)} call paths" if self._graph is not None else "call tree not read yet"
        return f"<Ensemble of {len(self)} profiles, {nodes}, metrics {self.metrics}>"
