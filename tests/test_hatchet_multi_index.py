"""MultiIndexModeMismatch (issue 15, theme 1 of the issue): Hatchet's object dialect with ``multi_index_mode="off"``
on data indexed by (node, rank) raises MultiIndexModeMismatch (hatchet/query/object_dialect.py filter_dframe).
Compared with llnl-hatchet 2026.2.0 in .bench-venv on the TAU cpi run (4 ranks): which calls raise, and the rows
that "any"/"all" and "off" after drop_index_levels() keep.  Deviation, on purpose: Hatchet's string dialect fails
there with InvalidQueryFilter("Type mismatch in filter"); perflake raises MultiIndexModeMismatch for it too.
perflake's lake and CLI queries default to perflake's "mean" mode and keep working on multi-rank runs."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import hatchet_load
from conftest import DATA, _need, need_bench_python
from perflake import GraphFrame
from perflake import query as pq
from perflake.frame.graphframe import EmptyFilter

OBJECT = [{"name": "MPI_.*", "time": "> 10"}]
OBJECT2 = [{"name": "[.]TAU.*"}, "*", {"time (inc)": ">= 20000"}]
CASES = [  # (case, query source, mode, drop_index_levels first)
    ("obj_off", repr(OBJECT), "off", False),
    ("obj2_off", repr(OBJECT2), "off", False),
    ("obj_any", repr(OBJECT), "any", False),
    ("obj_all", repr(OBJECT), "all", False),
    ("obj2_any", repr(OBJECT2), "any", False),
    ("obj2_all", repr(OBJECT2), "all", False),
    ("obj_off_dropped", repr(OBJECT), "off", True),
    ("obj2_off_dropped", repr(OBJECT2), "off", True),
    ("wildcards_off", repr(["*"]), "off", False),  # no condition: nothing to refuse
]

HATCHET_CODE = """
import json
from hatchet.query import ObjectQuery, QueryEngine
from hatchet.query.errors import MultiIndexModeMismatch
from hatchet.graphframe import EmptyFilter

def kept(df):
    flat = df.reset_index()
    ranks = flat["rank"] if "rank" in flat.columns else [-1] * len(flat)
    return sorted([[str(n.frame["name"]) for n in node.path()], int(r)] for node, r in zip(flat["node"], ranks))

rows = []
for case, src, mode, drop in {cases!r}:
    gf = hatchet.GraphFrame.from_tau({tau!r})
    if drop:
        gf.drop_index_levels()
    try:
        rows.append([case, json.dumps(kept(gf.filter(eval(src), squash=False, multi_index_mode=mode).dataframe))])
    except (MultiIndexModeMismatch, EmptyFilter) as exc:
        rows.append([case, type(exc).__name__])
gf = hatchet.GraphFrame.from_tau({tau!r})
try:
    QueryEngine().apply(ObjectQuery({obj!r}, "off"), gf.graph, gf.dataframe)
    rows.append(["engine", "no error"])
except MultiIndexModeMismatch:
    rows.append(["engine", "MultiIndexModeMismatch"])
result = pd.DataFrame(rows, columns=["case", "answer"])
"""


def kept(df) -> list:
    flat = df.reset_index()
    ranks = flat["rank"] if "rank" in flat.columns else [-1] * len(flat)
    return sorted([[str(n.frame["name"]) for n in node.path()], int(r)] for node, r in zip(flat["node"], ranks))


@pytest.fixture(scope="module")
def tau():
    return _need(DATA / "tau-cpi-mpi")


@pytest.fixture(scope="module")
def hatchets(tau):
    need_bench_python()
    code = HATCHET_CODE.format(cases=CASES, tau=str(tau), obj=OBJECT)
    return dict(hatchet_load.recipe(code)["frame"]["values"])


@pytest.mark.parametrize("case, src, mode, drop", CASES, ids=[c[0] for c in CASES])
def test_filter_modes_as_hatchet(hatchets, tau, case, src, mode, drop):
    gf = GraphFrame.from_tau(tau)
    assert gf.dataframe.index.names == ["node", "rank"]
    if drop:
        gf.drop_index_levels()
    try:
        got = json.dumps(kept(gf.filter(eval(src), squash=False, multi_index_mode=mode).dataframe))
    except (pq.MultiIndexModeMismatch, EmptyFilter) as exc:
        got = type(exc).__name__
    assert got == hatchets[case]


def test_query_engine_and_query_objects_refuse_off(hatchets, tau):
    assert hatchets["engine"] == "MultiIndexModeMismatch"
    gf = GraphFrame.from_tau(tau)
    with pytest.raises(pq.MultiIndexModeMismatch):
        pq.QueryEngine().apply(pq.ObjectQuery(OBJECT, "off"), gf.graph, gf.dataframe)
    with pytest.raises(pq.MultiIndexModeMismatch):
        pq.ObjectQuery(OBJECT).apply(gf)
    with pytest.raises(pq.MultiIndexModeMismatch):  # Hatchet: InvalidQueryFilter("Type mismatch") (see module doc)
        pq.StringQuery('MATCH (".", p) WHERE p."time" > 10').apply(gf)
    # a mode given to the query object is used; the error is a QueryError like every query error
    assert pq.ObjectQuery(OBJECT, "any").apply(gf)
    assert issubclass(pq.MultiIndexModeMismatch, pq.QueryError)


def test_mean_mode_reads_each_nodes_mean(tau):
    """perflake's "mean": the same nodes as Hatchet's "off" after drop_index_levels() (whose default is the mean),
    keeping every rank's row."""
    gf = GraphFrame.from_tau(tau)
    mean = {tuple(p) for p, _ in kept(gf.filter(OBJECT2, squash=False, multi_index_mode="mean").dataframe)}
    gf.drop_index_levels()
    off = {tuple(p) for p, _ in kept(gf.filter(OBJECT2, squash=False, multi_index_mode="off").dataframe)}
    assert mean == off and mean


def test_lake_and_cli_default_to_mean_on_multi_rank_runs(tmp_path, lake, tau):
    lake.ingest(tau)
    assert set(lake.query(OBJECT2)["name"]) >= {".TAU application"}  # default "mean": no MultiIndexModeMismatch
    with pytest.raises(pq.MultiIndexModeMismatch):
        lake.query(OBJECT2, multi_index_mode="off")
    run = [sys.executable, "-m", "perflake.cli", "query", json.dumps(OBJECT2), "--lake", str(tmp_path / "lake")]
    ok = subprocess.run([*run, "--format", "json"], capture_output=True, text=True)
    assert ok.returncode == 0 and {r["name"] for r in json.loads(ok.stdout)} >= {".TAU application"}, ok.stderr
    off = subprocess.run([*run, "--multi-index-mode", "off"], capture_output=True, text=True)
    assert off.returncode == 2 and off.stderr.startswith("perflake: ") and "Traceback" not in off.stderr
    assert "multi_index_mode" in off.stderr
