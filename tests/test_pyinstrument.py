"""pyinstrument's JSON (readers/pyinstrument.py): Hatchet's ``from_pyinstrument`` node by node (call path of
names, ``time``/``time (inc)``, tests/golden.py's comparison) on JSON written by the real pyinstrument at test
time, hand-computed sessions rendered by pyinstrument's own JSONRenderer, deep recursion, damaged files and
ingest's directory scan.  Deviations from Hatchet are explained in readers/pyinstrument.py."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import hatchet_callgraph
import pyprofiles
from golden import compare
from perflake import GraphFrame, Lake, read_pyinstrument
from perflake.errors import ReaderError
from perflake.ingest.scan import scan
from perflake.readers import detect, get_reader


def _against_hatchet(path, bench_python):
    report = hatchet_callgraph.load("pyinstrument", path, python=bench_python)
    gold = pd.DataFrame([{"callpath": tuple(n["path"]), "time": n["row"]["time"], "time (inc)": n["row"]["time (inc)"]}
                         for n in report["nodes"]])
    gf = GraphFrame.from_pyinstrument(str(path))
    ours = compare(gf, gold, rtol=1e-12)
    assert len(ours) == len(gold.groupby("callpath")) and len(list(gf.graph.traverse())) == len(report["nodes"])
    return gf, report


def test_a_real_pyinstrument_run_matches_hatchet(tmp_path, bench_python):
    path = pyprofiles.write_pyinstrument(tmp_path / "run.json")
    assert detect(path) == "pyinstrument"
    gf, report = _against_hatchet(path, bench_python)
    assert len(report["nodes"]) > 5
    doc = json.loads(path.read_text())
    assert gf.metadata["sample_count"] == doc["sample_count"] and "root_frame" not in gf.metadata


@pytest.mark.parametrize("processed", [False, True])
def test_a_rendered_session_matches_hatchet(tmp_path, bench_python, processed):
    path = tmp_path / "session.json"
    path.write_text(pyprofiles.pyinstrument_json(pyprofiles.SESSION, processed=processed))
    _against_hatchet(path, bench_python)


def test_hand_computed_session(tmp_path):
    """main 0.9375 s in all: solve 0.75 (kernel 0.5 of it), io 0.125, main itself 0.0625 (pyinstrument's
    ``[self]`` frames hold the self time, so the frames above them get 0 exclusive)."""
    path = tmp_path / "session.json"
    path.write_text(pyprofiles.pyinstrument_json(pyprofiles.SESSION))
    gf = read_pyinstrument(path)
    got = {tuple(n.frame["name"] for n in _path(node)): (gf.dataframe.loc[node, "time (inc)"],
                                                         gf.dataframe.loc[node, "time"],
                                                         gf.dataframe.loc[node, "file"], gf.dataframe.loc[node, "line"])
           for node in gf.graph.traverse()}
    assert got == {
        ("main",): (0.9375, 0.0, "app.py", 1),
        ("main", "solve"): (0.75, 0.0, "app.py", 10),
        ("main", "solve", "kernel"): (0.5, 0.0, "k.py", 3),
        ("main", "solve", "kernel", "[self]"): (0.5, 0.5, "k.py", 0),
        ("main", "solve", "[self]"): (0.25, 0.25, "app.py", 0),
        ("main", "io"): (0.125, 0.0, "io.py", 7),
        ("main", "io", "[self]"): (0.125, 0.125, "io.py", 0),
        ("main", "[self]"): (0.0625, 0.0625, "app.py", 0),
    }
    assert gf.default_metric == "time (inc)"


def _path(node):
    out = []
    while node is not None:
        out.append(node)
        node = node.parents[0] if node.parents else None
    return out[::-1]


def test_deep_recursion_beyond_the_json_modules_limit(tmp_path):
    """1,500 nested frames nest the JSON ~3,000 deep: Python's json (and so Hatchet) raises RecursionError."""
    # written as pyinstrument's JSONRenderer writes frames (its own Frame tree recurses too deep to build this)
    text = '{"start_time": 1.0,"duration": 1.0,"sample_count": 1,"root_frame": '
    for i in range(1500):
        text += (f'{{"function": "f{i}","file_path_short": "deep.py","file_path": "/x/deep.py","line_no": {i + 1},'
                 '"time": 1.000000,"await_time": 0.000000,"is_application_code": true,"children": [')
    text += '{"function": "[self]","file_path_short": "","file_path": "","line_no": 0,"time": 1.000000,"children": []}'
    text += "]}" * 1500 + "}"
    with pytest.raises(RecursionError):
        json.loads(text)
    path = tmp_path / "deep.json"
    path.write_text(text)
    rows = get_reader("pyinstrument").read(str(path))
    assert rows.frames.num_rows == 1501  # 1,500 frames and the deepest one's [self]
    assert rows.frames.column("parent_local").to_pylist() == list(range(-1, 1500))
    assert set(rows.values.column("time (inc)").to_pylist()) == {1.0}


@pytest.mark.parametrize("text,why", [
    ("", "empty"),
    ('{"start_time": 1.0, "root_frame": null}', "no samples"),
    ('{"start_time": 1.0, "root_frame": {"function": "main", "time": 1.0, "children": [{"function": "x"}]}}',
     "not a list of frames"),
    ('{"start_time": 1.0, "root_frame": {"function": 3, "time": 1.0}}', "no 'function' text"),
    ('{"start_time": 1.0, "root_frame": {"function": "m", "time": 1.0, "children": []}', "not JSON"),
    ('[1, 2]', "no top-level 'root_frame'"),
    ('{"root_frame": {"function": "\\ud800", "time": 1.0}}', "surrogate"),
])
def test_damaged_files_are_one_line_errors(tmp_path, text, why):
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(ReaderError, match=why) as info:
        get_reader("pyinstrument").read(str(path))
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_ingest_picks_up_pyinstrument_json_and_reports_a_damaged_one(tmp_path):
    folder = tmp_path / "runs"
    folder.mkdir()
    text = pyprofiles.pyinstrument_json(pyprofiles.SESSION)
    (folder / "good.json").write_text(text)
    (folder / "cut.json").write_text(text[:40])  # cut before root_frame: no reader recognises it
    (folder / "other.json").write_text('{"a": 1}')
    found = scan([folder])
    assert [(k, Path(p).name) for k, p, _ in found.runs] == [("pyinstrument", "good.json")]
    assert [(Path(p).name, "pyinstrument's keys that no reader accepts" in why) for p, why in found.unrecognised] \
        == [("cut.json", True)]
    lake = Lake(tmp_path / "lake")
    assert len(lake.ingest([folder]).ingested) == 1 and lake.runs()["n_nodes"].tolist() == [8]
