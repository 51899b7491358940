"""cProfile / profile ``.pstats`` files (readers/cprofile.py, readers/pstats_marshal.py, readers/call_graph.py):
Hatchet's ``from_cprofile`` node by node on files the real profilers write at test time (tests/pyprofiles.py:
recursion, mutual recursion, a function with two callers), hand-counted calls, a Python 2 file, damaged
files and ingest's directory scan.

Hatchet's deviations (each explained in readers/cprofile.py): a call graph there, a tree here (one node per
function under its heaviest caller, the other call edges in the metadata); built-ins' ``~``/0 are no file/line.
"""

from __future__ import annotations

import marshal
import math
import struct
from pathlib import Path

import pytest

import hatchet_callgraph
import pyprofiles
from perflake import GraphFrame, Lake, read_cprofile
from perflake.errors import ReaderError
from perflake.ingest.scan import scan
from perflake.readers import detect, get_reader

METRICS = ["time", "time (inc)", "numcalls", "nativecalls"]


def _key(attrs, row):
    """Our node as Hatchet's (name, file, line): a built-in has file '~' and line 0 there."""
    file = row["file"] if isinstance(row["file"], str) else "~"
    line = (0 if row["line"] is None or (isinstance(row["line"], float) and math.isnan(row["line"]))
            else int(row["line"]))
    return attrs["name"], file, line


def _hatchet_key(node):
    r = node["row"]
    return r["name"], r["file"], r["line"]


def _label(key):  # the metadata's edge labels: "name (file:line)"
    return f"{key[0]} ({key[1]}:{key[2]})"


def _compare(path, bench_python):
    report = hatchet_callgraph.load("cprofile", path, python=bench_python)
    gf = GraphFrame.from_cprofile(str(path))
    ours, edges, tree = hatchet_callgraph.compare_call_graph(gf, report, _key, _hatchet_key, METRICS)
    meta = gf.metadata["call_graph"]
    labels = {_label(k): k for k in ours}
    off = {(labels[a], labels[b]) for a, b in meta["edges_not_in_tree_list"]}
    assert off | tree == edges and not off & tree and meta["call_edges"] == len(edges)
    return gf, ours, off


@pytest.mark.parametrize("deterministic", [True, False])
def test_cprofile_of_the_workload_matches_hatchet(tmp_path, bench_python, deterministic):
    path = pyprofiles.write_pstats(tmp_path / "workload.pstats", deterministic=deterministic)
    assert detect(path) == "cprofile"
    gf, ours, off = _compare(path, bench_python)
    f = pyprofiles.WORKLOAD_FILE
    node = {k[0]: n for k, n in ours.items()}
    calls = {name: (gf.dataframe.loc[n, "numcalls"], gf.dataframe.loc[n, "nativecalls"]) for name, n in node.items()}
    # hand-counted over main() = 3 x work() + squares(100): fib(12) makes 465 calls, 1 of them primitive;
    # even(15)/odd(14)... alternate down to odd(0): 8 calls each, 1 primitive; squares: 3 + 9 relax + 1
    assert calls["fib"] == (3, 3 * 465) and calls["even"] == (3, 24) and calls["odd"] == (3, 24)
    assert calls["squares"] == (3 + 9 + 1, 3 + 9 + 1) and calls["main"] == (1, 1) and calls["relax"] == (3, 3)
    parent = {name: n.parents[0].frame["name"] if n.parents else None for name, n in node.items()}
    assert parent["main"] is None and parent["work"] == "main" and parent["fib"] == "work"
    assert parent["even"] == "work" and parent["odd"] == "even"  # the cycle even <-> odd: entered from work
    # recursion and the back edge of the cycle: not tree edges, kept in the metadata
    assert ((("fib", f, 1), ("fib", f, 1)) in off) and ((("odd", f, 9), ("even", f, 5)) in off)
    assert gf.metadata["pstats"]["total_calls"] == sum(int(c[1]) for c in calls.values())


def test_the_pure_python_profile_module(tmp_path, bench_python):
    """``profile.Profile`` stores callers as call counts, not (nc, cc, tt, ct): the tree then follows counts."""
    import profile

    main = pyprofiles._workload_main()
    ticks = iter(range(1 << 62))
    prof = profile.Profile(lambda: next(ticks) * 1e-6)
    prof.runcall(main)
    prof.dump_stats(tmp_path / "pure.pstats")
    gf, ours, _ = _compare(tmp_path / "pure.pstats", bench_python)
    assert {k[0] for k in ours} >= {"main", "work", "fib", "even", "odd"}


def _py2(obj, interned: dict) -> bytes:
    """Python 2's marshal (version 2) of ``obj``: str as interned 't' once, then 'R' references."""
    if isinstance(obj, dict):
        return b"{" + b"".join(_py2(k, interned) + _py2(v, interned) for k, v in obj.items()) + b"0"
    if isinstance(obj, tuple):
        return b"(" + struct.pack("<i", len(obj)) + b"".join(_py2(x, interned) for x in obj)
    if isinstance(obj, str):
        if obj in interned:
            return b"R" + struct.pack("<i", interned[obj])
        interned[obj] = len(interned)
        return b"t" + struct.pack("<i", len(obj)) + obj.encode("latin-1")
    if isinstance(obj, float):
        return b"g" + struct.pack("<d", obj)
    return b"i" + struct.pack("<i", obj)


def test_a_python_2_pstats_file(tmp_path):
    """Hatchet (under Python 3) prints "Incompatible pstats file" for it; the format is the same dict."""
    f, g = ("app.py", 3, "solve"), ("~", 0, "<len>")
    stats = {f: (1, 1, 0.5, 0.75, {}), g: (2, 4, 0.25, 0.25, {f: (4, 2, 0.25, 0.25)})}
    path = tmp_path / "py2.pstats"
    path.write_bytes(_py2(stats, {}))
    with pytest.raises(ValueError):
        marshal.loads(path.read_bytes())  # Python 3's own marshal cannot read it
    assert detect(path) == "cprofile"
    gf = read_cprofile(path)
    rows = {n.frame["name"]: gf.dataframe.loc[n] for n in gf.graph.traverse()}
    assert (rows["solve"][METRICS].tolist() == [0.5, 0.75, 1.0, 1.0]
            and rows["<len>"][METRICS].tolist() == [0.25, 0.25, 2, 4])
    assert [n.parents[0].frame["name"] for n in gf.graph.traverse() if n.parents] == ["solve"]


def test_callers_without_an_entry_and_unreached_cycles(tmp_path):
    """A caller with no entry of its own (an edited or merged file: Hatchet raises KeyError) is a node without
    values; a cycle no root reaches (Hatchet leaves it out of its graph) is rooted at its heaviest function."""
    a, b, c, ghost = ("m.py", 1, "a"), ("m.py", 5, "b"), ("m.py", 9, "c"), ("gone.py", 2, "ghost")
    stats = {a: (1, 1, 1.0, 4.0, {ghost: (1, 1, 1.0, 4.0)}),
             b: (1, 2, 1.0, 3.0, {c: (2, 1, 1.0, 3.0)}), c: (1, 1, 2.0, 2.5, {b: (1, 1, 2.0, 2.5)})}
    path = tmp_path / "odd.pstats"
    path.write_bytes(marshal.dumps(stats))
    rows = get_reader("cprofile").read(str(path))
    frames = [(f["name"], f["parent_local"]) for f in rows.frames.to_pylist()]
    assert frames == [("b", -1), ("c", 0), ("ghost", -1), ("a", 2)]
    assert sorted(rows.values.column("local_id").to_pylist()) == [0, 1, 3]  # ghost: no row
    assert rows.metadata["call_graph"]["roots_for_unreached_cycles"] == 1
    assert rows.metadata["call_graph"]["edges_not_in_tree_list"] == [["c (m.py:9)", "b (m.py:5)"]]


@pytest.mark.parametrize("content,why", [
    (b"", "empty"),
    (marshal.dumps([1, 2]), "marshal type"),
    (marshal.dumps({}), "no functions"),
    (marshal.dumps({("a", 1, "f"): (1, 1, 0.1, 0.1)}), "not \\(cc, nc, tt, ct, callers\\)"),
    (marshal.dumps({("a", "1", "f"): (1, 1, 0.1, 0.1, {})}), "not a \\(file, line, function\\)"),
    (marshal.dumps({("a", 1, "f"): (1, 1, 0.1, 0.1, {("b", 2, "g"): "x"})}), "not \\(nc, cc, tt, ct\\) or a count"),
    (marshal.dumps({("a", 1, "f"): (1, 1, 0.1, 0.1, {})}) + b"junk", "bytes after"),
    (marshal.dumps({("a", 1, "f"): (1, 1, 0.1, 0.1, {})})[:-3], "wanted"),
    (marshal.dumps({("a", 1, "f"): (compile("1", "x", "eval"), 1, 0.1, 0.1, {})}), "marshal type 'c'"),
    (b"{" + b")\x01" * 200, "nested more than"),
    (marshal.dumps({("a", 10**40, "f"): (1, 1, 0.1, 0.1, {})}), "15-bit digits"),
])
def test_damaged_files_are_one_line_errors(tmp_path, content, why):
    path = tmp_path / "bad.pstats"
    path.write_bytes(content)
    with pytest.raises(ReaderError, match=why) as info:
        get_reader("cprofile").read(str(path))
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_ingest_picks_up_pstats_and_reports_a_damaged_one(tmp_path):
    folder = tmp_path / "runs"
    folder.mkdir()
    good = pyprofiles.write_pstats(folder / "run.prof")
    (folder / "cut.pstats").write_bytes(good.read_bytes()[:3])
    (folder / "readme.txt").write_text("not a profile")
    found = scan([folder])
    assert [(k, Path(p).name) for k, p, _ in found.runs] == [("cprofile", "run.prof")]
    assert [(Path(p).name, "a cProfile .pstats file that no reader accepts" in why) for p, why in found.unrecognised] \
        == [("cut.pstats", True)]
    lake = Lake(tmp_path / "lake")
    report = lake.ingest([folder])
    assert len(report.ingested) == 1 and lake.runs()["format"].tolist() == ["cprofile"]
