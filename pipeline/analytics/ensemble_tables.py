"""How an Ensemble's tables come out of the lake: the selected runs, the per-row values (DuckDB over the
metrics Parquet files), the union call tree, the typed metadata table and the dense pandas dataframe.

Nothing here keeps state: :class:`perflake.analytics.ensemble_frame.Ensemble` calls these once per table,
on first use, and caches the answer.

* Values (``sql/ensemble_frame_values.sql``): one row per (call path, run) -- per (call path, run, rank) with
  ``per_rank`` -- holding the mean of each metric over the run's locations (rank >= 0, every thread) where the
  call path has a row; NULL/NaN are left out of each mean, rank -1 (a summary profile) is not a location.  A run
  of one rank and one thread keeps its values as they are.
* The call tree is the union of the runs' call paths (a call path has the same id in every run).  Restricted
  to a set of call paths (a query, an intersection), each kept node hangs below its nearest kept ancestor
  (Thicket's squash), with the lake's call-path ids unchanged so that values keep coming from the lake.
* Metadata: every catalog column (``app``, ``nprocs``, ``launch_time``, ...) plus every key of the runs'
  metadata JSON, one column each (a key that is also a catalog column becomes ``meta:KEY``).  JSON numbers
  stay numbers; a key whose every value is a text holding a number (Adiak often records ``"72"``) becomes
  numeric (Int64 when all are integers); lists stay lists; a run without the key has a missing value.
"""

from __future__ import annotations

import contextlib
import json

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from perflake.analytics.rank_summary import summarized
from perflake.analytics.selection import select, union_nodes
from perflake.catalogs import metric_columns
from perflake.catalogs.schema import RANK_SUMMARY
from perflake.engine import duck, sqlfiles
from perflake.errors import LakeError
from perflake.frame.graph import Graph
from perflake.ingest.normalize import MAX_DEPTH
from perflake.vocabulary import OTHER, Metric


@contextlib.contextmanager
def session(lake):
    """A DuckDB connection able to read the lake's files, closed on exit."""
    cat = lake.catalog()
    con = duck.connection() if cat.local else duck.offline()
    try:
        if not cat.local:
            con.register_filesystem(cat.fs)
        yield con
    finally:
        con.close()


def selected_runs(lake, *, where: str | None = None, runs=None) -> tuple[pd.DataFrame, list[Metric]]:
    """The runs ``where`` (SQL on the runs catalog) and ``runs`` (ids or unique prefixes) select, as
    (run_id, batch, ranks, threads) sorted by run id, and the metrics they have (first role seen, catalog
    order)."""
    sel = select(lake, runs=runs, where=where)
    df = sel.runs[["run_id", "batch", "ranks", "threads"]]
    order = np.argsort(df["run_id"].to_numpy(dtype=object), kind="stable")
    metrics: dict[str, Metric] = {}
    for entries in sel.catalog.column("metrics").to_pylist():
        for m in entries or []:
            metrics.setdefault(m["name"], Metric(m["name"], m["role"] or OTHER, m.get("unit")))
    return df.iloc[order].reset_index(drop=True), list(metrics.values())


def read_values(lake, runs: pd.DataFrame, metrics: list[str], *, per_rank: bool) -> pa.Table:
    """node_id, profile, [rank,] one float64 column per metric (module docstring)."""
    schema = [("node_id", pa.uint64()), ("profile", pa.string())] + ([("rank", pa.int32())] if per_rank else [])
    if runs.empty:
        return pa.schema(schema + [(m, pa.float64()) for m in metrics]).empty_table()
    one = bool(((runs["ranks"] == 1) & (runs["threads"] == 1)).all())  # NULL (unknown) counts as not one
    cat = lake.catalog()
    batches = runs["batch"].unique()
    with session(lake) as con:
        con.register("selection_t", runs[["run_id", "batch"]])
        try:
            table = None if per_rank or not summarized(cat, batches) else _summary_values(con, cat, batches, metrics)
            if table is None:
                table = sqlfiles.relation(con, "ensemble_frame_values", files=cat.files("metrics", batches),
                                          metrics=list(metrics), per_rank=per_rank, one_location=one).to_arrow_table()
                table = metric_columns.to_names(table, ("node_id", "profile", "rank"))
        except duckdb.Error as exc:
            raise LakeError(f"reading the ensemble's values: {str(exc).splitlines()[0]}") from None
    columns = {"node_id": table.column("node_id").cast(pa.uint64()), "profile": table.column("profile")}
    if per_rank:
        columns["rank"] = table.column("rank").cast(pa.int32())
    for m in metrics:
        columns[m] = (table.column(m).cast(pa.float64()) if m in table.column_names
                      else pa.nulls(table.num_rows, pa.float64()))
    return pa.table(columns)


def _summary_values(con, cat, batches, metrics: list[str]) -> pa.Table | None:
    """The per-run means of sql/ensemble_frame_values.sql from the rank summary (total / count per run, call path
    and metric: no metrics row read), wide, one row per (run, call path) the summary holds; None when a total
    is NaN (the rows path leaves NaN values out of a mean, the summary's total holds them: read the rows)."""
    long = sqlfiles.relation(con, "ensemble_frame_values_summary", files=cat.files(RANK_SUMMARY, batches),
                             metrics=list(metrics)).to_arrow_table()
    value = long.column("value")
    if len(value) and pc.any(pc.is_nan(value)).as_py():
        return None
    keys = ["node_id", "profile"]
    wide = None
    for m in metrics:
        part = long.filter(pc.equal(long.column("metric"), m))
        if part.num_rows == 0:
            continue
        part = part.select(keys + ["value"]).rename_columns(keys + [m])
        wide = part if wide is None else wide.join(part, keys, join_type="full outer", coalesce_keys=True)
    if wide is None:
        return pa.table({"node_id": pa.array([], pa.uint64()), "profile": pa.array([], pa.string())})
    return wide


def read_nodes(lake, runs: pd.DataFrame) -> pa.Table:
    """The union of the runs' call paths: every nodes column plus ``path`` (sql/union_nodes.sql)."""
    return union_nodes(lake, runs["run_id"], runs["batch"].unique(), full=True)


def restrict_nodes(nodes: pa.Table, keep: np.ndarray | None) -> pa.Table:
    """``nodes`` limited to the call-path ids ``keep`` (None: all), each kept node re-parented to its
    nearest kept ancestor and its depth recomputed (Thicket's squash of the tree; ids unchanged)."""
    if keep is None:
        return nodes
    ids = nodes.column("node_id").to_numpy(zero_copy_only=False).astype(np.uint64)
    parents = nodes.column("parent_id").to_pylist()
    parent_of = dict(zip(ids.tolist(), parents))
    kept = set(np.asarray(keep, np.uint64).tolist())
    new_parent: dict[int, int | None] = {}

    def nearest(pid):
        seen = 0
        while pid is not None and pid not in kept and seen <= MAX_DEPTH:
            pid, seen = parent_of.get(pid), seen + 1
        return pid

    rows = [i for i, nid in enumerate(ids.tolist()) if nid in kept]
    for i in rows:
        new_parent[int(ids[i])] = nearest(parents[i])
    depth: dict[int, int] = {}

    def depth_of(nid):
        chain = []
        while nid is not None and nid not in depth:
            chain.append(nid)
            nid = new_parent.get(nid)
        d = -1 if nid is None else depth[nid]
        for x in reversed(chain):
            d += 1
            depth[x] = d
        return depth[chain[0]] if chain else d

    out = nodes.take(pa.array(rows, pa.int64()))
    out = out.set_column(out.column_names.index("parent_id"), "parent_id",
                         pa.array([new_parent[int(ids[i])] for i in rows], pa.uint64()))
    return out.set_column(out.column_names.index("depth"), "depth",
                          pa.array([depth_of(int(ids[i])) for i in rows], pa.int32()))


def graph_of(nodes: pa.Table) -> Graph:
    return Graph.from_nodes_table(nodes)


def _numeric_text(values: pd.Series) -> pd.Series | None:
    """A column of texts that all hold numbers, as numbers (Int64 when every one is an integer); else None."""
    present = values.dropna()
    if present.empty or not all(isinstance(v, str) for v in present):
        return None
    nums = pd.to_numeric(present, errors="coerce")
    if nums.isna().any():
        return None
    out = pd.to_numeric(values, errors="coerce")
    if bool((nums == np.floor(nums)).all()) and not any("." in v or "e" in v.lower() for v in present):
        return out.astype("Int64")
    return out.astype("float64")


def metadata_frame(lake, profiles: list[str]) -> pd.DataFrame:
    """Catalog columns and metadata keys of ``profiles`` (run ids), indexed by ``profile`` in that order."""
    table = lake.catalog().runs()
    table = table.filter(pc.is_in(table.column("run_id"), pa.array(profiles, pa.string())))
    raw = table.column("metadata").to_pylist()
    catalog = table.drop_columns(["metadata"]).to_pandas()
    catalog.index = pd.Index(catalog.pop("run_id"), name="profile")
    meta = pd.DataFrame.from_records([json.loads(m) if m else {} for m in raw], index=catalog.index)
    meta.columns = [f"meta:{c}" if c in catalog.columns or c == "profile" else c for c in meta.columns]
    for c in meta.columns:
        typed = _numeric_text(meta[c]) if meta[c].dtype == object or pd.api.types.is_string_dtype(meta[c]) else None
        if typed is not None:
            meta[c] = typed
    out = pd.concat([catalog, meta], axis=1)
    return out.reindex(pd.Index(profiles, name="profile"))


def node_index(graph: Graph) -> tuple[np.ndarray, np.ndarray]:
    """(Node objects, their call-path ids), graph pre-order."""
    nodes = np.empty(len(graph), dtype=object)
    nodes[:] = list(graph)
    return nodes, np.fromiter((n.node_id for n in nodes), np.uint64, len(nodes))


def positions(sorted_ids: np.ndarray, sorter: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Position of each of ``ids`` in the array ``sorted_ids`` was sorted from (-1 when absent)."""
    if len(sorted_ids) == 0:
        return np.full(len(ids), -1, np.int64)
    at = np.searchsorted(sorted_ids, ids)
    at_c = np.minimum(at, len(sorted_ids) - 1)
    hit = sorted_ids[at_c] == ids
    return np.where(hit, sorter[at_c], -1)


def dense_frame(values: pa.Table, graph: Graph, profiles: list[str], metrics: list[str], *, per_rank: bool,
                fill: bool = True) -> pd.DataFrame:
    """The dataframe indexed (node, profile[, rank]), sorted so: every node of the graph (pre-order) times every
    profile (or every (profile, rank) location the values have) when ``fill`` (Thicket's fill_perfdata: NaN
    values and a None ``name`` where a profile lacks the call path), else only the rows the values have."""
    nodes, ids = node_index(graph)
    sorter = np.argsort(ids)
    node_pos = positions(ids[sorter], sorter, values.column("node_id").to_numpy(zero_copy_only=False))
    prof = np.asarray(profiles, dtype=object)
    pcode = pd.Index(prof).get_indexer(values.column("profile").to_numpy(zero_copy_only=False))
    keep = (node_pos >= 0) & (pcode >= 0)
    node_pos, pcode = node_pos[keep], pcode[keep]
    if per_rank:
        rank = values.column("rank").to_numpy(zero_copy_only=False)[keep].astype(np.int64)
        loc_keys = pcode.astype(np.int64) << 32 | rank
        uloc, loc_code = np.unique(loc_keys, return_inverse=True)
    else:
        uloc, loc_code = np.arange(len(prof), dtype=np.int64), pcode
    n_loc = len(uloc)
    if fill:
        row_node = np.repeat(np.arange(len(nodes)), n_loc)
        row_loc = np.tile(np.arange(n_loc), len(nodes))
        rows = node_pos * n_loc + loc_code
        n_rows = len(nodes) * n_loc
    else:
        order = np.lexsort((loc_code, node_pos))
        row_node, row_loc = node_pos[order], loc_code[order]
        rows = np.empty(len(order), np.int64)
        rows[order] = np.arange(len(order))
        n_rows = len(order)
    present = np.zeros(n_rows, bool)
    present[rows] = True
    names = np.array([n.frame.get("name") for n in nodes], dtype=object)
    name_col = names[row_node]
    name_col[~present] = None
    data = {}
    for m in metrics:
        col = np.full(n_rows, np.nan)
        col[rows] = values.column(m).to_numpy(zero_copy_only=False)[keep].astype(np.float64)
        data[m] = col
    data["name"] = name_col
    if per_rank:
        loc_prof, loc_rank = (uloc >> 32).astype(np.int64), (uloc & 0xFFFFFFFF).astype(np.int64)
        ranks, rank_codes = np.unique(loc_rank, return_inverse=True)
        index = pd.MultiIndex(levels=[pd.Index(nodes, dtype=object), pd.Index(prof, dtype=object),
                                      pd.Index(ranks, dtype=np.int64)],
                              codes=[row_node, loc_prof[row_loc], rank_codes[row_loc]],
                              names=["node", "profile", "rank"], verify_integrity=False)
    else:
        index = pd.MultiIndex(levels=[pd.Index(nodes, dtype=object), pd.Index(prof, dtype=object)],
                              codes=[row_node, row_loc], names=["node", "profile"], verify_integrity=False)
    return pd.DataFrame(data, index=index)
