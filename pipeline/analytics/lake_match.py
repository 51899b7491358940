"""A call-path query over many runs at once, with the answer of applying it to each run's GraphFrame.

The runs' call paths are read once (``sql/lake_query_members.sql``: which run holds which call path;
``sql/lake_query_callpaths.sql``: the union of the call paths with their frames) and the query is answered for
all runs together, one bit per (call path, run) (perflake.query.forest):

* a condition on what a call-path id fixes (``name``, ``type``, ``file``, ``line``, ``end_line``, ``module``,
  ``depth``, ``callpath_id``) is tested once per call path, by perflake.query.predicates on a frame of the union
  (:class:`perflake.query.forest.StructureFrame`).  What a run's GraphFrame makes of such a column can depend on
  the run (a run whose call paths all lack a ``line`` reads it as an all-missing column), so the runs are
  grouped by what they hold (missing and present values of each attribute the query reads) and the condition
  is tested once per group, on the union of the group's call paths;
* a condition on a metric is tested once per (run, call path), over the values DuckDB computes in one pass over
  the metrics table: the mean over the node's rows (``sql/lake_query_means.sql``; multi_index_mode "off", and
  any run with one location) or, for "any"/"all" on a run with several ranks or threads, every row
  (``sql/lake_query_rows.sql``), reduced per node as a GraphFrame's dense rows are (a location without a row
  is a NaN row);
* ``is_leaf`` and ``node_id``/``_hatchet_nid`` (pre-order position) are read off each run's part of the forest;
* an element whose condition names an attribute a run lacks matches nothing in that run, as in one frame;
* the path automaton runs over the forest for all runs at once (perflake.query.forest.match).

:func:`match_runs` raises :class:`Unsupported` for what it does not answer, and the caller applies the query
run by run instead: Python predicates (base syntax), graphframes wanted, a metric named like a frame
attribute, a call path whose parent or frame differs between runs for an attribute that matters, a run
holding a call path without its parent.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa

from perflake.engine import duck, sqlfiles
from perflake.errors import InvalidMultiIndexMode, QueryError
from perflake.frame.defaults import node_ordered
from perflake.query import forest as F
from perflake.query.compound import (
    CompoundQuery,
    ConjunctionQuery,
    DisjunctionQuery,
    ExclusiveDisjunctionQuery,
    NegationQuery,
)
from perflake.query.matching import to_query
from perflake.query.model import MULTI_INDEX_MODES, And, Call, Cond, Not, Or, conds
from perflake.query.predicates import NodeTable, _leaf, _test

FRAME_ATTRS = ("name", "type", "file", "line", "end_line", "module")  # columns of the lake's nodes table
PER_CALL_PATH = FRAME_ATTRS + ("depth", "callpath_id")
PER_RUN = ("node_id", "_hatchet_nid", "is_leaf")
RESERVED = frozenset(PER_CALL_PATH + PER_RUN)
ORDER_ATTRS = ("parent_id", "depth", "name", "type")  # must agree between runs for the pre-order to be shared
ORDER_STATS = ("child_order", "child_order_max", "n_ordered", "n_runs")  # sql/lake_query_callpaths.sql


class Unsupported(Exception):
    """This query or this lake is answered run by run (the reason is the message)."""


def match_runs(lake, query, run_ids: list[str], multi_index_mode: str) -> pd.DataFrame:
    """``(run_id, node_id, depth, name, path)`` of every node on a matching path, runs in ``run_ids`` order,
    nodes in each run's pre-order: the rows that applying ``query`` to each run's GraphFrame gives."""
    if multi_index_mode not in MULTI_INDEX_MODES:
        raise InvalidMultiIndexMode(f"multi_index_mode must be one of {MULTI_INDEX_MODES}, not {multi_index_mode!r}")
    q = to_query(query)
    _check(q)
    cat = lake.catalog()
    rows = {r["run_id"]: r for r in cat.runs().to_pylist()}
    metrics = [frozenset(m["name"] for m in rows[r]["metrics"]) for r in run_ids]
    clash = set().union(*metrics) & RESERVED
    if clash:
        raise Unsupported(f"a metric is named like a frame attribute: {sorted(clash)}")
    con = duck.connection() if cat.local else duck.offline()
    try:
        if not cat.local:
            con.register_filesystem(cat.fs)
        batches = [rows[r]["batch"] for r in run_ids]
        con.register("query_runs", pa.table({"run_id": pa.array(run_ids, pa.string()),
                                              "run": pa.array(np.arange(len(run_ids), dtype=np.int32)),
                                              "batch": pa.array(batches, pa.string())}))
        con.register("runs", cat.snapshot())
        con.execute("set variable perflake_nodes_files = $files", {"files": cat.files("nodes", batches)}).fetchall()
        con.execute(sqlfiles.load("views/nodes")).fetchall()  # the lake's nodes view, over these runs' batches
        shared = _Shared(con, len(run_ids), _attrs(q), _node_ordering(rows, run_ids))
        ev = _Evaluator(shared, metrics, multi_index_mode, con, cat.files("metrics", batches), run_ids, batches)
        found = ev.answer(q)
    finally:
        con.close()
    return _answer(shared, found, run_ids)


def _node_ordering(rows: dict, run_ids: list[str]) -> bool:
    """Whether the runs' graphs are node-ordered (perflake.frame.defaults.node_ordered), all alike."""
    kinds = {node_ordered(rows[r]["format"], json.loads(rows[r]["metadata"] or "{}")) for r in run_ids}
    if len(kinds) > 1:
        raise Unsupported("node-ordered (Caliper) and frame-ordered runs together")
    return kinds.pop()


def _check(q) -> None:
    if isinstance(q, CompoundQuery):
        if type(q) not in (ConjunctionQuery, DisjunctionQuery, ExclusiveDisjunctionQuery, NegationQuery):
            raise Unsupported(f"compound query {type(q).__name__}")
        for sub in q.subqueries:
            _check(sub)
        return
    for _, pred in q.expanded():
        if _has_call(pred):
            raise Unsupported("a Python predicate is called per node of each run")


def _has_call(pred) -> bool:
    if isinstance(pred, Call):
        return True
    if isinstance(pred, Not):
        return _has_call(pred.arg)
    if isinstance(pred, (And, Or)):
        return any(_has_call(a) for a in pred.args)
    return False


def _attrs(q) -> set:
    if isinstance(q, CompoundQuery):
        return set().union(*(_attrs(s) for s in q.subqueries))
    return {c.attr for _, pred in q.expanded() for c in conds(pred) if c.attr is not None}


class _Shared:
    """The union of the selected runs' call paths: frames (one row per id, pre-order), forest, and which run holds
    which call path (``m_row``, ``m_run``: one entry per (run, call path); ``packed``: the same as bits)."""

    def __init__(self, con, n_runs: int, attrs: set, node_ordering: bool):
        variants = sqlfiles.relation(con, "lake_query_callpaths").to_arrow_table()
        ids = variants.column("node_id").to_numpy()
        first = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]]) if len(ids) else np.zeros(0, np.int64)
        if len(first) < len(ids):
            varying = _varying(variants.drop_columns(list(ORDER_STATS)), ids)
            if varying & (set(ORDER_ATTRS) | attrs):
                raise Unsupported(f"call paths whose {sorted(varying)} differ between runs")
        self.node_ordering = node_ordering
        self.nodes = _with_order_stats(variants, first)  # sorted by id, one row per call path
        n_ordered = self.nodes.column("n_ordered").to_numpy()
        ordered = bool((n_ordered == self.nodes.column("n_runs").to_numpy()).all())
        if not ordered and n_ordered.any():
            raise Unsupported("runs with and without stored child order (batches written before schema 3)")
        self.frame = F.StructureFrame(self.nodes, node_ordering)
        self.ids = self.frame.node_ids  # pre-order
        self.n, self.n_runs = len(self.ids), n_runs
        self.parent = self.frame.parent
        self.forest = F.Forest(self.parent)
        self._sorter = np.argsort(self.ids)
        self.table_row = self.rows_of(self.nodes.column("node_id").to_numpy())  # row of self.nodes -> pre-order
        m = sqlfiles.relation(con, "lake_query_members").to_arrow_table()
        self.m_row = self.rows_of(m.column("node_id").to_numpy())
        self.m_run = m.column("run").to_numpy().astype(np.int64)
        self.packed = F.pack_cells(self.m_row, self.m_run, self.n, n_runs)
        up = self.parent[self.m_row]
        if not F.bits_at(self.packed, up[up >= 0], self.m_run[up >= 0]).all():
            raise Unsupported("a run holds a call path without its parent")
        if ordered:
            self._check_sibling_order(m.column("child_order").to_numpy(zero_copy_only=False))
        self.n_cells = np.bincount(self.m_run, minlength=n_runs)
        self._groups: dict = {}

    def _check_sibling_order(self, child_order: np.ndarray) -> None:
        """The shared pre-order lists every run's siblings in that run's order (its child_order wherever the
        frames do not decide: all siblings of a node-ordered graph, siblings with equal frames otherwise)."""
        co_min = self.nodes.column("child_order").to_numpy()
        if (co_min == self.nodes.column("child_order_max").to_numpy()).all():
            return  # every run stores the same positions: they order each run as they order the union
        tie = np.zeros(self.n, np.int64) if self.node_ordering else self.frame.frame_rank
        row, run = self.m_row, self.m_run
        key = np.lexsort((row, tie[row], self.parent[row], run))
        same = ((run[key][1:] == run[key][:-1]) & (self.parent[row][key][1:] == self.parent[row][key][:-1])
                & (tie[row][key][1:] == tie[row][key][:-1]))
        if (np.diff(child_order[key].astype(np.int64))[same] <= 0).any():
            raise Unsupported("runs order some siblings differently")

    def rows_of(self, node_ids: np.ndarray) -> np.ndarray:
        """Pre-order rows of call-path ids (all of them among the union's)."""
        return self._sorter[np.searchsorted(self.ids, node_ids, sorter=self._sorter)]

    def missing(self, attr: str) -> np.ndarray:
        """Per pre-order row: the call path's ``attr`` is NULL."""
        out = np.zeros(self.n, bool)
        out[self.table_row] = self.nodes.column(attr).is_null().to_numpy(zero_copy_only=False)
        return out

    def runs_holding(self, per_row: np.ndarray) -> np.ndarray:
        """Per run: how many of its call paths have ``per_row`` true."""
        return np.bincount(self.m_run, weights=per_row[self.m_row], minlength=self.n_runs)

    def groups(self, attrs: tuple) -> list[tuple[np.ndarray, NodeTable]]:
        """The runs split by which of ``attrs`` (frame attributes) they hold missing and present values of, each
        group with the predicate inputs (a NodeTable) of the union of its call paths."""
        if attrs not in self._groups:
            key = np.zeros(self.n_runs, np.int64)
            for a in attrs:
                n_missing = self.runs_holding(self.missing(a))
                key = key * 4 + (n_missing > 0) * 2 + (n_missing < self.n_cells)
            out = []
            for k in np.unique(key):
                runs = key == k
                union = np.zeros(self.n, bool)
                union[self.m_row[runs[self.m_run]]] = True
                if union.all():
                    frame = self.frame
                else:
                    frame = F.StructureFrame(self.nodes.filter(pa.array(union[self.table_row])), self.node_ordering)
                out.append((runs, NodeTable(frame, frame.tables, "off")))
            self._groups[attrs] = out
        return self._groups[attrs]


def _with_order_stats(variants: pa.Table, first: np.ndarray) -> pa.Table:
    """One row per call path (the first variant's frame) with the order statistics of all its variants."""
    out = variants.take(pa.array(first))
    if out.num_rows == variants.num_rows:
        return out
    stats = {}
    for c, reduce in zip(ORDER_STATS, (np.minimum, np.maximum, np.add, np.add)):
        col = variants.column(c)
        fill = {np.minimum: 2**40, np.maximum: -1}.get(reduce, 0)  # beyond any int32 position or count
        values = col.to_numpy(zero_copy_only=False)  # float with NaN where NULL
        v = reduce.reduceat(np.where(col.is_null().to_numpy(zero_copy_only=False), fill,
                                     np.nan_to_num(values.astype(np.float64))).astype(np.int64), first)
        null = (v == fill) if reduce in (np.minimum, np.maximum) else np.zeros(len(v), bool)
        stats[c] = pa.array(np.where(null, 0, v), out.schema.field(c).type, mask=null)
    for c, arr in stats.items():
        out = out.set_column(out.schema.get_field_index(c), c, arr)
    return out


def _varying(variants: pa.Table, ids: np.ndarray) -> set:
    """The columns that differ between two rows of the same call-path id."""
    dup = np.isin(ids, ids[np.flatnonzero(ids[1:] == ids[:-1])])
    df = variants.filter(pa.array(dup)).to_pandas()
    out = set()
    for col in variants.column_names[1:]:
        if (df.groupby("node_id")[col].nunique(dropna=False) > 1).any():
            out.add(col)
    return out


class _Evaluator:
    """Element predicates -> packed (call path, run) bits, and the query's answer for every run."""

    def __init__(self, shared: _Shared, metrics: list[frozenset], mode: str, con, metric_files, run_ids, batches):
        self.s, self.metrics, self.mode, self.con = shared, metrics, mode, con
        self.metric_files, self.run_ids, self.batches = metric_files, run_ids, batches  # batches[i]: run_ids[i]'s
        self._means: dict = {}
        self._locations = None
        self._leaves = None
        self.errors: list[tuple[np.ndarray, Exception]] = []  # (runs, error) in the order a run meets them

    def answer(self, query) -> np.ndarray:
        """Packed bits of the nodes ``query`` returns in each run; an error some runs raise is raised as the
        first run (in order) that fails would raise it when applied run by run: a condition that fails on
        some runs only (a numeric test on a column that is all-NULL in one run and not in another) still
        fails with the same error as before."""
        found = self.ids(query)
        if self.errors:
            first = min(int(np.flatnonzero(runs)[0]) for runs, _ in self.errors)
            raise next(exc for runs, exc in self.errors if runs[first])
        return found

    def guarded(self, runs: np.ndarray, fn):
        """``fn()``, or None after noting its error for the runs ``runs`` (answer() raises it)."""
        try:
            return fn()
        except Exception as exc:  # noqa: BLE001 - raised by answer(), in the order the runs meet it
            if runs.any():
                self.errors.append((runs.copy(), exc))
            return None

    # -- queries ------------------------------------------------------------------------------------------
    def ids(self, query) -> np.ndarray:
        if isinstance(query, CompoundQuery):
            subs = [self.ids(q) for q in query.subqueries]
            if isinstance(query, NegationQuery):
                return self.s.packed & ~subs[0]
            out = subs[0]
            for sub in subs[1:]:
                out = (out & sub) if isinstance(query, ConjunctionQuery) else (
                    out | sub) if isinstance(query, DisjunctionQuery) else (out ^ sub)
            return out
        elements = query.expanded()
        if not elements:
            self.errors.append((np.ones(self.s.n_runs, bool),
                                QueryError("an empty query matches nothing: give at least one element")))
            return np.zeros_like(self.s.packed)
        mode = query.multi_index_mode or self.mode
        masks: dict[int, np.ndarray] = {}
        for _, pred in elements:
            if id(pred) not in masks:
                masks[id(pred)] = self.element(pred, mode, query.source)
        return F.match(self.s.forest, [masks[id(p)] for _, p in elements], [w for w, _ in elements])

    def element(self, pred, mode: str, source) -> np.ndarray:
        """Packed bits: the call paths of each run that satisfy ``pred`` (nothing in a run lacking an attribute
        it names, as perflake.query.predicates.evaluate)."""
        has = np.ones(self.s.n_runs, bool)
        for c in conds(pred):
            if c.attr is not None:
                has &= self.has(c.attr)
        if not has.any():
            return np.zeros_like(self.s.packed)
        return self.tree(pred, mode, source, has) & self.s.packed & F.run_row(has)

    def has(self, attr: str) -> np.ndarray:
        if attr in RESERVED:  # type too: every frame of a graph has one (Hatchet's placeholder 'None')
            return np.ones(self.s.n_runs, bool)
        return np.array([attr in m for m in self.metrics])

    def tree(self, pred, mode, source, active) -> np.ndarray:
        if isinstance(pred, Cond):
            return self.leaf(pred, mode, source, active)
        if isinstance(pred, Not):
            return ~self.tree(pred.arg, mode, source, active)
        if isinstance(pred, And):
            out = np.full_like(self.s.packed, 0xFF)
            for a in pred.args:
                out &= self.tree(a, mode, source, active)
            return out
        if isinstance(pred, Or):
            out = np.zeros_like(self.s.packed)
            for a in pred.args:
                out |= self.tree(a, mode, source, active)
            return out
        self.errors.append((active.copy(), QueryError(f"not a predicate: {pred!r}")))
        return np.zeros_like(self.s.packed)

    # -- conditions ---------------------------------------------------------------------------------------
    def leaf(self, cond: Cond, mode: str, source, active: np.ndarray) -> np.ndarray:
        if cond.attr is None and cond.op in ("is_leaf", "is_not_leaf"):
            leaves = self.leaves()
            return leaves if cond.op == "is_leaf" else ~leaves
        if cond.attr in PER_RUN:
            rows, runs = self.s.m_row, self.s.m_run
            values = (F.bits_at(self.leaves(), rows, runs) if cond.attr == "is_leaf" else F.positions(rows, runs))
            hit = self.guarded(active, lambda: _test(cond, pd.Series(values), source))
            if hit is None:
                return np.zeros_like(self.s.packed)
            return F.pack_cells(rows[hit], runs[hit], self.s.n, self.s.n_runs)
        if cond.attr is None or cond.attr in PER_CALL_PATH:
            return self.per_call_path(cond, source, active)
        from perflake.analytics.lake_values import metric_leaf

        out = self.guarded(active, lambda: metric_leaf(self, cond, mode, source, active))
        return np.zeros_like(self.s.packed) if out is None else out

    def per_call_path(self, cond: Cond, source, active) -> np.ndarray:
        attrs = tuple(sorted(a for a in (cond.attr,) if a in FRAME_ATTRS))
        out = np.zeros_like(self.s.packed)
        for runs, table in self.s.groups(attrs):
            if not (runs & active).any():
                continue  # no run of this group reads the condition (a run by itself would not test it)
            hit = self.guarded(runs & active, lambda: _leaf(cond, table, source))
            if hit is None:
                continue
            rows = self.s.rows_of(table.tables.node_ids)
            out[rows[hit]] |= F.run_row(runs)
        return out

    def leaves(self) -> np.ndarray:
        if self._leaves is None:
            self._leaves = self.s.forest.leaves(self.s.packed)
        return self._leaves



def _answer(shared: _Shared, found: np.ndarray, run_ids: list[str]) -> pd.DataFrame:
    """The rows of the answer, runs in order, each run's nodes in pre-order (as ``lake_query.query`` made them
    from each run's matched Nodes)."""
    columns = ["run_id", "node_id", "depth", "name", "path"]
    rows, runs = F.cells(found)
    if not len(runs):
        return pd.DataFrame([], columns=columns)
    names = np.empty(shared.n, dtype=object)
    names[:] = shared.frame.names
    paths, texts = [()] * shared.n, [str(x) for x in shared.frame.names]
    for i, p in enumerate(shared.parent.tolist()):  # pre-order: a parent's path is built before its children's
        paths[i] = (paths[p] if p >= 0 else ()) + (texts[i],)
    return pd.DataFrame({"run_id": np.array(run_ids, dtype=object)[runs].tolist(),
                         "node_id": shared.ids[rows].tolist(), "depth": shared.frame.depth[rows].tolist(),
                         "name": names[rows].tolist(), "path": list(map(list, map(paths.__getitem__, rows.tolist())))},
                        columns=columns)
