"""Interop with llnl-hatchet: Hatchet JSON and Thicket JSON written and read by perflake (perflake.interop.json_files),
``from_hatchet`` / ``to_hatchet`` (perflake.interop.hatchet), ``perflake export``, and the real Hatchet/Thicket loading
our files in .bench-venv (tests/hatchet_load.py; skipped with the reason when that venv is absent)."""

from __future__ import annotations

import hashlib
import json
import math
import sys

import numpy as np
import pandas as pd
import pytest

import hatchet_load
import literal
from conftest import need_bench_python
from perflake.cli.app import main
from perflake.errors import InteropError, ReaderError
from perflake.generators import write_tau_runs
from perflake.interop.hatchet import from_hatchet, to_hatchet
from perflake.interop.json_files import (
    from_hatchet_json,
    read_hatchet_json,
    thicket_profile,
    to_dict,
    to_hatchet_json,
    to_thicket_dict,
    write_hatchet_json,
    write_thicket_json,
)
from perflake.read import read, read_tau

TAU = "tau-cpi-mpi"
HPCTOOLKIT = "hpctoolkit-cpi-database"
RAJA = "rajaperf-quartz/gcc10.3.1_1048576/O3/1/Base_Seq-default.cali"


def _plain(v):
    v = v.item() if hasattr(v, "item") else v
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else v


def rows(gf, metrics=None) -> list:
    """Sorted (call path of names, rank, thread, values) of every dataframe row; NaN as None."""
    metrics = list(metrics or gf.exc_metrics + gf.inc_metrics)
    df = gf.dataframe.reset_index()
    names = gf.dataframe.index.names
    out = []
    for rec in df.to_dict("records"):
        path = tuple(str(n.frame.get("name")) for n in rec["node"].path())
        loc = tuple(int(rec[k]) if k in names else 0 for k in ("rank", "thread"))
        out.append((path, *loc, tuple(_plain(rec[m]) for m in metrics)))
    return sorted(out, key=repr)


def by_id(gf, metrics) -> pd.DataFrame:
    """Values keyed by (call-path id, rank, thread), sorted."""
    from perflake.frame.tables import locations, node_ids

    df = gf.dataframe
    rank, thread = locations(df)
    out = pd.DataFrame({"node_id": node_ids(df), "rank": rank, "thread": thread})
    for m in metrics:
        out[m] = df[m].to_numpy(dtype=float, na_value=np.nan)
    return out.sort_values(["node_id", "rank", "thread"], ignore_index=True)


def assert_same(a, b) -> None:
    """Same call-path ids, metric roles, default metric and values (NaN == NaN, infinities kept)."""
    assert sorted(n.node_id for n in a.graph) == sorted(n.node_id for n in b.graph)
    assert (a.exc_metrics, a.inc_metrics, a.default_metric) == (b.exc_metrics, b.inc_metrics, b.default_metric)
    assert list(a.dataframe.index.names) == list(b.dataframe.index.names)
    metrics = a.exc_metrics + a.inc_metrics
    pd.testing.assert_frame_equal(by_id(a, metrics), by_id(b, metrics), check_exact=True)


@pytest.fixture(scope="module")
def threaded(tmp_path_factory):
    """A generated TAU run of 3 ranks x 2 threads: a dataframe indexed by (node, rank, thread)."""
    return read_tau(write_tau_runs(tmp_path_factory.mktemp("thr"), nodes=25, ranks=3, threads=2, seed=5)[0])


# -- Hatchet JSON: structure and perflake's own round trip ------------------------------------------------------
def test_hatchet_json_layout(shared_data):
    gf = read(shared_data(TAU))
    doc = json.loads(to_hatchet_json(gf))
    assert set(doc) == {"graph", "dataframe_indices", "dataframe", "inclusive_metrics", "exclusive_metrics",
                        "default_metric", "metadata"}
    assert doc["dataframe_indices"] == ["node", "rank"]
    (graph,) = doc["graph"]  # one object per root
    nodes = list(gf.graph)
    assert list(graph) == [str(i) for i in range(len(nodes))]  # nids are pre-order positions
    for i, node in enumerate(nodes):
        assert graph[str(i)]["data"] == {"name": node.frame["name"], "type": "function"}
        assert graph[str(i)]["children"] == [nodes.index(c) for c in node.children]
    assert len(doc["dataframe"]) == len(gf.dataframe) == 48
    first = doc["dataframe"][0]
    assert first == {"node": 0, "rank": 0, "name": ".TAU application", "time": 449.0, "time (inc)": 51781.0,
                     "Calls": 1.0, "Subrs": 7.0}  # file/module/line columns are all unknown in TAU's cpi: left out
    assert (doc["exclusive_metrics"], doc["inclusive_metrics"]) == (["time"], ["time (inc)"])


@pytest.mark.parametrize("name", [TAU, HPCTOOLKIT, RAJA])
def test_round_trip_of_real_profiles(shared_data, tmp_path, name):
    gf = read(shared_data(name))
    write_hatchet_json(gf, tmp_path / "run.json")
    back = read_hatchet_json(tmp_path / "run.json")
    assert_same(gf, back)
    for c in ("file", "module", "line"):  # frame attributes are part of identity: kept
        assert gf.dataframe[c].isna().equals(back.dataframe[c].isna())
    # a node-ordered (Caliper) graph comes back node-ordered: the export's metadata says so
    marker = {"caliper.node_order": True} if gf.graph.node_ordering else {}
    assert back.metadata == {**json.loads(json.dumps(gf.metadata, default=str)), **marker}
    assert back.graph.node_ordering == gf.graph.node_ordering
    assert [n.node_id for n in back.graph.traverse()] == [n.node_id for n in gf.graph.traverse()]


def test_round_trip_threads_nan_and_infinities(threaded):
    assert list(threaded.dataframe.index.names) == ["node", "rank", "thread"]
    assert_same(threaded, from_hatchet_json(to_hatchet_json(threaded)))
    special = literal.graphframe(literal.SPECIAL_GRAPH)  # flops: NaN, +inf, -inf; files present and missing
    doc = to_dict(special)
    flops = {r["name"]: r["flops"] for r in doc["dataframe"]}
    assert flops["mpi_send"] is None and flops["kernel_a"] == math.inf and flops["io"] == -math.inf
    back = from_hatchet_json(json.dumps(doc))
    assert rows(back, ["flops", "time"]) == rows(special, ["flops", "time"])
    assert sorted(n.node_id for n in back.graph) == sorted(n.node_id for n in special.graph)


def test_reads_hatchets_own_json_as_the_golden(shared_data, golden):
    """../shared/data/json is Hatchet's to_json of its mock literal; its golden was written by Hatchet 2026.2."""
    import golden as golden_check

    gf = read_hatchet_json(shared_data("json/hatchet-graph-literal.json"))
    golden_check.compare(gf, golden("hatchet-json"))
    assert (gf.exc_metrics, gf.inc_metrics) == (["time"], ["time (inc)"])
    # Hatchet's type 'None' (its placeholder for no type) reads as no type: the same ids as the literal itself
    mock = literal.graphframe(literal.MOCK_GRAPH)
    assert sorted(n.node_id for n in gf.graph) == sorted(n.node_id for n in mock.graph)


def test_from_hatchet_on_hatchet_shaped_objects_keeps_ids(shared_data, threaded):
    """A perflake GraphFrame has Hatchet's layout, so from_hatchet runs without Hatchet: same ids and values."""
    for gf in (read(shared_data(HPCTOOLKIT)), threaded, literal.graphframe(literal.MOCK_GRAPH)):
        assert_same(gf, from_hatchet(gf))


def test_from_hatchet_maps_hatchets_placeholders():
    """Hatchet's TAU reader writes 0 for an unknown file/module/line; its Frame writes type 'None'."""
    from perflake.readers.hatchet_layout import layout_rows

    columns = pd.DataFrame({"name": ["main", "f"], "file": [0, "a.c"], "module": [0, 0], "line": [0, 7],
                            "nid": [1, 2], "spot.channel": ["x", "y"], "time": [1.0, 2.0], "Calls": [1.0, 3.0]})
    rows_ = layout_rows([{"name": "main", "type": "None"}, {"name": "f", "type": "function"}], [-1, 0],
                        np.array([0, 1]), {}, columns, ["time"], [])
    frames = rows_.frames.to_pydict()
    assert frames["type"] == [None, "function"]
    assert frames["file"] == [None, "a.c"] and frames["module"] == [None, None] and frames["line"] == [None, 7]
    assert [(m.name, m.role) for m in rows_.metrics] == [("time", "exclusive"), ("Calls", "other")]


@pytest.mark.parametrize("mutate, problem", [
    (lambda d: "{not json", "not JSON"),
    (lambda d: json.dumps({k: v for k, v in d.items() if k != "graph"}), "no 'graph' key"),
    (lambda d: json.dumps({**d, "graph": [{"0": {"data": {"name": "a"}, "children": [7]}}]}), "child 7"),
    (lambda d: json.dumps({**d, "graph": [{"0": {"data": {"name": "a"}, "children": [1]},
                                           "1": {"data": {"name": "b"}, "children": [0]}}]}), "not reachable"),
    (lambda d: json.dumps({**d, "dataframe": [{"node": 99, "time": 1.0}]}), "node 99"),
    (lambda d: json.dumps({**d, "dataframe_indices": ["node", "profile"]}), "Thicket"),
])
def test_malformed_hatchet_json_is_a_reader_error(tmp_path, mutate, problem):
    doc = to_dict(literal.graphframe(literal.MPI_GRAPH))
    path = tmp_path / "bad.json"
    path.write_text(mutate(doc))
    with pytest.raises(ReaderError, match=f"^{path}: .*{problem}"):
        read_hatchet_json(path)


# -- Thicket JSON ---------------------------------------------------------------------------------------------
def test_thicket_json_unions_call_paths_by_id(threaded):
    a = literal.graphframe(literal.MOCK_GRAPH)
    b = literal.graphframe(literal.MPI_GRAPH)
    doc = to_thicket_dict({"a": a, "b": b}, sources={"a": "a.json"})
    (graph,) = doc["graph"]
    assert len(graph) == len(a.graph) + len(b.graph)  # disjoint call paths
    assert doc["dataframe_indices"] == ["node", "profile"]
    pa_, pb = thicket_profile("a"), thicket_profile("b")
    assert doc["profile"] == [pa_, pb] and doc["profile_mapping"] == {pa_: "a.json", pb: "b"}
    assert thicket_profile("a") == int(hashlib.md5(b"a").hexdigest()[:11], 16)  # Thicket.profile_hasher
    assert [m["run_id"] for m in doc["metadata"]] == ["a", "b"]
    assert len(doc["dataframe"]) == len(a.dataframe) + len(b.dataframe)
    keys = [(r["node"], r["profile"]) for r in doc["dataframe"]]
    assert keys == sorted(keys)  # Thicket's layout: by node, then profile
    same = to_thicket_dict({"x": a, "y": a.copy(), "t": threaded})
    assert len(same["graph"][0]) == len(a.graph) + len(threaded.graph)  # the same paths once
    assert same["dataframe_indices"] == ["node", "profile", "rank", "thread"]
    for i, spec in same["graph"][0].items():
        assert all(int(i) in same["graph"][0][str(c)]["parents"] for c in spec["children"])
    with pytest.raises(InteropError, match="no runs"):
        to_thicket_dict({})


# -- the real Hatchet and Thicket (.bench-venv) load our files ---------------------------------------------------
@pytest.fixture
def real_hatchet():
    need_bench_python()
    return hatchet_load.load


def hatchet_rows(report: dict, metrics) -> list:
    return sorted(((tuple(path), rank or 0, thread or 0, tuple(values.get(m) for m in metrics))
                   for path, rank, thread, _profile, values in report["rows"]), key=repr)


@pytest.mark.parametrize("name", [TAU, HPCTOOLKIT, RAJA, "threads", "special"])
def test_real_hatchet_reads_our_json_with_our_values(shared_data, tmp_path, threaded, real_hatchet, name):
    gf = {"threads": threaded, "special": literal.graphframe(literal.SPECIAL_GRAPH)}.get(name)
    gf = gf if gf is not None else read(shared_data(name))
    path = tmp_path / "run.json"
    write_hatchet_json(gf, path)
    report = real_hatchet("hatchet", path, gf.default_metric)
    assert report["index"] == list(gf.dataframe.index.names)
    assert (report["exc"], report["inc"]) == (gf.exc_metrics, gf.inc_metrics)
    assert (report["nodes"], report["roots"]) == (len(gf.graph), len(gf.graph.roots))
    metrics = [c for c in gf.dataframe.columns if c in gf.exc_metrics + gf.inc_metrics or c == "flops"]
    assert hatchet_rows(report, metrics) == rows(gf, metrics)  # every value bit for bit, NaN where NaN


def test_real_thicket_reads_our_ensemble(shared_data, tmp_path, real_hatchet):
    paths = sorted(shared_data("rajaperf-quartz").glob("*/O3/*/Base_Seq-default.cali"))
    runs = {f"trial{i}": read(p) for i, p in enumerate(paths)}
    write_thicket_json(runs, tmp_path / "ens.json", sources={k: str(p) for k, p in zip(runs, paths)})
    report = real_hatchet("thicket", tmp_path / "ens.json")
    assert report["index"] == ["node", "profile"] and report["profile"] == [thicket_profile(x) for x in runs]
    assert report["metadata_rows"] == len(runs)
    assert {"ProblemSizeRunParam", "run_id"} <= set(report["metadata_columns"])
    metric = "Avg time/rank"
    for label, gf in runs.items():
        got = sorted((tuple(p), v[metric]) for p, _, _, prof, v in report["rows"] if prof == thicket_profile(label))
        assert got == sorted((r[0], r[3][0]) for r in rows(gf, [metric]))


def test_real_thicket_reads_runs_with_ranks_and_threads(shared_data, tmp_path, threaded, real_hatchet):
    runs = {"tau": read_tau(shared_data(TAU)), "threads": threaded}
    write_thicket_json(runs, tmp_path / "ens.json")
    report = real_hatchet("thicket", tmp_path / "ens.json")
    assert report["index"] == ["node", "profile", "rank", "thread"]
    union = {n.node_id for gf in runs.values() for n in gf.graph}
    assert report["nodes"] == len(union) == len(runs["tau"].graph) + len(threaded.graph) - 1  # both: .TAU application
    for label, gf in runs.items():
        got = sorted(((tuple(p), r, t), v["time"]) for p, r, t, prof, v in report["rows"]
                     if prof == thicket_profile(label))
        assert got == sorted(((x[0], x[1], x[2]), x[3][0]) for x in rows(gf, ["time"]))


# -- to_hatchet: needs llnl-hatchet importable in this venv (it requires pandas<3: see perflake.interop.hatchet) ---
def test_to_hatchet_without_hatchet_says_how_to_install(monkeypatch):
    for mod in [m for m in sys.modules if m == "hatchet" or m.startswith("hatchet.")]:
        monkeypatch.delitem(sys.modules, mod)
    monkeypatch.setitem(sys.modules, "hatchet", None)
    with pytest.raises(InteropError, match=r"llnl-hatchet is not importable .*pandas<3.*pip install --no-deps"):
        to_hatchet(literal.graphframe(literal.MPI_GRAPH))


def test_to_hatchet_builds_hatchets_objects(shared_data, threaded):
    ht = pytest.importorskip("hatchet")
    for gf in (read(shared_data(TAU)), threaded):
        hgf = to_hatchet(gf)
        assert isinstance(hgf, ht.GraphFrame)
        assert list(hgf.dataframe.index.names) == list(gf.dataframe.index.names)
        assert (hgf.exc_metrics, hgf.inc_metrics, hgf.default_metric) == (gf.exc_metrics, gf.inc_metrics,
                                                                          gf.default_metric)
        theirs = list(hgf.graph.traverse())
        assert [n._hatchet_nid for n in theirs] == list(range(len(gf.graph)))
        assert [n.frame.attrs for n in theirs] == [n.frame.attrs for n in gf.graph]
        assert rows(from_hatchet(hgf)) == rows(gf)
        assert_same(gf, from_hatchet(hgf))


def test_from_hatchet_of_hatchets_tau_reader_gives_perflakes_ids(shared_data):
    """Hatchet's frames + its 0 placeholders map to the same call-path ids as perflake's own TAU reader."""
    ht = pytest.importorskip("hatchet")
    ours = read_tau(shared_data(TAU))
    theirs = from_hatchet(ht.GraphFrame.from_tau(str(shared_data(TAU))))
    assert sorted(n.node_id for n in theirs.graph) == sorted(n.node_id for n in ours.graph)
    assert rows(theirs, ["time", "time (inc)"]) == rows(ours, ["time", "time (inc)"])


# -- perflake export ------------------------------------------------------------------------------------------
def test_cli_export_one_run_several_runs_and_thicket(shared_data, tmp_path, capsys):
    tau = shared_data(TAU)
    assert main(["export", str(tau), "-o", str(tmp_path / "tau.json")]) == 0
    assert_same(read(tau), read_hatchet_json(tmp_path / "tau.json"))
    paths = [str(p) for p in sorted(shared_data("rajaperf-quartz").glob("*/O3/1/Base_Seq-default.cali"))]
    assert main(["export", *paths, "-o", str(tmp_path / "out")]) == 0
    written = sorted((tmp_path / "out").glob("*.json"))
    assert len(written) == 2 and all(len(p.stem) == 16 for p in written)  # named by the run id a lake would give
    assert main(["export", *paths, "--to", "thicket-json", "-o", str(tmp_path / "ens.json")]) == 0
    doc = json.loads((tmp_path / "ens.json").read_text())
    assert sorted(m["run_id"] for m in doc["metadata"]) == [p.stem for p in written]
    assert sorted(doc["profile"]) == sorted(thicket_profile(p.stem) for p in written)
    assert sorted(doc["profile_mapping"].values()) == sorted(paths)
    assert "exported 2 runs as thicket-json" in capsys.readouterr().out


def test_cli_export_from_a_lake(shared_data, lake, tmp_path):
    lake.ingest([shared_data(TAU), shared_data(HPCTOOLKIT)])
    ids = sorted(lake.runs()["run_id"])
    assert main(["export", ids[0][:8], ids[1], "--lake", lake.root, "-o", str(tmp_path / "d")]) == 0
    for rid in ids:
        assert_same(lake.graphframe(rid), read_hatchet_json(tmp_path / "d" / f"{rid}.json"))


def test_cli_export_errors_are_one_line(shared_data, tmp_path, capsys):
    (tmp_path / "file").write_text("x")
    cases = [
        (["export", str(tmp_path / "nothing"), "-o", str(tmp_path / "x.json")], "no such file or directory"),
        (["export", str(shared_data(TAU)), "-o", str(tmp_path / "no" / "x.json")], "cannot write"),
        (["export", str(shared_data(TAU)), str(shared_data(HPCTOOLKIT)), "-o", str(tmp_path / "file")],
         "is not a directory"),
    ]
    for argv, message in cases:
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("perflake: ") and message in err and len(err.splitlines()) == 1
    assert not (tmp_path / "no").exists()
