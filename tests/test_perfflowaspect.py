"""PerfFlowAspect traces (issue 15): perflake's reader (a call-path profile: calls of a call path merged, per
process and thread) checked against the generator's ground truth, and ``GraphFrame.from_perfflowaspect``
(Hatchet's one-node-per-event view) compared with llnl-hatchet 2026.2.0 in .bench-venv on the same generated
traces (verbose B/E, compact X with cpu/memory counters, the closed object layout).  ../shared has no
PerfFlowAspect data: the traces come from perflake.generators.perfflowaspect, written as PerfFlowAspect writes
them (an array left open)."""

from __future__ import annotations

import json
from collections import defaultdict

import numpy as np
import pytest

import hatchet_load
from conftest import need_bench_python
from perflake import GraphFrame, read
from perflake.errors import ReaderError
from perflake.generators.perfflowaspect import make_calls, write_perfflowaspect_trace
from perflake.readers import detect
from perflake.readers.perfflowaspect import Reader

SHAPES = {"verbose": dict(layout="verbose", seed=1), "compact": dict(layout="compact", seed=2, counters=True),
          "object": dict(layout="object", seed=3, repeats=3),
          "threads": dict(layout="compact", seed=4, processes=2, threads=2)}


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    folder = tmp_path_factory.mktemp("pfw")
    return {k: write_perfflowaspect_trace(folder / f"perfflow.node17.{k}.pfw", **shape) for k, shape in SHAPES.items()}


def _truth(shape: dict):
    calls = make_calls(shape.get("seed", 0), **{k: v for k, v in shape.items() if k in
                                               ("processes", "threads", "depth", "fanout", "repeats")})
    inc, count = defaultdict(float), defaultdict(int)
    for c in calls:
        inc[(c.path, c.pid, c.tid)] += c.dur * 1e-6
        count[(c.path, c.pid, c.tid)] += 1
    return inc, count


@pytest.mark.parametrize("shape", list(SHAPES))
def test_profile_sums_the_calls_of_each_call_path(traces, shape):
    path = traces[shape]
    assert detect(path) == "perfflowaspect"
    gf = read(path)
    inc, count = _truth(SHAPES[shape])
    locs = {(d["rank"], d["thread"]): (d["pid"], d["tid"]) for d in gf.metadata["perfflowaspect.locations"]}
    df = gf.dataframe.reset_index()
    if "rank" not in df:
        df["rank"], df["thread"] = 0, 0
    got_inc, got_count = {}, {}
    for node, r, t, v, n in zip(df["node"], df["rank"], df["thread"], df["time (inc)"], df["count"]):
        if np.isnan(v):
            continue
        key = (tuple(x.frame["name"] for x in node.path()), *locs[(r, t)])
        got_inc[key], got_count[key] = v, n
    assert got_inc == pytest.approx(dict(inc), rel=1e-12)
    assert got_count == dict(count)
    # exclusive time: a call path's own time, its calls' durations minus those of the calls they make
    exc = {k: v - sum(w for (p, *loc), w in inc.items() if p[:-1] == k[0] and tuple(loc) == k[1:])
           for k, v in inc.items()}
    got_exc = {}
    for node, r, t, v in zip(df["node"], df["rank"], df["thread"], df["time"]):
        if not np.isnan(v):
            got_exc[(tuple(x.frame["name"] for x in node.path()), *locs[(r, t)])] = v
    assert got_exc == pytest.approx(exc, rel=1e-9, abs=1e-12)


def test_reader_errors_name_the_file(tmp_path):
    cases = {"empty.pfw": "", "text.pfw": "hello", "neg.pfw": '[{"name": "a", "ph": "X", "ts": 1, "dur": -5},',
             "noname.pfw": '[{"ph": "X", "ts": 1, "dur": 5},', "none.pfw": '[{"name": "c", "ph": "C", "ts": 1},',
             "deep.pfw": "[" * 100_000 + "]" * 100_000}
    for name, text in cases.items():
        (tmp_path / name).write_text(text)
        with pytest.raises(ReaderError) as info:
            Reader().read(str(tmp_path / name))
        assert name in str(info.value)


def test_unended_begin_is_dropped_and_counted(tmp_path):
    path = tmp_path / "open.pfw"
    path.write_text('[\n{"name": "main", "ph": "B", "ts": 0, "pid": 1, "tid": 1},\n'
                    '{"name": "a", "ph": "B", "ts": 10, "pid": 1, "tid": 1},\n'
                    '{"name": "a", "ph": "E", "ts": 30, "pid": 1, "tid": 1},\n')
    rows = Reader().read(str(path))
    assert rows.frames.column("name").to_pylist() == ["a"] and rows.metadata["perfflowaspect.unclosed"] == 1
    assert rows.values.column("time (inc)").to_pylist() == [pytest.approx(20e-6)]


HATCHET_CODE = """
import json
from hatchet import GraphFrame
out = {{}}
for name, path, scan in {cases!r}:
    gf = GraphFrame.from_perfflowaspect(path, scan)
    df = gf.dataframe
    out[name] = {{
        "columns": [str(c) for c in df.columns],
        "dtypes": {{str(c): str(t) for c, t in df.dtypes.items()}},
        "rows": [[str(n.frame["name"]), n._hatchet_nid] + [None if v != v else v for v in r]
                 for n, r in zip(df.index, df.itertuples(index=False))],
        "paths": sorted("/".join(str(x.frame["name"]) for x in n.path()) + "@" + repr(n.frame["ts"])
                        for n in gf.graph.traverse()),
        "children": [[repr(c.frame["ts"]) for c in n.children] for n in gf.graph.traverse()],
        "groups": len(df.groupby("name")),
        "metadata": gf.metadata,
    }}
try:
    GraphFrame.from_perfflowaspect({plain!r}, True)
    out["no_stats"] = None
except ValueError as exc:
    out["no_stats"] = str(exc)
result = pd.DataFrame([[json.dumps(out)]], columns=["out"])
"""

VIEWS = [("verbose", False), ("compact", False), ("compact", True), ("object", False)]


@pytest.fixture(scope="module")
def hatchet_views(traces):
    need_bench_python()
    cases = [(f"{k}-{scan}", str(traces[k]), scan) for k, scan in VIEWS]
    code = HATCHET_CODE.format(cases=cases, plain=str(traces["verbose"]))
    return json.loads(hatchet_load.recipe(code)["frame"]["values"][0][0])


def _view(gf) -> dict:
    df = gf.dataframe
    return {
        "columns": [str(c) for c in df.columns],
        "dtypes": {str(c): str(t) for c, t in df.dtypes.items()},
        "rows": [[str(n.frame["name"]), n._hatchet_nid] + [None if v != v else v for v in r]
                 for n, r in zip(df.index, df.itertuples(index=False))],
        "paths": sorted("/".join(str(x.frame["name"]) for x in n.path()) + "@" + repr(n.frame["ts"])
                        for n in gf.graph.traverse()),
        "children": [[repr(c.frame["ts"]) for c in n.children] for n in gf.graph.traverse()],
        "groups": len(df.groupby("name")),
        "metadata": gf.metadata,
    }


@pytest.mark.parametrize("kind,scan", VIEWS)
@pytest.mark.parametrize("what", ["columns", "dtypes", "rows", "paths", "children", "groups", "metadata"])
def test_view_is_hatchets(traces, hatchet_views, kind, scan, what):
    ours = json.loads(json.dumps(_view(GraphFrame.from_perfflowaspect(str(traces[kind]), scan))))
    assert ours[what] == hatchet_views[f"{kind}-{scan}"][what]


def test_view_without_statistics_is_a_value_error(traces, hatchet_views):
    with pytest.raises(ValueError, match="No statistics in the provided file!") as info:
        GraphFrame.from_perfflowaspect(str(traces["verbose"]), True)
    assert str(info.value) == hatchet_views["no_stats"]


def test_view_times_are_seconds(traces):
    """Hatchet's timestamp test: ``ts``/``dur`` are the file's microseconds in seconds."""
    gf = GraphFrame.from_perfflowaspect(str(traces["object"]))
    raw = json.loads(traces["object"].read_text())["traceEvents"]
    assert sorted(gf.dataframe["ts"]) == pytest.approx(sorted(e["ts"] * 1e-6 for e in raw if e["ph"] == "X"))
    assert gf.default_metric == "dur" and "dur" in gf.exc_metrics and "name" not in gf.exc_metrics
