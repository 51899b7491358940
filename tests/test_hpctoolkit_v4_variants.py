"""HPCToolkit v4 layout variants: databases of an hpcprof pre-release of 2022 (issue 13 item 2).

They say ``HPCTOOLKITmeta`` / ``HPCTOOLKITprof`` 4.0 like released files but have an earlier layout; the bytes here
come from the v4 writer with ``layout="2022-pre"``, written after HPCToolkit's own sources of that year
(``src/lib/prof-lean/formats/metadb.[ch]`` and ``profiledb.[ch]``, ``src/lib/profile/sinks/metadb.cpp``).

Issue text vs HPCToolkit's sources: they agree on every size and offset the issue lists (metrics header
szMetric/szScope/szSummary 24/24/16 at 0x0c-0x0e, metric ``{pName, u16 nScopes @0x08, pScopes @0x10}``, scope
``{pScope, u16 nSummaries @0x08, u16 propMetricId @0x0a, pSummaries @0x10}``, summary ``{pFormula, u8 combine
@0x08, u16 statMetricId @0x0a}``, tree header ``{szRoots, pRoots}``, contexts ``0x18 + 8*nFlexWords`` bytes
without ``propagation``, profile infos of 40 bytes).  The sources settle what the issue leaves open, and the
reader follows them: (1) the pre-release profile info is ``{value block, pIdTuple}`` with no ``flags`` word, so
the summary profile is the first one (as FORMATS.md 4.0 still guarantees); (2) the pre-release ``pScope`` is the
scope's *name* (a ``char*``), there is no scope array, type or propagation index; (3) the roots are the
children of the global context written as ordinary contexts: a placeholder (``<program root>``,
``<thread root>``) is a function context whose function record has only a name, an unknown scope a function
context without function; the released hpcprof (``MetaDB::notifyContext``) turns exactly these into the entry
points ``main thread``, ``application thread`` and ``unknown entry``, so the reader does too and both layouts
give the same tree.  Any other root stays a context.
"""
from __future__ import annotations

import struct

import numpy as np
import pytest

from perflake.errors import ReaderError
from perflake.generators.hpctoolkit_v4 import write_hpctoolkit_v4_runs
from perflake.readers import hpctoolkit_v4_sections as sec
from perflake.readers.hpctoolkit_v4 import Reader

ARGS = dict(nodes=90, ranks=2, threads=2, seed=5)
PRE = "4.0 (2022 pre-release layout)"


@pytest.fixture(scope="module")
def dbs(tmp_path_factory):
    out = tmp_path_factory.mktemp("variants")
    return (write_hpctoolkit_v4_runs(out / "released", **ARGS)[0],
            write_hpctoolkit_v4_runs(out / "pre", layout="2022-pre", **ARGS)[0])


def _cstr(data: bytes, p: int) -> str:
    return data[p:data.index(b"\0", p)].decode()


def test_pre_release_bytes_have_the_2022_layout(dbs):
    _, pre = dbs
    meta = (pre / "meta.db").read_bytes()
    assert meta[:16] == b"HPCTOOLKITmeta\x04\x00"
    _, met = struct.unpack_from("<QQ", meta, 0x30)
    p_metrics, n_metrics, sz_metric, sz_scope, sz_summary = struct.unpack_from("<QIBBB", meta, met)
    assert (n_metrics, sz_metric, sz_scope, sz_summary) == (1, 24, 24, 16)
    p_name, n_scopes, p_scopes = struct.unpack_from("<QH6xQ", meta, p_metrics)
    assert (_cstr(meta, p_name), n_scopes) == ("REALTIME (sec)", 3)
    scopes = []
    for i in range(n_scopes):
        p_scope, n_sums, prop, p_sums = struct.unpack_from("<QHH4xQ", meta, p_scopes + 24 * i)
        p_formula, combine, stat = struct.unpack_from("<QBxH", meta, p_sums)
        scopes.append((_cstr(meta, p_scope), n_sums, prop, _cstr(meta, p_formula), combine, stat))
    assert scopes == [("point", 1, 0, "$$", 0, 5), ("function", 1, 1, "$$", 0, 4), ("execution", 1, 2, "$$", 0, 3)]
    _, ctx = struct.unpack_from("<QQ", meta, 0x40)
    sz_roots, p_roots = struct.unpack_from("<QQ", meta, ctx)
    roots, p = [], p_roots
    while p < p_roots + sz_roots:  # ordinary contexts of 0x18 + 8 * nFlexWords bytes
        _, _, ctx_id, flags, _rel, lexical, n_flex = struct.unpack_from("<QQIBBBB", meta, p)
        fn = struct.unpack_from("<Q", meta, p + 0x18)[0] if flags & 1 else 0
        roots.append((lexical, flags, n_flex, _cstr(meta, struct.unpack_from("<Q", meta, fn)[0]) if fn else None))
        p += 0x18 + 8 * n_flex
    assert p == p_roots + sz_roots
    assert roots == [(0, 1, 1, "<program root>"), (0, 1, 1, "<thread root>"), (0, 0, 0, None)]
    prof = (pre / "profile.db").read_bytes()
    _, pi = struct.unpack_from("<QQ", prof, 0x10)
    assert struct.unpack_from("<QIB", prof, pi)[1:] == (1 + 2 * 2, 40)
    assert (pre / "cct.db").read_bytes() == (dbs[0] / "cct.db").read_bytes()  # cct.db: one layout


def test_pre_release_reads_like_the_released_layout(dbs):
    """Same run, two layouts: the same tree, entry points, locations and values; only the version differs."""
    released, pre = (Reader().read(str(d)) for d in dbs)
    assert released.frames.equals(pre.frames)
    assert released.values.equals(pre.values)
    assert [m.name for m in released.metrics] == [m.name for m in pre.metrics]
    assert pre.metadata["hpctoolkit.version"] == {"meta.db": PRE, "profile.db": PRE}
    assert released.metadata["hpctoolkit.version"] == {"meta.db": "4.0", "profile.db": "4.0"}
    for key in ("hpctoolkit.entry_points", "hpctoolkit.profiles", "hpctoolkit.contexts", "title"):
        assert released.metadata[key] == pre.metadata[key]
    scopes = [(s["scope"], s["type"], s["prop_id"]) for s in pre.metadata["hpctoolkit.metrics"][0]["scopes"]]
    assert scopes == [("point", 1, 0), ("function", 3, 1), ("execution", 2, 2)]  # type from the scope's name
    summary = [p for p in pre.metadata["hpctoolkit.profiles"] if p["summary"]]
    assert [(p["profile"], p["id_tuple"]) for p in summary] == [(0, [])]


def _patched(src, dst, name: str, old: bytes, new: bytes):
    dst.mkdir()
    for f in src.iterdir():
        data = f.read_bytes()
        (dst / f.name).write_bytes(data.replace(old, new) if f.name == name else data)
    return dst


def test_a_root_that_is_no_entry_placeholder_stays_a_context(dbs, tmp_path):
    """hpcprof turns only <program root>, <thread root> and an unknown scope into entry points."""
    d = _patched(dbs[1], tmp_path / "db", "meta.db", b"<thread root>\0", b"<thread rooX>\0")
    rows = Reader().read(str(d))
    assert [e["name"] for e in rows.metadata["hpctoolkit.entry_points"]] == ["main thread", "unknown entry"]
    f = rows.frames.to_pandas().set_index("local_id")
    root = f[f["name"] == "function: <thread rooX>"]
    assert len(root) == 1 and root["type"].item() == "function"
    assert f.loc[root["parent_local"].item(), "type"] == "root"  # a child of the global context, as in the file
    kids = f[f["parent_local"] == root.index.item()]["name"].tolist()
    assert kids == ["function: worker_thread_main"]
    same = Reader().read(str(dbs[1]))
    assert rows.values.drop_columns("local_id").equals(same.values.drop_columns("local_id"))


def _set_byte(src, dst, name: str, where, value: int):
    dst.mkdir()
    for f in src.iterdir():
        data = bytearray(f.read_bytes())
        if f.name == name:
            data[where(bytes(data))] = value
        (dst / f.name).write_bytes(bytes(data))
    return dst


def _metrics_at(off):
    return lambda data: struct.unpack_from("<Q", data, 0x38)[0] + off


def _profiles_at(off):
    return lambda data: struct.unpack_from("<Q", data, 0x18)[0] + off


@pytest.mark.parametrize("layout, name, where, value, message", [
    ("4.0", "meta.db", _metrics_at(0x0c), 24, "metric descriptions: recorded structure size 24 is below the 32"),
    ("4.0", "meta.db", _metrics_at(0x0d), 8, "propagated sub-metrics: recorded structure size 8 is below the 16"),
    ("4.0", "meta.db", _metrics_at(0x0e), 16, "summary statistics: recorded structure size 16 is below the 24"),
    ("2022-pre", "meta.db", _metrics_at(0x0d), 16, "metric descriptions: recorded structure size 24 is below the 32"),
    ("2022-pre", "meta.db", _metrics_at(0x0e), 8, "metric descriptions: recorded structure size 24 is below the 32"),
    ("4.0", "profile.db", _profiles_at(0x0c), 44, "profile infos: recorded structure size 44 is below the 48"),
    ("2022-pre", "profile.db", _profiles_at(0x0c), 32, "profile infos: recorded structure size 32 is below the 48"),
])
def test_any_other_smaller_structure_is_an_error(dbs, tmp_path, layout, name, where, value, message):
    """Only the exact pre-release sizes select that layout; any other structure smaller than its 4.0 size is a
    ReaderError naming the file (the format never removes fields)."""
    d = _set_byte(dbs[0] if layout == "4.0" else dbs[1], tmp_path / "db", name, where, value)
    with pytest.raises(ReaderError) as err:
        Reader().read(str(d))
    assert str(d / name) in str(err.value) and message in str(err.value)


def test_truncated_pre_release_meta_db_names_the_file(dbs, tmp_path):
    d = tmp_path / "db"
    d.mkdir()
    for f in dbs[1].iterdir():
        data = f.read_bytes()
        if f.name == "meta.db":  # the roots' array pointer past the end of the file
            ctx = struct.unpack_from("<Q", data, 0x48)[0]
            data = data[:ctx + 8] + struct.pack("<Q", len(data) + 64) + data[ctx + 16:]
        (d / f.name).write_bytes(data)
    with pytest.raises(ReaderError, match="meta.db") as err:
        Reader().read(str(d))
    assert "outside the tree section" in str(err.value)


def test_sections_decode_the_pre_release_metrics_in_the_released_shape(dbs):
    released, pre = (sec.read_meta(str(d / "meta.db")) for d in dbs)
    strip = lambda ms: [{**m, "scopes": [{k: v for k, v in s.items() if k != "index"} for s in m["scopes"]],  # noqa
                         "summaries": [{k: v for k, v in s.items() if k != "index"} for s in m["summaries"]]}
                        for m in ms]
    assert strip(released.metrics) == strip(pre.metrics)
    assert [s["index"] for s in pre.metrics[0]["scopes"]] == [None] * 3  # not recorded before 4.0
    assert released.contexts.ctx_id == pre.contexts.ctx_id and released.contexts.kind == pre.contexts.kind
    assert np.array_equal(released.contexts.parent, pre.contexts.parent)


def test_pre_release_contexts_without_flags_are_read_from_their_word_count(dbs, tmp_path):
    """HPCToolkit's metadb.c of early 2022 wrote the flex words but left the flags byte (0x14) at 0; the words
    are written in a fixed order, each only when present, so their number tells which are there."""
    meta = bytearray((dbs[1] / "meta.db").read_bytes())
    _, ctx = struct.unpack_from("<QQ", meta, 0x40)
    arrays, cleared = [struct.unpack_from("<QQ", meta, ctx)[::-1]], 0  # (pointer, size) of the roots
    while arrays:
        p, size = arrays.pop()
        end = p + size
        while p < end:
            sz, p_children, _, flags, _, _, n_flex = struct.unpack_from("<QQIBBBB", meta, p)
            cleared += flags != 0
            meta[p + 0x14] = 0
            if sz:
                arrays.append((p_children, sz))
            p += 0x18 + 8 * n_flex
    assert cleared > 100
    d = tmp_path / "db"
    d.mkdir()
    for f in dbs[1].iterdir():
        (d / f.name).write_bytes(bytes(meta) if f.name == "meta.db" else f.read_bytes())
    got, want = Reader().read(str(d)), Reader().read(str(dbs[1]))
    assert got.frames.equals(want.frames) and got.values.equals(want.values)
