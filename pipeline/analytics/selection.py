"""Run selection: which runs of a lake a question is about, and the connection it reads them with.

Every multi-run question (``Lake.graphframe``/``resolve``, ensembles, comparisons, imbalance, lake-wide
queries) chooses its runs here, in one way:

- ``runs``: run ids or unique prefixes of them (:func:`resolve_runs`: an exact id wins over a prefix, an
  ambiguous prefix or an unknown run is a LakeError);
- ``where``: a SQL condition on the runs catalog (``"nprocs >= 64 and app = 'lulesh2.0'"``), bound to nothing
  else than the catalog rows (:func:`select`), or, for a call-path query, on the lake's views
  (:func:`select_runs`);
- ``group_by``: catalog columns and ``meta:KEY`` metadata keys, numbered into groups (:func:`select`).

:func:`session` is the one way a connection that reads the lake's files is opened (``Lake.connect`` adds the
views on top of the same connection), and :func:`union_nodes` the one union of the selected runs' call paths.
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

from perflake.catalogs.schema import RUNS_SCHEMA
from perflake.engine import duck, sqlfiles
from perflake.errors import LakeError, UnknownRun, UsageError
from perflake.frame.defaults import selection_default
from perflake.ingest.normalize import MAX_DEPTH

# group_by accepts these catalog columns (scalars; the raw metadata JSON is reached through meta:KEY)
GROUP_COLUMNS = frozenset(f.name for f in RUNS_SCHEMA if not pa.types.is_list(f.type)) - {"metadata"}
_META_ARROW = re.compile(r"""^metadata\s*->>\s*'\$\.(?:"([^"]+)"|([A-Za-z_][A-Za-z0-9_]*))'$""")
# the nodes columns of sql/union_nodes.sql: all of them (what GraphFrame.from_tables takes), or the light set
NODE_COLUMNS = ["parent_id", "depth", "name", "type", "file", "line", "end_line", "module"]
PATH_COLUMNS = ["name"]


class Selection(NamedTuple):
    runs: pd.DataFrame  # run_id, batch, n_nodes, ranks, threads, group_id, <key columns>; catalog order
    keys: list[str]  # names of the group key columns
    catalog: pa.Table  # the selected catalog rows (run_id, metrics, ... but not the metadata), same order


@contextlib.contextmanager
def session(lake, con: duckdb.DuckDBPyConnection | None = None):
    """A DuckDB connection able to read the lake's files: ``con`` itself if given, else a new one
    (:func:`perflake.engine.duck.for_catalog`) closed on exit."""
    if con is not None:
        yield con
        return
    con = duck.for_catalog(lake.catalog())
    try:
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
        from perflake.analytics.meta_keys import suggest

        hint = suggest(spec, GROUP_COLUMNS) or f" ({', '.join(sorted(GROUP_COLUMNS))})"
        raise LakeError(f"{spec!r}: not a catalog column{hint} nor meta:KEY for a metadata key")
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


def resolve_ids(table: pa.Table, runs) -> list[str]:
    """The run ids of ``runs`` (ids or unique prefixes; one string is one run), in the order given, resolved in
    one pass over the catalog ``table`` (its run_id column): an exact id wins over a prefix."""
    ids = table.column("run_id").to_pylist()
    known, wanted = set(ids), []
    for run in [runs] if isinstance(runs, str) else runs:
        hits = [run] if run in known else [i for i in ids if i.startswith(run)]
        if len(hits) > 1:
            raise LakeError(f"run id prefix {run!r} is ambiguous: {', '.join(hits[:5])}")
        if not hits:
            raise UnknownRun(run)
        wanted.append(hits[0])
    return wanted


def resolve_runs(table: pa.Table, runs) -> pa.Table:
    """The catalog rows of ``runs`` (ids or unique prefixes, :func:`resolve_ids`), in catalog order."""
    return table.filter(pc.is_in(table.column("run_id"), pa.array(resolve_ids(table, runs), pa.string())))


def _sql_error(what: str, exc: duckdb.Error) -> LakeError:
    return LakeError(f"{what}: {str(exc).splitlines()[0]}")


def _where(table: pa.Table, where: str | None, metas: list[str]) -> tuple[list[str], pd.DataFrame | None]:
    """Run ids satisfying ``where`` (the user's SQL on the catalog) and the metadata values of ``metas``; the
    user's SQL runs on a sealed database (no file, no extension, no setting: perflake.engine.duck.sealed)."""
    sealed = duck.sealed()
    try:
        with sqlfiles.scope(sealed, tables={"runs": table}) as con:
            try:
                rel = con.table("runs")
                if where:
                    rel = rel.filter(duckdb.SQLExpression(where))
                con.register("selected_runs", rel)
                ids = [r[0] for r in con.table("selected_runs").select("run_id").fetchall()]
                meta = (sqlfiles.relation(con, "ensemble_meta", paths=[f'$."{k}"' for k in metas]).df()
                        if metas else None)
            except duckdb.Error as exc:
                raise _sql_error(f"where {where!r}", exc) from None
    finally:
        sealed.close()
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


def select_runs(lake, runs=None, where: str | None = None, params=None) -> list[str]:
    """Run ids for a lake-wide call-path query: the given ones (ids or prefixes, in the order given), else those
    whose ``runs`` row satisfies ``where`` -- SQL on the lake's views (``Lake.connect``), so it may look at
    nodes or metrics too -- else every run."""
    if runs:
        if any(not isinstance(r, str) for r in runs):
            raise UsageError(f"run ids are strings, not {', '.join(sorted({type(r).__name__ for r in runs}))}")
        return resolve_ids(lake.catalog().runs(columns=["run_id"]), runs)
    if where:
        con = lake.connect(confined=True)  # the user's SQL reads the lake's files only, changes no setting
        try:
            return [r[0] for r in con.table("runs").filter(duckdb.SQLExpression(where)).select("run_id").fetchall()]
        except duckdb.Error as exc:
            raise _sql_error(f"--where {where!r}", exc) from None
        finally:
            con.close()
    return lake.catalog().runs(columns=["run_id"]).column("run_id").to_pylist()


def selection_metric(sel: Selection) -> tuple[str, int]:
    """The default metric of the selected runs (perflake.frame.defaults.selection_default) and how many have it."""
    if sel.runs.empty:
        raise LakeError("no runs selected")
    metric, have = selection_default(sel.catalog.column("metrics").to_pylist())
    if metric is None:
        raise LakeError("the selected runs have no metric")
    return metric, have


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


def union_nodes(lake, run_ids, batches, *, full: bool = False, con=None) -> pa.Table:
    """The union of the runs' call paths (sql/union_nodes.sql), sorted by path (tree order): node_id, name, path
    or, ``full``, every nodes column plus path (what GraphFrame.from_tables takes)."""
    pairs = lake.catalog().snapshot(columns=["run_id", "batch"]).to_pandas()  # the pinned runs: each run's batch
    selection = pairs[pairs["run_id"].isin(set(run_ids))].drop_duplicates("run_id")
    with session(lake, con) as con, sqlfiles.scope(con, tables={"selection_t": selection}) as cur:
        return sqlfiles.relation(cur, "union_nodes", files=lake.catalog().files("nodes", batches),
                                 columns=NODE_COLUMNS if full else PATH_COLUMNS, max_depth=MAX_DEPTH).to_arrow_table()
