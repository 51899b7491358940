"""Operations on an Ensemble that return a new one (filter_metadata, groupby, query, intersection) or show it
(tree, Thicket JSON).  Each reads the cached tables of its input and the lake nothing twice.

Metadata keys: ``groupby`` and ``filter_metadata`` take a metadata column as the metadata table names it, or as
``meta:KEY``.  A key no profile has is an error naming the closest keys (a typo never yields one silent NaN
group); a key some profiles lack makes a :class:`~perflake.errors.MetadataKeyWarning` saying how many, and those
profiles form the group whose key is missing (pandas' ``dropna=False``, as Thicket's ``groupby``).
"""

from __future__ import annotations

import difflib
import json
import warnings

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa

from perflake.engine import duck
from perflake.errors import MetadataKeyWarning, RenderError, UsageError


def _suggest(key, known) -> str:
    close = difflib.get_close_matches(str(key), [str(k) for k in known], n=3, cutoff=0.6)
    return f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else ""


def metadata_column(metadata: pd.DataFrame, key):
    """The metadata column ``key`` names (``meta:KEY`` accepted); a UsageError naming close keys if none."""
    if key in metadata.columns:
        return key
    if isinstance(key, str) and key.startswith("meta:") and key[5:] in metadata.columns:
        return key[5:]
    raise UsageError(f"no profile has metadata key {key!r}{_suggest(key, metadata.columns)}")


def warn_missing(metadata: pd.DataFrame, column) -> None:
    """A MetadataKeyWarning when some (not all) profiles lack ``column``."""
    missing = int(metadata[column].isna().sum())
    if missing:
        warnings.warn(f"{missing} of {len(metadata)} profiles have no metadata key {column!r}: they form the "
                      f"group where it is missing", MetadataKeyWarning, stacklevel=4)


def check_group_keys(lake, runs: pd.DataFrame, keys, *, unknown_keys: str = "warn") -> None:
    """Warn (MetadataKeyWarning) about each ``meta:KEY`` group column of a run selection that some runs lack;
    a key no run has (a typo, named with the close keys) warns too -- ``Lake.ensemble(group_by=["meta:nokey"])``
    still answers, one group where the key is missing, but never silently -- or, ``unknown_keys="error"`` (the
    CLI), is a UsageError (perflake.analytics.meta_keys)."""
    from perflake.analytics.meta_keys import check_mode, report_unknown

    check_mode(unknown_keys)
    for key in keys:
        if not key.startswith("meta:") or key not in runs:
            continue
        missing = int(runs[key].isna().sum())
        if missing == len(runs) and missing:
            report_unknown(lake, runs["run_id"], key[5:], "every run is in the group where it is missing",
                           unknown_keys, stacklevel=3)
        elif missing:
            warnings.warn(f"{missing} of {len(runs)} selected runs have no metadata key {key[5:]!r}: they form the "
                          "group where it is missing", MetadataKeyWarning, stacklevel=3)


def filter_metadata(ens, select):
    """Profiles whose metadata row ``select`` accepts (a callable of the row, or an SQL condition)."""
    md = ens.metadata
    if callable(select):
        try:
            mask = md.apply(select, axis=1) if len(md) else pd.Series([], dtype=bool)
        except KeyError as exc:
            key = exc.args[0] if exc.args else exc
            raise UsageError(f"no profile has metadata key {key!r}{_suggest(key, md.columns)}") from None
        keep = md.index[np.asarray(mask, dtype=bool)].tolist()
    elif isinstance(select, str):
        keep = sql_filter(md, select)
    else:
        raise UsageError("filter_metadata takes a callable of a metadata row or an SQL condition (a string)")
    if not keep:
        raise UsageError(f"no profile satisfies the metadata filter {select!r}" if isinstance(select, str)
                         else "no profile satisfies the metadata filter")
    return ens._derive(profiles=keep)


def _sql_ready(md: pd.DataFrame) -> pd.DataFrame:
    """The metadata table as DuckDB can hold it: lists and mixed objects as JSON text."""
    out = md.reset_index()
    for c in out.columns:
        if out[c].dtype == object:
            kinds = {type(v) for v in out[c] if v is not None and not (isinstance(v, float) and np.isnan(v))}
            if kinds - {str}:
                out[c] = [None if v is None or (isinstance(v, float) and np.isnan(v)) else
                          v if isinstance(v, str) else json.dumps(v, default=str) for v in out[c]]
    return out


def sql_filter(md: pd.DataFrame, condition: str) -> list:
    """Profiles whose metadata row satisfies ``condition`` (DuckDB SQL on the table ``metadata``, on a sealed
    database: no file, no extension, no setting)."""
    con = duck.sealed()
    try:
        con.register("metadata", _sql_ready(md))
        rel = con.table("metadata").filter(duckdb.SQLExpression(condition)).select("profile")
        keep = {r[0] for r in rel.fetchall()}
    except duckdb.Error as exc:
        raise UsageError(f"metadata filter {condition!r}: {str(exc).splitlines()[0]}") from None
    finally:
        con.close()
    return [p for p in md.index if p in keep]


def groupby(ens, by) -> dict:
    """{key tuple: sub-Ensemble}, keys sorted (missing last)."""
    md = ens.metadata
    keys = [by] if isinstance(by, str) else list(by)
    if not keys:
        raise UsageError("groupby needs at least one metadata key")
    columns = [metadata_column(md, k) for k in keys]
    for c in columns:
        if any(isinstance(v, (list, dict)) for v in md[c]):
            raise UsageError(f"metadata key {c!r} holds lists: it cannot group profiles")
        warn_missing(md, c)
    out = {}
    for key, part in md.groupby(columns, dropna=False, sort=True):
        out[key if isinstance(key, tuple) else (key,)] = ens._derive(profiles=part.index.tolist())
    return out


def query(ens, q, *, multi_index_mode: str = "mean"):
    """The call paths on a match of ``q`` over every profile's rows (perflake.query)."""
    from perflake.query.matching import _GraphAndRows, match_node_ids

    # "all" must see a profile's missing row (Thicket's padded frame); "mean"/"any" read the same without it
    frame = ens.dataframe if multi_index_mode == "all" else ens.sparse_dataframe()
    ids = match_node_ids(_GraphAndRows(ens.graph, frame), q, multi_index_mode=multi_index_mode)
    if len(ids) == 0:
        raise UsageError("the query matches no call path of this ensemble")
    return ens._derive(keep=ids)


def present_in_all(values: pa.Table, n_profiles: int) -> np.ndarray:
    """Call-path ids with a row in each of the ``n_profiles`` profiles of ``values``."""
    counts = values.group_by("node_id").aggregate([("profile", "count_distinct")])
    ids = counts.column("node_id").to_numpy(zero_copy_only=False)
    return ids[counts.column("profile_count_distinct").to_numpy(zero_copy_only=False) == n_profiles]


def intersection(ens):
    """The call paths every profile has (a node's ancestors are then kept too: nothing to re-parent)."""
    return ens._derive(keep=np.intersect1d(ens.node_ids(), present_in_all(ens.values_table(), len(ens))))


class FrameView:
    """What the tree renderer and the JSON writers read of a GraphFrame: its graph, dataframe, metric lists and
    metadata (no GraphFrame is built: capability modules do not import it)."""

    def __init__(self, graph, dataframe, exc_metrics=(), inc_metrics=(), default_metric=None, metadata=None):
        self.graph, self.dataframe = graph, dataframe
        self.exc_metrics, self.inc_metrics = list(exc_metrics), list(inc_metrics)
        self.default_metric, self.metadata = default_metric, dict(metadata or {})


def _label(column) -> str:
    return column if isinstance(column, str) else "/".join(map(str, column))


def tree(ens, metric_column=None, *, indices=None, **options) -> str:
    """Text tree of statsframe columns, or of dataframe columns at one profile (``indices``)."""
    from perflake.render.tree import render

    several = isinstance(metric_column, list)
    wanted = list(metric_column) if several else [metric_column if metric_column is not None else ens.default_metric]
    sf = ens.statsframe
    if all(c in sf.columns for c in wanted):
        source = sf
    elif all(c in ens.metrics for c in wanted):
        source = profile_slice(ens, indices)
    else:
        bad = next(c for c in wanted if c not in sf.columns and c not in ens.metrics)
        have = ", ".join(_label(c) for c in sf.columns[1:]) or "no stats yet"
        raise RenderError(f"no column {bad!r} in the statsframe ({have}) nor in the dataframe "
                          f"({', '.join(_label(c) for c in ens.metrics)})")
    labels = [_label(c) for c in wanted]
    frame = pd.DataFrame({"name": [n.frame.get("name") for n in source.index],
                          **{lab: source[c].to_numpy() for lab, c in zip(labels, wanted)}}, index=source.index)
    view = FrameView(ens.graph, frame, inc_metrics=labels, default_metric=labels[0])
    return render(view, metric_column=labels if several else labels[0], **options)


def profile_slice(ens, indices) -> pd.DataFrame:
    """The dataframe at one profile (and one rank, per rank: the lowest unless ``indices`` names it),
    indexed by node."""
    df = ens.dataframe
    key = (ens.profile[0],) if indices is None else indices if isinstance(indices, tuple) else tuple(
        indices) if isinstance(indices, list) else (indices,)
    try:
        if ens.per_rank and len(key) == 1:
            key = (key[0], int(df.xs(key[0], level="profile").index.get_level_values("rank").min()))
        return df.xs(key, level=list(df.index.names[1:1 + len(key)]))
    except KeyError:
        raise RenderError(f"no profile {key!r} in this ensemble") from None


def to_thicket_json(ens, path=None, *, stats: bool = True) -> str:
    """Thicket JSON text via perflake.interop.json_files (profiles labelled by run id)."""
    from perflake.interop import json_files

    sparse = ens.sparse_dataframe()
    level = list(sparse.index.names).index("profile")
    runs = {}
    for profile, part in sparse.groupby(level="profile", sort=False):
        frame = part.droplevel(level)
        runs[profile] = FrameView(ens.graph, frame, ens.exc_metrics, ens.inc_metrics, ens.default_metric)
    md = ens.metadata
    metadata = {p: {k: v for k, v in row.items() if not _missing(v)} for p, row in md.to_dict("index").items()}
    sf = None
    if stats and ens.statsframe.shape[1] > 1:
        sf = ens.statsframe.drop(columns=["name"])
        sf.index = pd.Index([n.node_id for n in sf.index], name="node")
    doc = json_files.to_thicket_dict({p: runs[p] for p in ens.profile if p in runs}, sources=ens.profile_mapping,
                                     metadata=metadata, stats=sf)
    text = json.dumps(doc, default=str)
    if path is not None:
        json_files._write(path, text)
    return text


def _missing(v) -> bool:
    return v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v))
