"""The Caliper json-split reader against llnl-hatchet 2026.2.0's reading of the real samples (../shared/golden),
the cases Hatchet gets wrong (formats.md Appendix B items 14-16, 21) and malformed files.

Deviation from Hatchet that the goldens show: Hatchet gives every (node, rank) pair without a record a row of
zeros (formats.md 3.4); perflake leaves such values NaN (not measured: graphframe.py).  This is a design choice,
not an Appendix B defect; ``_compare`` asserts that exactly those pairs are NaN before comparing them as 0.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

import golden as golden_check
from perflake.errors import ReaderError
from perflake.frame.graphframe import GraphFrame
from perflake.ingest.normalize import normalize
from perflake.readers.caliper_json import Reader

CPI = "caliper-cpi-json/cpi-callpath-profile.json"
LULESH = "caliper-lulesh-json/lulesh-annotation-profile.json"


def _graphframe(path):
    rows = Reader().read(str(path))
    n = normalize(rows)
    return rows, GraphFrame.from_tables(n.nodes, n.metrics, n.metric_info, rows.metadata)


def _compare(gf, gold, *, unmeasured_in_golden):
    """golden.compare after checking that our NaN pairs are exactly Hatchet's zero-filled ones."""
    metrics = [c for c in gold.columns if c not in ("callpath", "rank")]
    ours = golden_check.by_callpath(gf, metrics, ["rank"])
    nan = ours[metrics].isna()
    assert (nan.all(axis=1) == nan.any(axis=1)).all(), "a record gives all its metrics"
    assert set(ours.index[nan.all(axis=1)]) == unmeasured_in_golden
    filled = gf.copy()
    filled.dataframe[metrics] = filled.dataframe[metrics].fillna(0.0)
    return golden_check.compare(filled, gold)


def test_cpi_matches_golden(shared_data, golden):
    rows, gf = _graphframe(shared_data(CPI))
    gold = golden("caliper-cpi-json")
    # every cpi record has count >= 1, so Hatchet's zero-filled rows are exactly its rows with count 0
    _compare(gf, gold, unmeasured_in_golden=set(map(tuple, gold.loc[gold["count"] == 0, ["callpath", "rank"]].values)))
    # formats.md 7: 127 nodes (85 call-path functions + 42 statements), 3 roots, 4 ranks, 508 rows
    assert len(gf.graph) == 127 and len(gf.graph.roots) == 3 and len(gf.dataframe) == 508
    assert rows.frames.column("type").to_pylist().count("statement") == 42
    # same ids as Hatchet's nodes: no two of our nodes share a name path, and the golden has as many paths
    paths = {tuple(n.frame["name"] for n in node.path()) for node in gf.graph.traverse()}
    assert len(paths) == len(gf.graph) == gold["callpath"].nunique()
    assert gf.exc_metrics == ["time"] and gf.inc_metrics == ["time (inc)"]  # count is "other"; inc derived


def test_lulesh_matches_golden(shared_data, golden):
    rows, gf = _graphframe(shared_data(LULESH))
    gold = golden("caliper-lulesh-json")
    _compare(gf, gold, unmeasured_in_golden=set())  # every node has a record on every rank
    assert len(gf.graph) == 24 and len(gf.graph.roots) == 1 and len(gf.dataframe) == 192  # formats.md 7
    paths = {tuple(n.frame["name"] for n in node.path()) for node in gf.graph.traverse()}
    assert len(paths) == 24 == gold["callpath"].nunique()
    # the 8 records outside every region (null path, one per rank) are dropped, as Hatchet does (3.2, 3.4)
    assert rows.metadata == {"caliper.rows_without_path": 8, "caliper.rank_column": True}
    # formats.md 6: sum#time.duration is additive; rank 0 sums to main's inclusive time
    df = gf.dataframe.reset_index()
    rank0 = df[df["rank"] == 0]
    assert rank0["time"].sum() == 5_882_425 == rank0.loc[rank0["name"] == "main", "time (inc)"].item()


def test_cpi_frames_and_metrics(shared_data):
    rows = Reader().read(str(shared_data(CPI)))
    frames = rows.frames.to_pylist()
    by_name = {}
    for f in frames:
        by_name.setdefault(f["name"], []).append(f)
    stmt = by_name["malloc.c:4152"][0]
    assert (stmt["type"], stmt["file"], stmt["line"], stmt["module"]) == (
        "statement", "/usr/src/debug/glibc-2.17-c758a686/malloc/malloc.c", 4152, "libc.so.6")
    assert frames[stmt["parent_local"]]["name"] == "malloc_consolidate"
    unknown = by_name["UNKNOWN:0"][0]  # Caliper's "no debug info": no file, no line, but a module
    assert (unknown["file"], unknown["line"], unknown["module"]) == (None, None, "libmpi.so.12")
    # function frames carry no sampled location (it would make their ids depend on the samples)
    assert {(f["type"], f["file"], f["line"]) for f in frames if f["type"] != "statement"} == {("function", None, None)}
    assert [(m.name, m.role, m.unit) for m in rows.metrics] == [("count", "other", "count"),
                                                                ("time", "exclusive", "usec")]
    assert all(rows.values.column(m.name).type == pa.float64() for m in rows.metrics)
    assert sorted(set(rows.values.column("rank").to_pylist())) == [0, 1, 2, 3]


def test_lulesh_metrics_units_b21(shared_data):
    rows = Reader().read(str(shared_data(LULESH)))
    # old json: microseconds, no unit metadata and no cali.caliper.version (B.21)
    assert [(m.name, m.role, m.unit, m.pair) for m in rows.metrics] == [
        ("time (inc)", "inclusive", "usec", "time"), ("time", "exclusive", "usec", "time (inc)")]
    assert {f["type"] for f in rows.frames.to_pylist()} == {"function"}


# ------------------------------------------------------------------ small synthetic files
NODES = [{"column": "path", "label": "main"}, {"column": "path", "label": "solve", "parent": 0},
         {"column": "loop", "label": "iterate", "parent": 1}, {"column": "path", "label": "io", "parent": 0}]


def _doc(columns, data, nodes=NODES, is_value=None, **globals_):
    is_value = is_value or [c != "path" for c in columns]
    return {"data": data, "columns": columns, "column_metadata": [{"is_value": v} for v in is_value],
            "nodes": nodes, **globals_}


def _write(path, doc, *, caliper_layout=True):
    """The document as Caliper writes it (one row per line) or minified (the reader's plain-JSON path)."""
    if caliper_layout:
        rows = ",\n".join("        [ " + ", ".join(json.dumps(c) for c in row) + " ]" for row in doc["data"])
        rest = json.dumps({k: v for k, v in doc.items() if k != "data"}, indent=4)[1:]
        path.write_text('{\n    "data": [\n' + rows + "\n    ]," + rest)
    else:
        path.write_text(json.dumps(doc, separators=(",", ":")))
    return str(path)


ORDERED = _doc(["Node order", "mpi.rank", "time", "path"],
               [[0, 0, 1.0, 0], [1, 0, 2.0, 1], [2, 0, 4.0, 2], [3, 0, 8.0, 3], [4, 0, 0.5, None],
                [0, 1, 10.0, 0], [1, 1, 20.0, 1], [2, 1, 40.0, 2]])


@pytest.mark.parametrize("caliper_layout", [True, False])
def test_node_order_column_is_not_required_nor_a_metric_b14(tmp_path, caliper_layout):
    rows = Reader().read(_write(tmp_path / "o.json", ORDERED, caliper_layout=caliper_layout))
    assert [m.name for m in rows.metrics] == ["time"]  # B.14: Hatchet keeps "Node order" in exc_metrics
    assert rows.frames.column("name").to_pylist() == ["main", "solve", "iterate", "io"]
    assert rows.frames.column("type").to_pylist() == ["function", "function", "loop", "function"]
    assert rows.values.to_pydict() == {"local_id": [0, 1, 2, 3, 0, 1, 2], "rank": [0, 0, 0, 0, 1, 1, 1],
                                       "thread": [0] * 7, "time": [1.0, 2.0, 4.0, 8.0, 10.0, 20.0, 40.0]}
    without = dict(ORDERED, columns=ORDERED["columns"][1:], column_metadata=ORDERED["column_metadata"][1:],
                   data=[row[1:] for row in ORDERED["data"]])
    assert Reader().read(_write(tmp_path / "w.json", without, caliper_layout=caliper_layout)).values.equals(rows.values)


def test_plain_json_and_caliper_layout_agree(tmp_path, shared_data):
    doc = json.loads(shared_data(CPI).read_text())
    a = Reader().read(_write(tmp_path / "a.json", doc))
    b = Reader().read(_write(tmp_path / "b.json", doc, caliper_layout=False))
    assert a.frames.equals(b.frames) and a.values.equals(b.values) and a.metrics == b.metrics


def test_without_rank_column_everything_is_rank_0(tmp_path):
    doc = _doc(["sum#time.duration", "path"], [[1.5, 0], [2.5, 1], [3.0, None]])
    rows = Reader().read(_write(tmp_path / "r.json", doc))
    assert rows.values.column("rank").to_pylist() == [0, 0] and rows.values.column("time").to_pylist() == [1.5, 2.5]
    # the path column's nodes are frames even without records (as Hatchet's graph): io has none; a node of
    # another column ("iterate", column "loop") only when a record refers to it
    assert rows.frames.column("name").to_pylist() == ["main", "solve", "io"]


@pytest.mark.parametrize("caliper_layout", [True, False])
def test_string_values_are_attributes_not_metrics(tmp_path, caliper_layout):
    doc = _doc(["kind", "mpi.rank", "time", "path"], [["kernel", 0, 1.0, 0], ["memcpy", 1, 2.0, 1], [None, 0, 3.0, 3]])
    rows = Reader().read(_write(tmp_path / "k.json", doc, caliper_layout=caliper_layout))
    assert [m.name for m in rows.metrics] == ["time"] and rows.values.column("time").to_pylist() == [1.0, 2.0, 3.0]
    assert (rows.values.column("local_id").to_pylist() == [0, 1, 2]
            and rows.values.column("rank").to_pylist() == [0, 1, 0])


def test_metadata_is_typed_b16(tmp_path):
    doc = _doc(["mpi.rank", "time", "path"], [[0, 1.0, 0]], **{
        "mpi.world.size": "8", "elapsed_time": "12.5", "launchdate": "1685052650", "cali.caliper.version": "2.10.0-dev",
        "cmdline": "[./lulesh2.0,-i,10,-P,spot]", "libraries": "[]", "problem_size": " 30 ", "user": "jsmith",
        "zip": "007", "region_balance": "1e3"})
    rows = Reader().read(_write(tmp_path / "m.json", doc))
    assert rows.metadata == {  # B.16: Hatchet's json reader returns every global as a raw string
        "mpi.world.size": 8, "elapsed_time": 12.5, "launchdate": 1685052650, "cali.caliper.version": "2.10.0-dev",
        "cmdline": ["./lulesh2.0", "-i", "10", "-P", "spot"], "libraries": [], "problem_size": 30, "user": "jsmith",
        "zip": "007", "region_balance": 1000.0, "caliper.rank_column": True}
    assert all(type(v) is int for v in (rows.metadata["mpi.world.size"], rows.metadata["launchdate"]))
    # Caliper 2 without unit metadata: seconds (B.21)
    assert rows.metric("time").unit == "sec"


def test_empty_labels_are_numbered_per_file_b15(tmp_path):
    nodes = [{"column": "path", "label": "main"}, {"column": "path", "label": "", "parent": 0},
             {"column": "path", "label": "", "parent": 1}]
    path = _write(tmp_path / "u.json", _doc(["time", "path"], [[1.0, 2]], nodes=nodes))
    first, second = Reader().read(path), Reader().read(path)
    assert first.frames.column("name").to_pylist() == ["main", "UNKNOWN 0", "UNKNOWN 1"]
    assert second.frames.equals(first.frames)  # Hatchet's process-global counter gives new names each read


def test_sampled_file_and_line_columns_and_null_references(tmp_path):
    """source.file#/source.line# instead of sourceloc#; a null module cell is fine (Hatchet would raise: B.15)."""
    nodes = [{"column": "source.function#callpath.address", "label": "main"},
             {"column": "source.function#callpath.address", "label": "work", "parent": 0},
             {"column": "source.file#cali.sampler.pc", "label": "/src/work.c"},
             {"column": "module#cali.sampler.pc", "label": "app"}]
    columns = ["count", "module#cali.sampler.pc", "source.file#cali.sampler.pc", "source.function#callpath.address",
               "source.line#cali.sampler.pc", "sum#time.duration"]
    data = [[2, 3, 2, 1, 10, 2.0], [1, None, 2, 1, 12, 1.0], [4, 3, 2, 0, 5, 4.0], [1, 3, None, 1, None, 1.0]]
    doc = _doc(columns, data, nodes=nodes, is_value=[True, False, False, False, True, True])
    rows = Reader().read(_write(tmp_path / "s.json", doc))
    frames = rows.frames.to_pylist()
    assert [(f["name"], f["type"], f["parent_local"], f["file"], f["line"], f["module"]) for f in frames] == [
        ("main", "function", -1, None, None, None), ("work", "function", 0, None, None, None),
        ("work.c:10", "statement", 1, "/src/work.c", 10, "app"), ("work.c:12", "statement", 1, "/src/work.c", 12, None)]
    # main has one location: its rows stay on it; work's rows without a location stay on work
    assert rows.values.column("local_id").to_pylist() == [2, 3, 0, 1]
    assert [m.name for m in rows.metrics] == ["count", "time"]


@pytest.mark.parametrize("mutate, problem", [
    (lambda text: text[: len(text) // 2], "not valid JSON"),
    (lambda text: json.dumps({k: v for k, v in json.loads(text).items() if k != "nodes"}), "missing key(s) 'nodes'"),
    (lambda text: json.dumps([json.loads(text)]), "top level is a JSON list"),
    (lambda text: text.replace("[ 62, 0, 0, 3, 4, 309432.000000 ]", "[ 62, 0, 0, 3, 309432.000000 ]"),
     "data row 0 has 5 cells, expected 6"),
    (lambda text: text.replace("[ 62, 0, 0, 3, 4,", "[ 62, 0, 0, 3000, 4,"), "cell 3000 is not a node index"),
    (lambda text: text.replace('"columns": [', '"columns": [ "extra",', 1), "'column_metadata' one object per column"),
    (lambda text: text.replace('"parent": 1', '"parent": 99', 1), "parent 99 is not the index of an earlier node"),
])
def test_malformed_files_raise_reader_error(tmp_path, shared_data, mutate, problem):
    path = tmp_path / "bad.json"
    path.write_text(mutate(shared_data(CPI).read_text()))
    with pytest.raises(ReaderError) as err:
        Reader().read(str(path))
    assert str(path) in str(err.value) and problem in str(err.value)


def test_missing_file_raises_reader_error(tmp_path):
    with pytest.raises(ReaderError, match="is a file"):
        Reader().read(str(tmp_path / "absent.json"))


def test_sniff(shared_data, tmp_path):
    assert Reader.sniff(str(shared_data(CPI))) and Reader.sniff(shared_data(LULESH))
    assert not Reader.sniff(str(shared_data("tau-cpi-mpi")))  # a directory
    assert not Reader.sniff(str(shared_data("json/hatchet-graph-literal.json")))  # hatchet's own JSON
    assert not Reader.sniff(str(shared_data("caliper-lulesh-cali/lulesh-annotation-profile.cali")))
    big = json.loads(shared_data(LULESH).read_text())
    big["data"] = big["data"] * 100  # 800 KB of rows, then the keys, then a 300 KB global: neither in the
    big["padding"] = "x" * 300_000  # first 64 KB nor in the last 256 KB that sniff reads first
    assert Reader.sniff(_write(tmp_path / "big.json", big))
    assert Reader().read(str(tmp_path / "big.json")).values.num_rows == 19_200
    assert Reader.files(str(shared_data(CPI))) == [str(shared_data(CPI))]


@pytest.mark.parametrize("block", [97, 4096, 1 << 25])
def test_rows_read_block_by_block_equal_the_whole_file_path(tmp_path, shared_data, monkeypatch, block):
    from perflake.generators import WRITERS
    from perflake.readers import caliper_json_rows

    generated = WRITERS["caliper"](tmp_path / "gen", nodes=40, ranks=8, runs=1, seed=3)[0]
    monkeypatch.setattr(caliper_json_rows, "BLOCK", block)
    for path in (str(shared_data(CPI)), str(shared_data(LULESH)), str(generated)):
        streamed = caliper_json_rows._streamed(path)
        assert streamed is not None, f"{path}: Caliper's layout must take the block path"
        whole = caliper_json_rows._load(path)
        assert streamed[0] == whole[0]
        assert len(streamed[1]) == len(whole[1])
        for a, b in zip(streamed[1], whole[1]):
            assert a.tobytes() == b.tobytes()  # NaN-safe, bit for bit
        a = Reader().read(path)
        with monkeypatch.context() as m:
            m.setattr(caliper_json_rows, "_streamed", lambda p: None)
            b = Reader().read(path)
        assert a.frames.equals(b.frames) and a.values.equals(b.values) and a.metrics == b.metrics


def test_a_row_over_two_lines_falls_back_to_json(tmp_path, shared_data, monkeypatch):
    from perflake.readers import caliper_json_rows

    text = shared_data(CPI).read_text()
    broken = text.replace("[ 62, 0, 0, 3, 4,", "[ 62, 0, 0, 3,\n 4,", 1)
    assert broken != text
    path = tmp_path / "two-lines.json"
    path.write_text(broken)
    monkeypatch.setattr(caliper_json_rows, "BLOCK", 300)
    assert caliper_json_rows._streamed(str(path)) is None
    ours, theirs = Reader().read(str(path)), Reader().read(str(shared_data(CPI)))
    assert ours.values.equals(theirs.values) and ours.frames.equals(theirs.frames)


HATCHET_INDEX = """
import json, sys, warnings
warnings.filterwarnings("ignore")
import hatchet
out = []
for path in sys.argv[1:]:
    df = hatchet.GraphFrame.from_caliper(path, node_ordering=False).dataframe
    out.append(list(df.index.names))
print(json.dumps(out))
"""


def test_the_index_has_a_rank_level_when_the_file_has_an_mpi_rank_column(tmp_path):
    """Hatchet's json reader indexes (node, rank) whenever the file has an ``mpi.rank`` column, even with one rank
    (a script's ``df.xs(0, level="rank")`` works on it), and (node) without one; perflake's frames, read directly
    and from a lake, have the same index.  Compared with llnl-hatchet in .bench-venv."""
    from conftest import need_bench_python
    from perflake import GraphFrame, Lake
    from venv_report import BENCH_PYTHON, run_json

    one_rank = _write(tmp_path / "one.json", _doc(["mpi.rank", "time", "path"],
                                                  [[0, 1.0, 0], [0, 2.0, 1], [0, 4.0, 2], [0, 8.0, 3]]))
    no_rank = _write(tmp_path / "none.json", _doc(["time", "path"], [[1.0, 0], [2.0, 1], [4.0, 2], [8.0, 3]]))
    two_ranks = _write(tmp_path / "two.json", _doc(["mpi.rank", "time", "path"],
                                                   [[0, 1.0, 0], [0, 2.0, 1], [1, 4.0, 2], [1, 8.0, 3]]))
    ours = []
    for path in (one_rank, no_rank, two_ranks):
        df = GraphFrame.from_caliper(path, node_ordering=False).dataframe  # no Node order: Hatchet needs False
        ours.append(list(df.index.names))
    assert ours == [["node", "rank"], ["node"], ["node", "rank"]]
    lake = Lake(tmp_path / "lake")
    assert lake.ingest([one_rank]).ok
    assert list(lake.graphframe(lake.runs()["run_id"][0]).dataframe.index.names) == ["node", "rank"]
    need_bench_python()
    theirs = run_json([str(BENCH_PYTHON), "-c", HATCHET_INDEX, one_rank, no_rank, two_ranks], 300)
    assert ours == theirs
