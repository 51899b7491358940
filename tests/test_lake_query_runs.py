"""lake.query over many runs (issue 16 item 8): the runs answered together (perflake.analytics.lake_match, the
automaton of perflake.query.forest) give exactly the rows of applying the query to each run's GraphFrame
(``per_run=True``), on random lakes and random queries in both dialects and every multi_index_mode."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import perflake.ingest.task as ingest_task
from perflake import Lake
from perflake.analytics import lake_match, lake_query
from perflake.errors import MultiIndexModeMismatch
from perflake.frame.defaults import NODE_ORDER_KEY
from perflake.query import forest as F
from perflake.query.matching import compile_automaton
from perflake.readers.base import FRAME_SCHEMA, Metric, ProfileRows


# -- random lakes ------------------------------------------------------------------------------------------
class _SpecReader:
    """Stands for a reader during these tests: the 'profile' is a small JSON file holding the run's spec."""

    kind = "hatchet_json"
    version = "test"

    def read(self, path):
        return rows_of(json.loads(Path(path).read_text())["spec"])


def rows_of(spec: dict) -> ProfileRows:
    nodes = spec["nodes"]
    local = {n[0]: k for k, n in enumerate(nodes)} | {-1: -1}  # readers number their frames 0..n-1
    frames = pa.table({"local_id": pa.array([local[n[0]] for n in nodes], pa.int32()),
                       "parent_local": pa.array([local[n[1]] for n in nodes], pa.int32()),
                       **{c: pa.array([n[2][c] for n in nodes], FRAME_SCHEMA.field(c).type)
                          for c in ("name", "type", "file", "line", "end_line", "module")}}, schema=FRAME_SCHEMA)
    cols = {"local_id": pa.array([local[v[0]] for v in spec["values"]], pa.int32()),
            "rank": pa.array([v[1] for v in spec["values"]], pa.int32()),
            "thread": pa.array([v[2] for v in spec["values"]], pa.int32())}
    metrics = [Metric(*m) for m in spec["metrics"]]
    for i, m in enumerate(metrics):
        cols[m.name] = pa.array([np.nan if v[3 + i] is None else v[3 + i] for v in spec["values"]], pa.float64())
    metadata = {NODE_ORDER_KEY: True} if spec.get("node_ordered") else {}
    return ProfileRows(format="hatchet_json", source="<spec>", frames=frames, values=pa.table(cols), metrics=metrics,
                       metadata=metadata)


def make_lake(root: Path, specs: list[dict], monkeypatch) -> Lake:
    root.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, spec in enumerate(specs):
        p = root / f"run{i}.json"
        p.write_text(json.dumps({"graph": [], "dataframe_indices": [], "spec": spec}))
        paths.append(str(p))
    monkeypatch.setattr(ingest_task, "get_reader", lambda kind: _SpecReader())
    lake = Lake(root / "lake")
    report = lake.ingest(paths, scheduler="synchronous")
    assert not report.failed, report.failed
    return lake


FRAMES = [  # (name, type, file, line, module, end_line): same names in other files make siblings of equal sort key
    ("a", "function", None, None, None, None), ("b", "function", None, None, None, None),
    ("c", "function", "x.c", 3, None, 9), ("c", "function", "y.c", 1, None, None),
    ("MPI_Send", "function", None, None, "libmpi", None), ("d", "loop", "x.c", 7, None, 8),
    ("a", None, None, None, None, None), ("e", "function", "", 2, "m", 4),
]


@st.composite
def lakes(draw, shuffled: bool = False):
    """Random lakes of 1-4 runs over one call tree of up to 12 nodes.  ``shuffled``: each run may list its
    nodes in another order (siblings in another order: such runs are answered run by run); the lake may hold
    node-ordered graphs (walked in the stored order, as Caliper's)."""
    node_ordered = draw(st.booleans()) and shuffled
    n = draw(st.integers(1, 12))
    base = [(0, -1, draw(st.integers(0, len(FRAMES) - 1)))]
    for i in range(1, n):
        base.append((i, draw(st.integers(-1, i - 1)) if draw(st.integers(0, 8)) == 0 else draw(st.integers(0, i - 1)),
                     draw(st.integers(0, len(FRAMES) - 1))))
    specs = []
    for _ in range(draw(st.integers(1, 4))):
        keep = {i for i in range(n) if draw(st.booleans()) or i == 0}
        for i in sorted(keep):  # every kept node's ancestors too
            p = base[i][1]
            while p >= 0:
                keep.add(p)
                p = base[p][1]
        ranks, threads = draw(st.sampled_from([1, 1, 2, 3])), draw(st.sampled_from([1, 1, 2]))
        metrics = [("time", "exclusive", "s", None)] + ([("bytes", "other", "B", None)] if draw(st.booleans()) else [])
        no_line = draw(st.integers(0, 3)) == 0  # a run whose call paths carry no line at all
        nodes = []
        for i in sorted(keep):
            name, typ, file, line, module, end = FRAMES[base[i][2]]
            nodes.append((i, base[i][1], {"name": name, "type": typ, "file": file, "line": None if no_line else line,
                                          "end_line": end, "module": module}))
        values = []
        for i in sorted(keep):
            for r in range(ranks):
                for t in range(threads):
                    if draw(st.integers(0, 4)) == 0:
                        continue  # this location has no row for the node: a NaN row in the frame
                    vals = [draw(st.sampled_from([0.0, 1.0, 2.0, 3.0, 5.0, 0.5, None])) for _ in metrics]
                    values.append([i, r, t, *vals])
        if shuffled and draw(st.booleans()):
            nodes = draw(st.permutations(nodes))
        specs.append({"nodes": nodes, "values": values, "metrics": metrics, "seed": draw(st.integers(0, 10**6)),
                      "node_ordered": node_ordered})
    return specs


# -- random queries ----------------------------------------------------------------------------------------
# (string-dialect condition on variable v, object-dialect dict or None when the object dialect cannot say it)
CONDITIONS = [
    (None, {}),
    ('v."name" = "a"', {"name": "a"}),
    ('v."name" =~ "[ab]"', {"name": "[ab]"}),
    ('v."name" STARTS WITH "MPI_"', {"name": "MPI_.*"}),
    ('v."file" ENDS WITH ".c"', {"file": ".*\\.c"}),
    ('v."file" IS NONE', None),
    ('v."type" = "loop"', {"type": "loop"}),
    ('v."module" IS NOT NONE', None),
    ('v."line" < 3', {"line": "< 3"}),
    ('v."depth" >= 1', {"depth": ">= 1"}),
    ('v."end_line" >= 8', {"end_line": ">= 8"}),
    ('v IS LEAF', {"depth": -1}),
    ('NOT v IS LEAF', None),
    ('v."_hatchet_nid" < 3', {"_hatchet_nid": "< 3"}),
    ('v."is_leaf" = 1', None),
    ('v."time" > 1', {"time": "> 1"}),
    ('NOT v."time" = 2', {"time": "!= 2"}),
    ('v."time (inc)" >= 3', {"time (inc)": ">= 3"}),
    ('v."time" IS NAN', {"time": "== nan"}),
    ('v."bytes" <= 1', {"bytes": "<= 1"}),
    ('v."time" > 0.5 AND v."name" =~ "[ac]"', {"time": "> 0.5", "name": "[ac]"}),
    ('(v."time" < 1 OR v."name" = "b") AND NOT v."time (inc)" > 5', None),
    ('v."nokey" > 1', {"nokey": "> 1"}),
    ('v."time" STARTS WITH "1"', None),  # QueryError: a string test on a metric
    ('v."name" > 1', {"name": "> 1"}),  # QueryError in the string dialect; a regex in the object dialect
]
QUANTS = [".", ".", "*", "+", 2]


@st.composite
def queries(draw):
    elems = draw(st.lists(st.tuples(st.sampled_from(QUANTS), st.integers(0, len(CONDITIONS) - 1)), min_size=1,
                          max_size=3))
    if draw(st.booleans()):  # string dialect
        parts, where = [], []
        for k, (quant, c) in enumerate(elems):
            q = f'"{quant}"' if isinstance(quant, str) else str(quant)
            parts.append(f"({q}, v{k})")
            if CONDITIONS[c][0]:
                where.append("(" + CONDITIONS[c][0].replace("v.", f"v{k}.").replace("v IS", f"v{k} IS") + ")")
        text = "MATCH " + "->".join(parts) + (" WHERE " + " AND ".join(where) if where else "")
        return text
    out = []
    for quant, c in elems:
        d = CONDITIONS[c][1]
        out.append((quant, d if d is not None else {}))
    return out


def outcome(fn):
    try:
        return "ok", fn()
    except Exception as exc:  # both ways must fail alike
        return "error", f"{type(exc).__name__}: {exc}"


def same_answer(lake, q, mode, *, together: bool | None = True):
    """The all-runs path gives the rows and the outcome of the run-by-run one; ``together``: whether the
    lake and query are answered together (None: either)."""
    try:  # these lakes and queries never need the run-by-run way
        kind = "empty" if lake_match.match_runs(lake, q, list(lake.runs()["run_id"]), mode).empty else "rows"
    except lake_match.Unsupported:
        kind = "unsupported"
    except Exception as exc:  # noqa: BLE001 - compared below
        kind = type(exc).__name__
    assert together is None or (kind != "unsupported") == together
    new = outcome(lambda: lake_query.query(lake, q, multi_index_mode=mode, per_run=False))
    old = outcome(lambda: lake_query.query(lake, q, multi_index_mode=mode, per_run=True))
    assert new[0] == old[0], (new, old)
    if new[0] == "ok":  # the same rows in the same order: runs as selected, each run's nodes in its pre-order
        pd.testing.assert_frame_equal(new[1], old[1])
    else:
        assert new[1] == old[1]
    return new


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(specs=lakes(), qs=st.lists(queries(), min_size=1, max_size=3), mode=st.sampled_from(["off", "any", "all"]),
       compound=st.sampled_from([None, "and", "or", "xor", "not"]))
def test_runs_together_equal_run_by_run(specs, qs, mode, compound, monkeypatch):
    from perflake.query import to_query

    with tempfile.TemporaryDirectory() as tmp:
        lake = make_lake(Path(tmp), specs, monkeypatch)
        for q in qs:
            same_answer(lake, q, mode)
        if compound and len(qs) >= 2:
            a, b = to_query(qs[0]), to_query(qs[1])
            c = {"and": lambda: a & b, "or": lambda: a | b, "xor": lambda: a ^ b, "not": lambda: ~a}[compound]()
            same_answer(lake, c, mode)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(specs=lakes(shuffled=True), q=queries(), mode=st.sampled_from(["mean", "any", "all"]))
def test_runs_listing_siblings_in_other_orders_answer_alike(specs, q, mode, monkeypatch):
    # the sibling order of each run (the profile's) decides its pre-order: its rows' order, ``_hatchet_nid``
    with tempfile.TemporaryDirectory() as tmp:
        same_answer(make_lake(Path(tmp), specs, monkeypatch), q, mode, together=None)


# -- hand-checked cases ------------------------------------------------------------------------------------
def spec(nodes, values, metrics=(("time", "exclusive", "s", None),)):
    return {"nodes": [(i, p, {"name": n, "type": "function", "file": None, "line": None, "end_line": None,
                              "module": None}) for i, p, n in nodes], "values": values, "metrics": list(metrics)}


def test_paths_differ_per_run_by_what_the_run_holds(tmp_path, monkeypatch):
    # run 0: main -> solve -> x -> MPI_Send ; run 1: main -> solve -> x (no MPI below)
    full = [(0, -1, "main"), (1, 0, "solve_a"), (2, 1, "x"), (3, 2, "MPI_Send")]
    lake = make_lake(tmp_path, [spec(full, [[i, 0, 0, 1.0] for i in range(4)]),
                                spec(full[:3], [[i, 0, 0, 2.0] for i in range(3)])], monkeypatch)
    q = 'MATCH (".", p)->("*")->(".", q) WHERE p."name" =~ "solve_.*" AND q."name" =~ "MPI_.*"'
    df = lake.query(q)
    run0 = lake.sql("select run_id from runs where n_nodes = 4")["run_id"][0]
    assert df["run_id"].tolist() == [run0] * 3
    assert df["path"].tolist() == [["main", "solve_a"], ["main", "solve_a", "x"], ["main", "solve_a", "x", "MPI_Send"]]
    # x is a leaf only in run 1
    leaf = lake.query('MATCH (".", p) WHERE p IS LEAF AND p."name" = "x"')
    assert leaf["run_id"].tolist() == [r for r in lake.runs()["run_id"] if r != run0]
    same_answer(lake, q, "off")


def test_metric_modes_over_ranks(tmp_path, monkeypatch):
    nodes = [(0, -1, "main"), (1, 0, "f")]
    # f: rank 0 -> 1.0, rank 1 -> 5.0, rank 2 has no row (a NaN row in the frame); main everywhere 4.0
    values = [[0, r, 0, 4.0] for r in range(3)] + [[1, 0, 0, 1.0], [1, 1, 0, 5.0]]
    lake = make_lake(tmp_path, [spec(nodes, values)], monkeypatch)
    names = {m: lake.query('MATCH (".", p) WHERE p."time" > 2', multi_index_mode=m)["name"].tolist()
             for m in ("mean", "any", "all")}
    assert names == {"mean": ["main", "f"], "any": ["main", "f"], "all": ["main"]}  # mean of f = 3
    with pytest.raises(MultiIndexModeMismatch):  # Hatchet's strict "off" refuses a run with several ranks
        lake.query('MATCH (".", p) WHERE p."time" > 2', multi_index_mode="off")
    ne = lake.query([{"time": "!= 4"}], multi_index_mode="all")["name"].tolist()
    assert ne == ["f"]  # 1, 5 and NaN all differ from 4


def test_unsupported_queries_go_run_by_run(tmp_path, monkeypatch):
    from perflake.query import QueryMatcher

    nodes = [(0, -1, "main"), (1, 0, "f")]
    lake = make_lake(tmp_path, [spec(nodes, [[0, 0, 0, 1.0], [1, 0, 0, 2.0]])], monkeypatch)
    q = QueryMatcher().match(".", lambda row: row["time"] > 1)
    with pytest.raises(lake_match.Unsupported):
        lake_match.match_runs(lake, q, list(lake.runs()["run_id"]), "off")
    assert lake.query(q)["name"].tolist() == ["f"]


def test_a_frame_attribute_differing_between_runs_goes_run_by_run(tmp_path, monkeypatch):
    # file NULL in one run, '' in the other: the same call-path id (identity writes NULL as ''), different frames
    def one(file):
        return {"nodes": [(0, -1, {"name": "main", "type": "function", "file": None, "line": None, "end_line": None,
                                   "module": None}),
                          (1, 0, {"name": "f", "type": "function", "file": file, "line": None, "end_line": None,
                                  "module": None})],
                "values": [[0, 0, 0, 1.0], [1, 0, 0, 2.0]], "metrics": [["time", "exclusive", "s", None]]}

    lake = make_lake(tmp_path, [one(None), one("")], monkeypatch)
    assert lake.sql("select count(distinct node_id) as n from nodes")["n"][0] == 2
    runs = list(lake.runs()["run_id"])
    q = 'MATCH (".", p) WHERE p."file" IS NONE'
    with pytest.raises(lake_match.Unsupported, match="file"):
        lake_match.match_runs(lake, q, runs, "off")
    assert lake.query(q)["name"].tolist() == ["main", "main", "f"]  # f only where its file is NULL
    same_answer(lake, q, "off", together=False)
    assert len(lake_match.match_runs(lake, [{"name": "f"}], runs, "off")) == 2  # file not read: answered together


def test_structure_frame_is_what_from_tables_builds(tmp_path, monkeypatch):

    nodes = [(0, -1, {"name": "main", "type": None, "file": "m.c", "line": 3, "end_line": None, "module": None}),
             (1, 0, {"name": "f", "type": "loop", "file": None, "line": None, "end_line": 9, "module": "lib"})]
    lake = make_lake(tmp_path, [{"nodes": nodes, "values": [[0, 0, 0, 1.0]], "metrics": [["time", "exclusive", "s",
                                                                                         None]]}], monkeypatch)
    run = lake.runs()["run_id"][0]
    table = lake.sql("select * exclude (run_id) from nodes order by node_id")
    frame = F.StructureFrame(pa.Table.from_pandas(table, preserve_index=False))
    gf = lake.graphframe(run)
    want = gf.dataframe[["name", "file", "module", "line", "end_line"]]
    assert [n.node_id for n in frame.dataframe.index] == [n.node_id for n in want.index]
    assert list(frame.dataframe.columns) == list(want.columns)
    for c in want.columns:
        assert frame.dataframe[c].dtype == want[c].dtype
        assert frame.dataframe[c].tolist() == want[c].tolist()
    graph_nodes = list(gf.graph)
    assert frame.tables.frame_attrs == frozenset().union(*(n.frame.attrs for n in graph_nodes))
    assert [n.frame.attrs for n in frame.tables.nodes] == [n.frame.attrs for n in graph_nodes]
    assert frame.tables.depth.tolist() == [n.depth for n in graph_nodes]
    assert frame.parent.tolist() == [n.parents[0]._hatchet_nid if n.parents else -1 for n in graph_nodes]


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.integers(-1, 30), st.sampled_from(["a", "b", None, "é", "B"]),
                          st.sampled_from(["function", "loop", None])), min_size=1, max_size=30))
def test_structure_frame_pre_order_is_the_graphs(rows):
    from perflake.frame.graph import Graph

    n = len(rows)
    ids = np.arange(100, 100 + n, dtype=np.uint64)
    table = pa.table({"node_id": pa.array(ids), "parent_id": pa.array(
        [int(ids[p]) if 0 <= p < i else (None if p == -1 else 999) for i, (p, _, _) in enumerate(rows)], pa.uint64()),
        "depth": pa.array([0] * n, pa.int32()), "name": [r[1] for r in rows], "type": [r[2] for r in rows]})
    frame = F.StructureFrame(table)
    graph = Graph.from_nodes_table(table)
    assert frame.node_ids.tolist() == [x.node_id for x in graph]
    assert frame.parent.tolist() == [x.parents[0]._hatchet_nid if x.parents else -1 for x in graph]


def test_forest_automaton_on_a_hand_tree():
    # 0 -> 1 -> 2 ; 0 -> 3 ; run 0 holds all, run 1 lacks 2
    forest = F.Forest(np.array([-1, 0, 1, 0]))
    present = np.array([[1, 1], [1, 1], [1, 0], [1, 1]], bool)
    is_a = np.array([[1, 1], [0, 0], [0, 0], [0, 0]], bool) & present  # element 0: node 0
    is_leaf = F.unpack(forest.leaves(F.pack(present)), 2)
    assert is_leaf.tolist() == [[False, False], [False, True], [True, False], [True, True]]
    got = F.unpack(F.match(forest, [F.pack(is_a), F.pack(present), F.pack(is_leaf)], [".", "*", "."]), 2)
    # run 0: 0-1-2 and 0-3 ; run 1: 0-1 (1 is its leaf) and 0-3
    assert got.tolist() == [[True, True], [True, True], [True, False], [True, True]]
    assert compile_automaton([".", "*", "."])["accepting"] == [2]
