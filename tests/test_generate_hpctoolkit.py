"""The synthetic HPCToolkit database writer (perflake.generators.hpctoolkit), read back with our reader."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from perflake.generators import make_metrics, make_tree
from perflake.generators.hpctoolkit import write_hpctoolkit_runs
from perflake.ingest.normalize import normalize
from perflake.readers.hpctoolkit import Reader
from venv_report import run_json


def table(d) -> tuple[pd.DataFrame, pd.DataFrame]:
    rows = Reader().read(d)
    return rows.frames.to_pandas(), rows.values.to_pandas()


def xml_counts(d) -> dict[str, int]:
    text = (Path(d) / "experiment.xml").read_text()
    return {tag: len(re.findall(rf"<{tag} ", text)) for tag in ("PF", "C", "L", "S")}


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    out = tmp_path_factory.mktemp("hpct")
    return write_hpctoolkit_runs(out, nodes=300, ranks=3, runs=2, seed=5, threads=2)


def test_layout_and_node_count(db):
    assert [d.name for d in db] == ["run-000", "run-001"]
    names = sorted(p.name for p in db[0].iterdir())
    assert names[-1] == "experiment.xml" and len(names) == 1 + 3 * 2
    assert all(re.fullmatch(r"1\.xhpcg-\d{6}-\d{3}-[0-9a-f]{8}-\d+-0\.metric-db", n) for n in names[:-1])
    frames, values = table(db[0])
    c = xml_counts(db[0])
    # 300 model nodes + <program root>
    assert c["PF"] == 301 and c["C"] == 300 and c["S"] == 300 + c["L"] and c["L"] > 0
    assert len(frames) == c["PF"] + c["L"] + c["S"]  # call sites are not nodes
    assert len(values) == len(frames) * 6
    assert sorted(set(zip(values["rank"], values["thread"]))) == [(r, t) for r in range(3) for t in range(2)]
    n = normalize(Reader().read(db[0]))
    assert n.nodes.num_rows == len(frames)  # no two siblings share a frame
    assert set(frames["type"]) == {"function", "loop", "statement"}


def test_inclusive_and_exclusive_are_consistent(db):
    for d in db:
        frames, values = table(d)
        parent = frames.set_index("local_id")["parent_local"]
        v = values.assign(parent=parent.loc[values["local_id"]].to_numpy())
        kids = v[v["parent"] >= 0].groupby(["parent", "rank", "thread"])["time (inc)"].sum()
        own = v.set_index(["local_id", "rank", "thread"])
        expect = own["time"] + kids.reindex(own.index, fill_value=0).to_numpy()
        np.testing.assert_array_equal(own["time (inc)"].to_numpy(), expect.to_numpy())  # inc = exc + children inc
        assert (values["time"] >= 0).all()
        per_loc = values.groupby(["rank", "thread"])["time"].sum()
        root = values[values["local_id"] == 0].set_index(["rank", "thread"])["time (inc)"]
        np.testing.assert_array_equal(per_loc.sort_index().to_numpy(), root.sort_index().to_numpy())


def test_values_follow_the_model(db):
    frames, values = table(db[0])
    m = make_metrics(make_tree(300, seed=5), 3, seed=5500, n_threads=2, app_seed=5)
    main = frames.index[frames["name"] == "main"][0]
    got = values[values["local_id"] == main].sort_values(["rank", "thread"])["time (inc)"].to_numpy()
    np.testing.assert_array_equal(got, m.inclusive[0])
    # every model node's exclusive time is carried by its statements
    total = values.groupby(["rank", "thread"])["time"].sum().sort_index().to_numpy()
    np.testing.assert_array_equal(total, m.exclusive.sum(axis=0))


def test_perturbed_run_shares_most_call_paths(db):
    ids = [set(normalize(Reader().read(d)).nodes.column("node_id").to_pylist()) for d in db]
    assert ids[0] != ids[1] and len(ids[0] & ids[1]) > 0.9 * len(ids[0])


def test_same_seed_same_bytes_and_stale_files_removed(tmp_path):
    a = write_hpctoolkit_runs(tmp_path / "a", nodes=80, ranks=2, runs=2, seed=3)
    b = write_hpctoolkit_runs(tmp_path / "b", nodes=80, ranks=2, runs=2, seed=3)
    for da, dbb in zip(a, b):
        fa, fb = sorted(p.name for p in da.iterdir()), sorted(p.name for p in dbb.iterdir())
        assert fa == fb
        assert all((da / f).read_bytes() == (dbb / f).read_bytes() for f in fa)
    c = write_hpctoolkit_runs(tmp_path / "c", nodes=80, ranks=2, seed=4)
    assert (c[0] / "experiment.xml").read_bytes() != (a[0] / "experiment.xml").read_bytes()
    write_hpctoolkit_runs(tmp_path / "a", nodes=80, ranks=1, seed=3)
    assert len(list(a[0].glob("*.metric-db"))) == 1
    assert Reader.sniff(a[0])


def test_bad_arguments():
    with pytest.raises(ValueError):
        write_hpctoolkit_runs("/nonexistent", nodes=0, ranks=1)


def test_hatchet_reads_it_too(tmp_path, bench_python):
    """llnl-hatchet's from_hpctoolkit reads the same database: same nodes, same inclusive time."""
    d = write_hpctoolkit_runs(tmp_path, nodes=60, ranks=2, seed=2, threads=2)[0]
    script = (
        "import sys, json, hatchet\n"
        "gf = hatchet.GraphFrame.from_hpctoolkit(sys.argv[1])\n"
        "df = gf.dataframe.reset_index()\n"
        "print(json.dumps({'shape': list(gf.dataframe.shape), 'nodes': len(gf.graph),"
        " 'inc': float(df['time (inc)'].sum()), 'exc': float(df['time'].sum())}))\n"
    )
    got = run_json([str(bench_python), "-c", script, str(d)], 120)
    frames, values = table(d)
    assert got["nodes"] == len(frames) and got["shape"][0] == len(values)
    assert got["inc"] == values["time (inc)"].sum()
    # formats.md B.2: Hatchet counts statements inside loops twice (in the loop's PF and in the statement)
    assert got["exc"] > values["time"].sum()
