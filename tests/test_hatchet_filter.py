"""Hatchet's filter contract (issue 15, theme 2 of the issue: filter callables see ``row["node"]``; and Hatchet's
filter errors InvalidFilter / EmptyFilter).  Each case runs the same call on the same input with llnl-hatchet
2026.2.0 in .bench-venv and with perflake, and compares the rows kept (call path, rank) or the exception's class
name.  Hatchet resets the index before calling the filter, so a row holds ``node`` (and ``rank``/``thread``) as
values; perflake gives the same names on the row-by-row path and on the vectorised one."""

from __future__ import annotations

import json

import pandas as pd
import pytest

import hatchet_load
import literal as L
from conftest import need_bench_python
from perflake import GraphFrame
from perflake.frame.graphframe import EmptyFilter, InvalidFilter

# each: (name, source of the callable, squash); the callable reads row["node"] (and row["rank"])
CALLABLES = [
    ("node_name", 'lambda row: row["node"].frame["name"] in ("bar", "grault", "waldo")', False),
    ("node_name_squash", 'lambda row: row["node"].frame["name"] in ("bar", "grault", "waldo")', True),
    ("node_depth", 'lambda row: len(row["node"].path()) == 3 and row["time"] > 4.0', False),
    ("node_parents", 'lambda row: any(p.frame["name"] == "qux" for p in row["node"].parents)', True),
]
TAU_CALLABLES = [
    ("rank_and_node", 'lambda row: row["rank"] == 1 and row["node"].frame["name"].startswith("MPI_")', False),
    ("rank_only", 'lambda row: row["rank"] >= 2', True),
]
INVALID = [("dict", '{"bad": "filter"}'), ("int", "3"), ("none", "None")]
EMPTY = [("query", '[{"name": "waldo"}, "+", {"time (inc)": ">= 20.0"}, "+", {"time (inc)": 7.5, "time": 7.5}]'),
         ("callable", 'lambda row: row["time"] > 1e9'),
         ("string", """'MATCH (".", p) WHERE p."name" = "nowhere"'""")]


def kept(df: pd.DataFrame) -> list:
    """Sorted [call path, rank] of every row (rank 0 without a rank level)."""
    flat = df.reset_index()
    ranks = flat["rank"] if "rank" in flat.columns else [0] * len(flat)
    return sorted([[str(n.frame["name"]) for n in node.path()], int(r)] for node, r in zip(flat["node"], ranks))


HATCHET_CODE = """
import json
from hatchet.graphframe import EmptyFilter, InvalidFilter
literal = json.loads({literal!r})
tau = {tau!r}

def kept(df):
    flat = df.reset_index()
    ranks = flat["rank"] if "rank" in flat.columns else [0] * len(flat)
    return sorted([[str(n.frame["name"]) for n in node.path()], int(r)] for node, r in zip(flat["node"], ranks))

rows = []
for name, src, squash in {callables!r}:
    gf = hatchet.GraphFrame.from_literal(literal)
    rows.append([name, json.dumps(kept(gf.filter(eval(src), squash=squash, num_procs=1).dataframe))])
for name, src, squash in {tau_callables!r}:
    gf = hatchet.GraphFrame.from_tau(tau)
    rows.append([name, json.dumps(kept(gf.filter(eval(src), squash=squash, num_procs=1).dataframe))])
for name, src in {invalid!r} + {empty!r}:
    gf = hatchet.GraphFrame.from_literal(literal)
    try:
        gf.filter(eval(src), squash=False, num_procs=1)
        rows.append([name, "no error"])
    except (InvalidFilter, EmptyFilter) as exc:
        rows.append([name, type(exc).__name__])
result = pd.DataFrame(rows, columns=["case", "answer"])
"""


@pytest.fixture(scope="module")
def hatchets(shared_data_dir):
    need_bench_python()
    code = HATCHET_CODE.format(literal=json.dumps(L.MOCK_GRAPH), tau=str(shared_data_dir / "tau-cpi-mpi"),
                               callables=CALLABLES, tau_callables=TAU_CALLABLES, invalid=INVALID, empty=EMPTY)
    return dict(hatchet_load.recipe(code)["frame"]["values"])


@pytest.fixture(scope="module")
def shared_data_dir():
    from conftest import DATA, _need

    return _need(DATA / "tau-cpi-mpi").parent


@pytest.mark.parametrize("name, src, squash", CALLABLES, ids=[c[0] for c in CALLABLES])
def test_callable_sees_the_node_as_hatchet(hatchets, name, src, squash):
    gf = GraphFrame.from_literal(L.MOCK_GRAPH)
    got = kept(gf.filter(eval(src), squash=squash).dataframe)
    assert got == json.loads(hatchets[name]) and got


@pytest.mark.parametrize("name, src, squash", TAU_CALLABLES, ids=[c[0] for c in TAU_CALLABLES])
def test_callable_sees_node_and_rank_on_multi_rank_data(hatchets, shared_data_dir, name, src, squash):
    gf = GraphFrame.from_tau(shared_data_dir / "tau-cpi-mpi")
    got = kept(gf.filter(eval(src), squash=squash).dataframe)
    assert got == json.loads(hatchets[name]) and got


def test_vectorised_callable_gets_a_node_column():
    """A callable that works on a whole frame sees ``df["node"]`` (a column of Nodes) and may still use the index."""
    gf = GraphFrame.from_literal(L.MOCK_GRAPH)
    calls = []

    def whole(df):
        calls.append(type(df).__name__)
        return df["node"].map(lambda n: n.frame["name"] == "baz") & (df.index.get_level_values("node") == df["node"])

    out = gf.filter(whole, squash=False)
    assert calls == ["DataFrame"]  # called once, vectorised
    bazes = sorted([[str(a.frame["name"]) for a in n.path()], 0] for n in gf.graph.traverse()
                   if n.frame["name"] == "baz")
    assert len(bazes) == 4 and kept(out.dataframe) == bazes
    assert "node" not in out.dataframe.columns  # the helper column is not kept


@pytest.mark.parametrize("name, src", INVALID, ids=[c[0] for c in INVALID])
def test_invalid_filter_as_hatchet(hatchets, name, src):
    assert hatchets[name] == "InvalidFilter"
    with pytest.raises(InvalidFilter):
        GraphFrame.from_literal(L.MOCK_GRAPH).filter(eval(src), squash=False)


@pytest.mark.parametrize("name, src", EMPTY, ids=[c[0] for c in EMPTY])
def test_empty_filter_as_hatchet(hatchets, name, src):
    assert hatchets[name] == "EmptyFilter"
    with pytest.raises(EmptyFilter):
        GraphFrame.from_literal(L.MOCK_GRAPH).filter(eval(src), squash=False)


def test_lake_query_reports_no_rows_instead_of_empty_filter(tmp_path, lake):
    """perflake's own callers of filter keep their behaviour: a query that matches nothing gives no rows (API)
    and, with graphframes=True, an empty GraphFrame per run; the CLI prints no rows and succeeds."""
    import subprocess
    import sys

    from perflake.generators import write_tau_runs

    lake.ingest(write_tau_runs(tmp_path / "gen", nodes=20, ranks=2, runs=1, seed=3))
    assert lake.query([{"name": "no-such-function"}]).empty
    frames = lake.query([{"name": "no-such-function"}], graphframes=True)
    assert len(frames) == 1 and all(gf.dataframe.empty for gf in frames.values())
    proc = subprocess.run([sys.executable, "-m", "perflake.cli", "query", '[{"name": "no-such-function"}]',
                           "--lake", str(tmp_path / "lake"), "--format", "json"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == []
