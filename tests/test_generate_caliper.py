"""Tests of the Caliper json-split writer (perflake.generators.caliper), read back with the json-split reader."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import golden as golden_check
from perflake.frame.graphframe import GraphFrame
from perflake.generators import inclusive_from_exclusive, make_metrics, make_tree, perturb
from perflake.generators.caliper import COLUMNS, write_caliper_json_runs
from perflake.ingest.normalize import normalize
from perflake.readers.base import ProfileRows
from perflake.readers.caliper_json import Reader
from venv_report import run_json


@pytest.fixture(scope="module")
def ensemble(tmp_path_factory):
    out = tmp_path_factory.mktemp("caliper")
    return out, write_caliper_json_runs(out, nodes=300, ranks=16, runs=3, seed=11)


def _model(k, *, nodes=300, ranks=16, seed=11):
    """The tree and metrics run k of write_caliper_json_runs describes."""
    base = make_tree(nodes, seed=seed)
    tree = base if k == 0 else perturb(base, seed=seed * 1000 + k)
    return tree, make_metrics(tree, ranks, seed=seed * 1000 + k + 500, app_seed=seed)


def _by_node_rank(rows: ProfileRows, metric: str) -> np.ndarray:
    """[node, rank] array of one metric (every node has a record on every rank)."""
    v = rows.values
    out = np.full((rows.frames.num_rows, int(max(v.column("rank").to_pylist())) + 1), np.nan)
    out[v.column("local_id").to_numpy(), v.column("rank").to_numpy()] = v.column(metric).to_numpy()
    return out


def test_files_have_the_json_split_layout(ensemble):
    out, paths = ensemble
    assert [p.name for p in paths] == ["run-000.json", "run-001.json", "run-002.json"]
    text = paths[0].read_text()
    assert text.startswith('{\n    "data": [\n        [ ') and Reader.sniff(str(paths[0]))
    doc = json.loads(text)
    assert list(doc)[:4] == ["data", "columns", "column_metadata", "nodes"] and doc["columns"] == COLUMNS
    assert [m["is_value"] for m in doc["column_metadata"]] == [True, True, True, False]
    assert all(isinstance(v, str) for k, v in doc.items() if k not in ("data", "columns", "column_metadata", "nodes"))
    tree, _ = _model(0)
    assert [n["label"] for n in doc["nodes"]] == tree.names
    assert [n.get("parent", -1) for n in doc["nodes"]] == tree.parent.tolist()
    assert all(n["column"] == "path" for n in doc["nodes"])
    # one row per node and rank plus one row per rank outside every region (null path), as Caliper writes
    assert len(doc["data"]) == 16 * (len(tree) + 1) and [r[3] for r in doc["data"][:16]] == [None] * 16


@pytest.mark.parametrize("k", [0, 1, 2])
def test_read_back_matches_the_model(ensemble, k):
    tree, m = _model(k)
    rows = Reader().read(str(ensemble[1][k]))
    assert rows.frames.column("name").to_pylist() == tree.names
    assert rows.frames.column("parent_local").to_pylist() == tree.parent.tolist()
    assert rows.values.num_rows == 16 * len(tree) and rows.metadata["caliper.rows_without_path"] == 16
    assert [(x.name, x.role, x.unit) for x in rows.metrics] == [("time (inc)", "inclusive", "sec"),
                                                                 ("time", "exclusive", "sec")]
    exc, inc = _by_node_rank(rows, "time"), _by_node_rank(rows, "time (inc)")
    np.testing.assert_allclose(exc, m.exclusive / 1e6, rtol=1e-12)
    np.testing.assert_allclose(exc.sum(axis=0), m.exclusive.sum(axis=0) / 1e6, rtol=1e-9)
    # inclusive = own exclusive + all descendants' exclusive; the root's is the sum over the whole tree
    np.testing.assert_allclose(inc, inclusive_from_exclusive(tree, exc), rtol=1e-9)
    np.testing.assert_allclose(inc[0], exc.sum(axis=0), rtol=1e-9)


def test_normalize_derives_the_inclusive_the_file_holds(ensemble):
    rows = Reader().read(str(ensemble[1][1]))
    exclusive_only = ProfileRows(rows.format, rows.source, rows.frames, rows.values.drop_columns(["time (inc)"]),
                                 [x for x in rows.metrics if x.name != "time (inc)"], rows.metadata)
    derived, stored = normalize(exclusive_only).metrics, normalize(rows).metrics
    assert derived.column("node_id").equals(stored.column("node_id"))
    assert derived.column("rank").equals(stored.column("rank"))
    np.testing.assert_allclose(derived.column("time (inc)").to_numpy(), stored.column("time (inc)").to_numpy(),
                               rtol=1e-9)


def test_runs_differ_a_little(ensemble):
    names = [Reader().read(str(p)).frames.column("name").to_pylist() for p in ensemble[1]]
    assert names[0] != names[1] and names[1] != names[2]
    assert abs(len(names[1]) - len(names[0])) <= 0.05 * len(names[0])


def test_metadata_is_typed(ensemble):
    meta = Reader().read(str(ensemble[1][0])).metadata
    assert meta["mpi.world.size"] == 16 and meta["jobsize"] == 16 and isinstance(meta["launchdate"], int)
    assert meta["cali.caliper.version"] == "2.10.0" and isinstance(meta["cmdline"], list)
    assert isinstance(meta["elapsed_time"], float) and meta["elapsed_time"] > 0  # not a timing


def test_same_seed_gives_identical_bytes(tmp_path):
    a = write_caliper_json_runs(tmp_path / "a", nodes=80, ranks=3, runs=2, seed=4)
    b = write_caliper_json_runs(tmp_path / "b", nodes=80, ranks=3, runs=2, seed=4)
    c = write_caliper_json_runs(tmp_path / "c", nodes=80, ranks=3, runs=2, seed=5)
    assert [p.read_bytes() for p in a] == [p.read_bytes() for p in b]
    assert a[0].read_bytes() != c[0].read_bytes()


@pytest.mark.parametrize("nodes, ranks", [(1, 1), (2, 1), (3, 2)])
def test_tiny_runs(tmp_path, nodes, ranks):
    (path,) = write_caliper_json_runs(tmp_path, nodes=nodes, ranks=ranks)
    rows = Reader().read(str(path))
    assert rows.frames.num_rows == nodes and rows.values.num_rows == nodes * ranks


def test_bad_arguments(tmp_path):
    with pytest.raises(ValueError):
        write_caliper_json_runs(tmp_path, nodes=0, ranks=1)
    assert write_caliper_json_runs(tmp_path, nodes=5, ranks=1, runs=0) == []


def test_benchmark_size(tmp_path):
    """1000 nodes x 256 ranks: the size the reader's speed target is set for."""
    (path,) = write_caliper_json_runs(tmp_path, nodes=1000, ranks=256)
    rows = Reader().read(str(path))
    assert rows.frames.num_rows == 1000 and rows.values.num_rows == 256_000
    assert rows.values.column("rank").to_numpy().max() == 255




def test_hatchet_reads_it_too(tmp_path, bench_python):
    """llnl-hatchet's from_caliper reads the generated file: every call path, rank and value as ours."""
    (path,) = write_caliper_json_runs(tmp_path, nodes=60, ranks=3, seed=2)
    script = (
        "import sys, json, hatchet\n"
        "gf = hatchet.GraphFrame.from_caliper(sys.argv[1], node_ordering=False)\n"  # B.14: no Node order column
        "paths, todo = {}, [(root, ()) for root in gf.graph.roots]\n"  # its reader sets children, not parents
        "while todo:\n"
        "    node, above = todo.pop()\n"
        "    paths[id(node)] = above + (node.frame['name'],)\n"
        "    todo += [(child, paths[id(node)]) for child in node.children]\n"
        "df = gf.dataframe.reset_index()\n"
        "rows = [[paths[id(node)], int(r), t, i] for node, r, t, i in zip(df['node'], df['rank'], df['time'], df['time "
        "(inc)'])]\nprint(json.dumps({'nodes': len(gf.graph), 'rows': rows}))\n"
    )
    got = run_json([str(bench_python), "-c", script, str(path)], 120)
    theirs = pd.DataFrame([(tuple(p), r, t, i) for p, r, t, i in got["rows"]],
                          columns=["callpath", "rank", "time", "time (inc)"])
    rows = Reader().read(str(path))
    n = normalize(rows)
    gf = GraphFrame.from_tables(n.nodes, n.metrics, n.metric_info, rows.metadata)
    assert got["nodes"] == len(gf.graph) == 60 and len(theirs) == len(gf.dataframe) == 180
    golden_check.compare(gf, theirs)
