"""GraphFrame.to_hdf / from_hdf (issue 15, theme 10 of the issue): Hatchet's HDF5 checkpoint through pandas' HDF
support (PyTables: the ``perflake[hdf]`` extra, in the test extra too).  The round trip must give back the same
frame (index, columns, dtypes, values, graph, metrics, ``tree()`` text); the frame perflake reloads holds the rows
llnl-hatchet 2026.2.0 reloads from its own store of the same input (call paths, ranks, values, columns).  Hatchet's
store holds pickled Hatchet objects; perflake writes none and refuses to unpickle one (see
perflake.interop.hdf_store)."""

from __future__ import annotations

import json
import math

import pytest

import hatchet_load
import literal as L
from conftest import DATA, _need, need_bench_python
from perflake import GraphFrame
from perflake.errors import InteropError

tables = pytest.importorskip("tables", reason="PyTables is not installed (pip install 'perflake[hdf]')")

INPUTS = {
    "literal": (f"hatchet.GraphFrame.from_literal(json.loads({json.dumps(json.dumps(L.MOCK_GRAPH))}))",
                lambda: GraphFrame.from_literal(L.MOCK_GRAPH)),
    # multi-rank: perflake's TAU frame, handed to Hatchet as its JSON (the same input for both)
    "tau": ("tau_json", lambda: GraphFrame.from_tau(_need(DATA / "tau-cpi-mpi"))),
}


def rows(df) -> list:
    flat = df.reset_index()
    ranks = flat["rank"] if "rank" in flat.columns else [0] * len(flat)
    metrics = [c for c in ("time", "time (inc)") if c in flat.columns]
    out = []
    for i, (node, r) in enumerate(zip(flat["node"], ranks)):
        vals = [None if math.isnan(float(flat[m].iloc[i])) else float(flat[m].iloc[i]) for m in metrics]
        out.append([[str(a.frame["name"]) for a in node.path()], int(r), vals])
    return sorted(out)


@pytest.fixture(scope="module")
def hatchets(tmp_path_factory):
    need_bench_python()
    tmp = tmp_path_factory.mktemp("hdf")
    out = {}
    tau_json = tmp / "tau.json"
    tau_json.write_text(INPUTS["tau"][1]().to_json())
    for name, (call, _) in INPUTS.items():
        store = tmp / f"hatchet-{name}.h5"
        code = (f"import json\ngf = {call}\n"
                f"gf.to_hdf({str(store)!r}, 'test_key')\n"
                f"result = hatchet.GraphFrame.from_hdf({str(store)!r}, key='test_key')\n")
        reloaded = hatchet_load.recipe(code, tau_json=tau_json)
        before = hatchet_load.recipe(f"import json\nresult = {call}\n", tau_json=tau_json)
        out[name] = (before, reloaded, store)
    return out


def hatchet_rows(report) -> list:
    return sorted([path, rank or 0, [rec.get(m) for m in ("time", "time (inc)") if m in rec]]
                  for path, rank, _thread, _profile, rec in report["rows"])


@pytest.mark.parametrize("name", list(INPUTS))
def test_round_trip_gives_the_same_frame(tmp_path, name):
    gf = INPUTS[name][1]()
    gf.to_hdf(tmp_path / "gf.h5", "test_key")
    back = GraphFrame.from_hdf(tmp_path / "gf.h5", key="test_key")
    assert back.dataframe.equals(gf.dataframe) and back.graph == gf.graph  # Hatchet's own test's assertions
    assert list(back.dataframe.index.names) == list(gf.dataframe.index.names)
    assert back.dataframe.dtypes.to_dict() == gf.dataframe.dtypes.to_dict()
    assert [n.node_id for n in back.graph.traverse()] == [n.node_id for n in gf.graph.traverse()]
    assert [[c.node_id for c in n.children] for n in back.graph.traverse()] == \
        [[c.node_id for c in n.children] for n in gf.graph.traverse()]
    assert (back.exc_metrics, back.inc_metrics, back.default_metric) == (gf.exc_metrics, gf.inc_metrics,
                                                                         gf.default_metric)
    assert back.metadata == gf.metadata
    assert back.tree(render_header=False) == gf.tree(render_header=False)
    assert GraphFrame.from_hdf(tmp_path / "gf.h5").dataframe.equals(gf.dataframe)  # the only key: found


@pytest.mark.parametrize("name", list(INPUTS))
def test_reloaded_rows_are_hatchets(hatchets, tmp_path, name):
    """The rows perflake reloads are the rows of Hatchet's frame before its store.  On the literal, Hatchet's own
    reload agrees; on the multi-rank TAU frame (as Hatchet reads it from JSON) Hatchet's store re-links
    MPI_Comm_get_attr() under another parent (its reader indexes a children list by sorted ``_hatchet_nid``):
    perflake keeps the input's tree there, on purpose."""
    before, reloaded, _ = hatchets[name]
    gf = INPUTS[name][1]()
    gf.to_hdf(tmp_path / "gf.h5")  # Hatchet's default key
    back = GraphFrame.from_hdf(tmp_path / "gf.h5", key="hatchet_graphframe")
    assert rows(back.dataframe) == hatchet_rows(before)
    assert (hatchet_rows(reloaded) == hatchet_rows(before)) == (name == "literal")
    assert reloaded["index"] == list(back.dataframe.index.names)


def test_several_frames_in_one_file_and_errors(hatchets, tmp_path):
    one, two = GraphFrame.from_literal(L.MOCK_GRAPH), GraphFrame.from_literal(L.SOLVERS_GRAPH)
    path = tmp_path / "two.h5"
    one.to_hdf(path, "a")
    two.to_hdf(path, "b")
    one.to_hdf(path, "a")  # replacing a key keeps the others
    assert GraphFrame.from_hdf(path, key="b").graph == two.graph
    assert GraphFrame.from_hdf(path, key="a").dataframe.equals(one.dataframe)
    with pytest.raises(InteropError, match="several GraphFrames"):
        GraphFrame.from_hdf(path)
    with pytest.raises(InteropError, match="no GraphFrame under key"):
        GraphFrame.from_hdf(path, key="c")
    with pytest.raises(InteropError, match="pickled"):  # the store Hatchet wrote: never unpickled
        GraphFrame.from_hdf(hatchets["literal"][2], key="test_key")
    (tmp_path / "not.h5").write_text("not HDF5")
    with pytest.raises(InteropError, match="not a readable"):
        GraphFrame.from_hdf(tmp_path / "not.h5")
    with pytest.raises(InteropError, match="unsupported"):
        one.to_hdf(path, "a", format="fixed")
