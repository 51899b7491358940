"""The Caliper native .cali reader against llnl-hatchet 2026.2.0's ``from_caliperreader`` (../shared/golden),
plus typed run metadata, metric roles, hand-written edge cases and corrupt files.

Every golden call path and metric matches (rtol 1e-9) with no skipped path, and the node counts are those of
formats.md section 7.  Deviations from Hatchet (formats.md Appendix B) that the goldens cannot show are tested
explicitly below: B.17 (``Node order`` orders the frames and is dropped, as Hatchet drops it: see
tests/test_caliper_node_order.py), B.18 (ancestors without records are kept, NaN),
B.19 (Spot statistics are inclusive), B.20 (``spot.channel`` is not a column).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import perflake
from perflake.errors import ReaderError
from perflake.frame.graphframe import GraphFrame
from perflake.ingest.normalize import normalize
from perflake.readers.base import EXCLUSIVE, INCLUSIVE, OTHER
from perflake.readers.caliper import Reader

SPOT = ["Min time/rank", "Max time/rank", "Avg time/rank", "Total time"]
RAJA = ["BlockSize", "Bytes/Rep", "Flops/Rep", "Iterations/Rep", "Kernels/Rep", "ProblemSize", "Reps"]
QUARTZ = [f"gcc10.3.1_1048576/O3/{i}/Base_Seq-default.cali" for i in (1, 2, 3, 4)] + [
    "gcc10.3.1_2097152/O3/1/Base_Seq-default.cali"]

# golden name, dataset, file in it, nodes (roots) as formats.md section 7 says, our columns beyond Hatchet's
CASES = [
    ("caliper-example-cali", "caliper-example-cali", "example-profile.cali", 24, 3, []),
    # normalisation derives the inclusive `time (inc)` from the exclusive `time` (sum#time.duration)
    ("caliper-lulesh-cali", "caliper-lulesh-cali", "lulesh-annotation-profile.cali", 19, 1, ["time (inc)"]),
    # B.17: `Node order` (min#min#aggregate.slot) lays out the frames and is dropped, as Hatchet drops it (whose
    # use of it for ordering is dead code: tests/test_caliper_node_order.py)
    ("caliper-ordered-cali", "caliper-ordered-cali", "230525-151052_1930517_eWbGeyrlBOPT.cali", 19, 1, []),
    ("caliper-ordered-cali-mpi", "caliper-ordered-cali-mpi", "230525-151723_1930647_FSY8b8cKSEEi.cali", 26, 5, []),
    # the missing halves of both pairs are derived: exclusive host time, inclusive GPU activity time
    ("caliper-sw4-cuda-activity-profile-cali", "caliper-sw4-cuda-activity-profile-cali",
     "caliper_cuda_activity_profile_summary_v2.cali", 393, 1,
     ["scale#sum#cupti.host.duration", "sum#scale#cupti.activity.duration (inc)"]),
] + [
    ("rajaperf-quartz_" + f.replace("/", "_")[: -len(".cali")], "rajaperf-quartz", f, 74, 1, [])
    for f in QUARTZ
]


def graphframe(path):
    rows = Reader().read(str(path))
    n = normalize(rows)
    return rows, GraphFrame.from_tables(n.nodes, n.metrics, n.metric_info, rows.metadata)


def metric_columns(gf):
    return [c for c in gf.dataframe.columns if c not in ("name", "file", "module", "line", "end_line")]


@pytest.mark.parametrize("gold,dataset,file,nodes,roots,extra", CASES, ids=[c[0] for c in CASES])
def test_matches_hatchet_golden(gold, dataset, file, nodes, roots, extra, shared_data, golden):
    import golden as golden_check

    rows, gf = graphframe(shared_data(dataset) / file)
    want = golden(gold)
    golden_check.compare(gf, want)  # every call path, every Hatchet metric; no skip_paths needed
    # section 7 counts; every region of these files has a record, so B.18 adds no node here
    assert len(gf.graph) == nodes and len(gf.graph.roots) == roots
    assert len(gf.dataframe) == nodes and list(gf.dataframe.index.names) == ["node"]
    hatchet_metrics = [c for c in want.columns if c != "callpath"]
    assert sorted(metric_columns(gf)) == sorted(hatchet_metrics + extra)
    assert rows.format == "caliper" and Reader.sniff(str(shared_data(dataset) / file))


def test_spot_statistics_are_inclusive_and_never_derived(shared_data):
    """B.19: Hatchet lists Min/Max/Avg time/rank and Total time as exclusive; they are statistics over ranks
    of inclusive time, so: inclusive, pair None (no exclusive is derived, nothing is summed up the tree)."""
    rows, gf = graphframe(shared_data("rajaperf-quartz") / QUARTZ[0])
    for name in SPOT:
        assert rows.metric(name).role == INCLUSIVE and rows.metric(name).pair is None
        assert rows.metric(name).unit == "sec"
    for name in RAJA:  # any#any#max#<x> kernel attributes
        assert rows.metric(name).role == OTHER
    assert all(m.name != "Node order" for m in rows.metrics)  # min#min#aggregate.slot: the frames' order
    assert gf.inc_metrics == SPOT and gf.exc_metrics == []
    df = gf.dataframe.set_index("name")
    assert df.loc["RAJAPerf", "Total time"] == pytest.approx(103.476380)  # the file's value, not a sum
    # the file's Node order: RAJAPerf 1, Basic_DAXPY 4, ... is the frames' order
    order = rows.frames.column("name").to_pylist()
    assert order.index("RAJAPerf") < order.index("Basic_DAXPY")


def test_lulesh_roles_and_derived_inclusive(shared_data):
    rows, gf = graphframe(shared_data("caliper-lulesh-cali") / "lulesh-annotation-profile.cali")
    roles = {m.name: m.role for m in rows.metrics}
    # Hatchet lists all five as exclusive; min/max/avg over snapshots and counts do not add up
    assert roles == {"min#time.duration": OTHER, "max#time.duration": OTHER, "time": EXCLUSIVE,
                     "avg#time.duration": OTHER, "count": OTHER}
    df = gf.dataframe
    main = df[df["name"] == "main"].iloc[0]
    assert main["time (inc)"] == pytest.approx(df["time"].sum())  # the out-of-region record is not a node
    frames = {r["name"]: r["type"] for r in rows.frames.to_pylist()}
    assert frames["main"] == "function" and frames["lulesh.cycle"] == "loop"  # type = attribute name


def test_run_metadata_is_typed(shared_data):
    meta = Reader().read(str(shared_data("caliper-ordered-cali") / CASES[2][2])).metadata
    assert meta["jobsize"] == 1 and isinstance(meta["jobsize"], int)  # adiak unsigned int
    assert meta["launchdate"] == 1685052650 and isinstance(meta["launchdate"], int)  # not a timing: epoch date
    assert meta["cmdline"] == ["./lulesh2.0", "-i", "10", "-P", "spot"]  # set of string, \, unescaped
    assert isinstance(meta["libraries"], list) and meta["libraries"][0] == "linux-vdso.so.1"
    assert meta["problem_size"] == 30 and meta["figure_of_merit"] == pytest.approx(219.515085)
    assert meta["cluster"] == "quartz" and meta["cali.caliper.version"] == "2.10.0-dev"
    assert meta["Compiler Version"] == "10.3.1" and meta["spot.format.version"] == 2
    raja = Reader().read(str(shared_data("rajaperf-quartz") / QUARTZ[0])).metadata
    assert raja["ProblemSizeRunParam"] == 1048576.0 and isinstance(raja["ProblemSizeRunParam"], float)
    assert raja["launchdate"] == 1690619785 and raja["variant"] == "Base_Seq"
    assert raja["omp_version"] == "4.5"  # declared an Adiak string: kept (Hatchet makes it a float)
    assert raja["rajaperf_compiler_options"] == "-Ofast -march=native; -Wall -Wextra  -g -O3   "  # \= unescaped
    sw4 = Reader().read(str(shared_data("caliper-sw4-cuda-activity-profile-cali") / CASES[4][2])).metadata
    assert sw4 == {"cali.caliper.version": "2.7.0-dev", "mpi.world.size": 4, "cali.channel": "cuda-activity-profile"}


# -- hand-written files ------------------------------------------------------------------------------------

ATTRS = """\
__rec=node,id=12,attr=10,data=64,parent=3
__rec=node,id=13,attr=8,data=attribute.alias,parent=12
__rec=node,id=14,attr=8,data=attribute.unit,parent=12
__rec=node,id=20,attr=14,data=sec,parent=5
__rec=node,id=21,attr=10,data=21,parent=20
__rec=node,id=22,attr=8,data=sum#time.duration,parent=21
__rec=node,id=23,attr=8,data=inclusive#sum#time.duration,parent=21
__rec=node,id=24,attr=10,data=21,parent=1
__rec=node,id=25,attr=8,data=count,parent=24
__rec=node,id=26,attr=10,data=13,parent=1
__rec=node,id=27,attr=8,data=mpi.rank,parent=26
__rec=node,id=30,attr=10,data=268,parent=3
__rec=node,id=31,attr=8,data=function,parent=30
__rec=node,id=32,attr=8,data=loop,parent=30
__rec=node,id=40,attr=10,data=1612,parent=3
__rec=node,id=41,attr=8,data=cluster,parent=40
__rec=node,id=42,attr=41,data=quartz
"""


def write(tmp_path, body: str, name="p.cali"):
    path = tmp_path / name
    path.write_text(ATTRS + body)
    return str(path)


def test_per_rank_file_pairs_time_and_keeps_ancestors(tmp_path):
    path = write(tmp_path, """\
__rec=node,id=50,attr=31,data=main
__rec=node,id=51,attr=32,data=outer,parent=50
__rec=node,id=52,attr=31,data=solve,parent=51
__rec=ctx,attr=27=22,data=0=9.0
__rec=ctx,ref=50,attr=27=22=23=25,data=0=1.0=6.0=1
__rec=ctx,ref=52,attr=27=22=23=25,data=0=5.0=5.0=3
__rec=ctx,ref=50,attr=27=22=23=25,data=1=2.0=9.0=1
__rec=ctx,ref=52,attr=27=22=23=25,data=1=7.0=7.0=3
__rec=globals,ref=42
""")
    rows, gf = graphframe(path)
    assert {(m.name, m.role, m.pair, m.unit) for m in rows.metrics} >= {
        ("time", EXCLUSIVE, "time (inc)", "sec"), ("time (inc)", INCLUSIVE, "time", "sec"),
        ("count", OTHER, None, None)}
    assert "mpi.rank" not in rows.values.column_names and rows.metadata == {"cluster": "quartz"}
    df = gf.dataframe.reset_index()
    assert list(gf.dataframe.index.names) == ["node", "rank"] and len(gf.graph) == 3 and len(df) == 6
    outer = df[df["name"] == "outer"]  # B.18: no record of its own, still a node (NaN, Hatchet: no row)
    assert outer["time"].isna().all() and outer["time (inc)"].isna().all()  # both in the file: none derived
    assert df[df["name"] == "solve"]["time"].tolist() == [5.0, 7.0]
    assert "outer" in gf.tree()


def test_leaf_only_record_keeps_ancestor_and_tree_renders(tmp_path):
    """B.18: Hatchet builds 2 nodes, 1 row and then tree() raises KeyError; we give the ancestor a NaN row."""
    path = write(tmp_path, """\
__rec=node,id=50,attr=31,data=a
__rec=node,id=51,attr=31,data=b,parent=50
__rec=ctx,ref=51,attr=22,data=2.5
""")
    _, gf = graphframe(path)
    df = gf.dataframe.set_index("name")
    assert len(gf.graph) == 2 and math.isnan(df.loc["a", "time"]) and df.loc["a", "time (inc)"] == 2.5
    assert " a" in gf.tree()


def test_escapes_channels_and_gpu_activity(tmp_path):
    path = write(tmp_path, """\
__rec=node,id=60,attr=8,data=spot.channel,parent=12
__rec=node,id=61,attr=60,data=regionprofile
__rec=node,id=62,attr=60,data=timeseries
__rec=node,id=63,attr=8,data=cupti.activity.kind,parent=3
__rec=node,id=64,attr=8,data=cupti.kernel.name,parent=3
__rec=node,id=65,attr=63,data=kernel
__rec=node,id=66,attr=64,data=void k<1\\,2>(),parent=65
__rec=node,id=50,attr=31,data=a\\,b\\=c\\\\d\\ne
__rec=ctx,ref=50=61,attr=22,data=1.0
__rec=ctx,ref=50=62,attr=22,data=100.0
__rec=ctx,ref=50=66,attr=22,data=0.25
__rec=ctx,ref=61,attr=22,data=42.0
""")
    rows, gf = graphframe(path)
    frames = {r["name"]: (r["type"], r["parent_local"]) for r in rows.frames.to_pylist()}
    assert frames == {"a,b=c\\d\ne": ("function", -1), "void k<1,2>()": ("kernel", 0)}
    df = gf.dataframe.set_index("name")
    # the timeseries record and the record outside any region are skipped, as Hatchet does (4.7)
    assert df.loc["a,b=c\\d\ne", "time"] == 1.0 and df.loc["void k<1,2>()", "time"] == 0.25
    assert "spot.channel" not in df.columns  # B.20: Hatchet always adds it as a column


def test_sniff(tmp_path, shared_data):
    assert not Reader.sniff(str(shared_data("caliper-lulesh-json") / "lulesh-annotation-profile.json"))
    assert not Reader.sniff(str(tmp_path))
    (tmp_path / "x.json").write_text('{"data": []}')
    assert not Reader.sniff(str(tmp_path / "x.json"))
    assert Reader.files(write(tmp_path, "")) == [str(tmp_path / "p.cali")]


@pytest.mark.parametrize("body,problem", [
    ("__rec=ctx,ref=999,attr=22,data=1.0\n", "line 18: the record refers to node 999, which is not defined"),
    ("__rec=node,id=50,attr=31,data=a,parent=77\n", "line 18: node 50 refers to node 77"),
    ("__rec=node,id=50,attr=31,data=a\n__rec=ctx,ref=50,attr=22=25,data=1.0\n", "line 19: 2 attr ids but 1 data"),
    ("__rec=node,id=50,attr=31,data=a\n__rec=ctx,ref=50,attr=22,data=fast\n", "line 19: value 'fast' of "
                                                                              "sum#time.duration is not a number"),
    ("__rec=snapshot,ref=1\n", "line 18: unknown record kind __rec='snapshot'"),
    ("__rec=node,id=50,attr=31,data=a\n__rec=ctx,ref=50,attr=22,data=1.0\n__rec=ctx,ref=50,attr=2", "truncated"),
    ("", "no ctx or globals record"),
    ("__rec=node,id=50,attr=31,data=a\n__rec=ctx,attr=22,data=1.0\n", "none of the 1 ctx records lies inside a region"),
])
def test_corrupt_files_raise_reader_error(tmp_path, body, problem):
    path = write(tmp_path, body)
    with pytest.raises(ReaderError) as err:
        Reader().read(path)
    assert err.value.path == path and problem in str(err.value) and str(err.value).startswith(path + ": ")


def test_truncated_real_file(tmp_path, shared_data):
    data = (shared_data("caliper-ordered-cali") / CASES[2][2]).read_bytes()
    cut = tmp_path / "cut.cali"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(ReaderError, match="truncated: the last line has no newline"):
        Reader().read(str(cut))
    (tmp_path / "bad.cali").write_bytes(b"not a cali file\n")
    with pytest.raises(ReaderError, match="does not start with '__rec='"):
        Reader().read(str(tmp_path / "bad.cali"))
    with pytest.raises(ReaderError, match="cannot read"):
        Reader().read(str(tmp_path / "missing.cali"))


def test_values_are_float64_and_finite_or_nan(shared_data):
    rows = Reader().read(str(shared_data("caliper-sw4-cuda-activity-profile-cali") / CASES[4][2]))
    for m in rows.metrics:
        arr = rows.values.column(m.name).to_numpy()
        assert arr.dtype == np.float64 and not np.isinf(arr).any()
    assert rows.frames.num_rows == 393 and rows.values.num_rows == 393  # 394 records, 1 outside all regions


def test_sampler_records_get_a_function_frame_with_source_location(tmp_path):
    path = write(tmp_path, """\
__rec=node,id=60,attr=8,data=source.function#cali.sampler.pc,parent=3
__rec=node,id=61,attr=8,data=sourceloc#cali.sampler.pc,parent=3
__rec=node,id=62,attr=8,data=module#cali.sampler.pc,parent=3
__rec=node,id=50,attr=31,data=main
__rec=node,id=63,attr=62,data=/bin/cpi
__rec=node,id=64,attr=61,data=/src/cpi.c:42,parent=63
__rec=node,id=65,attr=60,data=f,parent=64
__rec=ctx,ref=50=65,attr=25,data=3
""")
    rows = Reader().read(path)
    assert rows.frames.to_pylist()[1] == {"local_id": 1, "parent_local": 0, "name": "f", "type": "function",
                                          "file": "/src/cpi.c", "line": 42, "end_line": None, "module": "/bin/cpi"}
    assert rows.values.column("count").to_pylist() == [3.0]


@pytest.mark.parametrize("native,alias,name,role,pair", [
    ("sum#avg#sum#time.duration", None, "time", EXCLUSIVE, "time (inc)"),  # older cross-process forms (3.3)
    ("sum#avg#inclusive#sum#time.duration", None, "time (inc)", INCLUSIVE, "time"),
    ("inclusive#scale#sum#cupti.host.duration", None, "inclusive#scale#sum#cupti.host.duration", INCLUSIVE,
     "scale#sum#cupti.host.duration"),  # exclusive derived by normalisation
    ("sum#time.duration.ns", None, "sum#time.duration.ns", EXCLUSIVE, None),  # pair derived: "<name> (inc)"
    ("time.duration", None, "time.duration", EXCLUSIVE, None),
    ("sum#region.count", None, "sum#region.count", OTHER, None),
    ("loop.start_iteration", None, "loop.start_iteration", OTHER, None),
    ("avg#inclusive#sum#time.duration", "Avg time/rank", "Avg time/rank", INCLUSIVE, None),
    ("scale#sum#cupti.host.duration", "time", "time", EXCLUSIVE, None),
])
def test_metric_names_roles_and_pairs(native, alias, name, role, pair):
    from perflake.readers.cali_format import Attribute
    from perflake.readers.caliper import _metrics

    attrs = [Attribute(1, native, "double", 65, {"attribute.alias": alias} if alias else {})]
    if native.startswith("sum#avg#"):  # both halves of the old pair in one file
        attrs.append(Attribute(2, "sum#avg#" + ("" if "inclusive#" in native else "inclusive#") + "sum#time.duration",
                               "double", 65, {}))
    m = _metrics(attrs)[0]
    assert (m.name, m.role, m.pair) == (name, role, pair)
    assert m.unit == ("nsec" if native.endswith(".ns") else None)


def test_records_of_one_path_are_summed_without_merged_siblings(tmp_path):
    """A non-nested attribute (lulesh's ``lulesh.region``, a time-series snapshot) splits one region path into
    several records; nothing merges in the tree, so the values took normalisation's fast path, which kept only
    one of the records.  They are summed (Hatchet sums them too), in the frame and in the lake."""
    path = write(tmp_path, """\
__rec=node,id=60,attr=10,data=12,parent=1
__rec=node,id=61,attr=8,data=region.part,parent=60
__rec=node,id=50,attr=31,data=main
__rec=node,id=52,attr=31,data=solve,parent=50
__rec=node,id=70,attr=61,data=0,parent=52
__rec=node,id=71,attr=61,data=1,parent=52
__rec=ctx,ref=50,attr=22=25,data=1.0=1
__rec=ctx,ref=52,attr=22=25,data=2.0=1
__rec=ctx,ref=70,attr=22=25,data=3.0=2
__rec=ctx,ref=71,attr=22=25,data=4.0=2
__rec=globals,ref=42
""")
    rows, gf = graphframe(path)
    df = gf.dataframe.reset_index()
    assert len(gf.graph) == 2 and len(df) == 2
    solve = df[df["name"] == "solve"].iloc[0]
    assert solve["time"] == 9.0 and solve["count"] == 5.0 and solve["time (inc)"] == 9.0
    assert df[df["name"] == "main"].iloc[0]["time (inc)"] == 10.0
    read = perflake.read(path).dataframe.reset_index()
    assert read[read["name"] == "solve"]["time"].tolist() == [9.0]


def test_timeseries_only_region_makes_no_node(tmp_path):
    """A Spot time-series record (channel ``timeseries``) on a region no profile record uses (Spot's
    ``lulesh.cycle`` loop snapshots, a root of its own) is skipped; its region is no node either, as in
    Hatchet (perflake used to keep it as an empty root).  Frames shared with kept records stay."""
    path = write(tmp_path, """\
__rec=node,id=60,attr=8,data=spot.channel,parent=12
__rec=node,id=61,attr=60,data=regionprofile
__rec=node,id=62,attr=60,data=timeseries
__rec=node,id=50,attr=31,data=main
__rec=node,id=51,attr=31,data=solve,parent=50
__rec=node,id=52,attr=32,data=cycle
__rec=node,id=53,attr=31,data=step,parent=52
__rec=ctx,ref=50=61,attr=22,data=1.0
__rec=ctx,ref=53=62,attr=22,data=100.0
__rec=ctx,ref=51=61,attr=22,data=2.0
__rec=ctx,ref=51=62,attr=22,data=50.0
""")
    rows, gf = graphframe(path)
    frames = [(r["name"], r["parent_local"]) for r in rows.frames.to_pylist()]
    assert frames == [("main", -1), ("solve", 0)]
    df = gf.dataframe.set_index("name")
    assert len(gf.graph) == 2 and df.loc["main", "time"] == 1.0 and df.loc["solve", "time"] == 2.0
    assert "cycle" not in gf.tree() and "step" not in gf.tree()


def test_spot_exclusive_total_pairs_with_total_time(tmp_path):
    """Spot's time.exclusive option adds ``Total time (exc)`` = sum over ranks of ``scale#sum#time.duration.ns``
    (scaled to seconds): the exclusive half of ``Total time``; no ``Total time (exc) (inc)`` is derived."""
    path = write(tmp_path, """\
__rec=node,id=60,attr=13,data=Total time,parent=20
__rec=node,id=61,attr=10,data=65,parent=60
__rec=node,id=62,attr=8,data=sum#inclusive#sum#time.duration,parent=61
__rec=node,id=63,attr=13,data=Total time (exc),parent=20
__rec=node,id=64,attr=10,data=65,parent=63
__rec=node,id=65,attr=8,data=sum#scale#sum#time.duration.ns,parent=64
__rec=node,id=66,attr=13,data=Min time/rank (exc),parent=20
__rec=node,id=67,attr=10,data=65,parent=66
__rec=node,id=68,attr=8,data=min#scale#sum#time.duration.ns,parent=67
__rec=node,id=50,attr=31,data=main
__rec=node,id=51,attr=31,data=solve,parent=50
__rec=ctx,ref=50,attr=62=65=68,data=3.0=1.0=1.0
__rec=ctx,ref=51,attr=62=65=68,data=2.0=2.0=2.0
""")
    rows, gf = graphframe(path)
    got = {m.name: (m.role, m.pair, m.unit) for m in rows.metrics}
    assert got["Total time (exc)"] == (EXCLUSIVE, "Total time", "sec")
    assert got["Total time"] == (INCLUSIVE, None, "sec") and got["Min time/rank (exc)"][0] == OTHER
    assert not any(c.endswith("(inc)") for c in gf.dataframe.columns)
    assert gf.dataframe.set_index("name").loc["main", "Total time"] == 3.0  # the file's value, not a sum
