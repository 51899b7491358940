"""The HPCToolkit (experiment.xml + metric-db) reader: golden, hand-built databases, hostile and broken input.

Golden: llnl-hatchet 2026.2.0's reading of the real cpi database (../shared/golden).  Deviations, on purpose:

* formats.md B.1: Hatchet gives a statement the file of the most recently *visited* PF in document order, so
  statement 60 of PF 41 (file ``<unknown file>``) comes out as ``interp.c:0`` (the file of the sibling subtree
  ``__GI_sched_yield``).  We name it after its enclosing PF, ``<unknown file>:0``: the golden row is skipped and
  our row at the corrected path must carry the golden's values.
* formats.md B.2 (exclusive time double counted through loops) does not occur in cpi (no loops); the hand-built
  database below asserts our additive values there.
"""

from __future__ import annotations

import numpy as np
import pytest

from perflake.errors import ReaderError
from perflake.frame.graphframe import GraphFrame
from perflake.ingest.normalize import normalize
from perflake.readers.hpctoolkit import Reader

FINALIZE = ("<program root>", "main", "62:MPI_Finalize", "PMPI_Finalize", "294:MPID_Finalize", "162:MPIDI_CH3_Finalize",
            "230:psm_dofinalize", "36:<unknown procedure>", "<unknown procedure>", "<unknown procedure>")
B1_GOLDEN_PATH = FINALIZE + ("interp.c:0",)  # Hatchet's name (B.1)
B1_OUR_PATH = FINALIZE + ("<unknown file>:0",)  # the statement's own PF has file <unknown file>


def graphframe(path) -> GraphFrame:
    rows = Reader().read(path)
    n = normalize(rows)
    return GraphFrame.from_tables(n.nodes, n.metrics, n.metric_info, rows.metadata)


def test_cpi_matches_golden(shared_data, golden):
    import golden as golden_check

    gold = golden("hpctoolkit-cpi-database")
    path = shared_data("hpctoolkit-cpi-database")
    assert Reader().read(path).frames.num_rows == 34  # Hatchet's 34 nodes (formats.md section 7) ...
    gf = graphframe(path)
    ours = golden_check.compare(gf, gold, skip_paths=[B1_GOLDEN_PATH])
    # ... of which identical sibling frames merge (perflake/identity.py, as Hatchet's normalize()): 28 call paths,
    # the golden's 112 rows / 4 ranks
    assert len(gf.graph) == 28 and len(gf.dataframe) == 112 == len(gold)
    assert list(gf.dataframe.index.names) == ["node", "rank"]
    assert gf.exc_metrics == ["time"] and gf.inc_metrics == ["time (inc)"] and gf.default_metric == "time (inc)"
    # B.1: the skipped golden row's values are ours at the corrected path (ranks 0..3)
    want = gold[gold["callpath"] == B1_GOLDEN_PATH].set_index("rank")[["time (inc)", "time"]].sort_index()
    got = ours.loc[B1_OUR_PATH][["time (inc)", "time"]].sort_index()
    assert want.to_numpy().tolist() == got.to_numpy().tolist() == [
        [59960, 59960], [35980, 35980], [59961, 59961], [23976, 23976]]
    df = gf.dataframe.reset_index()
    assert set(df.loc[df["name"] == "interp.c:0", "file"]) == {"interp.c"}  # under __GI_sched_yield only


def test_cpi_exclusive_is_additive(shared_data):
    df = graphframe(shared_data("hpctoolkit-cpi-database")).dataframe.reset_index()
    root = df[df["name"] == "<program root>"].set_index("rank")["time (inc)"]
    np.testing.assert_array_equal(df.groupby("rank")["time"].sum().sort_index(), root.sort_index())
    assert root.loc[0] == 999238


def test_cpi_metadata_metrics_files(shared_data):
    path = shared_data("hpctoolkit-cpi-database")
    rows = Reader().read(path)
    assert Reader.sniff(path)
    assert [p.rsplit("/", 1)[-1] for p in Reader.files(path)][:2] == [
        "experiment.xml", "1.cpi-000000-000-a8c00270-160443-0.metric-db"]
    assert len(Reader.files(path)) == 5
    assert [(m.name, m.role, m.unit, m.pair) for m in rows.metrics] == [
        ("time (inc)", "inclusive", "usec", "time"), ("time", "exclusive", "usec", "time (inc)")]
    meta = rows.metadata
    assert meta["program"] == meta["executable"] == "cpi" and meta["hostids"] == ["a8c00270"]
    assert [(loc["rank"], loc["thread"], loc["pid"]) for loc in meta["hpctoolkit.locations"]] == [
        (0, 0, 160443), (1, 0, 160444), (2, 0, 160445), (3, 0, 160446)]
    assert meta["hpctoolkit.totals"] == {"CPUTIME (usec):Sum (I)": 3.99824e06}
    frames = rows.frames.to_pandas()
    main = frames[frames["name"] == "main"].iloc[0]
    assert (main["type"], main["file"], main["line"], main["module"]) == ("function", "./src/cpi.c", 19, "cpi")
    assert set(frames["type"]) == {"function", "statement"}


# ------------------------------------------------------------------------------ hand-built databases
TINY_XML = """<?xml version="1.0"?>
<!DOCTYPE HPCToolkitExperiment [
<!ELEMENT HPCToolkitExperiment (Header, SecCallPathProfile*)>
<!ATTLIST Pr a (1|0) "0">
]>
<HPCToolkitExperiment version="2.1"><Header n="tiny"><Info><NV n="jobid" v="4242"/></Info></Header>
<SecCallPathProfile i="0" n="tiny"><SecHeader>
<MetricTable><Metric i="2" n="REALTIME (usec):Sum (I)" t="inclusive" partner="3"/></MetricTable>
<MetricDBTable>
 <MetricDB i="0" n="CPUTIME (usec) (I)" t="inclusive" partner="1" db-id="1" db-num-metrics="3" db-header-sz="HSZ"/>
 <MetricDB i="1" n="CPUTIME (usec) (E)" t="exclusive" partner="0" db-id="0" db-num-metrics="3" db-header-sz="HSZ"/>
 <MetricDB i="2" n="PAPI_TOT_INS (I)" t="inclusive" db-id="2" db-num-metrics="3" db-header-sz="HSZ"/>
</MetricDBTable>
<LoadModuleTable><LoadModule i="1" n="/bin/tiny"/></LoadModuleTable>
<FileTable><File i="1" n="src/a.c"/><File i="2" n="b.c"/><File i="3" n="inc/inl.h"/></FileTable>
<ProcedureTable><Procedure i="1" n="main"/><Procedure i="2" n="foo"/><Procedure i="3" n="bar"/>
 <Procedure i="4" n=""/></ProcedureTable>
</SecHeader><SecCallPathProfileData>
<PF i="2" n="1" lm="1" f="1" l="10"><S i="3" l="11"/>
 <L i="4" l="12" f="1"><S i="5" l="13"/><L i="6" l="14"><S i="7" l="15"/></L>
  <C i="8" l="16"><PF i="9" n="2" lm="1" f="2" l="1-9">
   <Pr i="10" n="4" f="3"><S i="11" l="3"/></Pr>
   <Pr i="12" n="3" f="3" l="7"><S i="13" l="8"/></Pr></PF></C></L>
 <PF i="14" n="literal_fn" lm="1" f="2" l="40"><S i="15" l="41"/></PF>
</PF></SecCallPathProfileData></SecCallPathProfile></HPCToolkitExperiment>
"""
# node id -> (I, E) in HPCToolkit's nested semantics (E of PF/Pr/L = all its statements, at any loop depth)
TINY_VALUES = {1: (67, 0), 2: (67, 30), 3: (5, 5), 4: (55, 25), 5: (20, 20), 6: (5, 5), 7: (5, 5), 8: (30, 0),
               9: (30, 30), 10: (10, 10), 11: (10, 10), 12: (20, 20), 13: (20, 20), 14: (7, 7), 15: (7, 7)}
# name -> (additive time, time (inc)); subtracting only direct-child statements (Hatchet, B.2) would leave
# main 25 and Loop@a.c:12 5: the statements a.c:13 and a.c:15 counted twice
TINY_EXPECTED = {"main": (0, 67), "a.c:11": (5, 5), "Loop@a.c:12": (0, 55), "a.c:13": (20, 20), "Loop@a.c:14": (0, 5),
                 "a.c:15": (5, 5), "16:foo": (0, 30), "inl.h:3": (10, 10), "bar": (0, 20), "inl.h:8": (20, 20),
                 "literal_fn": (0, 7), "b.c:41": (7, 7)}


def metric_db(values: dict[int, tuple], *, flag=b"b", header_sz=24, n_metrics=3) -> bytes:
    order = ">" if flag == b"b" else "<"
    table = np.zeros((max(values), n_metrics))
    for i, (inc, exc) in values.items():  # db-id 0 = (E), 1 = (I), 2 = instructions (= 10 x I)
        table[i - 1, :3] = exc, inc, 10 * inc
    head = b"HPCPROF-metricdb__00.10" + flag + b"\0" * (header_sz - 24)
    return head + np.array(table.shape, dtype=order + "u4").tobytes() + table.astype(order + "f8").tobytes()


def tiny_db(tmp_path, *, flag=b"b", header_sz=24, xml=TINY_XML, ranks=(0,)):
    d = tmp_path / "tiny"
    d.mkdir(exist_ok=True)
    (d / "experiment.xml").write_text(xml.replace("HSZ", str(header_sz)))
    for r in ranks:
        vals = {i: (inc * (r + 1), exc * (r + 1)) for i, (inc, exc) in TINY_VALUES.items()}
        data = metric_db(vals, flag=flag, header_sz=header_sz)
        (d / f"1.tiny-{r:06d}-000-0a0b0c0d-{100 + r}-0.metric-db").write_bytes(data)
    return d


@pytest.mark.parametrize("flag,header_sz", [(b"b", 24), (b"l", 32)])
def test_tiny_nesting_names_and_additive_exclusive(tmp_path, flag, header_sz):
    """Loops, inlined code, a nameless Pr, a PF without call site (B.2, B.3), db-header-sz honoured (B.4)."""
    d = tiny_db(tmp_path, flag=flag, header_sz=header_sz, ranks=(0, 1))
    assert Reader.sniff(d)
    rows = Reader().read(d)
    frames = rows.frames.to_pandas()
    assert frames["name"].tolist() == list(TINY_EXPECTED)
    df = graphframe(d).dataframe.reset_index()
    for r in (0, 1):
        got = df[df["rank"] == r].set_index("name")
        for name, (exc, inc) in TINY_EXPECTED.items():
            assert (got.at[name, "time"], got.at[name, "time (inc)"]) == ((r + 1) * exc, (r + 1) * inc), name
            assert got.at[name, "PAPI_TOT_INS (I)"] == 10 * (r + 1) * inc
        assert got["time"].sum() == got.at["main", "time (inc)"]
    by = frames.set_index("name")
    assert by.at["inl.h:3", "file"] == "inc/inl.h" and by.at["b.c:41", "file"] == "b.c"
    assert by.at["16:foo", "line"] == 1 and by.at["16:foo", "end_line"] == 9
    assert by.at["Loop@a.c:14", "type"] == "loop" and by.at["Loop@a.c:14", "file"] == "src/a.c"
    assert [(m.name, m.role, m.unit, m.pair) for m in rows.metrics] == [
        ("time (inc)", "inclusive", "usec", "time"), ("time", "exclusive", "usec", "time (inc)"),
        ("PAPI_TOT_INS (I)", "inclusive", None, None)]
    assert rows.metadata["jobid"] == 4242 and rows.metadata["hpctoolkit.xml_version"] == "2.1"


# ------------------------------------------------------------------------------ hostile and broken input
ROOT = '<HPCToolkitExperiment version="2.0">{}</HPCToolkitExperiment>'
LAUGHS = "".join(f'<!ENTITY {chr(98 + k)} "{("&" + chr(97 + k) + ";") * 10}">' for k in range(9))
HOSTILE = {
    "billion-laughs": f'<!DOCTYPE HPCToolkitExperiment [<!ENTITY a "ha">{LAUGHS}]>\n' + ROOT.format("&j;"),
    "external-entity": ('<!DOCTYPE HPCToolkitExperiment [<!ENTITY x SYSTEM "file:///etc/passwd">]>\n'
                        + ROOT.format("&x;")),
    "parameter-entity": '<!DOCTYPE HPCToolkitExperiment [<!ENTITY % p SYSTEM "http://example.invalid/x.dtd"> %p;]>\n'
    + ROOT.format(""),
    "external-dtd": '<!DOCTYPE HPCToolkitExperiment SYSTEM "http://example.invalid/hpc.dtd">\n' + ROOT.format(""),
}


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_hostile_xml_is_refused_fast(tmp_path, kind):
    d = tiny_db(tmp_path)
    (d / "experiment.xml").write_text('<?xml version="1.0"?>\n' + HOSTILE[kind])
    with pytest.raises(ReaderError, match=r"experiment\.xml: .*(entity|external DTD)") as err:
        Reader().read(d)
    assert "root:" not in str(err.value)  # nothing of /etc/passwd leaked


def test_malformed_xml_names_file_and_line(tmp_path):
    d = tiny_db(tmp_path, xml=TINY_XML.replace("</PF></SecCallPathProfileData>", "</SecCallPathProfileData>"))
    with pytest.raises(ReaderError, match=r"experiment\.xml: malformed XML at line \d+"):
        Reader().read(d)


def test_truncated_metric_db_names_the_file(tmp_path):
    d = tiny_db(tmp_path, ranks=(0, 1))
    victim = d / "1.tiny-000001-000-0a0b0c0d-101-0.metric-db"
    victim.write_bytes(victim.read_bytes()[:-5])
    with pytest.raises(ReaderError, match="truncated") as err:
        Reader().read(d)
    assert err.value.path == str(victim)
    victim.write_bytes(victim.read_bytes()[:20])
    with pytest.raises(ReaderError, match="truncated") as err:
        Reader().read(d)
    assert err.value.path == str(victim)


def test_wrong_magic_metric_db(tmp_path):
    d = tiny_db(tmp_path)
    victim = next(d.glob("*.metric-db"))
    victim.write_bytes(b"HPCPROF-tracedb___" + victim.read_bytes()[18:])
    assert not Reader.sniff(d)
    with pytest.raises(ReaderError, match="not an HPCToolkit metric-db") as err:
        Reader().read(d)
    assert err.value.path == str(victim)


def test_too_few_rows_bad_names_and_duplicates(tmp_path):
    d = tiny_db(tmp_path)
    db = next(d.glob("*.metric-db"))
    db.write_bytes(metric_db({i: v for i, v in TINY_VALUES.items() if i < 10}))
    with pytest.raises(ReaderError, match="needs node id 15"):
        Reader().read(d)
    db.rename(d / "1.tiny-rank0.metric-db")
    with pytest.raises(ReaderError, match="file name"):
        Reader().read(d)


def test_sniff(tmp_path, shared_data):
    assert not Reader.sniff(tmp_path)
    (tmp_path / "experiment.xml").write_text('<?xml version="1.0"?>\n<HPCToolkitExperiment version="2.0"/>')
    assert not Reader.sniff(tmp_path)  # no metric-db
    assert not Reader.sniff(tmp_path / "experiment.xml")
    assert Reader.sniff(tiny_db(tmp_path))
    assert not Reader.sniff(shared_data("tau-cpi-mpi"))
