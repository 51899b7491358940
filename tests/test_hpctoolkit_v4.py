"""The HPCToolkit v4 reader against llnl-hatchet 2026.2.0's summary view of hpctoolkit-gamess (../shared/golden).

The golden is hatchet's ``from_hpctoolkit_latest`` in summary mode: profile 0 (the summary profile), columns
``time`` (function scope) and ``time (inc)`` (execution scope), and only the first ``main thread`` entry
point, whose root hatchet names ``entry``.  Differences from hatchet, each asserted below:

* B.6: perflake reads every entry point.  The golden's root ``entry`` is our path
  ``<program root> -> main thread`` (``<program root>`` is the global context, ctx 0); the other entry point
  (``unknown entry``) is an extra subtree the golden does not have.
* formats.md 2.5 / issue 13 item 3: values of ctxIds absent from meta.db (instruction contexts hpcprof elides)
  make no node, as in hatchet; their cost is already in their ancestors' execution and function values
  (asserted below on all 65 profiles); the metadata counts them.
* Issue 13 item 1: a source file copied into the database (``copied`` flag) is named by its original path.
  This database stores the pre-2023 form ``gamess-1n-siCap-gpu.d/src/<path>``, which hatchet shows as stored
  (it only removes a leading ``src``): the golden's names are mapped to ``/<path>`` before comparing.
* B.9: each propagation scope is its own column (``time (point)``, ``time (lex_aware)``); hatchet's summary
  golden only has ``time``/``time (inc)`` so nothing is lost in the comparison.
* B.8: ``name`` is not an exclusive metric.
* B.10: file, line and module are frame attributes (the name is still spelled as hatchet spells it, so the
  call paths match); flex fields come from the context flags; strings are UTF-8.
* Summary values live at rank -1, thread -1 in the columns ``sum(time)``/``sum(time (inc))``; the golden
  is compared with those.  Same-name siblings are summed on both sides (perflake also merges siblings
  with identical frames, which sums the same values).
"""

from __future__ import annotations

import functools
import json
import shutil
import types

import numpy as np
import pandas as pd
import pytest

from perflake.errors import ReaderError
from perflake.frame.graphframe import GraphFrame
from perflake.ingest.normalize import normalize
from perflake.readers import hpctoolkit_v4_sections as sec
from perflake.readers.hpctoolkit_v4 import ROOT_NAME, Reader, hatchet_function_name

SAMPLE = "hpctoolkit-gamess"
MAIN = (ROOT_NAME, "main thread")
COPIED_AS = "gamess-1n-siCap-gpu.d/src/"  # hpcprof's output directory + src/ (pre-2023 form of copied sources)


@functools.lru_cache(maxsize=1)
def _load(path: str):
    rows = Reader().read(path)
    n = normalize(rows)
    return rows, n, GraphFrame.from_tables(n.nodes, n.metrics, n.metric_info, rows.metadata)


@pytest.fixture
def run(shared_data):
    return _load(str(shared_data(SAMPLE)))


def _summary_view(gf) -> types.SimpleNamespace:
    """The summary location of the GraphFrame with hatchet's summary-mode column names."""
    df = gf.dataframe.xs((-1, -1), level=("rank", "thread"))
    df = df[["name", "sum(time)", "sum(time (inc))"]].rename(columns={"sum(time)": "time",
                                                                      "sum(time (inc))": "time (inc)"})
    return types.SimpleNamespace(dataframe=df)


def test_summary_matches_golden(run, golden):
    import golden as golden_check

    _, _, gf = run
    gold = golden(SAMPLE)
    assert {c[0] for c in gold["callpath"]} == {"entry"}
    assert sum(COPIED_AS in n for c in gold["callpath"] for n in c) == 363
    # B.6: hatchet's only root "entry"; item 1: copied sources by their original path
    gold["callpath"] = [MAIN + tuple(n.replace(COPIED_AS, "/") for n in c[1:]) for c in gold["callpath"]]
    ours = golden_check.compare(_summary_view(gf), gold)
    # nothing else under the main thread: the same 8 396 call paths, the same ones without a value (NaN)
    main = {p for p in ours.index if p[:2] == MAIN}
    assert main == set(gold["callpath"]) and len(main) == 8396
    assert ours.loc[sorted(main)].notna().sum().to_dict() == {"time": 2166, "time (inc)": 8070}
    assert ours.loc[[MAIN], "time (inc)"].iloc[0] == pytest.approx(1608.492466, rel=1e-12)
    assert gf.exc_metrics[0] == "time" and "name" not in gf.exc_metrics  # B.8
    assert gf.default_metric == "time (inc)"


def test_every_entry_point_is_read(run):
    """B.6: 4 008.42 s REALTIME in all = 1 608.49 s under main thread (all hatchet keeps) + 2 399.93 s."""
    rows, _, _ = run
    f, v = rows.frames.to_pandas(), rows.values.to_pandas()
    summary = v[v["rank"] == -1].set_index("local_id")["sum(time (inc))"]
    entries = f[f["type"] == "entry"]
    assert list(entries["name"]) == ["unknown entry", "main thread"]
    assert (entries["parent_local"] == 0).all() and f.loc[0, "name"] == ROOT_NAME
    inc = summary.reindex(entries.index).to_numpy()
    np.testing.assert_allclose(inc, [2399.931303, 1608.492466], rtol=1e-12)
    assert summary[0] == pytest.approx(4008.423769, rel=1e-12) == pytest.approx(inc.sum(), rel=1e-12)
    assert [e["entry_point"] for e in rows.metadata["hpctoolkit.entry_points"]] == [0, 1]


def test_contexts_missing_from_meta_db_make_no_node(run):
    """formats.md 2.5: 5 931 valued ctxIds are not in meta.db (elided instruction contexts): no node, no
    placeholder root; counted in the metadata with their summary point cost (1 608.23 s)."""
    rows, n, gf = run
    f, v = rows.frames.to_pandas(), rows.values.to_pandas()
    assert (f["parent_local"] == -1).sum() == 1 and f.loc[0, "name"] == ROOT_NAME
    assert not f["name"].str.contains("unknown context|missing from meta.db").any()
    assert set(f["type"]) == {"root", "entry", "function", "inlined function", "loop", "line", "instruction"}
    assert len(f) == 1 + rows.metadata["hpctoolkit.contexts"] == 11303
    assert v["local_id"].between(0, len(f) - 1).all()
    md = rows.metadata
    assert md["hpctoolkit.missing_contexts"] == 5931 and md["hpctoolkit.missing_values"] == 48367
    assert md["hpctoolkit.missing_point_cost"] == {"sum(time (point))": pytest.approx(1608.227165, rel=1e-9)}
    # point scope is the raw attribution: over the tree plus the elided contexts it adds up to the run total
    s = v[v["rank"] == -1].set_index("local_id")
    total = s["sum(time (point))"].sum() + md["hpctoolkit.missing_point_cost"]["sum(time (point))"]
    assert total == pytest.approx(s.loc[0, "sum(time (inc))"], rel=1e-9)
    # the tree starts at the real root, the main thread's inclusive time is what it was
    text = gf.tree(render_header=False, colour=False, precision=6).splitlines()
    assert text[0] == "100.277572 <program root>" and text[1] == "├─ 100.267554 main thread"
    assert not any("unknown context" in line or "missing from meta.db" in line for line in text)


def _tree_values(path: str, metric: str):
    """(parent index, relation, is lexical, per-profile execution and function values) of the tree in
    meta.db order, index 0 = ctx 0 (the program root)."""
    meta = sec.read_meta(path + "/meta.db")
    prof = sec.read_profiles(path + "/profile.db")
    c = meta.contexts
    md = next(m for m in meta.metrics if m["name"] == metric)
    ids = np.r_[0, np.asarray(c.ctx_id, np.int64)]
    parent = np.r_[-1, np.where(np.asarray(c.parent) >= 0, np.asarray(c.parent) + 1, 0)]
    lexical = np.r_[False, np.asarray(c.relation) == 0]
    is_summary = np.array([i["summary"] for i in prof.infos])
    order = np.argsort(ids)
    pos = np.searchsorted(ids, prof.ctx.astype(np.int64), sorter=order).clip(0, len(ids) - 1)
    row = np.where(ids[order[pos]] == prof.ctx, order[pos], -1)
    values = {}
    for scope in ("execution", "function"):
        prop = next(s["prop_id"] for s in md["scopes"] if s["scope"] == scope)
        stat = next(s["stat_id"] for s in md["summaries"] if s["scope"] == scope and s["combine"] == 0)
        want = np.where(is_summary[prof.profile], stat, prop)
        hit = (prof.metric == want) & (row >= 0)
        grid = np.zeros((len(prof.infos), len(ids)))
        np.add.at(grid, (prof.profile[hit], row[hit]), prof.value[hit])
        values[scope] = grid
    return parent, lexical, values


def test_elided_cost_is_in_the_ancestors(shared_data):
    """Issue 13 item 3, checked on the data: for every tree context of every profile (64 threads and the
    summary), execution minus the children's execution equals function minus the lexical children's
    function (the elided contexts' cost is in both), and those self values add up to the run's total.  Hence
    the exclusive column (function scope, as hatchet) and the inclusive one (execution) need no values from
    the contexts missing from meta.db."""
    parent, lexical, v = _tree_values(str(shared_data(SAMPLE)), "REALTIME (sec)")
    ex, fn = v["execution"], v["function"]
    assert ex.shape == (65, 11303)
    kids_ex, kids_fn = np.zeros_like(ex), np.zeros_like(fn)
    np.add.at(kids_ex.T, parent[1:], ex[:, 1:].T)
    np.add.at(kids_fn.T, parent[lexical], fn[:, lexical].T)
    self_ex, self_fn = ex - kids_ex, fn - kids_fn
    np.testing.assert_allclose(self_ex, self_fn, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(self_ex.sum(axis=1), ex[:, 0], rtol=1e-9)
    assert ex[0, 0] == pytest.approx(4008.423769, rel=1e-9)
    # the two scopes are independent measurements: the equality is not an identity of the tree (function
    # values repeat on lines and loops, execution values do not), and thousands of self values are nonzero
    assert (self_ex[0] > 1e-9).sum() > 1000 and (fn[0] > ex[0] + 1e-9).sum() == 0 and (fn[0] != ex[0]).sum() > 1000


def test_profiles_map_to_rank_and_thread(run):
    rows, n, _ = run
    profiles = rows.metadata["hpctoolkit.profiles"]
    assert len(profiles) == 65 and len({(p["rank"], p["thread"]) for p in profiles}) == 65
    assert profiles[0] == {"profile": 0, "summary": True, "values": 30776, "id_tuple": [], "rank": -1, "thread": -1}
    assert profiles[1]["id_tuple"][1:] == [
        {"kind": "RANK", "physical": False, "logical_id": 1, "physical_id": 1},
        {"kind": "THREAD", "physical": False, "logical_id": 1, "physical_id": 1},
    ] and (profiles[1]["rank"], profiles[1]["thread"]) == (1, 1)
    assert (profiles[64]["rank"], profiles[64]["thread"]) == (1, 0)
    gpu = [p for p in profiles if any(t["kind"] == "GPUSTREAM" for t in p["id_tuple"])]
    assert sorted((p["rank"], p["thread"]) for p in gpu) == [(r, 10000 + k) for r in range(8) for k in range(2)]
    cpu = {(p["rank"], p["thread"]) for p in profiles if p not in gpu and not p["summary"]}
    assert cpu == {(r, t) for r in range(8) for t in range(5)} | {(r, 0) for r in range(8, 16)}
    assert rows.metadata["hpctoolkit.host_ids"] == [2148202605]
    # this sample stores no value for GPU streams or thread 4 (formats.md 2.7): no rows, but listed above
    located = n.metrics.select(["rank", "thread"]).to_pandas().drop_duplicates()
    assert sorted(located["rank"].unique()) == [-1, *range(16)] and len(located) == 1 + 8 * 4 + 8


def test_threads_sum_to_the_summary(run):
    """Every summary here is a sum over threads ($$, combine 0).  For the scopes the file defines (point,
    function, execution) per-location values add up to the summary, context by context.  The custom scope
    ``lex_aware`` ("not defined in the file", formats.md 2.2) does not: 148 loop contexts differ, which is
    why the summary profile is kept rather than recomputed."""
    rows, n, _ = run
    v = rows.values.to_pandas()
    sums = [c.name for c in rows.metrics if c.name.startswith("sum(")]
    base = [s[4:-1] for s in sums]
    assert len(sums) == 20 and all(s["combine"] == 0 and s["formula"] == "$$"
                                   for md in rows.metadata["hpctoolkit.metrics"] for s in md["summaries"])
    located, summary = v[v["rank"] >= 0], v[v["rank"] == -1]
    assert located[sums].isna().all().all() and summary[base].isna().all().all()  # nothing counted twice
    per = located.groupby("local_id")[base].sum(min_count=1)
    summary = summary.set_index("local_id")[sums].reindex(per.index)
    close = np.isclose(per.to_numpy(), summary.to_numpy(), rtol=1e-9, atol=0, equal_nan=True)
    custom = np.array([b.endswith("(lex_aware)") for b in base])
    assert close[:, ~custom].all()
    differ = per.index[~close[:, custom].all(axis=1)]
    types = rows.frames.to_pandas()["type"].to_numpy()[differ]
    assert len(differ) == 148 and set(types) == {"loop"}
    # over the normalized tree (identical siblings merged) the same holds
    m = n.metrics.to_pandas()
    per = m[m["rank"] >= 0].groupby("node_id")["time (inc)"].sum(min_count=1)
    np.testing.assert_allclose(per, m[m["rank"] == -1].set_index("node_id")["sum(time (inc))"].reindex(per.index),
                               rtol=1e-9)


def test_metrics_and_frames(run):
    rows, _, _ = run
    roles = {m.name: (m.role, m.unit, m.pair) for m in rows.metrics}
    assert roles["time"] == ("exclusive", "seconds", "time (inc)")  # not a timing
    assert roles["time (inc)"] == ("inclusive", "seconds", "time")  # not a timing
    assert roles["time (point)"] == roles["time (lex_aware)"] == ("other", "seconds", None)  # not a timing
    assert roles["gker (inc)"] == ("inclusive", "seconds", "gker") and roles["gxcopy:count"][1] is None  # not a timing
    assert roles["sum(time (inc))"] == ("other", "seconds", None)  # not a timing
    exclusive = {m.name for m in rows.metrics if m.role == "exclusive"}
    assert exclusive == {"time", "gpuop", "gxcopy", "gker", "gxcopy:count"}
    f = rows.frames.to_pandas()
    assert (f["parent_local"] < f["local_id"]).all() and (f["parent_local"] == -1).sum() == 1  # parents first
    counts = f["type"].value_counts().to_dict()
    assert counts == {"line": 4649, "function": 3918, "loop": 2415, "instruction": 250,
                      "inlined function": 68, "entry": 2, "root": 1}
    fn = f[f["name"] == "function: gamess_"].iloc[0]
    assert fn["module"].endswith("gamess.00.x") and fn["file"] == "[gamess.00.x]"
    loop = f[f["type"] == "loop"].iloc[0]
    assert loop["name"] == f"loop {loop['file']}:{int(loop['line'])}" and loop["module"] is not None
    ins = f[f["type"] == "instruction"].iloc[0]
    assert ins["name"] == f"{ins['module']}:{ins['name'].rsplit(':', 1)[1]}" and pd.isna(ins["file"])
    full = rows.metadata["hpctoolkit.function_names"]
    assert full["xpmem_remove"] == ["xpmem_remove [libxpmem.so.0.0.0]"]
    assert hatchet_function_name("PMPI_Recv [libmpi_cray.so.12]") == "PMPI_Recv"
    assert hatchet_function_name("__sci_ddot_@plt [libsci_cray.so.5.0]") == "__sci_ddot_"
    assert hatchet_function_name("<gpu kernel>") == "<gpu kernel>"


def test_run_metadata(run):
    rows, _, _ = run
    md = rows.metadata
    assert md["title"] == "gamess.00.x" and md["description"] == "TODO database description"
    assert md["hpctoolkit.id_kinds"][:4] == ["SUMMARY", "NODE", "RANK", "THREAD"]
    assert md["hpctoolkit.version"] == {"meta.db": "4.0", "profile.db": "4.0"}
    assert len(md["hpctoolkit.metrics"]) == 44 and md["hpctoolkit.contexts"] == 11302
    json.loads(json.dumps(md))  # plain JSON types only


def test_sniff_and_files(shared_data, tmp_path):
    path = shared_data(SAMPLE)
    assert Reader.sniff(str(path)) and not Reader.sniff(str(tmp_path))
    assert [p.rsplit("/", 1)[1] for p in Reader.files(str(path))] == ["meta.db", "profile.db", "cct.db"]


def _copy(src, dst):
    for name in ("meta.db", "profile.db"):
        shutil.copyfile(src / name, dst / name)
    return dst


def test_utf8_names(shared_data, tmp_path):
    """B.10: strings are UTF-8 (hatchet decodes byte by byte as ASCII and raises)."""
    db = _copy(shared_data(SAMPLE), tmp_path)
    data = bytearray((db / "meta.db").read_bytes())
    at = data.index(b"\0gamess_\0") + 1
    data[at : at + 7] = "gämess".encode()  # same 7 bytes
    (db / "meta.db").write_bytes(bytes(data))
    names = set(Reader().read(str(db)).frames.column("name").to_pylist())
    assert "function: gämess" in names and "function: gamess_" not in names


def test_truncated_profile_db(shared_data, tmp_path):
    db = _copy(shared_data(SAMPLE), tmp_path)
    data = (db / "profile.db").read_bytes()
    (db / "profile.db").write_bytes(data[: len(data) // 2])
    with pytest.raises(ReaderError) as err:
        Reader().read(str(db))
    assert err.value.path == str(db / "profile.db")
    assert "truncated" in err.value.problem and "'_prof.db' footer" in err.value.problem
    (db / "profile.db").write_bytes(data[: len(data) // 2] + data[-8:])  # footer intact, values cut off
    cut = r"profile\.db: truncated or damaged: (values|context index) of profile \d+ .* past the end"
    with pytest.raises(ReaderError, match=cut):
        Reader().read(str(db))


def test_wrong_magic(shared_data, tmp_path):
    db = _copy(shared_data(SAMPLE), tmp_path)
    data = (db / "meta.db").read_bytes()
    (db / "meta.db").write_bytes(b"HPCTOOLKIX" + data[10:])
    assert not Reader.sniff(str(db))
    with pytest.raises(ReaderError) as err:
        Reader().read(str(db))
    assert err.value.path == str(db / "meta.db") and "does not start with 'HPCTOOLKIT'" in err.value.problem
    (db / "meta.db").write_bytes(data)
    prof = (db / "profile.db").read_bytes()
    (db / "profile.db").write_bytes(prof[:10] + b"meta" + prof[14:])  # a second meta.db, no profile.db
    with pytest.raises(ReaderError, match=r"profile\.db: wrong HPCToolkit file kind b'meta'"):
        Reader().read(str(db))


def test_catalog_counts_ranks_without_the_summary(shared_data, lake):
    """Profile 0 (the summary) is stored at rank -1; it is not a rank of the run."""
    lake.ingest([shared_data("hpctoolkit-gamess")])
    row = lake.runs().iloc[0]
    assert row["format"] == "hpctoolkit_v4" and row["ranks"] == 16 and row["nprocs"] == 16
    imbalance = lake.imbalance()
    assert len(imbalance) and not imbalance["name"].str.contains("unknown context|missing from meta.db").any()


def test_cli_tree_starts_at_the_program_root(shared_data):
    """``perflake tree <v4 database>``: the real root first, no placeholder line, main thread unchanged."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "perflake.cli", "tree", str(shared_data(SAMPLE)), "--no-header",
                          "--precision", "6", "--no-color"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[:2] == ["100.277572 <program root>", "├─ 100.267554 main thread"]
    assert not any("unknown context" in line or "missing from meta.db" in line for line in lines)
