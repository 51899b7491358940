"""HPCToolkit old-format databases written with metric-db output off (issue 13, item 5): experiment.xml 2.2 with
an empty MetricDBTable, the summary values inline as ``<M n= v=>``, and ``.hpctrace`` files.

perflake reads them as one summary profile at rank -1, thread -1.  Exclusive values: HPCToolkit's (E) is
propagated (a statement's cost is added to its scope and to its procedure frame; an outer loop of a nest shows
none of the inner loop's statements), so perflake gives each kept node its (I) minus the (I) of its kept
children (perflake/readers/hpctoolkit_summary.py has the reasoning, from hpcprof's sources).  Values are
printed with ``%g``: sums agree to the printing precision.

Deviation from Hatchet (documented here, checked below): llnl-hatchet's ``from_hpctoolkit`` divides the number
of metric-db files by the number of ranks it found among them, and fails with ZeroDivisionError on such a
database; perflake reads the summary profile.  formats.md 1.6 says a loop's (E) includes nested loops' statements;
hpcprof's ``aggregateMetricsExcl`` and real databases say it does not: the tool's own sources win.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from perflake.errors import ReaderError
from perflake.frame.graphframe import GraphFrame
from perflake.generators.hpctoolkit import write_hpctoolkit_runs
from perflake.generators.hpctoolkit_summary import TRACE_HEADER, trace_id
from perflake.ingest.normalize import normalize
from perflake.readers import detect
from perflake.readers.hpctoolkit import Reader
from venv_report import run_json

# ---------------------------------------------------------------------------------------------- hand-built
# Values as hpcprof writes them (%g) for this execution, in seconds (true values in brackets):
#   main: S11 1, loop 12 with own cost 0.5, S13 1.5, inner loop 14 with S15 2.12346 [2.1234567] and a call of
#   foo 4.12346 [4.1234567] = (a nameless Pr with S3 1) + (inlined bar with S8 3.12346 [3.1234567]);
#   a second root <partial call paths> with one statement 0.75.
# (E) as hpcprof propagates it: main = its whole body 5.12346, loop 12 = own + S13 = 2, loop 14 = S15, foo =
# S3 + S8 (bar is not an inline *call* in the 2018+ rule), bar = S8.
SUMMARY_XML = """<?xml version="1.0"?>
<!DOCTYPE HPCToolkitExperiment [
<!ELEMENT HPCToolkitExperiment (Header, (SecCallPathProfile|SecFlatProfile)*)>
<!ATTLIST HPCToolkitExperiment version CDATA #REQUIRED>
]>
<HPCToolkitExperiment version="2.2">
<Header n="tiny">
  <Info/>
</Header>
<SecCallPathProfile i="0" n="tiny">
<SecHeader>
  <MetricTable>
    <Metric i="10" n="CPUTIME (sec):Sum (I)" o="0" v="derived-incr" t="inclusive" partner="11" show="1">
      <MetricFormula t="combine" frm="sum($10, $10)"/>
      <MetricFormula t="finalize" frm="$10"/>
      <Info><NV n="units" v="events"/></Info>
    </Metric>
    <Metric i="11" n="CPUTIME (sec):Sum (E)" o="-1" v="derived-incr" t="exclusive" partner="10" show="1">
    </Metric>
    <Metric i="12" n="CPUTIME (sec):Max (I)" o="1" v="derived-incr" t="inclusive" partner="13" show="1"/>
    <Metric i="13" n="CPUTIME (sec):Max (E)" o="-1" v="derived-incr" t="exclusive" partner="12" show="1"/>
    <Metric i="14" n="PAPI_TOT_INS:Sum (I)" o="2" v="derived-incr" t="inclusive" partner="15" show="1"/>
    <Metric i="15" n="PAPI_TOT_INS:Sum (E)" o="-1" v="derived-incr" t="exclusive" partner="14" show="1"/>
  </MetricTable>
  <MetricDBTable>
  </MetricDBTable>
  <TraceDBTable>
    <TraceDB i="0" u="1000000000" db-glob="*.hpctrace" db-min-time="1" db-max-time="9" db-header-sz="32"/>
  </TraceDBTable>
  <LoadModuleTable>
    <LoadModule i="2" n="/bin/tiny"/>
  </LoadModuleTable>
  <FileTable>
    <File i="3" n="./src/home/u/a.c"/>
    <File i="4" n="b.c"/>
    <File i="5" n="inc/inl.h"/>
    <File i="6" n="&lt;unknown file&gt;"/>
  </FileTable>
  <ProcedureTable>
    <Procedure i="7" n="main"/>
    <Procedure i="8" n="foo"/>
    <Procedure i="9" n=""/>
    <Procedure i="16" n="bar"/>
    <Procedure i="17" n="&lt;partial call paths&gt;" f="1"/>
  </ProcedureTable>
  <Info/>
</SecHeader>
<SecCallPathProfileData>
<M n="10" v="9.99691"/><M n="14" v="100"/>
<PF i="2" s="7" l="10" lm="2" f="3" n="7">
<M n="10" v="9.24691"/><M n="11" v="5.12346"/><M n="12" v="4"/><M n="14" v="100"/>
<S i="3" s="20" l="11" it="41">
<M n="10" v="1"/><M n="11" v="1"/><M n="14" v="100"/><M n="15" v="100"/><M n="99" v="7"/>
</S>
<L i="4" s="21" l="12" f="3">
<M n="10" v="8.24691"/><M n="11" v="2"/><M n="12" v="3.5"/><M n="13" v="1"/>
<S i="5" s="22" l="13">
<M n="10" v="1.5"/><M n="11" v="1.5"/>
</S>
<L i="6" s="23" l="14" f="3">
<M n="10" v="6.24691"/><M n="11" v="2.12346"/>
<S i="7" s="24" l="15">
<M n="10" v="2.12346"/><M n="11" v="2.12346"/>
</S>
<C i="8" s="25" l="16">
<M n="10" v="4.12346"/>
<PF i="9" s="8" l="1" lm="2" f="4" n="8">
<M n="10" v="4.12346"/><M n="11" v="4.12346"/>
<Pr i="10" s="9" l="2" lm="2" f="4" n="9">
<M n="10" v="1"/><M n="11" v="1"/>
<S i="11" s="26" l="3">
<M n="10" v="1"/><M n="11" v="1"/>
</S>
</Pr>
<Pr i="12" s="16" l="7" lm="2" f="5" n="16" a="1">
<M n="10" v="3.12346"/><M n="11" v="3.12346"/>
<S i="13" s="27" l="8">
<M n="10" v="3.12346"/><M n="11" v="3.12346"/>
</S>
</Pr>
<S i="14" s="28" l="9" it="43"/>
</PF>
</C>
</L>
</L>
</PF>
<PF i="15" s="17" l="0" lm="2" f="6" n="17">
<M n="10" v="0.75"/><M n="11" v="0.75"/>
<S i="16" s="29" l="0">
<M n="10" v="0.75"/><M n="11" v="0.75"/>
</S>
</PF>
</SecCallPathProfileData>
</SecCallPathProfile>
</HPCToolkitExperiment>
"""
# name -> (time (inc), time): time = (I) - kept children's (I); loop 14: 6.24691 - 2.12346 - 4.12346 = -1e-5,
# within the %g error of those values (5e-6 x 12.49): 0
EXPECTED = {
    "main": (9.24691, 0.0), "a.c:11": (1.0, 1.0), "Loop@a.c:12": (8.24691, 0.5), "a.c:13": (1.5, 1.5),
    "Loop@a.c:14": (6.24691, 0.0), "a.c:15": (2.12346, 2.12346), "16:foo": (4.12346, 0.0), "b.c:3": (1.0, 1.0),
    "bar": (3.12346, 0.0), "inl.h:8": (3.12346, 3.12346), "b.c:9": (None, None),
    "<partial call paths>": (0.75, 0.0), "<unknown file>:0": (0.75, 0.75),
}
TRACES = ("tiny-000000-000-0a0b0c0d-100-0.hpctrace", "tiny-000001-002-0a0b0c0e-101-0.hpctrace")


def summary_db(tmp_path, xml: str = SUMMARY_XML, name: str = "db"):
    d = tmp_path / name
    d.mkdir()
    (d / "experiment.xml").write_text(xml)
    for t in TRACES:
        (d / t).write_bytes(TRACE_HEADER)
    return d


def by_name(rows) -> pd.DataFrame:
    f, v = rows.frames.to_pandas(), rows.values.to_pandas()
    return pd.concat([f[["name", "type", "parent_local"]], v.drop(columns="local_id")], axis=1).set_index("name")


def test_hand_built_summary_values(tmp_path):
    d = summary_db(tmp_path)
    assert Reader.sniff(d) and detect(d) == "hpctoolkit"
    assert Reader.files(d) == [str(d / "experiment.xml")]  # the run id: the XML (traces do not change values)
    rows = Reader().read(d)
    got = by_name(rows)
    assert list(got.index) == list(EXPECTED)
    assert set(got["rank"]) == {-1} and set(got["thread"]) == {-1}
    for name, (inc, exc) in EXPECTED.items():
        if inc is None:  # a trace-only statement: no value written
            assert np.isnan(got.at[name, "time (inc)"]) and np.isnan(got.at[name, "time"]), name
            continue
        assert got.at[name, "time (inc)"] == inc, name  # as written
        assert got.at[name, "time"] == pytest.approx(exc, abs=1e-12), name
    # the exclusive values add up: the roots' inclusive plus the 1e-5 rounding residue of loop 14 set to 0
    assert got["time"].sum() == pytest.approx(9.24691 + 0.75 + 1e-5, abs=1e-12)
    assert got["time"].sum() == pytest.approx(rows.metadata["hpctoolkit.totals"]["CPUTIME (sec):Sum (I)"], abs=2e-5)
    # HPCToolkit's own (E) values summed over the same nodes count the statements two and three times
    assert 5.12346 + 2 + 2.12346 + 4.12346 + 3.12346 + got["time"].sum() > 1.9 * 9.99691
    # a statistic other than a sum keeps its values as written, role other; another metric pair keeps its roles
    assert [(m.name, m.role, m.unit, m.pair) for m in rows.metrics] == [
        ("time (inc)", "inclusive", "sec", "time"), ("time", "exclusive", "sec", "time (inc)"),
        ("CPUTIME (sec):Max (I)", "other", "sec", None), ("CPUTIME (sec):Max (E)", "other", "sec", None),
        ("PAPI_TOT_INS (I)", "inclusive", None, "PAPI_TOT_INS (E)"),  # no units Info in this table
        ("PAPI_TOT_INS (E)", "exclusive", None, "PAPI_TOT_INS (I)")]
    assert got.at["main", "CPUTIME (sec):Max (I)"] == 4 and got.at["Loop@a.c:12", "CPUTIME (sec):Max (E)"] == 1
    assert got.at["main", "PAPI_TOT_INS (E)"] == 0 and got.at["a.c:11", "PAPI_TOT_INS (E)"] == 100
    assert np.isnan(got.at["Loop@a.c:12", "PAPI_TOT_INS (E)"])  # no (I) written there: not measured
    meta = rows.metadata
    assert meta["hpctoolkit.summary_only"] is True and meta["hpctoolkit.xml_version"] == "2.2"
    assert meta["hpctoolkit.summary_location"] == {"rank": -1, "thread": -1}
    assert meta["hpctoolkit.values_of_unknown_metrics"] == 1  # the <M n="99">
    assert meta["hpctoolkit.trace_db"]["u"] == 1000000000
    assert [(loc["rank"], loc["thread"], loc["file"]) for loc in meta["hpctoolkit.locations"]] == [
        (0, 0, TRACES[0]), (1, 2, TRACES[1])]
    assert meta["hostids"] == ["0a0b0c0d", "0a0b0c0e"]


def test_hand_built_graphframe_and_tree(tmp_path):
    rows = Reader().read(summary_db(tmp_path))
    n = normalize(rows)
    gf = GraphFrame.from_tables(n.nodes, n.metrics, n.metric_info, rows.metadata)
    assert list(gf.dataframe.index.names) == ["node"]  # one location: no rank/thread levels
    assert gf.dataframe["time"].sum() == pytest.approx(9.99692, abs=1e-9)
    text = gf.tree(metric_column="time (inc)", render_header=False, colour=False)
    assert "9.247 main" in text.splitlines()[2] and "0.750 <partial call paths>" in text.splitlines()[0]


# ---------------------------------------------------------------------------------------------- sniffing, errors
def test_sniff_summary_only_but_not_others(tmp_path):
    assert Reader.sniff(summary_db(tmp_path, name="a"))
    sparse = summary_db(tmp_path, SUMMARY_XML.replace('version="2.2">', 'version="4.0">'), name="b")
    assert not Reader.sniff(sparse)  # the 2021-22 sparse layout (profile.db, cct.db) is another reader's
    empty = summary_db(tmp_path, '<?xml version="1.0"?>\n<HPCToolkitExperiment version="2.2"/>\n', name="c")
    assert not Reader.sniff(empty)
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "experiment.xml").write_text("<html><body>experiment</body></html>")
    assert not Reader.sniff(tmp_path / "d")
    huge = summary_db(tmp_path, SUMMARY_XML.replace('version="2.2">', f'version="{"9" * 5000}">'), name="e")
    assert not Reader.sniff(huge)  # no int() of 5000 digits


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e999", "9" * 5000, "-0", "1e-400"])
def test_absurd_values_read_clean(tmp_path, value):
    """Damaged numbers: an infinity is no measurement (NaN), never an exception or an infinite exclusive value."""
    d = summary_db(tmp_path, SUMMARY_XML.replace('<M n="10" v="6.24691"/>', f'<M n="10" v="{value}"/>'))
    got = by_name(Reader().read(d))
    assert np.isfinite(got[["time (inc)", "time"]].to_numpy()[~np.isnan(got[["time (inc)", "time"]].to_numpy())]).all()
    assert got.at["a.c:15", "time"] == 2.12346 and got.at["a.c:13", "time"] == 1.5  # other nodes untouched


@pytest.mark.parametrize("damage,problem", [
    (lambda x: x[: len(x) * 2 // 3], r"malformed XML at line \d+"),
    (lambda x: x.replace('<M n="10" v="1.5"/>', '<M n="10" v="1.5x"/>'), r"<M n='10' v='1.5x'>: the value is not"),
    (lambda x: x.replace("<!DOCTYPE HPCToolkitExperiment [", '<!DOCTYPE HPCToolkitExperiment [<!ENTITY e "x">'),
     "entity declaration"),
    (lambda x: "\n".join(line for line in x.splitlines() if not line.startswith("<M ")), "no summary values"),
])
def test_damaged_xml_is_one_line_error_naming_the_file(tmp_path, damage, problem):
    d = summary_db(tmp_path, damage(SUMMARY_XML))
    assert Reader.sniff(d)  # the head is intact: it is this format, and reading it says what is wrong
    with pytest.raises(ReaderError, match=problem) as err:
        Reader().read(d)
    assert err.value.path == str(d / "experiment.xml") and "\n" not in str(err.value)


def test_metric_db_files_missing_reads_the_summary(tmp_path, shared_data):
    """The real cpi database (hpcprof 2017) with its metric-db files left out: the summary values its
    experiment.xml carries are the per-rank sums, to %g precision."""
    src = shared_data("hpctoolkit-cpi-database")
    d = tmp_path / "cpi"
    d.mkdir()
    shutil.copyfile(src / "experiment.xml", d / "experiment.xml")
    assert Reader.sniff(d)
    summary = Reader().read(d)
    assert summary.metadata["hpctoolkit.metric_db_missing"] == ["CPUTIME (usec) (I)", "CPUTIME (usec) (E)"]
    full = Reader().read(src)
    assert summary.frames.equals(full.frames)
    per_rank = full.values.to_pandas().groupby("local_id")[["time (inc)", "time"]].sum()
    got = summary.values.to_pandas().set_index("local_id")
    has = got["time (inc)"].notna()
    assert has.sum() == 23  # hpcprof wrote no <M> in the MPI_Init subtree
    for col in ("time (inc)", "time"):
        np.testing.assert_allclose(got.loc[has, col], per_rank.loc[has, col], rtol=5e-6, atol=1.0)
    assert got["time (inc)"].iloc[0] == 3998240 and got["time"].sum() == 3998245  # root 3 998 242, %g'd


# ---------------------------------------------------------------------------------------------- the generator
def _both(tmp_path, **kw):
    """The same execution written without metric-db files, and with them (same nested-loop layout)."""
    summary = write_hpctoolkit_runs(tmp_path / "s", metric_db=False, **kw)[0]
    full = write_hpctoolkit_runs(tmp_path / "f", metric_db=True, nested_loops=True, **kw)[0]
    return summary, full


@pytest.mark.parametrize("nodes,ranks,threads,seed", [(1, 1, 1, 0), (40, 3, 2, 1), (300, 4, 1, 5)])
def test_generator_summary_values_are_the_intended_sums(tmp_path, nodes, ranks, threads, seed):
    s, f = _both(tmp_path, nodes=nodes, ranks=ranks, threads=threads, seed=seed)
    names = sorted(p.name for p in s.iterdir())
    assert not any(n.endswith(".metric-db") for n in names) and len(names) == 1 + ranks * threads
    assert Reader.sniff(s)
    summary, full = Reader().read(s), Reader().read(f)
    # one tree, two layouts (the libmonitor of <program root> is a 2020 release's in the summary-only one)
    assert summary.frames.drop_columns(["module"]).equals(full.frames.drop_columns(["module"]))
    assert summary.frames["module"].to_pylist()[1:] == full.frames["module"].to_pylist()[1:]
    assert "/2020.08.03/" in summary.frames["module"][0].as_py()
    sv = summary.values.to_pandas().set_index("local_id")
    per_loc = full.values.to_pandas().groupby("local_id")[["time (inc)", "time"]].sum() / 1e6  # usec -> sec
    # the intent: each value is the sum over ranks and threads, printed with %g
    np.testing.assert_array_equal(sv["time (inc)"], [float("%g" % v) for v in per_loc["time (inc)"]])
    stmt = (summary.frames.column("type").to_numpy(zero_copy_only=False) == "statement")
    np.testing.assert_array_equal(sv.loc[stmt, "time"], [float("%g" % v) for v in per_loc.loc[stmt, "time"]])
    # scopes: their own cost (loops have some: E/7 of the function) to the printing error of the (I) values it
    # comes from, 0 for the others
    parent = summary.frames.column("parent_local").to_numpy()
    scale = sv["time (inc)"].to_numpy() + np.bincount(parent[parent >= 0], sv["time (inc)"].to_numpy()[parent >= 0],
                                                      minlength=len(parent))
    assert (np.abs(sv["time"].to_numpy() - per_loc["time"].to_numpy()) <= 5e-6 * scale + 1e-12).all()
    own = ~stmt & (per_loc["time"].to_numpy() > 0)
    assert (own.sum() > 0) == (nodes > 1) and (sv.loc[~stmt & ~own, "time"] == 0).all()
    # the roots' inclusive value equals the sum of the kept exclusive values, to the printing error
    roots = summary.frames.column("parent_local").to_numpy() < 0
    total = sv.loc[roots, "time (inc)"].sum()
    bound = 5e-6 * 2 * sv["time (inc)"].abs().sum()
    assert abs(sv["time"].sum() - total) <= bound
    assert total == pytest.approx(per_loc.loc[roots, "time (inc)"].sum(), rel=5e-6)


def test_generator_xml_and_trace_bytes(tmp_path):
    d = write_hpctoolkit_runs(tmp_path, nodes=30, ranks=2, threads=2, seed=3, metric_db=False)[0]
    xml = (d / "experiment.xml").read_text()
    assert '<HPCToolkitExperiment version="2.2">' in xml and "<MetricDBTable>\n  </MetricDBTable>\n" in xml
    assert '<Metric i="8" n="CPUTIME (sec):Sum (I)"' in xml and 'partner="9"' in xml  # after 2 x 4 raw metrics
    assert '<SecCallPathProfileData>\n<M n="8" v="' in xml  # the implicit root: (I) only
    body = xml.split("<SecCallPathProfileData>")[1]
    assert '<M n="9"' not in body.split("\n")[1] and "  <" not in body  # unindented, as hpcprof writes it
    its = {int(x) for x in re.findall(r' it="(\d+)"', xml)}
    traces = sorted(d.glob("*.hpctrace"))
    assert [t.name[:17] for t in traces] == ["lmp-000000-000-a8", "lmp-000000-001-a8",  # <exe>-<rank>-<thread>-
                                             "lmp-000001-000-a8", "lmp-000001-001-a8"]  # <hostid>-<pid>-<gen>
    times = []
    for t in traces:
        data = t.read_bytes()
        assert data[:32] == b"HPCRUN-trace______01.01b" + bytes(8) and (len(data) - 32) % 12 == 0
        rec = np.frombuffer(data, dtype=[("time", ">u8"), ("cp", ">u4")], offset=32)
        assert len(rec) > 0 and set(rec["cp"].tolist()) <= its and (np.diff(rec["time"].astype(np.int64)) > 0).all()
        times += [int(rec["time"][0]), int(rec["time"][-1])]
    assert f'db-min-time="{min(times)}" db-max-time="{max(times)}" db-header-sz="32"' in xml
    assert trace_id(5) == 11


def test_generator_same_seed_same_bytes(tmp_path):
    a = write_hpctoolkit_runs(tmp_path / "a", nodes=50, ranks=2, seed=4, metric_db=False)[0]
    b = write_hpctoolkit_runs(tmp_path / "b", nodes=50, ranks=2, seed=4, metric_db=False)[0]
    assert sorted(p.name for p in a.iterdir()) == sorted(p.name for p in b.iterdir())
    assert all((a / p.name).read_bytes() == (b / p.name).read_bytes() for p in a.iterdir())
    write_hpctoolkit_runs(tmp_path / "a", nodes=50, ranks=2, seed=4)  # metric-db over it: no stale trace left
    assert not list(a.glob("*.hpctrace")) and len(list(a.glob("*.metric-db"))) == 2


def test_per_thread_reader_on_nested_loops(tmp_path):
    """With metric-db files: per rank and thread, exclusive = own (I) minus the children's (I); outer loops get
    their own cost (the former rule, subtracting every nested statement from every enclosing scope, made them
    negative on hpcprof's real (E) values)."""
    d = write_hpctoolkit_runs(tmp_path, nodes=120, ranks=2, threads=2, seed=7, metric_db=True, nested_loops=True)[0]
    rows = Reader().read(d)
    v = rows.values.to_pandas()
    types = rows.frames.column("type").to_numpy(zero_copy_only=False)
    assert (v["time"] >= 0).all()
    loops = v[types[v["local_id"]] == "loop"]
    assert (loops["time"] > 0).any() and (loops["time"] == 0).any()  # outer loops own cost, inner ones none
    per_loc = v.groupby(["rank", "thread"])["time"].sum()
    root = v[v["local_id"] == 0].set_index(["rank", "thread"])["time (inc)"]
    np.testing.assert_array_equal(per_loc.sort_index(), root.sort_index())


# ---------------------------------------------------------------------------------------------- CLI, Hatchet
def test_cli_generate_no_metric_db(tmp_path):
    cli = [sys.executable, "-m", "perflake.cli.app", "generate"]
    done = subprocess.run([*cli, "hpctoolkit", str(tmp_path / "o"), "--nodes", "20", "--ranks", "2",
                           "--no-metric-db"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    run = tmp_path / "o" / "run-000"
    assert len(list(run.glob("*.hpctrace"))) == 2 and not list(run.glob("*.metric-db")) and Reader.sniff(run)
    bad = subprocess.run([*cli, "tau", str(tmp_path / "t"), "--no-metric-db"], capture_output=True, text=True,
                         timeout=120)
    assert bad.returncode == 2
    assert bad.stderr.strip() == "perflake: --no-metric-db is for the hpctoolkit format only (the old one, not --v4)"


def test_hatchet_divides_by_zero(tmp_path, bench_python):
    """Deviation: Hatchet cannot read a database without metric-db files (ZeroDivisionError in
    HPCToolkitReader.__init__: metric-db files / ranks among them); perflake reads its summary profile."""
    d = write_hpctoolkit_runs(tmp_path, nodes=40, ranks=2, seed=2, metric_db=False)[0]
    script = (
        "import sys, json, hatchet\n"
        "try:\n"
        "    hatchet.GraphFrame.from_hpctoolkit(sys.argv[1])\n"
        "    print(json.dumps({'error': None}))\n"
        "except Exception as exc:\n"
        "    print(json.dumps({'error': type(exc).__name__, 'text': str(exc)}))\n"
    )
    assert run_json([str(bench_python), "-c", script, str(d)], 120) == {"error": "ZeroDivisionError",
                                                                          "text": "division by zero"}
    rows = Reader().read(d)
    assert rows.values.num_rows == rows.frames.num_rows and rows.values.column("time (inc)").to_pylist()[0] > 0
