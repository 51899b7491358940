"""HPCToolkit 2021-2022 "sparse" databases (experiment.xml 4.0 + big-endian profile.db): perflake.readers.
hpctoolkit_sparse on a hand-built database with hand-computed values, and on databases of the byte-level writer
perflake.generators.hpctoolkit_sparse at several sizes, both layouts, ranks and threads.

llnl-hatchet cannot read this format (``from_hpctoolkit`` wants ``*.metric-db`` files, ``from_hpctoolkit_latest``
a meta.db; test_hatchet_reads_no_sparse_database shows it), so there is no golden: the expected values are
computed by hand (tiny database) or from the model the writer starts from (generated databases).  Deviations
from HPCToolkit's own numbers, documented in the reader: exclusive values of procedure frames and loops are made
additive (their function scope also counts the statements nested in them), and a statement's inclusive value is
its own line cost (HPCToolkit's execution scope of a line also counts the calls made on it, which hang beside
the statement in this tree).
"""

from __future__ import annotations

import json
import random
import shutil
import struct
import subprocess

import numpy as np
import pandas as pd
import pytest

import fuzz
import perflake
from perflake import Lake
from perflake.catalogs.schema import SCHEMA_VERSION
from perflake.errors import ReaderError
from perflake.generators import make_metrics, make_tree, perturb
from perflake.generators.hpctoolkit import _APPS
from perflake.generators.hpctoolkit_sparse import Contexts, has_loop, write_hpctoolkit_sparse_runs
from perflake.generators.names import MPI, category
from perflake.ingest.normalize import normalize
from perflake.readers import detect, get_reader
from perflake.readers.hpctoolkit import Reader as OldReader
from perflake.readers.hpctoolkit_sparse import Reader
from perflake.readers.hpctoolkit_v4 import Reader as V4Reader

# -- a hand-built database ------------------------------------------------------------------------------------
#
# contexts (hpcprof2): 0 global > 1 main > {2 line 11 > points 7, 8 ; 3 loop 12 > 4 line 13 > {point 9, call point
# 5 > 6 work > {10 line 31 > point 11 ; call point 12 > 13 instruction of an unsymbolized library}}}.
# Points 7, 8, 9, 11 (under lines, no children) have no element: folded.  Point values (seconds):
#   rank 0: p7 1, p8 0.5, p9 0.25, p11 2, p13 4          rank 1: p7 0.5, p9 1, p13 2
# execution E / function F (function pulls lines, loops and points into functions, loops, lines), rank 0:
#   ctx 2 1.5/1.5, 10 2/2, 13 4/4, 12 4/-, 6 (work) 6/2, 5 6/-, 4 6.25/0.25, 3 6.25/0.25, 1 (main) 7.75/1.75, 0 7.75/-
# rank 1: ctx 2 .5/.5, 13 2/2, 12 2/-, 6 2/-, 5 2/-, 4 3/1, 3 3/1, 1 3.5/1.5, 0 3.5/-
A = {0: {0: 7.75}, 1: {0: 7.75, 1: 1.75}, 2: {0: 1.5, 1: 1.5}, 3: {0: 6.25, 1: .25}, 4: {0: 6.25, 1: .25},
     5: {0: 6.0}, 6: {0: 6.0, 1: 2.0}, 7: {0: 1.0, 1: 1.0}, 8: {0: .5, 1: .5}, 9: {0: .25, 1: .25},
     10: {0: 2.0, 1: 2.0}, 11: {0: 2.0, 1: 2.0}, 12: {0: 4.0}, 13: {0: 4.0, 1: 4.0}}
B = {0: {0: 3.5}, 1: {0: 3.5, 1: 1.5}, 2: {0: .5, 1: .5}, 3: {0: 3.0, 1: 1.0}, 4: {0: 3.0, 1: 1.0}, 5: {0: 2.0},
     6: {0: 2.0}, 7: {0: .5, 1: .5}, 9: {0: 1.0, 1: 1.0}, 12: {0: 2.0}, 13: {0: 2.0, 1: 2.0}}
# the summary profile keys values by PARTIAL ids: (MetricDB id << 8) + 0, the sum partial (Sum statistic: "$0")
SUMMARY = {c: {(m << 8): A.get(c, {}).get(m, 0) + B.get(c, {}).get(m, 0) for m in (0, 1)
               if A.get(c, {}).get(m) or B.get(c, {}).get(m)} for c in sorted(A)}
# expected (time, time (inc)) per node: exclusive made additive, a statement's inclusive = its exclusive
UNK = "<unknown procedure> 0x10 [libx.so]"  # the unsymbolized instruction's PF; its S is "<unknown file>:0"
EXPECTED = {
    0: {"main": (0, 7.75), "app.c:11": (1.5, 1.5), "Loop@app.c:12": (0, 6.25), "app.c:13": (.25, .25),
        "13:work": (0, 6), "app.c:31": (2, 2), UNK: (0, 4), "<unknown file>:0": (4, 4)},
    1: {"main": (0, 3.5), "app.c:11": (.5, .5), "Loop@app.c:12": (0, 3), "app.c:13": (1, 1), "13:work": (None, 2),
        UNK: (0, 2), "<unknown file>:0": (2, 2)},
    -1: {"main": (0, 11.25), "app.c:11": (2, 2), "Loop@app.c:12": (0, 9.25), "app.c:13": (1.25, 1.25),
         "13:work": (0, 8), "app.c:31": (2, 2), UNK: (0, 6), "<unknown file>:0": (6, 6)},
}
PARENT = {"main": None, "app.c:11": "main", "Loop@app.c:12": "main", "app.c:13": "Loop@app.c:12",
          "13:work": "Loop@app.c:12", "app.c:31": "13:work", UNK: "13:work", "<unknown file>:0": UNK}


def tiny_xml(variant: str) -> str:
    """2021: the unsymbolized instruction is <PF i="-13"><S i="13"/>; 2022: <PF i="13"><S i="-13"/>."""
    pf, s = ("-13", "13") if variant == "2021" else ("13", "-13")
    def metric(i, n, t, p, kind, frm):
        return (f'<Metric i="{i}" o="{i}" n="CPUTIME (sec):{n}" v="derived-incr" t="{t}" partner="{p}" show="1">'
                f'<MetricFormula t="{kind}" frm="{frm}"/></Metric>\n')

    return (
        '<?xml version="1.0"?>\n<HPCToolkitExperiment version="4.0">\n<Header n="tiny">\n<Info/>\n</Header>\n'
        '<SecCallPathProfile i="0" n="tiny">\n<SecHeader>\n<IdentifierNameTable>\n'
        + "".join(f'<Identifier i="{k}" n="{n}"/>\n' for k, n in enumerate(["SUMMARY", "NODE", "RANK", "THREAD"]))
        + "</IdentifierNameTable>\n<MetricTable>\n"
        + metric(0, "PARTIAL:0 (I)", "inclusive", 256, "combine", "sum($0, $0)")
        + metric(256, "PARTIAL:0 (E)", "exclusive", 0, "combine", "sum($256, $256)")
        + metric(255, "Sum (I)", "inclusive", 511, "view", "$0")
        + metric(511, "Sum (E)", "exclusive", 255, "view", "$256")
        + '</MetricTable>\n<MetricDBTable>\n<MetricDB i="0" n="CPUTIME (sec) (I)"/>\n'
        '<MetricDB i="1" n="CPUTIME (sec) (E)"/>\n</MetricDBTable>\n'
        '<LoadModuleTable>\n<LoadModule i="1" n="/bin/app"/>\n<LoadModule i="2" n="/lib/libx.so"/>\n'
        '</LoadModuleTable>\n<FileTable>\n<File i="0" n="&lt;unknown file&gt;"/>\n<File i="1" n="/src/app.c"/>\n'
        '</FileTable>\n<ProcedureTable>\n<Procedure i="2" n="main" v="0"/>\n<Procedure i="3" n="work" v="0"/>\n'
        '<Procedure i="4" n="&lt;unknown procedure&gt; 0x10 [libx.so]" v="0x10" f="1"/>\n</ProcedureTable>\n'
        '<Info/>\n</SecHeader>\n<SecCallPathProfileData>\n'
        '<PF i="1" s="2" n="2" v="0" f="1" l="10" lm="1">\n<S i="2" it="2" l="11" s="2" v="0"/>\n'
        '<L i="3" s="2" v="0" f="1" l="12">\n<S i="4" it="4" l="13" s="2" v="0"/>\n'
        '<C i="5" s="2" v="0x20" it="5" l="13">\n<PF i="6" s="3" n="3" v="0" f="1" l="30" lm="1">\n'
        '<S i="10" it="10" l="31" s="3" v="0"/>\n<C i="12" s="3" v="0x30" it="12" l="0">\n'
        f'<PF i="{pf}" n="4" s="4" l="0" f="0" lm="2">\n<S i="{s}" s="4" v="0x10" it="13" l="0"/>\n</PF>\n'
        "</C>\n</PF>\n</C>\n</L>\n</PF>\n</SecCallPathProfileData>\n</SecCallPathProfile>\n</HPCToolkitExperiment>\n")


def profile_db(profiles: list, width: int, major: int, footer: bytes = b"PROFDBft") -> bytes:
    """profile.db bytes, written here by hand: ``profiles`` is [(id tuple, {ctx: {metric id: value}})]."""
    def tup(elems):
        if width == 18:
            return struct.pack(">H", len(elems)) + b"".join(struct.pack(">HQQ", k | (f << 14), p, lg)
                                                            for k, f, p, lg in elems)
        # 2020 layout: one index per element, the host id for NODE (gethostid()), the logical id otherwise
        return struct.pack(">H", len(elems)) + b"".join(struct.pack(">HQ", k, p if k == 1 else lg)
                                                        for k, _f, p, lg in elems)

    n = len(profiles)
    idt_ptr = 128 + (52 * n + 7) // 8 * 8
    tuples = [tup(t) for t, _ in profiles]
    tuple_ptr = [idt_ptr + sum(len(x) for x in tuples[:i]) for i in range(n)]
    pos = (idt_ptr + sum(map(len, tuples)) + 7) // 8 * 8
    infos, blocks = [], []
    for i, (_, values) in enumerate(reversed(profiles)):  # blocks in reverse order: offsets are followed
        vm, ci = b"", b""
        for c in sorted(values):
            ci += struct.pack(">IQ", c, len(vm) // 10)
            vm += b"".join(struct.pack(">dH", v, m) for m, v in sorted(values[c].items()))
        block = vm + ci + struct.pack(">IQ", 0x656E6421, len(vm) // 10)
        infos.insert(0, (len(vm) // 10, len(values), pos))
        blocks.append(block)
        pos += len(block)
    head = struct.pack(">16sBBIHQQQQ", b"HPCPROF-profdb__", major, 0, n, 2, 52 * n, 128, len(b"".join(tuples)),
                       idt_ptr).ljust(128, b"\0")
    pi = b"".join(struct.pack(">QQQQQIQ", tuple_ptr[i], 0, 0, 0, *infos[i]) for i in range(n)).ljust(
        idt_ptr - 128, b"\0")
    ids = b"".join(tuples)
    return head + pi + ids.ljust(len(ids) + (-len(ids) % 8), b"\0") + b"".join(blocks) + footer


def build_tiny(path, variant: str = "2022", footer: bytes = b"PROFDBft"):
    path.mkdir(parents=True, exist_ok=True)
    (path / "experiment.xml").write_text(tiny_xml(variant))
    node = (1, 0, 0xABC, 0)
    profiles = [([(0, 0, 0, 0)], SUMMARY),
                ([node, (2, 0, 1, 1), (3, 3, 7777, 0)], B),  # profile 1 is rank 1: the order is the file's
                ([node, (2, 0, 0, 0), (3, 3, 7776, 0)], A)]
    width, major = (18, 4) if variant == "2022" else (10, 1)
    (path / "profile.db").write_bytes(profile_db(profiles, width, major, footer))
    # a cct.db whose value blocks are zero-filled, as in some real databases: never read for values
    (path / "cct.db").write_bytes(struct.pack(">16sBBIHQQ", b"HPCPROF-cctdb___", major, 0, 14, 1, 22 * 14, 128)
                                  .ljust(128 + 22 * 14 + 400, b"\0"))
    return path


def frame_values(rows) -> dict:
    """{rank: {name: (time, time (inc))}} (None for null)."""
    names = rows.frames.column("name").to_pylist()
    v = rows.values.to_pandas()
    out: dict = {}
    for r in v.itertuples(index=False):
        d = r._asdict()
        rank = d["rank"]
        t, i = (v.columns.get_loc(c) for c in (("time", "time (inc)") if rank >= 0 else ("sum(time)",
                                                                                         "sum(time (inc))")))
        val = lambda x: None if pd.isna(x) else float(x)  # noqa: E731
        out.setdefault(rank, {})[names[d["local_id"]]] = (val(r[t]), val(r[i]))
    return out


@pytest.mark.parametrize("variant", ["2021", "2022"])
@pytest.mark.parametrize("footer", [b"PROFDBft", b"tfBDFORP"])
def test_tiny_database_hand_computed(tmp_path, variant, footer):
    db = build_tiny(tmp_path / "db", variant, footer)
    rows = Reader().read(str(db))
    names = rows.frames.column("name").to_pylist()
    parents = rows.frames.column("parent_local").to_pylist()
    assert {n: (names[p] if p >= 0 else None) for n, p in zip(names, parents)} == PARENT
    assert rows.frames.column("type").to_pylist() == ["function", "statement", "loop", "statement", "function",
                                                      "statement", "function", "statement"]
    got = frame_values(rows)
    assert sorted(got) == [-1, 0, 1]
    for rank, want in EXPECTED.items():
        assert got[rank] == {k: (None if t is None else float(t), float(i)) for k, (t, i) in want.items()}, rank
    assert set(rows.values.column("thread").to_pylist()) == {0, -1}
    m = {x.name: x for x in rows.metrics}
    assert set(m) == {"time", "time (inc)", "sum(time)", "sum(time (inc))"}
    assert (m["time"].role, m["time"].pair, m["time"].unit) == ("exclusive", "time (inc)", "seconds")  # not a timing
    assert (m["time (inc)"].role, m["sum(time)"].role) == ("inclusive", "other")
    md = rows.metadata
    assert md["hpctoolkit.folded_contexts"] == 4  # points 7, 8, 9 and 11 have values but no element
    assert md["hpctoolkit.call_only_lines"] == 0
    assert md["hpctoolkit.totals"] == {"sum(time (inc))": 11.25}  # the global context (id 0) is no node
    assert md["hpctoolkit.id_tuple_bytes"] == (18 if variant == "2022" else 10)
    assert md["hpctoolkit.profile_db_version"] == ("4.0" if variant == "2022" else "1.0")
    assert md["hpctoolkit.cct_db"] == "ok" and md["hpctoolkit.trace_db"] is False and md["program"] == "tiny"
    assert [(p["profile"], p["rank"], p["thread"], p["summary"]) for p in md["hpctoolkit.profiles"]] == [
        (0, -1, -1, True), (1, 1, 0, False), (2, 0, 0, False)]
    assert md["hpctoolkit.host_ids"] == [0xABC]
    normalize(rows)


def test_a_line_with_only_calls_makes_no_node(tmp_path):
    """hpcprof2 writes an <S> for a line whose only cost is the calls made on it (its execution value, no
    function value); the old hpcprof wrote none, and here it would be an empty leaf beside its calls."""
    db = build_tiny(tmp_path / "db")
    before = frame_values(Reader().read(str(db)))
    xml = (db / "experiment.xml").read_text()
    (db / "experiment.xml").write_text(xml.replace('<C i="5"', '<S i="14" it="14" l="14" s="2" v="0"/>\n<C i="5"'))
    profiles = [([(0, 0, 0, 0)], {**SUMMARY, 14: {0: 1.0}}), ([(1, 0, 1, 1), (2, 0, 1, 1), (3, 0, 0, 0)], B),
                ([(1, 0, 1, 1), (2, 0, 0, 0), (3, 0, 0, 0)], {**A, 14: {0: 1.0}})]
    (db / "profile.db").write_bytes(profile_db(profiles, 18, 4))
    rows = Reader().read(str(db))
    assert "app.c:14" not in rows.frames.column("name").to_pylist() and frame_values(rows) == before
    assert rows.metadata["hpctoolkit.call_only_lines"] == 1 and rows.metadata["hpctoolkit.folded_contexts"] == 4
    assert fuzz.contract_problems(rows) == []


def test_tiny_cct_db_is_not_needed(tmp_path):
    db = build_tiny(tmp_path / "db")
    before = frame_values(Reader().read(str(db)))
    (db / "cct.db").write_bytes(b"garbage, not a cct.db")
    rows = Reader().read(str(db))
    assert frame_values(rows) == before and "does not start with" in rows.metadata["hpctoolkit.cct_db"]
    (db / "cct.db").unlink()
    rows = Reader().read(str(db))
    assert frame_values(rows) == before and rows.metadata["hpctoolkit.cct_db"] == "missing"


def test_sniffing_prefers_the_sparse_reader(tmp_path):
    db = build_tiny(tmp_path / "db")
    assert detect(db) == "hpctoolkit_sparse" and Reader.sniff(str(db))
    assert not OldReader.sniff(str(db)) and not V4Reader.sniff(str(db))
    (db / "1.app-000000-000-a8c00000-1-0.metric-db").write_bytes(b"HPCPROF-metricdb__00.10b" + bytes(8))
    assert not OldReader.sniff(str(db)) and detect(db) == "hpctoolkit_sparse"  # the old reader declines it
    assert [p.rsplit("/", 1)[1] for p in Reader.files(str(db))] == ["experiment.xml", "profile.db"]
    assert not Reader.sniff(str(tmp_path)) and not Reader.sniff(str(db / "profile.db"))
    gf = perflake.read_hpctoolkit(db)
    assert gf.dataframe.shape[0] > 0


def _error(db, kind="hpctoolkit_sparse") -> ReaderError:
    with pytest.raises(ReaderError) as err:
        get_reader(kind).read(str(db))
    assert "\n" not in str(err.value) and str(err.value).startswith(f"{err.value.path}: ")
    return err.value


def test_damaged_files_name_the_file(tmp_path):
    db = build_tiny(tmp_path / "db")
    good = (db / "profile.db").read_bytes()
    (db / "profile.db").write_bytes(good[: len(good) // 2])
    err = _error(db)
    assert err.path == str(db / "profile.db") and "truncated" in err.problem and "footer" in err.problem
    (db / "profile.db").write_bytes(good[: len(good) - 40] + good[-8:])  # footer kept, the last block cut
    err = _error(db)
    assert err.path == str(db / "profile.db") and "past the end of the file" in err.problem
    (db / "profile.db").write_bytes(b"HPCPROF-profdb_X" + good[16:])
    assert not Reader.sniff(str(db)) and detect(db) is None
    err = _error(db)
    assert err.path == str(db / "profile.db") and "not an HPCToolkit sparse profile.db" in err.problem
    bad = bytearray(good)
    at = good.index(struct.pack(">dH", 4.0, 1))  # a value of the last profile, metric id 1 -> 9
    bad[at + 8 : at + 10] = struct.pack(">H", 9)
    (db / "profile.db").write_bytes(bytes(bad))
    assert "metric id 9, which experiment.xml does not describe" in _error(db).problem
    (db / "profile.db").write_bytes(good)
    xml = (db / "experiment.xml").read_text()
    (db / "experiment.xml").write_text(xml[: len(xml) // 2])
    err = _error(db)
    assert err.path == str(db / "experiment.xml") and "malformed XML" in err.problem
    (db / "experiment.xml").write_text(xml.replace("<HPCToolkitExperiment", '<!DOCTYPE HPCToolkitExperiment [\n'
                                                   '<!ENTITY a "x">]>\n<HPCToolkitExperiment', 1))
    assert "entity declaration" in _error(db).problem
    (db / "experiment.xml").unlink()
    assert not Reader.sniff(str(db))
    assert _error(db).path == str(db / "experiment.xml")


def test_mutated_copies_end_in_a_clean_error_or_a_correct_read(tmp_path):
    """tests/fuzz.py's mutations and checks (no real sparse database exists under ../shared/data to fuzz)."""
    src = write_hpctoolkit_sparse_runs(tmp_path / "src", nodes=25, ranks=2, threads=2, seed=4)[0]
    outcomes = []
    for i in range(160):
        rng = random.Random(i)
        root = tmp_path / f"case{i}"
        db = root / "db"
        shutil.copytree(src, db)
        name = rng.choice(["experiment.xml", "profile.db", "profile.db"])
        f = db / name
        kind = rng.choice(["byte", "text" if name.endswith(".xml") else "binary"])
        if kind == "byte":
            data, what = fuzz._byte_mutation(rng, rng.choice(list(fuzz.BYTE_MUTATIONS)), f.read_bytes())
        elif kind == "text":
            data, what = fuzz._text_mutation(rng, rng.choice(list(fuzz.TEXT_MUTATIONS)), f.read_bytes())
        else:
            data, what = fuzz._binary_mutation(rng, rng.choice(list(fuzz.BINARY_MUTATIONS)), f.read_bytes(), f)
        f.write_bytes(data)
        outcome, detail = fuzz.check("hpctoolkit_sparse", db, root)
        assert outcome in ("ok", "error"), (i, name, what, detail)
        outcomes.append(outcome)
        shutil.rmtree(root)
    assert outcomes.count("ok") >= 10 and outcomes.count("error") >= 10


# -- generated databases --------------------------------------------------------------------------------------


def _model(nodes, ranks, threads, seed, k=0):
    tree = make_tree(nodes, seed=seed)
    if k:
        tree = perturb(tree, seed=seed * 1000 + k)
    return tree, make_metrics(tree, ranks, seed=seed * 1000 + k + 500, n_threads=threads, app_seed=seed)


def _function_path(names: list, parents: list, types: list, i: int) -> tuple:
    out = []
    while i >= 0:
        if types[i] == "function" and not names[i].startswith(("<unknown procedure>", "<program root>")):
            out.append(names[i].split(":", 1)[1] if names[i].split(":", 1)[0].isdigit() else names[i])
        i = parents[i]
    return tuple(reversed(out))


@pytest.mark.parametrize("nodes,ranks,threads,variant,n_metrics", [
    (1, 1, 1, "2022", 1), (2, 1, 3, "2021", 1), (40, 3, 2, "2022", 2), (40, 2, 1, "2021", 1), (400, 4, 2, "2022", 1)])
def test_generated_round_trip(tmp_path, nodes, ranks, threads, variant, n_metrics):
    db = write_hpctoolkit_sparse_runs(tmp_path, nodes=nodes, ranks=ranks, threads=threads, seed=7, variant=variant,
                                      n_metrics=n_metrics)[0]
    assert detect(db) == "hpctoolkit_sparse"
    rows = Reader().read(str(db))
    tree, m = _model(nodes, ranks, threads, 7)
    names, parents = rows.frames.column("name").to_pylist(), rows.frames.column("parent_local").to_pylist()
    types = rows.frames.column("type").to_pylist()
    v = rows.values.to_pandas()
    per = v[v["rank"] >= 0].fillna(0.0)
    assert sorted(set(zip(per["rank"], per["thread"]))) == [(r, t) for r in range(ranks) for t in range(threads)]
    # every location's exclusive time adds up to the model's, and inclusive = exclusive + children's inclusive
    total = per.groupby(["rank", "thread"])["time"].sum().to_numpy()
    np.testing.assert_allclose(total, m.exclusive.sum(axis=0) * 1e-6, rtol=1e-9)
    own = per.set_index(["local_id", "rank", "thread"])
    par = np.asarray(parents)[per["local_id"].to_numpy()]
    kids = per.assign(parent=par)[par >= 0].groupby(["parent", "rank", "thread"])["time (inc)"].sum()
    expect = own["time"] + kids.reindex(own.index, fill_value=0).to_numpy()
    np.testing.assert_allclose(own["time (inc)"].to_numpy(), expect.to_numpy(), rtol=1e-9, atol=1e-15)
    # each model function's procedure frame has the model's inclusive time, on every location
    model_inc = {p: m.inclusive[k] for k, p in enumerate(tree.paths())}
    pf = {i: _function_path(names, parents, types, i) for i, (n, t) in enumerate(zip(names, types))
          if t == "function" and not n.startswith(("<unknown procedure>", "<program root>"))}
    assert sorted(pf.values()) == sorted(model_inc)
    inc = own["time (inc)"].unstack(["rank", "thread"]).reindex(columns=[(r, t) for r in range(ranks)
                                                                         for t in range(threads)])
    for i, path in pf.items():
        np.testing.assert_allclose(inc.loc[i].to_numpy(), model_inc[path] * 1e-6, rtol=1e-9)
    # folded contexts: the instructions under lines (two per non-MPI function, one per loop) with a value
    ex = m.exclusive
    loop, solver = has_loop(tree), np.array([category(n) != MPI for n in tree.names])
    sa = np.where(loop[:, None], ex // 3, ex)
    want = int((solver & (sa >= 1).any(1)).sum() + (solver & (sa >= 2).any(1)).sum() + loop.sum())
    assert rows.metadata["hpctoolkit.folded_contexts"] == want
    # the summary profile: sums, counts, min and max over the locations
    summ = v[v["rank"] == -1].set_index("local_id")
    g = v[v["rank"] >= 0].groupby("local_id")["time (inc)"]
    stmt = np.asarray(types)[summ.index] == "statement"
    for col, agg in (("sum(time (inc))", g.sum()), ("count(time (inc))", g.count()), ("max(time (inc))", g.max())):
        np.testing.assert_allclose(summ.loc[~stmt, col].to_numpy(), agg.reindex(summ.index[~stmt]).to_numpy(),
                                   rtol=1e-9)
    np.testing.assert_allclose(summ["sum(time)"].fillna(0).sum(), m.exclusive.sum() * 1e-6, rtol=1e-9)
    if n_metrics == 2:  # the second metric: 1000 instructions per microsecond
        np.testing.assert_allclose(per.groupby(["rank", "thread"])["papi_tot_ins"].sum().to_numpy(),
                                   m.exclusive.sum(axis=0) * 1e3, rtol=1e-9)
    assert rows.metadata["hpctoolkit.id_tuple_bytes"] == (18 if variant == "2022" else 10)
    assert fuzz.contract_problems(rows) == []  # the reader contract (tests/test_reader_contract.py has no dataset)
    stmt = [i for i, t in enumerate(types) if t == "statement"]
    assert set(stmt) <= set(v["local_id"])  # no empty statement: lines with only calls make no node
    ctx = Contexts(tree, _APPS[7 % len(_APPS)], 7000)  # the writer's context tree: its lines without own cost
    _, fun = ctx.propagate(ctx.point_values(m.exclusive))
    want = int(((np.array(ctx.kind) == 2) & (fun == 0).all(axis=1)).sum())  # kind 2: a line
    assert rows.metadata["hpctoolkit.call_only_lines"] == want and (want > 0) == (nodes > 1)
    a, b = normalize(rows), normalize(rows)
    assert a.nodes.column("node_id").to_pylist() == b.nodes.column("node_id").to_pylist()


def test_generator_is_deterministic_and_runs_differ(tmp_path):
    a = write_hpctoolkit_sparse_runs(tmp_path / "a", nodes=60, ranks=2, runs=2, seed=3)
    b = write_hpctoolkit_sparse_runs(tmp_path / "b", nodes=60, ranks=2, runs=2, seed=3)
    c = write_hpctoolkit_sparse_runs(tmp_path / "c", nodes=60, ranks=2, runs=1, seed=4)
    for x, y in zip(a, b):
        for f in ("experiment.xml", "profile.db", "cct.db", "trace.db"):
            assert (x / f).read_bytes() == (y / f).read_bytes()
    assert (a[0] / "profile.db").read_bytes() != (a[1] / "profile.db").read_bytes()
    assert (a[0] / "profile.db").read_bytes() != (c[0] / "profile.db").read_bytes()
    rows = Reader().read(str(a[1]))  # run 1 is the perturbed tree
    tree, m = _model(60, 2, 1, 3, k=1)
    v = rows.values.to_pandas()
    np.testing.assert_allclose(v[v["rank"] >= 0].groupby("rank")["time"].sum().to_numpy(),
                               m.exclusive.sum(axis=0) * 1e-6, rtol=1e-9)
    with pytest.raises(ValueError):
        write_hpctoolkit_sparse_runs(tmp_path / "d", nodes=5, ranks=1, variant="2020")


def test_zero_filled_cct_db_gives_the_same_values(tmp_path):
    full = write_hpctoolkit_sparse_runs(tmp_path / "full", nodes=50, ranks=2, threads=2, seed=2)[0]
    zero = write_hpctoolkit_sparse_runs(tmp_path / "zero", nodes=50, ranks=2, threads=2, seed=2, cct_zeroed=True)[0]
    assert (full / "profile.db").read_bytes() == (zero / "profile.db").read_bytes()
    cct_full, cct_zero = (full / "cct.db").read_bytes(), (zero / "cct.db").read_bytes()
    assert len(cct_full) == len(cct_zero) and cct_full != cct_zero and cct_zero.startswith(b"HPCPROF-cctdb___")
    a, b = Reader().read(str(full)), Reader().read(str(zero))
    assert a.values.equals(b.values) and a.frames.equals(b.frames)


def test_cct_db_holds_the_profile_values(tmp_path):
    """The writer's cct.db is the transpose of profile.db (decoded here independently of the reader)."""
    db = write_hpctoolkit_sparse_runs(tmp_path, nodes=30, ranks=2, threads=1, seed=9)[0]
    data = (db / "cct.db").read_bytes()
    magic, _maj, _min, n_ctx, _n_sec, size, ptr = struct.unpack_from(">16sBBIHQQ", data)
    assert magic == b"HPCPROF-cctdb___" and size == 22 * n_ctx and data[-8:] == b"rtfBDTCC"
    cct = {}
    for c in range(n_ctx):
        ctx, n_vals, n_mids, off = struct.unpack_from(">IQHQ", data, ptr + 22 * c)
        assert ctx == c
        pairs = [struct.unpack_from(">dI", data, off + 12 * j) for j in range(n_vals)]
        mids = [struct.unpack_from(">HQ", data, off + 12 * n_vals + 10 * j) for j in range(n_mids + 1)]
        assert mids[-1] == (0x6564, n_vals) if n_vals else n_mids == 0
        for (mid, a), (_, b) in zip(mids, mids[1:]):
            for value, prof in pairs[a:b]:
                cct[c, mid, prof] = value
    from perflake.readers.hpctoolkit_sparse_sections import read_profiles
    prof = read_profiles(str(db / "profile.db"))
    per = prof.profile != 0
    assert cct == {(int(c), int(m), int(p)): float(x) for c, m, p, x in
                   zip(prof.ctx[per], prof.metric[per], prof.profile[per], prof.value[per])}


def test_ingest_into_a_lake(tmp_path):
    dbs = write_hpctoolkit_sparse_runs(tmp_path / "in", nodes=80, ranks=3, threads=2, runs=2, seed=1)
    lake = Lake(tmp_path / "lake")
    report = lake.ingest(dbs)
    assert len(report.ingested) == 2 and not report.failed
    runs = lake.runs()
    assert set(runs["format"]) == {"hpctoolkit_sparse"} and set(runs["schema_version"]) == {SCHEMA_VERSION}
    assert all(len(h) == 64 and r == h[:16] for h, r in zip(runs["content_sha256"], runs["run_id"]))
    assert set(runs["n_files"]) == {2} and (runs["n_nodes"] > 80).all()
    assert set(runs["ranks"]) == {3} and set(runs["threads"]) == {2}  # the summary (rank -1) is no rank
    meta = json.loads(runs.iloc[0]["metadata"])
    assert meta["hpctoolkit.folded_contexts"] > 0
    again = lake.ingest(dbs)
    assert not again.ingested  # same bytes, same run ids


def test_hatchet_reads_no_sparse_database(tmp_path, bench_python):
    """Why there is no golden: llnl-hatchet 2026.2.0 has no reader for this layout."""
    db = build_tiny(tmp_path / "db")
    for call, why in (("from_hpctoolkit", "ZeroDivisionError"), ("from_hpctoolkit_latest", "meta.db not found")):
        done = subprocess.run([str(bench_python), "-W", "ignore", "-c",
                               f"import hatchet as ht, sys; ht.GraphFrame.{call}(sys.argv[1])", str(db)],
                              capture_output=True, text=True, timeout=300)
        assert done.returncode != 0 and why in done.stderr, (call, done.stderr[-500:])
