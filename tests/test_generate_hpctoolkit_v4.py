"""The HPCToolkit v4 writer (perflake.generators.hpctoolkit_v4): bytes per FORMATS.md, read back by perflake's reader
and by llnl-hatchet's ``from_hpctoolkit_latest``.

What the generator intends is its plan (:func:`plan_hpctoolkit_v4`): contexts and per-thread *point* values in
integer microseconds.  The reader must give, for every context of meta.db, inclusive = the execution scope
(point summed over every descendant) and exclusive = the function scope (point summed over lexical descendants
only, i.e. not across a call or inlined call), and the plan itself must follow the call-tree model
(``make_metrics``): a function's execution value is the model's inclusive time, its function value the model's
exclusive time, elided instruction contexts included.
"""
from __future__ import annotations

import json
import struct
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from perflake.generators import make_metrics, make_tree
from perflake.generators.hpctoolkit_v4 import plan_hpctoolkit_v4, write_hpctoolkit_v4_runs
from perflake.readers import hpctoolkit_v4_sections as sec
from perflake.readers.hpctoolkit_v4 import Reader, hatchet_function_name
from venv_report import run_json

ARGS = dict(nodes=120, ranks=3, threads=2, seed=4)  # app "nekbone"; loops, MPI, std:: and elided contexts all occur
COLS = ["time (point)", "time", "time (inc)"]
SUMS = ["sum(time (point))", "sum(time)", "sum(time (inc))"]


def plan_name(plan, i: int) -> str:
    """The name perflake's reader (and Hatchet) give context ``i`` of the plan."""
    kind = plan.kind[i]
    if kind == "entry":
        return plan.name[i]
    if kind == "function":
        return "function: " + (hatchet_function_name(plan.name[i]) if plan.name[i] else "<unknown function>")
    if kind in ("line", "loop"):
        return f"{kind} {plan.file[i]}:{plan.line[i]}"
    return f"{plan.module[i]}:{plan.offset[i]}"


def plan_paths(plan) -> dict[tuple, int]:
    """Call path (entry point name first) -> context index, for the contexts written to meta.db."""
    out, path = {}, {}
    for i, p in enumerate(plan.parent):
        if plan.elided[i]:
            continue
        path[i] = (path[p] if p >= 0 else ()) + (plan_name(plan, i),)
        out[path[i]] = i
    return out


def reader_table(rows) -> tuple[dict[int, tuple], pd.DataFrame]:
    """(local id -> call path from its entry point, values of the nodes below an entry point by path)."""
    f = rows.frames.to_pandas()
    parent = dict(zip(f["local_id"], f["parent_local"]))
    name, typ = dict(zip(f["local_id"], f["name"])), dict(zip(f["local_id"], f["type"]))
    paths = {}
    for lid in f["local_id"]:
        chain, cur = [], lid
        while cur >= 0 and typ[cur] != "entry":
            chain.append(name[cur])
            cur = parent[cur]
        if cur >= 0:
            paths[lid] = (name[cur], *reversed(chain))
    v = rows.values.to_pandas()
    v = v[v["local_id"].isin(paths)].copy()
    v["path"] = [paths[x] for x in v["local_id"]]
    return paths, v


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    out = tmp_path_factory.mktemp("v4")
    d = write_hpctoolkit_v4_runs(out, **ARGS)[0]
    return d, plan_hpctoolkit_v4(**ARGS), Reader().read(str(d))


def test_same_arguments_same_bytes(tmp_path):
    a = write_hpctoolkit_v4_runs(tmp_path / "a", nodes=50, ranks=2, runs=2, seed=1)
    b = write_hpctoolkit_v4_runs(tmp_path / "b", nodes=50, ranks=2, runs=2, seed=1)
    c = write_hpctoolkit_v4_runs(tmp_path / "c", nodes=50, ranks=2, runs=1, seed=2)
    for x, y in zip(a, b):
        assert sorted(p.name for p in x.iterdir()) == ["cct.db", "meta.db", "profile.db"]
        assert all((x / n).read_bytes() == (y / n).read_bytes() for n in ("meta.db", "profile.db", "cct.db"))
    assert (a[0] / "profile.db").read_bytes() != (a[1] / "profile.db").read_bytes()  # run 1 is perturbed
    assert (a[0] / "meta.db").read_bytes() != (c[0] / "meta.db").read_bytes()


def _sections(data: bytes, n: int) -> list[tuple[int, int]]:
    return [struct.unpack_from("<QQ", data, 0x10 + 16 * i) for i in range(n)]


def test_headers_sizes_and_sections_follow_formats_md(db):
    """FORMATS.md v4.0: header, footer, the documented structure sizes; sections inside the file, 8-aligned and
    disjoint; strings of the metrics and identifier-names sections inside them (Hatchet relies on it)."""
    d, plan, _ = db
    meta, prof, cct = ((d / n).read_bytes() for n in ("meta.db", "profile.db", "cct.db"))
    for data, fmt, foot, n in ((meta, b"meta", b"_meta.db", 8), (prof, b"prof", b"_prof.db", 2),
                               (cct, b"ctxt", b"__ctx.db", 1)):
        assert data[:16] == b"HPCTOOLKIT" + fmt + b"\x04\x00" and data[-8:] == foot
        spans = sorted(_sections(data, n), key=lambda s: s[1])
        assert all(p % 8 == 0 and p + s <= len(data) - 8 for s, p in spans)
        assert all(a[1] + a[0] <= b[1] for a, b in zip(spans, spans[1:]))
    (_, gen), (_, ids), (szm, met), (_, ctx) = _sections(meta, 4)
    assert struct.unpack_from("<QIBBB", meta, met)[1:] == (1, 32, 16, 24)
    assert struct.unpack_from("<QHB", meta, met + 0x10)[1:] == (3, 16)  # point, function, execution
    p_scopes = struct.unpack_from("<Q", meta, met + 0x10)[0]
    scopes = [struct.unpack_from("<QBB", meta, p_scopes + 16 * i) for i in range(3)]
    names = [meta[p:meta.index(b"\0", p)] for p, _, _ in scopes]
    assert names == [b"point", b"function", b"execution"] and [(t, x) for _, t, x in scopes] == [(1, 255), (3, 0),
                                                                                                 (2, 255)]
    assert all(met <= p < met + szm for p, _, _ in scopes)
    assert struct.unpack_from("<QHB", meta, ctx)[1:] == (3, 32)  # main thread, application thread, unknown entry
    assert [struct.unpack_from("<H", meta, struct.unpack_from("<Q", meta, ctx)[0] + 32 * i + 0x14)[0]
            for i in range(3)] == [1, 2, 0]
    for k, size in ((5, 16), (6, 16), (7, 40)):
        assert struct.unpack_from("<QIH", meta, _sections(meta, 8)[k][1])[2] == size
    p_prof, n_prof, sz_prof = struct.unpack_from("<QIB", prof, _sections(prof, 1)[0][1])
    assert (n_prof, sz_prof) == (1 + 3 * 2, 48)
    infos = [struct.unpack_from("<QQI4xQQI", prof, p_prof + 48 * i) for i in range(n_prof)]
    assert infos[0][4:] == (0, 1) and all(i[4] and i[5] == 0 for i in infos[1:])  # summary first, no id tuple
    p_ctxs, n_ctxs, sz_ctx = struct.unpack_from("<QIB", cct, _sections(cct, 1)[0][1])
    assert (n_ctxs, sz_ctx) == (int(plan.ctx_id.max()) + 1, 32)


def test_tree_is_the_plan(db):
    """Every context of meta.db is one node below its entry point, with its name and type; no other."""
    _, plan, rows = db
    paths, _ = reader_table(rows)
    expect = plan_paths(plan)
    assert sorted(paths.values()) == sorted(expect) and len(paths) == len(expect)
    f = rows.frames.to_pandas().set_index("local_id")
    for lid, path in paths.items():
        i = expect[path]
        kind = "inlined function" if plan.relation[i] == 2 else plan.kind[i]
        assert f.loc[lid, "type"] == kind
    assert {plan.kind[i] for i in expect.values()} == {"entry", "function", "loop", "line", "instruction"}
    assert {plan.relation[i] for i in expect.values()} == {-1, 0, 1, 2}


def test_values_are_what_the_generator_intended(db):
    """Per context and (rank, thread): time (point) = point, time = function scope (exclusive), time (inc) =
    execution scope (inclusive); a scope without value is null (HPCToolkit stores no zeros)."""
    _, plan, rows = db
    _, got = reader_table(rows)
    got = got[got["rank"] >= 0].set_index(["path", "rank", "thread"])[COLS].sort_index()
    scopes = plan.scopes()
    recs = []
    for path, i in plan_paths(plan).items():
        for c, (r, t) in enumerate(plan.locations):
            vals = [s[i, c] / 1e6 if s[i, c] else np.nan for s in scopes]
            if any(s[i, c] for s in scopes):
                recs.append((path, r, t, *vals))
    want = pd.DataFrame(recs, columns=["path", "rank", "thread", *COLS]).set_index(["path", "rank", "thread"])
    want = want.sort_index()
    assert got.index.equals(want.index)
    np.testing.assert_array_equal(got.to_numpy(dtype=float), want.to_numpy())


def test_plan_follows_the_model(db):
    """Independent of the plan's own propagation: functions carry the model's inclusive/exclusive times."""
    _, plan, rows = db
    m = make_metrics(make_tree(120, seed=4), 3, seed=4500, n_threads=2, app_seed=4)
    _, got = reader_table(rows)
    got = got[got["rank"] >= 0]
    main = got[got["path"] == ("main thread", "function: main")].sort_values("rank")
    worker = got[got["path"] == ("application thread", "function: worker_thread_main")].sort_values("rank")
    np.testing.assert_array_equal(main["time (inc)"], m.inclusive[0, 0::2] / 1e6)  # thread 0 of each rank
    np.testing.assert_array_equal(main["time"], m.exclusive[0, 0::2] / 1e6)
    np.testing.assert_array_equal(worker["time (inc)"], m.inclusive[0, 1::2] / 1e6)  # thread 1
    assert set(main["thread"]) == {0} and set(worker["thread"]) == {1}
    _, function, execution = plan.scopes()
    for i, k in enumerate(plan.model):
        if k >= 0:
            cols = np.flatnonzero(execution[i])
            np.testing.assert_array_equal(execution[i, cols], m.inclusive[k, cols])
            np.testing.assert_array_equal(function[i, cols], m.exclusive[k, cols])
    # the whole run: every model cost once, plus the unknown entry's
    unknown = plan.point[[i for i, k in enumerate(plan.kind) if k == "instruction" and plan.module[i].endswith(
        "libc.so.6")]].sum()
    assert plan.point.sum() == m.exclusive.sum() + unknown


def test_summary_profile_sums_every_thread(db):
    _, plan, rows = db
    _, got = reader_table(rows)
    summ = got[got["rank"] == -1].set_index("path")[SUMS]
    point, function, execution = plan.scopes()
    for path, i in plan_paths(plan).items():
        want = [s[i].sum() / 1e6 if s[i].sum() else np.nan for s in (point, function, execution)]
        np.testing.assert_allclose(summ.loc[[path]].to_numpy(float)[0], want, rtol=1e-12)
    f, v = rows.frames.to_pandas(), rows.values.to_pandas()
    root = f.loc[f["name"] == "main thread", "parent_local"].item()  # the global context (ctxId 0): the whole run
    total = v[(v["local_id"] == root) & (v["rank"] == -1)]["sum(time (inc))"].item()
    assert total == pytest.approx(point.sum() / 1e6, rel=1e-12)


def test_elided_contexts_are_only_in_the_value_files(db):
    """hpcprof's elide(): lexical instruction contexts are not in meta.db, their values are in profile.db and
    cct.db, and their cost is in the parent line's function and execution values (not its point value)."""
    d, plan, rows = db
    elided = {int(plan.ctx_id[i]) for i, e in enumerate(plan.elided) if e}
    tree = set(sec.read_meta(str(d / "meta.db")).contexts.ctx_id)
    valued = set(np.unique(sec.read_profiles(str(d / "profile.db")).ctx).tolist()) - {0}
    assert elided and valued - tree == elided and not tree & elided
    cct = (d / "cct.db").read_bytes()
    p_ctxs = struct.unpack_from("<Q", cct, _sections(cct, 1)[0][1])[0]
    assert all(struct.unpack_from("<Q", cct, p_ctxs + 32 * c)[0] > 0 for c in elided)
    assert len(tree) == len(plan.kind) - len(elided)
    paths, got = reader_table(rows)
    got = got[got["rank"] >= 0].set_index(["path", "rank", "thread"])
    by_path = plan_paths(plan)
    for e in (i for i, x in enumerate(plan.elided) if x):
        line = plan.parent[e]
        path = next(p for p, i in by_path.items() if i == line)
        c = int(np.flatnonzero(plan.point[e])[0])
        row = got.loc[(path, *plan.locations[c])]
        assert np.isnan(row["time (point)"]) and row["time"] == row["time (inc)"] == plan.point[e, c] / 1e6


def test_entry_points_threads_and_id_tuples(db):
    _, plan, rows = db
    md = rows.metadata
    assert [(e["name"], e["entry_point"]) for e in md["hpctoolkit.entry_points"]] == [
        ("main thread", 1), ("application thread", 2), ("unknown entry", 0)]
    _, got = reader_table(rows)
    got = got[got["rank"] >= 0]
    entry = got["path"].str[0]
    assert set(got[entry == "main thread"]["thread"]) == {0} and set(got[entry == "unknown entry"]["thread"]) == {0}
    assert set(got[entry == "application thread"]["thread"]) == {1}
    assert sorted(set(zip(got["rank"], got["thread"]))) == sorted(plan.locations)
    profs = [p for p in md["hpctoolkit.profiles"] if not p["summary"]]
    assert [(p["rank"], p["thread"]) for p in profs] == [plan.locations[c] for c in plan.profile_order]
    assert [(p["rank"], p["thread"]) for p in profs] != sorted(plan.locations)  # shuffled: order is not meaning
    for p in profs:
        node, rank, thread = p["id_tuple"]
        assert (node["kind"], node["physical"], rank["kind"], thread["kind"]) == ("NODE", True, "RANK", "THREAD")
        assert (rank["logical_id"], thread["logical_id"]) == (p["rank"], p["thread"])


def test_relations_and_instruction_contexts(db):
    _, _, rows = db
    f = rows.frames.to_pandas().set_index("local_id")
    parent_type = f["type"].reindex(f["parent_local"]).to_numpy()
    std = f["name"].str.startswith("function: std::")
    mpi = f["name"].str.startswith("function: MPI_")
    assert std.any() and (f.loc[std, "type"] == "inlined function").all()  # std:: templates: inlined calls
    assert mpi.any() and (parent_type[mpi.to_numpy()] == "instruction").all()  # through a libmpi frame
    assert f.loc[f["parent_local"].isin(f.index[mpi]), "name"].str.fullmatch(r"line \[libmpi.*\]:0").all()
    unknown = f[f["name"] == "function: <unknown function>"]
    assert len(unknown) == 1 and f.loc[unknown["parent_local"].item(), "name"].startswith("/usr/lib64/libc.so.6:")


@pytest.mark.parametrize("copied", ["src", "outdir"])
def test_copied_sources_change_only_the_stored_paths(tmp_path, copied):
    """FORMATS.md: a copied file (flag bit 0) is stored relative to the database, ``src/<absolute path>``
    (releases before mid-2023: ``<output dir given to hpcprof>/src/<absolute path>``); others keep theirs."""
    plain = write_hpctoolkit_v4_runs(tmp_path / "plain", nodes=60, ranks=2, seed=4)[0]
    copy = write_hpctoolkit_v4_runs(tmp_path / copied, nodes=60, ranks=2, seed=4, copied_sources=copied)[0]
    a, b = sec.read_meta(str(plain / "meta.db")), sec.read_meta(str(copy / "meta.db"))
    prefix = "src" if copied == "src" else "hpctoolkit-nekbone-database/src"
    assert len(a.files) == len(b.files) and not any(a.file_flags.values())
    for path, stored, flags in zip(a.files.values(), b.files.values(), b.file_flags.values()):  # table order
        app = path.startswith("/home/hpcuser/apps/nekbone/src/")
        assert (stored, flags) == ((prefix + path, 1) if app else (path, 0))
    assert any(p.startswith("/usr/include/") for p in a.files.values())  # system headers are never copied
    ra, rb = Reader().read(str(plain)), Reader().read(str(copy))
    assert ra.values.equals(rb.values)  # the same contexts and values, whatever the reader names them
    fa, fb = ra.frames.to_pandas(), rb.frames.to_pandas()
    assert fa["type"].equals(fb["type"]) and fa["parent_local"].equals(fb["parent_local"])


def test_bad_arguments(tmp_path):
    for kw in ({"nodes": 0}, {"layout": "3.0"}, {"copied_sources": "yes"}, {"runs": -1}):
        with pytest.raises(ValueError):
            write_hpctoolkit_v4_runs(tmp_path, **{"nodes": 5, "ranks": 1, **kw})


HATCHET_SCRIPT = """
import json, sys, hatchet
gf = hatchet.GraphFrame.from_hpctoolkit_latest(sys.argv[1])
df = gf.dataframe
rows = [[[str(n.frame.get("name")) for n in node.path()], float(t), float(i)]
        for node, t, i in zip(df.index, df["time"], df["time (inc)"])]
print(json.dumps({"rows": rows, "nodes": len(gf.graph), "default": gf.default_metric}))
"""


def test_hatchet_from_hpctoolkit_latest_reads_it(tmp_path, bench_python):
    """llnl-hatchet 2026.2.0 reads the released layout: the same nodes (its root ``entry`` is our
    ``main thread``; it reads only the first main-thread entry point, formats.md 2.7 / B.6) and the same
    summary values, ``time (inc)`` = execution scope, ``time`` = function scope."""
    d = write_hpctoolkit_v4_runs(tmp_path, nodes=150, ranks=4, threads=2, seed=7)[0]
    hat = run_json([str(bench_python), "-W", "ignore", "-c", HATCHET_SCRIPT, str(d)], 300)
    h = pd.DataFrame([(tuple(["main thread", *p[1:]]), t, i) for p, t, i in hat["rows"]],
                     columns=["path", "time", "time (inc)"]).set_index("path").sort_index()
    assert hat["default"] == "time (inc)" and len(h) == hat["nodes"] and h.index.is_unique
    _, got = reader_table(Reader().read(str(d)))
    ours = got[(got["rank"] == -1) & (got["path"].str[0] == "main thread")]
    ours = ours.set_index("path")[["sum(time)", "sum(time (inc))"]].sort_index()
    assert list(ours.index) == list(h.index)  # same node names, same tree
    np.testing.assert_allclose(ours.to_numpy(float), h.to_numpy(float), rtol=1e-12)  # NaN where both have none
    assert ours["sum(time (inc))"].sum() == pytest.approx(h["time (inc)"].sum(), rel=1e-12)
    assert ours["sum(time)"].sum() == pytest.approx(h["time"].sum(), rel=1e-12)


def test_cli_generate_v4_and_ingest(tmp_path):
    run = lambda *a: subprocess.run([sys.executable, "-m", "perflake.cli.app", *map(str, a)],  # noqa: E731
                                    capture_output=True, text=True, timeout=300)
    gen = tmp_path / "gen"
    proc = run("generate", "hpctoolkit", gen, "--v4", "--nodes", 80, "--ranks", 3, "--runs", 2, "--seed", 4)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"wrote 2 hpctoolkit v4 (4.0 layout) runs (80 nodes x 3 ranks) under {gen}"
    assert sorted(p.name for p in (gen / "run-001").iterdir()) == ["cct.db", "meta.db", "profile.db"]
    lake = tmp_path / "lake"
    proc = run("ingest", gen, "--lake", lake, "--json")
    assert proc.returncode == 0, proc.stderr
    assert len(json.loads(proc.stdout)["ingested"]) == 2
    q = ("select m.rank, m.\"time (inc)\" as inc from metrics m join nodes n using (run_id, node_id) "
         "join runs r using (run_id) where n.name = 'function: main' and m.rank >= 0 and r.source like '%run-000' "
         "order by m.rank")
    proc = run("sql", q, "--lake", lake, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    m = make_metrics(make_tree(80, seed=4), 3, seed=4500, n_threads=1, app_seed=4)
    assert [r["inc"] for r in json.loads(proc.stdout)] == list(m.inclusive[0] / 1e6)
    bad = run("generate", "tau", gen, "--v4")
    assert bad.returncode == 2 and bad.stderr.startswith("perflake: ") and bad.stderr.count("\n") == 1
    assert run("generate", "hpctoolkit", gen, "--layout", "2022-pre").returncode == 2
