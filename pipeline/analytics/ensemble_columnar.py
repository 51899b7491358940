"""Ensembles concatenated: Thicket's ``concat_thickets`` over perflake Ensembles.

``concat([a, b], axis="index")`` is one Ensemble over the runs of both (same lake).

``concat([cpu, gpu], axis="columns", headers=["CPU", "GPU"], metadata_key=None)`` puts them side by side,
as Thicket's columnar join: the dataframe's columns become ``(header, metric)`` plus ``("name", "")``, the
metadata's ``(header, key)``, and the profile level pairs the ensembles' profiles -- by the value of
``metadata_key`` when given (each value at most once per ensemble), else by position (the i-th profile of each
ensemble becomes profile ``i``).  The call tree is the union of theirs.  Statistics take ``(header, metric)``
columns and write ``(header, "<metric>_<stat>")``; a statistic of two columns under two headers is written
under the header ``"Union statistics"`` (Thicket's name for its correlations).  ``calltree="intersection"``
keeps only the call paths every profile of every ensemble has.

Differences from Thicket: without ``metadata_key`` the ensembles may hold different numbers of profiles (the
shorter has no rows at the last positions: NaN, as a missing call path); ``query``, ``filter_metadata``,
``groupby`` and ``to_thicket_json`` are done on the ensembles before the join (a UsageError says so).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from perflake.analytics import ensemble_tables as tables
from perflake.analytics.ensemble_frame import Ensemble
from perflake.errors import UsageError

UNION = "Union statistics"


def concat(ensembles, axis: str = "columns", *, headers=None, metadata_key: str | None = None,
           calltree: str = "union"):
    ensembles = list(ensembles)
    if not ensembles or not all(isinstance(e, Ensemble) and not isinstance(e, ColumnarEnsemble) for e in ensembles):
        raise UsageError("concat takes a list of (non-columnar) Ensembles")
    if calltree not in ("union", "intersection"):
        raise UsageError("calltree must be 'union' or 'intersection'")
    if len({e.per_rank for e in ensembles}) > 1:
        raise UsageError("concat: every ensemble must be per rank, or none")
    if axis == "index":
        out = _index(ensembles)
    elif axis == "columns":
        out = ColumnarEnsemble(ensembles, headers, metadata_key)
    else:
        raise UsageError("axis must be 'index' or 'columns'")
    return out.intersection() if calltree == "intersection" else out


def _index(ensembles) -> Ensemble:
    lake = ensembles[0].lake
    if any(e.lake.root != lake.root for e in ensembles):
        raise UsageError("concat(axis='index'): the ensembles must come from one lake")
    runs = pd.concat([e._runs for e in ensembles]).drop_duplicates("run_id").sort_values("run_id", kind="stable")
    info = list({m.name: m for e in ensembles for m in reversed(e._metric_info)}.values())[::-1]
    metrics = list(dict.fromkeys(m for e in ensembles for m in e.metrics))
    return Ensemble(lake, runs, info, metrics, per_rank=ensembles[0].per_rank)


class ColumnarEnsemble(Ensemble):
    """Ensembles side by side (module docstring)."""

    def __init__(self, ensembles, headers=None, metadata_key: str | None = None, *, keep=None):
        headers = list(range(len(ensembles))) if headers is None else list(headers)
        if len(headers) != len(ensembles) or len(set(headers)) != len(headers):
            raise UsageError("headers: one distinct header per ensemble")
        self.parts = list(zip(headers, ensembles))
        self.metadata_key = metadata_key
        self.labels = [self._labels(e) for e in ensembles]  # run id -> profile, per ensemble
        self._profiles = sorted({v for d in self.labels for v in d.values()}, key=lambda v: (str(type(v)), v))
        self.metrics = [(h, m) for h, e in self.parts for m in e.metrics]
        self.per_rank = ensembles[0].per_rank
        self._keep = None if keep is None else np.unique(np.asarray(keep, np.uint64))
        self._graph = self._node_ids = self._dataframe = self._statsframe = self._metadata = None
        self._metric_info = []

    def _labels(self, ens) -> dict:
        if self.metadata_key is None:
            return {p: i for i, p in enumerate(ens.profile)}
        from perflake.analytics.ensemble_ops import metadata_column

        column = metadata_column(ens.metadata, self.metadata_key)
        values = ens.metadata[column]
        if values.isna().any() or values.duplicated().any():
            raise UsageError(f"metadata_key {self.metadata_key!r}: every profile of each ensemble needs its own value")
        return dict(zip(ens.profile, values.tolist()))

    # -- what the tables are made of ------------------------------------------------------------------------
    @property
    def lake(self):
        return self.parts[0][1].lake

    @property
    def profile(self) -> list:
        return list(self._profiles)

    @property
    def profile_mapping(self) -> dict:
        return {label: (h, run) for (h, _), d in zip(self.parts, self.labels) for run, label in d.items()}

    @property
    def exc_metrics(self) -> list:
        return [(h, m) for h, e in self.parts for m in e.exc_metrics]

    @property
    def inc_metrics(self) -> list:
        return [(h, m) for h, e in self.parts for m in e.inc_metrics]

    @property
    def default_metric(self):
        h, e = self.parts[0]
        return (h, e.default_metric)

    def nodes_table(self) -> pa.Table:
        table = pa.concat_tables([e.nodes_table() for _, e in self.parts], promote_options="permissive")
        first = pd.Series(table.column("node_id").to_numpy()).drop_duplicates().index.to_numpy()
        return tables.restrict_nodes(table.take(pa.array(first)), self._keep)

    def _part_values(self, i: int) -> pa.Table:
        """Ensemble i's values with its profiles relabelled, restricted to this ensemble's call paths."""
        t = self.parts[i][1].values_table()
        if self._keep is not None:
            t = t.filter(pc.is_in(t.column("node_id"), pa.array(self._keep, pa.uint64())))
        runs = t.column("profile").to_numpy(zero_copy_only=False)
        labels = pd.Series(self.labels[i]).reindex(runs).to_numpy(dtype=object)
        return t.set_column(t.column_names.index("profile"), "profile", pa.array(labels.astype(str)))

    def values_table(self) -> pa.Table:
        raise UsageError("a columnar ensemble has no single values table: use column_values")

    # -- Thicket's tables --------------------------------------------------------------------------------------
    @property
    def dataframe(self) -> pd.DataFrame:
        if self._dataframe is None:
            profiles = [str(p) for p in self._profiles]
            frames = []
            for i, (h, e) in enumerate(self.parts):
                part = tables.dense_frame(self._part_values(i), self.graph, profiles, e.metrics, per_rank=self.per_rank)
                frames.append(part.drop(columns=["name"]).set_axis(pd.MultiIndex.from_tuples(
                    [(h, m) for m in e.metrics]), axis=1))
            out = pd.concat(frames, axis=1) if not self.per_rank else pd.concat(frames, axis=1).sort_index()
            out = out.rename(index=dict(zip(profiles, self._profiles)), level="profile")
            out.insert(0, ("name", ""), [n.frame.get("name") for n in out.index.get_level_values("node")])
            self._dataframe = out
        return self._dataframe

    def sparse_dataframe(self) -> pd.DataFrame:
        df = self.dataframe
        return df[df.drop(columns=[("name", "")]).notna().any(axis=1).to_numpy()]

    @property
    def metadata(self) -> pd.DataFrame:
        if self._metadata is None:
            frames = []
            for (h, e), labels in zip(self.parts, self.labels):
                md = e.metadata.rename(index=labels)
                md.index.name = "profile"
                md.columns = pd.MultiIndex.from_tuples([(h, c) for c in md.columns])
                frames.append(md)
            self._metadata = pd.concat(frames, axis=1).reindex(pd.Index(self._profiles, name="profile"))
        return self._metadata

    @property
    def statsframe(self) -> pd.DataFrame:
        if self._statsframe is None:
            nodes = tables.node_index(self.graph)[0]
            frame = pd.DataFrame({("name", ""): [n.frame.get("name") for n in nodes]},
                                 index=pd.Index(nodes, dtype=object, name="node"))
            frame.columns = pd.MultiIndex.from_tuples(frame.columns)
            self._statsframe = frame
        return self._statsframe

    @statsframe.setter
    def statsframe(self, frame: pd.DataFrame) -> None:
        self._statsframe = frame

    # -- what the statistics read ----------------------------------------------------------------------------
    def check_columns(self, columns) -> list:
        if columns is None or not isinstance(columns, list):
            raise UsageError("columns: a list of (header, metric) tuples")
        missing = [c for c in columns if tuple(c) not in self.metrics] if all(isinstance(c, (tuple, list)) for c in
                                                                            columns) else columns
        if missing:
            raise UsageError(f"no column {missing[0]!r} in this ensemble (columns: {self.metrics})")
        return [tuple(c) for c in columns]

    def _header_index(self, header) -> int:
        return [h for h, _ in self.parts].index(header)

    def column_values(self, columns) -> pa.Table:
        parts = []
        for i, (h, m) in enumerate(self.check_columns(columns)):
            t = self._part_values(self._header_index(h))
            parts.append(pa.table({"col": pa.array(np.full(t.num_rows, i, np.int32)), "node_id": t.column("node_id"),
                                   "profile": t.column("profile"), "value": t.column(m)}))
        return pa.concat_tables(parts)

    def pair_values(self, x, y) -> pa.Table:
        (hx, mx), (hy, my) = self.check_columns([x, y])
        keys = ["node_id", "profile"] + (["rank"] if self.per_rank else [])
        a = self._part_values(self._header_index(hx)).select([*keys, mx]).rename_columns([*keys, "x"])
        b = self._part_values(self._header_index(hy)).select([*keys, my]).rename_columns([*keys, "y"])
        joined = a.join(b, keys=keys, join_type="inner")
        xs, ys = (joined.column(c).to_numpy(zero_copy_only=False).astype(np.float64) for c in ("x", "y"))
        ok = ~(np.isnan(xs) | np.isnan(ys))
        return pa.table({"node_id": joined.column("node_id").filter(pa.array(ok)), "k": pa.array(np.flatnonzero(ok)),
                         "x": pa.array(xs[ok]), "y": pa.array(ys[ok])})

    def stat_name(self, column, suffix: str):
        return (column[0], f"{column[1]}_{suffix}")

    def cross_name(self, a, b, suffix: str):
        return (a[0] if a[0] == b[0] else UNION, f"{a[1]}_vs_{b[1]}{suffix}")

    def test_name(self, a, b, suffix: str):
        if a[0] == b[0]:
            return (a[0], f"{a[1]}_vs_{b[1]}{suffix}")
        return (UNION, f"{a[0]}_{a[1]}_vs_{b[0]}_{b[1]}{suffix}")

    def pair_name(self, a, b, suffix: str):
        return (UNION, f"{a[0]}_{a[1]}_{b[0]}_{b[1]}{suffix}")

    # -- operations ------------------------------------------------------------------------------------------------
    def _derive(self, *, profiles=None, keep="same", tree_runs="same"):
        if profiles is not None or not isinstance(tree_runs, str):
            raise UsageError("select profiles on the ensembles before concat(axis='columns')")
        out = ColumnarEnsemble([e for _, e in self.parts], [h for h, _ in self.parts], self.metadata_key,
                               keep=self._keep if isinstance(keep, str) else keep)
        return out

    def union(self):
        return self._derive(keep=None)

    def intersection(self):
        from perflake.analytics.ensemble_ops import present_in_all

        keep = self.node_ids()
        for i, (_, e) in enumerate(self.parts):
            keep = np.intersect1d(keep, present_in_all(self._part_values(i), len(e)))
        return self._derive(keep=keep)

    def filter_metadata(self, select):
        raise UsageError("filter_metadata: filter the ensembles before concat(axis='columns')")

    def filter_profile(self, profiles):
        raise UsageError("filter_profile: filter the ensembles before concat(axis='columns')")

    def groupby(self, by):
        raise UsageError("groupby: group the ensembles before concat(axis='columns')")

    def query(self, query, *, multi_index_mode: str = "mean"):
        raise UsageError("query: query the ensembles before concat(axis='columns')")

    def to_thicket_json(self, path=None, *, stats: bool = True) -> str:
        raise UsageError("to_thicket_json: export the ensembles before concat(axis='columns')")

    def __len__(self) -> int:
        return len(self._profiles)

    def __repr__(self) -> str:
        return f"<ColumnarEnsemble {[h for h, _ in self.parts]} of {len(self)} profiles, metrics {self.metrics}>"
