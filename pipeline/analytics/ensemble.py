"""Ensembles: statistics of every call path across many runs, grouped by catalog metadata.

Per-run value: for one run and one call path, the mean of the metric over the run's locations (rank >= 0,
every thread) where the node has a value; absent rows and NULLs are excluded and rank -1 (a summary
profile) is not a location.  A mean rather than a sum keeps runs of different sizes comparable (a
strong-scaling study reads time per rank); for a sum multiply ``mean`` by the catalog's ``ranks``.
``count`` is the number of runs of the group in which the call path has a value.

The statistics are ONE DuckDB query over the selected batches' Parquet files (``sql/ensemble_values.sql``
feeding ``sql/ensemble_stats.sql``), never a Python loop over runs.  With ``scheduler`` the per-run values
are computed by Dask tasks over chunks of runs (``pipeline/engine/parallel.py``) and the statistics by the same
``sql/ensemble_stats.sql`` over their union: the same numbers up to floating-point summation order (DuckDB
sums in parallel, so the last bits of ``mean``/``std`` vary between any two executions).
"""

from __future__ import annotations

import contextlib
import re
from typing import NamedTuple

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from perflake.engine import duck
from perflake.engine import parallel, sqlfiles
from perflake.catalogs.schema import RUNS_SCHEMA
from perflake.frame.defaults import selection_default
from perflake.errors import LakeError, UnknownRun, UsageError
from perflake.ingest.normalize import MAX_DEPTH
from perflake.readers.base import OTHER, Metric

DEFAULT_STATS = ("count", "mean", "median", "std", "min", "max", "p25", "p75")
MOMENTS = ("count", "mean", "std", "var", "min", "max")
# group_by accepts these catalog columns (scalars; the raw metadata JSON is reached through meta:KEY)
GROUP_COLUMNS = frozenset(f.name for f in RUNS_SCHEMA if not pa.types.is_list(f.type)) - {"metadata"}
_PERCENTILE = re.compile(r"^p(100|\d{1,2}(\.\d+)?)$")
_META_ARROW = re.compile(r"""^metadata\s*->>\s*'\$\.(?:"([^"]+)"|([A-Za-z_][A-Za-z0-9_]*))'$""")


class Selection(NamedTuple):
    runs: pd.DataFrame  # run_id, batch, n_nodes, ranks, threads, group_id, <key columns>; catalog order
    keys: list[str]  # names of the group key columns
    catalog: pa.Table  # the selected catalog rows (run_id, metrics, ... but not the metadata), same order


@contextlib.contextmanager
def session(lake, con: duckdb.DuckDBPyConnection | None = None):
    """A DuckDB connection able to read the lake's files: ``con`` itself if given, else a new one closed on exit."""
    if con is not None:
        yield con
        return
    cat = lake.catalog()
    con = duck.connection() if cat.local else duckdb.connect()
    try:
        if not cat.local:
            con.register_filesystem(cat.fs)
        yield con
    finally:
        con.close()


def parse_key(spec: str) -> tuple[str, str, str]:
    """A group_by entry as (kind, key, output column): a catalog column, ``meta:KEY`` or ``metadata->>'$.KEY'``."""
    if spec in GROUP_COLUMNS:
        return "column", spec, spec
    m = _META_ARROW.match(spec.strip())
    key = spec[5:] if spec.startswith("meta:") else (m.group(1) or m.group(2)) if m else None
    if key is None:
        raise LakeError(f"group_by {spec!r}: not a catalog column ({', '.join(sorted(GROUP_COLUMNS))}) "
                        "nor meta:KEY for a metadata key")
    if not key or any(c in key for c in '"\\') or any(ord(c) < 32 for c in key):
        raise LakeError(f"group_by {spec!r}: a metadata key must be non-empty, without quotes, backslashes "
                        "or control characters")
    return "meta", key, f"meta:{key}"


def _typed(values: pd.Series) -> pd.Series:
    """Metadata values arrive as text: numbers become numbers (integers when all are integral)."""
    present = values.dropna()
    try:
        nums = pd.to_numeric(present)
    except (ValueError, TypeError):
        return values
    out = pd.to_numeric(values)
    return out.astype("Int64") if len(nums) and bool((nums == np.floor(nums)).all()) else out


def resolve_runs(table: pa.Table, runs) -> pa.Table:
    """Catalog rows of ``runs`` (ids or unique prefixes), resolved in one pass over the catalog."""
    ids = table.column("run_id").to_pylist()
    known, wanted = set(ids), []
    for run in [runs] if isinstance(runs, str) else runs:
        hits = [run] if run in known else [i for i in ids if i.startswith(run)]
        if len(hits) > 1:
            raise LakeError(f"run id prefix {run!r} is ambiguous: {', '.join(hits[:5])}")
        if not hits:
            raise UnknownRun(run)
        wanted.append(hits[0])
    return table.filter(pc.is_in(table.column("run_id"), pa.array(wanted, pa.string())))


def _where(table: pa.Table, where: str | None, metas: list[str]) -> tuple[list[str], pd.DataFrame | None]:
    """Run ids satisfying ``where`` (the user's SQL on the catalog) and the metadata values of ``metas``; the
    user's SQL runs on a sealed database (no file, no extension, no setting)."""
    con = duck.sealed()
    try:
        con.register("runs", table)
        rel = con.table("runs")
        if where:
            rel = rel.filter(duckdb.SQLExpression(where))
        con.register("selected_runs", rel)  # private to this cursor (a view would be shared by the instance)
        ids = [r[0] for r in con.table("selected_runs").select("run_id").fetchall()]
        meta = sqlfiles.relation(con, "ensemble_meta", paths=[f'$."{k}"' for k in metas]).df() if metas else None
    except duckdb.Error as exc:
        raise LakeError(f"where {where!r}: {str(exc).splitlines()[0]}") from None
    finally:
        con.close()
    return ids, meta


def select(lake, *, runs=None, where: str | None = None, group_by=None) -> Selection:
    """The runs chosen by ``runs`` (ids/prefixes) and ``where`` (SQL on the runs catalog), with group ids."""
    specs = list(dict.fromkeys(parse_key(g) for g in ([group_by] if isinstance(group_by, str) else group_by or [])))
    metas = [key for kind, key, _ in specs if kind == "meta"]
    columns = list(dict.fromkeys(["run_id", "batch", "n_nodes", "ranks", "threads", "metrics",
                                  *[key for kind, key, _ in specs if kind == "column"]]))
    # a where clause or a metadata key reads any column; otherwise only these are read (the metadata JSON
    # of 10,000 runs is most of the catalog's bytes)
    table = lake.catalog().runs(columns=None if where or metas else columns)
    if runs is not None:
        table = resolve_runs(table, runs)
    slim = table.select(columns)  # the where sees every column; nothing else copies the metadata JSON
    meta = None
    if where or metas:
        ids, meta = _where(table, where, metas)
        slim = slim.filter(pc.is_in(slim.column("run_id"), pa.array(ids, pa.string())))
    df = slim.select(["run_id", "batch", "n_nodes", "ranks", "threads"]).to_pandas()
    for kind, key, name in specs:
        if kind == "column":
            df[name] = slim.column(key).to_pandas()
        else:
            values = meta.set_index("run_id")["meta"].map(lambda v, i=metas.index(key): v[i])
            df[name] = _typed(df["run_id"].map(values))
    keys = [name for _, _, name in specs]
    df["group_id"] = df.groupby(keys, dropna=False, sort=True).ngroup() if keys else 0
    return Selection(df, keys, slim)


def selection_metric(sel: Selection) -> tuple[str, int]:
    """The default metric of the selected runs (perflake.frame.defaults.selection_default) and how many have it."""
    if sel.runs.empty:
        raise LakeError("no runs selected")
    metric, have = selection_default(sel.catalog.column("metrics").to_pylist())
    if metric is None:
        raise LakeError("the selected runs have no metric")
    return metric, have


def default_metric(lake, *, where: str | None = None, runs=None) -> tuple[str, int, int]:
    """(metric, runs that have it, runs selected): what ``ensemble``/``scaling_table`` use without ``metric``."""
    sel = select(lake, runs=runs, where=where)
    return (*selection_metric(sel), len(sel.runs))


def with_metric(sel: Selection, metric: str) -> pd.DataFrame:
    """The selected runs that have ``metric`` (from the catalog); a LakeError when none has it."""
    if sel.runs.empty:
        raise LakeError("no runs selected")
    metrics = sel.catalog.column("metrics")
    names = pc.struct_field(pc.list_flatten(metrics), "name")
    owners = pc.list_parent_indices(metrics).to_numpy()
    has = np.zeros(len(sel.runs), bool)
    has[owners[pc.equal(names, metric).to_numpy(zero_copy_only=False)]] = True
    if not has.any():
        known = sorted(set(names.to_pylist()))
        raise LakeError(f"no selected run has metric {metric!r} (they have: {', '.join(known) or 'no runs'})")
    return sel.runs[has]


def parse_stats(stats) -> tuple[list[str], list[float]]:
    """Validated stat names and the probabilities the quantile stats need (median = p50)."""
    stats = [stats] if isinstance(stats, str) else list(stats)
    probs: list[float] = []
    for s in stats:
        m = _PERCENTILE.match(s)
        if s == "median" or m:
            p = 0.5 if s == "median" else float(m.group(1)) / 100
            probs += [] if p in probs else [p]
        elif s not in MOMENTS:
            raise UsageError(f"unknown statistic {s!r}: use {', '.join(MOMENTS)}, median or pNN (0 <= NN <= 100)")
    return stats, probs


def group_stats(lake, rows: pd.DataFrame, metric: str, *, stats=("count", "mean"), ddof: int = 1, scheduler=None,
                task_rows: int = parallel.DEFAULT_TASK_ROWS, con=None) -> pd.DataFrame:
    """Statistics across runs per (group_id, node_id) of ``metric`` for ``rows`` (run_id, group_id, batch,
    n_nodes, ranks, threads; a run may appear under several groups).

    One DuckDB query (sql/ensemble_values.sql feeding sql/ensemble_stats.sql, or ensemble_quantiles.sql
    when a quantile is asked for); with ``scheduler``, Dask tasks compute the per-run values of chunks of
    runs and the same statistics file runs over their union.
    Returns group_id, node_id, metric, one column per stat.
    """
    stats, probs = parse_stats(stats)
    cat = lake.catalog()
    selection = rows[["run_id", "group_id"]].reset_index(drop=True)
    one = bool(((rows["ranks"] == 1) & (rows["threads"] == 1)).all())  # NULL (unknown) counts as not one
    with session(lake, con) as con:
        if scheduler is None:
            con.register("selection_t", selection)
            files = cat.files("metrics", rows["batch"].unique())
            con.register("run_values_t", sqlfiles.relation(con, "ensemble_values", files=files, metric=metric,
                                                           one_location=one))  # private to this cursor
        else:
            distinct = rows.drop_duplicates("run_id").to_dict("records")
            tasks = parallel.plan(distinct, lambda b: cat.files("metrics", [b]), task_rows=task_rows, split_ranks=False)
            specs = [dict(name="ensemble_values", params={"files": t["files"], "metric": metric, "one_location": one},
                          tables={"selection_t": selection[selection["run_id"].isin(t["run_ids"])]},
                          filesystem=None if cat.local else cat.fs) for t in tasks]
            parts = parallel.fan_out(parallel.sql_task, specs, scheduler=scheduler)
            con.register("run_values_t", pa.concat_tables(parts))
        if probs:
            raw = sqlfiles.relation(con, "ensemble_quantiles", ddof=ddof, probs=probs).df()
        else:
            raw = sqlfiles.relation(con, "ensemble_stats", ddof=ddof).df()
    out = raw[["group_id", "node_id"]].assign(metric=metric)
    q = np.stack(raw["quantiles"].to_numpy()) if probs and len(raw) else np.empty((len(raw), len(probs)))
    for s in stats:
        out[s] = raw[s] if s in MOMENTS else q[:, probs.index(0.5 if s == "median" else float(s[1:]) / 100)]
    return out


def union_nodes(lake, run_ids, batches, *, full: bool = False, con=None) -> pa.Table:
    """The union of the runs' call paths: node_id, name, path (sql/ensemble_paths.sql) or, ``full``, every
    nodes column plus path (sql/ensemble_nodes.sql, what GraphFrame.from_tables takes)."""
    with session(lake, con) as con:
        con.register("selection_t", pd.DataFrame({"run_id": pd.unique(pd.Series(run_ids, dtype=object))}))
        return sqlfiles.relation(con, "ensemble_nodes" if full else "ensemble_paths",
                                 files=lake.catalog().files("nodes", batches), max_depth=MAX_DEPTH).to_arrow_table()


def _metrics(metric) -> list[str]:
    return [metric] if isinstance(metric, str) else list(metric)


def ensemble(lake, where: str | None = None, group_by=None, *, metric=None, stats=DEFAULT_STATS, ddof: int = 1,
             runs=None, scheduler=None, task_rows: int = parallel.DEFAULT_TASK_ROWS) -> pd.DataFrame:
    """Per call path (and group), statistics across runs of the per-run value (module docstring).

    ``where``: SQL condition on the runs catalog (``"nprocs >= 64 and app = 'lulesh2.0'"``); ``runs``:
    ids or prefixes; ``group_by``: catalog columns and ``meta:KEY`` metadata keys (a column ``meta:KEY``
    each, numbers typed as numbers); ``metric``: a name or a list (default: :func:`selection_metric`, the
    selected runs' inclusive time in the first place); ``stats``: count, mean, std, var
    (divisor count - ``ddof``), min, max, median, pNN (linear interpolation).
    Returns [group keys], node_id, name, path, metric, one column per stat; sorted by keys, metric, path
    (tree order).
    """
    sel = select(lake, runs=runs, where=where, group_by=group_by)
    from perflake.analytics.ensemble_ops import check_group_keys  # a typo (meta:nokey) warns, never silent

    check_group_keys(lake, sel.runs, sel.keys)
    stats = parse_stats(stats)[0]
    metric = metric if metric is not None else selection_metric(sel)[0]
    with session(lake) as con:
        frames = [group_stats(lake, with_metric(sel, m), m, stats=stats, ddof=ddof, scheduler=scheduler,
                              task_rows=task_rows, con=con) for m in _metrics(metric)]
        nodes = union_nodes(lake, sel.runs["run_id"], sel.runs["batch"].unique(), con=con).to_pandas()
    out = nodes.merge(pd.concat(frames, ignore_index=True), on="node_id")  # keeps the nodes' path order
    out = out.merge(sel.runs[["group_id", *sel.keys]].drop_duplicates("group_id"), on="group_id", how="left")
    out = out[[*sel.keys, "node_id", "name", "path", "metric", *stats]]
    return out.sort_values([*sel.keys, "metric"], na_position="last", kind="stable", ignore_index=True)


def scaling_table(lake, metric: str | None = None, by: str = "nprocs", *, where: str | None = None, stat: str = "mean",
                  runs=None, scheduler=None) -> pd.DataFrame:
    """A metric's ``stat`` per call path (rows, indexed by node_id, with name and path) and value of ``by``
    (columns, ascending): the table of a scaling study.  NaN where a call path does not occur.  ``metric``
    defaults as in :func:`ensemble`; the metric used is in ``attrs["metric"]``."""
    df = ensemble(lake, where, [by], metric=metric, stats=(stat,), runs=runs, scheduler=scheduler)
    key = parse_key(by)[2]
    wide = df.pivot(index="node_id", columns=key, values=stat)
    wide = wide[sorted(wide.columns, key=lambda v: (pd.isna(v), v if not pd.isna(v) else 0))]
    order = df.drop_duplicates("node_id").set_index("node_id")[["name", "path"]]
    out = order.join(wide)
    out.columns.name = key
    out.attrs["metric"] = df["metric"].iloc[0] if len(df) else metric
    return out


def ensemble_graphframe(lake, where: str | None = None, *, metric=None, stats=DEFAULT_STATS, ddof: int = 1,
                        runs=None, scheduler=None):
    """The ensemble as a GraphFrame: the graph is the union of the selected runs' call paths, one row per
    node, one column ``<metric>_<stat>`` per metric and stat (mean/median/min/max/pNN keep the metric's
    exclusive/inclusive role, the others are 'other')."""
    from perflake.frame.graphframe import GraphFrame

    sel = select(lake, runs=runs, where=where)
    stats = parse_stats(stats)[0]
    metric = metric if metric is not None else selection_metric(sel)[0]
    flat = pc.list_flatten(sel.catalog.column("metrics"))
    roles = dict(zip(pc.struct_field(flat, "name").to_pylist()[::-1], pc.struct_field(flat, "role").to_pylist()[::-1]))
    wide, info = None, []
    for m in _metrics(metric):
        part = group_stats(lake, with_metric(sel, m), m, stats=stats, ddof=ddof, scheduler=scheduler)
        part = part.set_index("node_id")[stats].add_prefix(f"{m}_")
        wide = part if wide is None else wide.join(part, how="outer")
        info += [Metric(f"{m}_{s}", OTHER if s in ("count", "std", "var") else roles.get(m, OTHER)) for s in stats]
    nodes = union_nodes(lake, sel.runs["run_id"], sel.runs["batch"].unique(), full=True)
    values = pa.Table.from_pandas(wide.reset_index().assign(rank=0, thread=0), preserve_index=False)
    meta = {"ensemble": {"runs": len(sel.runs), "where": where, "metrics": _metrics(metric), "stats": stats,
                         "ddof": ddof}}
    return GraphFrame.from_tables(nodes, values, info, meta)
