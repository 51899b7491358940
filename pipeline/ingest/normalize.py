"""ProfileRows (readers' output) -> the canonical tables: nodes, edges, metrics.

This is where call-path ids are attached (``perflake.identity`` defines them) and where a missing
inclusive or exclusive metric is derived, once, in SQL.  Many runs are normalised in one pass (a fixed
cost of a few SQL statements per batch, not per run), which is what makes ingesting 10,000 small runs fast;
``normalize(rows)`` is the one-run case of the same path.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from perflake.catalogs import metric_columns
from perflake.engine import duck, sqlfiles
from perflake.errors import ReaderError
from perflake.identity import call_path_ids, frame_keys
from perflake.ingest.rekey import rekey
from perflake.readers.base import EXCLUSIVE, INCLUSIVE, Metric, ProfileRows
from perflake.readers.limits import MAX_CALL_DEPTH

# Depths count from 0 at a root: a path of MAX_CALL_DEPTH frames (readers/limits.py, what every reader accepts)
# ends at depth MAX_CALL_DEPTH - 1.  Deeper is an error; the ancestor closure (sql/closure.sql) is quadratic in
# depth, which the limit bounds.
MAX_DEPTH = MAX_CALL_DEPTH - 1
# the columns beside the metrics in the tables of the sql/ statements here: a metric's column inside them is kept
# distinct from these and from every other metric's under DuckDB's case-insensitive names (metric_columns.internal)
INTERNAL_KEYS = ("run_id", "local_id", "node_id", "parent_id", "rank", "thread")


@dataclass
class RunFacts:
    metric_info: list[Metric]
    ranks: int
    threads: int
    n_nodes: int


@dataclass
class Batch:
    """Many runs in canonical form; every table has a leading ``run_id`` column and is sorted by it."""

    nodes: pa.Table  # run_id, node_id, parent_id, depth, name, type, file, line, end_line, module, child_order
    edges: pa.Table  # run_id, parent_id, child_id
    metrics: pa.Table  # run_id, node_id, rank, thread, <metric columns of all runs>
    runs: dict[str, RunFacts]


@dataclass
class Normalized:
    """One run in canonical form (no run_id column)."""

    nodes: pa.Table
    edges: pa.Table
    metrics: pa.Table
    metric_info: list[Metric]
    ranks: int
    threads: int


def complete_metrics(metrics: list[Metric]) -> tuple[list[Metric], tuple, tuple]:
    """Add the missing half of every exclusive/inclusive pair; return (metrics, to_inclusive, to_exclusive)."""
    names = {m.name for m in metrics}
    out, to_inc, to_exc = [], [], []
    for m in metrics:
        if m.role == EXCLUSIVE and (m.pair or f"{m.name} (inc)") not in names:
            inc = m.pair or f"{m.name} (inc)"
            to_inc.append((m.name, inc))
            out += [replace(m, pair=inc), Metric(inc, INCLUSIVE, m.unit, m.name)]
        elif m.role == INCLUSIVE and m.pair and m.pair not in names:
            to_exc.append((m.name, m.pair))
            out += [m, Metric(m.pair, EXCLUSIVE, m.unit, m.name)]
        else:
            out.append(m)
    return out, tuple(to_inc), tuple(to_exc)


def _nan_to_null(table: pa.Table) -> pa.Table:
    """A NaN value means 'not measured': store it as null so that merging siblings sums only real values."""
    for i, field in enumerate(table.schema):
        if pa.types.is_floating(field.type):
            col = table.column(i)
            if pc.any(pc.is_nan(col)).as_py():
                table = table.set_column(i, field, pc.if_else(pc.is_nan(col), pa.scalar(None, field.type), col))
    return table


def _with_run(table: pa.Table, run_no: int) -> pa.Table:
    """Add the run key.  Inside normalisation runs are keyed by their position (an integer sorts and joins
    much faster than a string); :func:`normalize_many` maps the key back to run ids at the end."""
    return table.add_column(0, "run_id", pa.array(np.full(table.num_rows, run_no, np.int32)))


def _run_ids(table: pa.Table, ids: pa.Array, *, dictionary: bool = False) -> pa.Table:
    """Run numbers back to run ids; ``dictionary`` keeps the numbers as indices into ``ids`` (the metrics
    table of a big run would otherwise hold its 16-character id once per row: 10 million rows, 200 MB)."""
    if dictionary:
        numbers = table.column(0).combine_chunks() if table.num_rows else pa.array([], pa.int32())
        return table.set_column(0, "run_id", pa.DictionaryArray.from_arrays(numbers, ids))
    return table.set_column(0, "run_id", pc.take(ids, table.column(0)))


def _derive_inclusive(con, pairs: tuple) -> None:
    """Inclusive columns for (exclusive, inclusive) ``pairs``, merged into metrics_t (needs closure_t)."""
    wide = sqlfiles.relation(con, "inclusive_wide", exc=[p[0] for p in pairs]).to_arrow_table()
    rename = dict(pairs)
    con.register("derived_t", wide.rename_columns([rename.get(c, c) for c in wide.column_names]))
    sqlfiles.materialize(con, "metrics_t", "merge_metrics")
    con.unregister("derived_t")  # _derive_exclusive may materialise its own derived_t next, on the same cursor


def _derive_exclusive(con, pairs: tuple) -> None:
    """Exclusive columns for (inclusive, exclusive) ``pairs`` (long form, then pivoted), merged into metrics_t."""
    sqlfiles.materialize(con, "metric_long", "exclusive", inc=[p[0] for p in pairs], exc=[p[1] for p in pairs])
    sqlfiles.materialize(con, "derived_t", "pivot_metrics")
    sqlfiles.materialize(con, "metrics_t", "merge_metrics")


def local_nodes(frames: pa.Table) -> pa.Table:
    """``frames`` (a run_id column plus readers' frame columns) with each node's call-path id, its parent's
    and its depth; only the rows reached from a root within MAX_DEPTH (the others have no call path)."""
    run = frames.column("run_id").to_numpy()
    ids = call_path_ids(run, frames.column("local_id").to_numpy(), frames.column("parent_local").to_numpy(),
                        frame_keys(frames), MAX_DEPTH)
    table = frames.drop_columns(["parent_local"])
    table = table.add_column(2, "node_id", pa.array(ids.node_id))
    table = table.add_column(3, "parent_id", pa.array(ids.parent_id, mask=~ids.has_parent))
    table = table.add_column(4, "depth", pa.array(ids.depth))
    return table if ids.reached.all() else table.filter(pa.array(ids.reached))


def _distinct_sorted(local: pa.Table) -> pa.Table | None:
    """sql/nodes_distinct.sql's result when no call paths merge (each (run, node id) once): ``local`` sorted
    by (run, node id); None when some merge (the SQL statement then picks each merged node's columns)."""
    run, node = local.column("run_id").to_numpy(), local.column("node_id").to_numpy()
    order = np.lexsort((node, run))
    run, node = run[order], node[order]
    if np.any((run[1:] == run[:-1]) & (node[1:] == node[:-1])):
        return None
    table = local.take(order)
    lid = table.column("local_id")
    return table.drop_columns(["local_id"]).append_column("first_local", lid)


def with_child_order(nodes: pa.Table) -> pa.Table:
    """``nodes`` (with ``first_local``, where each call path first occurs in the reader's rows) with
    ``child_order`` in its place: the node's position among its parent's children (among the run's roots for
    a root) in the order of the input -- readers emit frames in the profile's order."""
    n = nodes.num_rows
    run = nodes.column("run_id").to_numpy()
    parent_col = nodes.column("parent_id")
    root = parent_col.is_null().to_numpy(zero_copy_only=False)
    parent = parent_col.fill_null(0).to_numpy()
    first = nodes.column("first_local").to_numpy()
    order = np.lexsort((first, parent, root, run))
    run, root, parent = run[order], root[order], parent[order]
    start = np.ones(n, dtype=bool)
    start[1:] = (run[1:] != run[:-1]) | (root[1:] != root[:-1]) | (parent[1:] != parent[:-1])
    group_start = np.maximum.accumulate(np.where(start, np.arange(n), 0)) if n else np.zeros(0, np.int64)
    rank = np.empty(n, dtype=np.int32)
    rank[order] = np.arange(n) - group_start
    return nodes.drop_columns(["first_local"]).append_column("child_order", pa.array(rank, pa.int32()))


def _rekey(local: pa.Table, tables: list[tuple[int, pa.Table]], counts: np.ndarray,
           names: list[str]) -> pa.Table | None:
    """The values keyed by call-path id and sorted (sql/rekey_metrics.sql's result), by array operations;
    ``local`` is :func:`local_nodes`' table, every frame reached."""
    run = local.column("run_id").to_numpy()
    node = local.column("node_id").to_numpy()
    by_local = np.lexsort((local.column("local_id").to_numpy(), run))
    run, node = run[by_local], node[by_local]
    order = np.lexsort((node, run))  # the rows of nodes_t: sorted by (run, node id), one per local node here
    position = np.empty(len(order), dtype=np.int64)
    position[order] = np.arange(len(order))
    return rekey(tables, counts, position, node[order], names)


def _repeats(metrics: pa.Table) -> bool:
    """Whether two rows of the re-keyed values (sorted by run, node, rank, thread) share that key: a reader
    may give one location several rows at a node (Caliper: one record per value of a non-nested attribute or
    time-series snapshot under one region path); they are summed, as on the merging path and in Hatchet."""
    if metrics.num_rows < 2:
        return False
    same = np.ones(metrics.num_rows - 1, dtype=bool)
    for name in ("run_id", "node_id", "rank", "thread"):
        col = metrics.column(name).to_numpy()
        same &= col[1:] == col[:-1]
    return bool(same.any())


def _metrics_sql(con, tables: list[tuple[int, pa.Table]], names: list[str], merges: bool) -> None:
    """metrics_t by sql/normalize_metrics.sql (siblings merged: sums) or sql/rekey_metrics.sql."""
    values = pa.concat_tables([_with_run(_nan_to_null(t), no) for no, t in tables], promote_options="permissive")
    con.register("values_in", values)
    sqlfiles.materialize(con, "metrics_t", "normalize_metrics" if merges else "rekey_metrics", metrics=names)


def _check_links(rows: ProfileRows) -> None:
    """The frame links readers/base.py promises: local ids 0..n-1 (each once), parents -1 or a local id
    (a missing one is reported as unreachable nodes)."""
    lid, parent, n = rows.frames.column("local_id"), rows.frames.column("parent_local"), rows.frames.num_rows
    if lid.null_count or parent.null_count:
        raise ReaderError(rows.source, "a frame has a null local id or parent id")
    if not n:
        return
    lid = lid.to_numpy()
    if not (np.array_equal(lid, np.arange(n)) or np.array_equal(np.sort(lid), np.arange(n))):
        raise ReaderError(rows.source, f"frame local ids are not 0..{n - 1}, each once")
    if parent.to_numpy().min() < -1:
        raise ReaderError(rows.source, "a frame's parent id is below -1 (a root's is -1)")


def _renamed(table: pa.Table, columns: dict[str, str]) -> pa.Table:
    """``table`` with its metric columns renamed by ``columns`` (key columns untouched)."""
    return table.rename_columns([c if c in INTERNAL_KEYS else columns.get(c, c) for c in table.column_names])


def _group(con, items: list[tuple[int, ProfileRows]], to_inc: tuple, to_exc: tuple):
    frames = pa.concat_tables([_with_run(rows.frames, no) for no, rows in items])
    tables = [(no, rows.values) for no, rows in items]  # NaN -> null: in rekey, or _metrics_sql
    names = list(dict.fromkeys(m.name for _, rows in items for m in rows.metrics))
    back = None
    cols = metric_columns.internal([*names, *(p[1] for p in to_inc), *(p[1] for p in to_exc)], INTERNAL_KEYS)
    if not metric_columns.is_identity(cols):  # names DuckDB folds together (calls, Calls): distinct columns inside
        tables = [(no, _renamed(t, cols)) for no, t in tables]
        names = [cols[n] for n in names]
        to_inc = tuple((cols[a], cols[b]) for a, b in to_inc)
        to_exc = tuple((cols[a], cols[b]) for a, b in to_exc)
        back = {c: n for n, c in cols.items()}
    for _, rows in items:
        _check_links(rows)
    local = local_nodes(frames)
    reached = {no: int(c) for no, c in enumerate(np.bincount(local.column("run_id").to_numpy())) if c}
    for no, rows in items:
        if reached.get(no, 0) != rows.frames.num_rows:
            lost = rows.frames.num_rows - reached.get(no, 0)
            raise ReaderError(rows.source, f"{lost} nodes are not reachable from a root (a parent cycle, or deeper "
                                           f"than {MAX_DEPTH})")
    # the group's own cursor: the tables below are the inputs of the sql/ files, each registered (Arrow) or
    # materialised (temp table) by name here, private to the group and gone with the cursor
    with sqlfiles.scope(con, tables={"local_nodes": local}) as cur:
        nodes = _distinct_sorted(local)
        merges = nodes is None
        if merges:
            nodes = sqlfiles.relation(cur, "nodes_distinct").to_arrow_table()
        nodes = with_child_order(nodes)
        cur.register("nodes_t", nodes)
        counts = np.zeros(max(no for no, _ in items) + 1, dtype=np.int64)
        for no, rows in items:
            counts[no] = rows.frames.num_rows
        metrics = None if merges else _rekey(local, tables, counts, names)
        if metrics is not None and _repeats(metrics):  # a location measured twice at one node: sum its rows
            metrics = None
            merges = True
        if metrics is None:
            _metrics_sql(cur, tables, names, merges)
        elif to_inc or to_exc:  # the derivations below extend metrics_t in SQL
            cur.register("rekeyed_t", metrics)
            cur.execute("create or replace temp table metrics_t as select * from rekeyed_t").fetchall()
            metrics = None
        else:
            cur.register("metrics_t", metrics)
        del tables
        edges = sqlfiles.relation(cur, "edges_from_nodes").to_arrow_table()
        cur.register("edges_t", edges)
        if to_inc:
            sqlfiles.materialize(cur, "closure_t", "closure", max_depth=MAX_DEPTH)
            _derive_inclusive(cur, to_inc)
        if to_exc:
            _derive_exclusive(cur, to_exc)
        counts = {r: (int(a), int(b)) for r, a, b in sqlfiles.relation(cur, "location_counts").fetchall()}
        if metrics is None:
            metrics = cur.table("metrics_t").to_arrow_table()
        if back is not None:
            metrics = _renamed(metrics, back)
        return nodes, edges, metrics, counts


def normalize_many(items: list[tuple[str, ProfileRows]], con: duckdb.DuckDBPyConnection | None = None) -> Batch:
    """Normalise ``(run_id, rows)`` pairs together.  Raises ReaderError naming the first bad run's source."""
    items = sorted(items, key=lambda item: item[0])  # run numbers in run-id order keep the tables sorted by run_id
    own = con is None
    con = con or duck.connection()
    try:
        groups: dict[tuple, list] = {}
        infos = {}
        for no, (rid, rows) in enumerate(items):
            info, to_inc, to_exc = complete_metrics(rows.metrics)
            infos[rid] = info
            groups.setdefault((to_inc, to_exc), []).append((no, rows))
        parts = [_group(con, group, *key) for key, group in groups.items()]
    finally:
        if own:
            con.close()
    ids = pa.array([rid for rid, _ in items], pa.string())
    nodes = pa.concat_tables([p[0] for p in parts])
    edges = pa.concat_tables([p[1] for p in parts])
    metrics = pa.concat_tables([p[2] for p in parts], promote_options="permissive")
    if len(parts) > 1:  # run numbers follow run-id order: sorting by them sorts by run id
        nodes = nodes.sort_by([("run_id", "ascending"), ("node_id", "ascending")])
        edges = edges.sort_by([("run_id", "ascending")])
        metrics = metrics.sort_by([(c, "ascending") for c in ("run_id", "node_id", "rank", "thread")])
    nodes, edges = _run_ids(nodes, ids), _run_ids(edges, ids)
    metrics = _run_ids(metrics, ids, dictionary=True)
    counts = {k: v for p in parts for k, v in p[3].items()}
    n_nodes = {v["values"]: v["counts"] for v in pc.value_counts(nodes.column("run_id")).to_pylist()}
    runs = {}
    for no, (rid, _) in enumerate(items):
        ranks, threads = counts.get(no, (0, 0))
        runs[rid] = RunFacts(infos[rid], ranks, threads, int(n_nodes.get(rid, 0)))
    return Batch(nodes, edges, metrics, runs)


def normalize(rows: ProfileRows, con: duckdb.DuckDBPyConnection | None = None) -> Normalized:
    """Normalise one run: attach call-path ids, merge identical call paths, derive missing metrics."""
    batch = normalize_many([("_", rows)], con)
    facts = batch.runs["_"]
    order = ["node_id", "rank", "thread"] + [m.name for m in facts.metric_info]
    return Normalized(
        batch.nodes.drop_columns(["run_id"]),
        batch.edges.drop_columns(["run_id"]),
        batch.metrics.select(order),
        facts.metric_info,
        facts.ranks,
        facts.threads,
    )
