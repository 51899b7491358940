"""Old Caliper ``.cali`` streams that define a node id again, read as caliper-reader reads them.

caliper-reader (``caliperreader``, Caliper's own Python reader) is the reference: every generated stream is read
by both, and perflake's records (expanded from its node bindings exactly as caliper-reader expands a record),
call paths, ranks and metric values must equal caliper-reader's.  The streams are written line by line as the
Caliper recorders wrote them (perflake.generators.cali_stream):

* Caliper 1.5 (2016) event traces: nodes 0-10 written by the stream itself, node 11 defined as a property node
  (newer readers predefine 11 as the ``ptr`` type: the old "node 11 is defined twice, differently"), the
  ``time.unit=usec`` metadata node written before the ``time.unit`` attribute, no NESTED flag, no globals;
* several Caliper 2.x per-rank profiles in one file (``cat``), which re-define most node ids.

Deviations from caliper-reader, on purpose:
* 2016 streams have no NESTED attribute, so caliper-reader (and Hatchet, which then drops every record) gives no
  ``path``; perflake reads the context tree as the call path (perflake.readers.cali_legacy) -- tested here
  against caliper-reader's per-attribute values of each record;
* streams whose records reach nodes no longer bound to what their writer meant (several processes interleaved
  line by line with shifted ids): caliper-reader reads any node as an attribute and returns records of mixed
  processes; perflake stops with a one-line ReaderError naming the file and the line (a parent defined after
  its child: caliper-reader makes the child a root, perflake refuses the stream too).
"""

from __future__ import annotations

import math
import re
import tempfile
from pathlib import Path

import caliperreader
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from perflake.errors import ReaderError
from perflake.generators.cali_stream import concatenate, interleave, profile_2x, trace_2016
from perflake.readers.base import INCLUSIVE
from perflake.readers.cali_format import parse
from perflake.readers.caliper import Reader

ANNOTATIONS = {"main", "phase", "function", "kernel", "iteration"}  # the 2016 generator's context attributes


def reference(path) -> caliperreader.CaliperReader:
    r = caliperreader.CaliperReader()
    r.read(str(path))
    return r


def _chain(cf, nid: int) -> dict:
    chain = []
    while nid >= 0:
        chain.append(nid)
        nid = cf.nodes[nid][2]
    out: dict = {}
    for n in reversed(chain):
        aid, value, _ = cf.nodes[n]
        attr = cf.attribute(aid)
        if attr.is_hidden:
            continue
        prev = out.get(attr.name)
        out[attr.name] = value if prev is None else (prev + [value] if isinstance(prev, list) else [prev, value])
        if attr.is_nested:
            out["path"] = out.get("path", []) + [value]
    return out


def expand(cf, refs, attrs, values) -> dict:
    """A record as caliper-reader expands it (each reference's chain root first, later references replacing
    keys of earlier ones, then the immediate values), over perflake's parse of the stream."""
    out: dict = {}
    for ref in refs:
        out.update(_chain(cf, ref))
    for aid, value in zip(attrs, values):
        attr = cf.attribute(aid)
        if not attr.is_hidden:
            out[attr.name] = value
    return out


def rows_of(rows) -> list[tuple[list[tuple[str, str]], int, dict]]:
    """(call path as (type, name) root first, rank, {metric: value}) of each row, in record order."""
    frames = rows.frames.to_pylist()
    metrics = [m.name for m in rows.metrics]
    cols = {m: rows.values.column(m).to_pylist() for m in metrics}
    out = []
    for i, (lid, rank) in enumerate(zip(rows.values.column("local_id").to_pylist(),
                                        rows.values.column("rank").to_pylist())):
        path = []
        while lid >= 0:
            path.append((frames[lid]["type"], frames[lid]["name"]))
            lid = frames[lid]["parent_local"]
        out.append((path[::-1], rank, {m: cols[m][i] for m in metrics}))
    return out


def same(ours: float, text: str | None) -> bool:
    return math.isnan(ours) if text is None else ours == float(text)


def write(dir_: Path, text: str, name: str = "run.cali") -> str:
    path = dir_ / name
    path.write_text(text)
    return str(path)


def _text(value):
    """caliper-reader holds the data of its predefined type nodes as (index, name) tuples: their text."""
    if isinstance(value, tuple):
        return value[1]
    return [_text(v) for v in value] if isinstance(value, list) else value


def check_records(path: str):
    """perflake's records equal caliper-reader's, record by record; returns (parse, reference)."""
    cf, ref = parse(path), reference(path)
    assert len(cf.records) == len(ref.records)
    for rec, want in zip(cf.records, ref.records):
        assert expand(cf, *rec[1:]) == {k: _text(v) for k, v in want.items()}, f"line {rec[0]}"
    return cf, ref


def check_2016(path: str) -> None:
    cf, ref = check_records(path)
    rows = Reader().read(path)
    kept = [r for r in ref.records if ANNOTATIONS & r.keys()]  # records inside a region
    got = rows_of(rows)
    assert len(got) == len(kept) and rows.metadata == {"cali.caliper.version": "1.5.dev"}
    assert [(m.name, m.role, m.unit, m.pair) for m in rows.metrics] == [
        ("time.inclusive.duration", INCLUSIVE, "usec", None)]
    for (path_, rank, values), want in zip(got, kept):
        by_attr: dict[str, list[str]] = {}
        for type_, name in path_:
            by_attr.setdefault(type_, []).append(name)
        expected = {k: v if isinstance(v, list) else [v] for k, v in want.items() if k in ANNOTATIONS}
        assert by_attr == expected and rank == 0
        assert same(values["time.inclusive.duration"], want.get("time.inclusive.duration"))


def check_profiles(path: str) -> None:
    cf, ref = check_records(path)
    rows = Reader().read(path)
    kept = [r for r in ref.records if "path" in r]
    got = rows_of(rows)
    assert len(got) == len(kept)
    assert {m.name for m in rows.metrics} == {"time", "count"}  # one column per name, whatever the ids
    for (path_, rank, values), want in zip(got, kept):
        assert [name for _, name in path_] == want["path"] and rank == int(want["mpi.rank"])
        assert same(values["time"], want["sum#time.duration"]) and same(values["count"], want["count"])
    assert rows.metadata == {"cali.caliper.version": "2.10.0", "cali.channel": "regionprofile"}


@pytest.mark.parametrize("seed", range(6))
def test_2016_trace_defines_node_11_again_and_reads_as_caliper_reader(tmp_path, seed):
    text = trace_2016(seed)
    lines = text.splitlines()
    assert lines[0] == "__rec=node,id=0,attr=9,data=usr" and "__rec=node,id=11,attr=10,data=148,parent=0" in lines
    unit = re.search(r"^__rec=node,id=(\d+),attr=8,data=time\.unit,", text, re.M)
    first_use = re.search(rf"^__rec=node,id=\d+,attr={unit.group(1)},data=usec", text, re.M)
    assert first_use.start() < unit.start()  # an attribute defined after a node of it
    path = write(tmp_path, text)
    assert parse(path).redefined == 1  # node 11; nodes 0-10 are written again unchanged
    check_2016(path)


def test_hand_written_2016_trace(tmp_path):
    """Caliper 1.5 style: node 11 defined again, the time.unit=usec node (16) before the time.unit attribute
    (22), no NESTED flag, no globals.  main=a begins, phase=b begins below it and ends after 7 usec, main=a
    ends after 30 usec; the last snapshot is outside every region."""
    boot = ["usr", "int", "uint", "string", "addr", "double", "bool", "type"]
    path = write(tmp_path, "\n".join([
        *(f"__rec=node,id={i},attr=9,data={t}" for i, t in enumerate(boot)),
        "__rec=node,id=8,attr=8,data=cali.attribute.name,parent=3",
        "__rec=node,id=9,attr=8,data=cali.attribute.type,parent=7",
        "__rec=node,id=10,attr=8,data=cali.attribute.prop,parent=1",
        "__rec=node,id=11,attr=10,data=12,parent=3",
        "__rec=node,id=12,attr=8,data=cali.caliper.version,parent=11",
        "__rec=node,id=13,attr=10,data=20,parent=3",
        "__rec=node,id=14,attr=8,data=main,parent=13",
        "__rec=node,id=15,attr=8,data=phase,parent=13",
        "__rec=node,id=16,attr=22,data=usec,parent=2",
        "__rec=node,id=17,attr=10,data=85,parent=16",
        "__rec=node,id=18,attr=8,data=time.inclusive.duration,parent=17",
        "__rec=node,id=22,attr=8,data=time.unit,parent=13",
        "__rec=node,id=19,attr=12,data=1.5.dev",
        "__rec=node,id=20,attr=14,data=a",
        "__rec=ctx,ref=20=19",
        "__rec=node,id=21,attr=15,data=b,parent=20",
        "__rec=ctx,ref=21=19,attr=18,data=7",
        "__rec=ctx,ref=20=19,attr=18,data=30",
        "__rec=ctx,ref=19,attr=18,data=100",
    ]) + "\n")
    cf, _ = check_records(path)
    assert cf.redefined == 1
    rows = Reader().read(path)
    got = [(p, v["time.inclusive.duration"]) for p, _, v in rows_of(rows)]
    assert got[1:] == [([("main", "a"), ("phase", "b")], 7.0), ([("main", "a")], 30.0)]
    assert got[0][0] == [("main", "a")] and math.isnan(got[0][1])  # the begin snapshot of phase: no time
    assert rows.metadata == {"cali.caliper.version": "1.5.dev"} and rows.metrics[0].unit == "usec"


def test_2016_cali_query_field_order(tmp_path):
    """2016's cali-query wrote node records from a std::map (CsvSpec::write_record of a RecordMap): the keys in
    sorted order, ``__rec=node,attr=..,data=..,id=..,parent=..``.  Same records, same rows."""
    def sort_fields(line: str) -> str:
        if not line.startswith("__rec=node,"):
            return line
        head, *fields = line.split(",")
        return ",".join([head] + sorted(fields))

    text = "\n".join(sort_fields(line) for line in trace_2016(3).splitlines()) + "\n"
    assert "__rec=node,attr=8,data=cali.attribute.name,id=8,parent=3" in text
    check_2016(write(tmp_path, text))


@pytest.mark.parametrize("seed,extra", [(0, (0, 0, 0)), (1, (0, 1, 2)), (2, (2, 0, 1)), (3, (1, 1, 0))])
def test_concatenated_rank_streams_read_as_caliper_reader(tmp_path, seed, extra):
    streams = [profile_2x(seed, rank, extra=e) for rank, e in enumerate(extra)]
    path = write(tmp_path, concatenate(streams))
    assert parse(path).redefined > 10
    check_profiles(path)


def test_concatenated_2016_traces(tmp_path):
    path = write(tmp_path, concatenate([trace_2016(7), trace_2016(8, attributes=3)]))
    assert parse(path).redefined > 10
    check_2016(path)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), extras=st.lists(st.integers(0, 3), min_size=1, max_size=4),
       regions=st.integers(1, 25), old=st.booleans())
def test_generated_streams_read_as_caliper_reader(seed, extras, regions, old):
    with tempfile.TemporaryDirectory() as d:
        if old:
            text = concatenate([trace_2016(seed + k, regions=regions, attributes=1 + e) for k, e in enumerate(extras)])
            check_2016(write(Path(d), text))
        else:
            text = concatenate([profile_2x(seed, k, regions=regions, extra=e) for k, e in enumerate(extras)])
            check_profiles(write(Path(d), text))


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), extras=st.lists(st.integers(0, 3), min_size=2, max_size=4))
def test_interleaved_streams_read_as_caliper_reader_or_fail_with_the_line(seed, extras):
    """Processes writing one stream line by line: with equal ids (same attributes) it reads as caliper-reader
    does; with shifted ids, records reach other processes' nodes: the same records, or a one-line error."""
    with tempfile.TemporaryDirectory() as d:
        path = write(Path(d), interleave([profile_2x(seed, k, extra=e) for k, e in enumerate(extras)], seed))
        try:
            rows = Reader().read(path)
        except ReaderError as exc:
            assert len(set(extras)) > 1  # equal ids never fail
            assert re.match(re.escape(path) + r": line \d+: ", str(exc)) and "\n" not in str(exc)
            return
        cf, ref = check_records(path)
        assert len(rows_of(rows)) == sum("path" in r for r in ref.records)


def test_redefinition_binds_later_uses_and_keeps_earlier_ones(tmp_path):
    """Node 20 is re-defined: the record before it and child 21 (defined before) keep region=a; the record
    after it and child 22 (defined after) see region=b.  Writing a node again unchanged changes nothing."""
    path = write(tmp_path, """\
__rec=node,id=12,attr=10,data=276,parent=3
__rec=node,id=13,attr=8,data=region,parent=12
__rec=node,id=14,attr=10,data=21,parent=5
__rec=node,id=15,attr=8,data=sum#time.duration,parent=14
__rec=node,id=20,attr=13,data=a
__rec=node,id=21,attr=13,data=a1,parent=20
__rec=ctx,ref=20,attr=15,data=1
__rec=node,id=20,attr=13,data=b
__rec=node,id=20,attr=13,data=b
__rec=node,id=22,attr=13,data=b1,parent=20
__rec=ctx,ref=20,attr=15,data=2
__rec=ctx,ref=21,attr=15,data=3
__rec=ctx,ref=22,attr=15,data=4
""")
    cf, _ = check_records(path)
    assert cf.redefined == 1
    got = [([n for _, n in p], v["time"]) for p, _, v in rows_of(Reader().read(path))]
    assert got == [(["a"], 1.0), (["b"], 2.0), (["a", "a1"], 3.0), (["b", "b1"], 4.0)]


def test_attr_ids_follow_the_latest_attribute_definition(tmp_path):
    """Id 15 is an attribute (count), then re-defined as a region node: attr=15 still means count (caliper-
    reader's attributes_by_id changes with attribute definitions only); then re-defined as the attribute
    'sum#time.duration': attr=15 means that."""
    path = write(tmp_path, """\
__rec=node,id=12,attr=10,data=276,parent=3
__rec=node,id=13,attr=8,data=region,parent=12
__rec=node,id=14,attr=10,data=21,parent=5
__rec=node,id=15,attr=8,data=count,parent=14
__rec=node,id=20,attr=13,data=a
__rec=node,id=15,attr=13,data=c
__rec=ctx,ref=20,attr=15,data=1
__rec=ctx,ref=15,attr=15,data=2
__rec=node,id=15,attr=8,data=sum#time.duration,parent=14
__rec=ctx,ref=20,attr=15,data=3
""")
    check_records(path)
    got = [([n for _, n in p], v["count"], v["time"]) for p, _, v in rows_of(Reader().read(path))]
    assert got[:2] == [(["a"], 1.0, got[0][2]), (["c"], 2.0, got[1][2])] and math.isnan(got[0][2])
    assert got[2][0] == ["a"] and got[2][2] == 3.0 and math.isnan(got[2][1])


@pytest.mark.parametrize("body,line,problem", [
    # an attribute that is not defined when a record first uses a node of it (caliper-reader: KeyError)
    ("__rec=node,id=20,attr=30,data=a\n__rec=ctx,ref=20,attr=15,data=1\n__rec=node,id=30,attr=8,data=x,parent=3\n",
     7, "the record uses the node of line 6, whose attribute 30 is undefined"),
    # a node of an attribute that is never defined
    ("__rec=node,id=20,attr=13,data=a\n__rec=node,id=21,attr=31,data=q\n__rec=ctx,ref=20,attr=15,data=1\n",
     7, "the node's attribute node 31 is never defined"),
    ("__rec=node,id=20,attr=13,data=a,parent=40\n", 6, "node 20 refers to node 40, which is not defined before it"),
    # the 2015 pre-release writer's node records (Node::record() as a RecordMap: no __rec; caliper-reader:
    # '"__rec" missing', Caliper's C++ reader: "Unknown/invalid record")
    ("attribute=13,data=a,id=20,type=3\n", 6, "a record must start with __rec=<kind>"),
    ("__rec=node,id=18446744073709551615,attr=13,data=a\n", 6, "is out of range"),
    ("__rec=node,id=20,attr=13,data=a\n__rec=ctx,ref=20=77,attr=15,data=1\n", 7, "refers to node 77"),
    # a record reaching a node re-bound to a node that is no attribute
    ("__rec=node,id=20,attr=15,data=a\n__rec=node,id=15,attr=13,data=r\n__rec=ctx,ref=20,attr=15,data=1\n", 8,
     "node 15 (as re-defined at line 7) is used as an attribute but does not define one"),
])
def test_broken_streams_name_the_file_and_line(tmp_path, body, line, problem):
    head = ("__rec=node,id=12,attr=10,data=276,parent=3\n__rec=node,id=13,attr=8,data=region,parent=12\n"
            "__rec=node,id=14,attr=10,data=21,parent=5\n__rec=node,id=15,attr=8,data=count,parent=14\n"
            "__rec=node,id=16,attr=13,data=top\n")
    path = write(tmp_path, head + body)
    with pytest.raises(ReaderError) as err:
        Reader().read(path)
    msg = str(err.value)
    assert msg.startswith(f"{path}: line {line}: ") and problem in msg and "\n" not in msg


SHARED = ["caliper-example-cali/example-profile.cali", "caliper-lulesh-cali/lulesh-annotation-profile.cali",
          "caliper-ordered-cali/230525-151052_1930517_eWbGeyrlBOPT.cali",
          "caliper-ordered-cali-mpi/230525-151723_1930647_FSY8b8cKSEEi.cali",
          "caliper-sw4-cuda-activity-profile-cali/caliper_cuda_activity_profile_summary_v2.cali",
          "rajaperf-quartz/gcc10.3.1_1048576/O3/1/Base_Seq-default.cali"]


@pytest.mark.parametrize("name", SHARED)
def test_real_files_expand_as_caliper_reader(shared_data, name):
    """The real files re-define nothing and every record expands as caliper-reader expands it (their Hatchet
    goldens are tests/test_caliper_cali.py)."""
    dataset, file = name.split("/", 1)
    cf, _ = check_records(str(shared_data(dataset) / file))
    assert cf.redefined == 0
