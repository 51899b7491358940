"""The call-path id (perflake/identity.py) against the definition computed the obvious way: md5 of each
node's whole path text, found by walking up its parents, first 8 bytes little-endian with the top bit cleared
(ids are 63-bit since the lake's tables store them as int64)."""

import hashlib

import duckdb
import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from perflake.identity import call_path_ids, frame_keys

NAMES = ["main", "solve", "MPI_Send", "Loop@a.c:3", "ünïcode", "", "x\x1fy"]
MASK63 = (1 << 63) - 1  # written out here, not imported: the reference implements the definition on its own


def _md5_id(text: bytes) -> int:
    """The definition: md5's first 8 bytes as a little-endian unsigned integer, top bit cleared."""
    return int.from_bytes(hashlib.md5(text).digest()[:8], "little") & MASK63


def _key(row: dict) -> str:
    parts = [row["type"], row["name"], row["file"], None if row["line"] is None else str(row["line"]), row["module"]]
    return "\x1f".join("" if p is None else p for p in parts)


def _reference(rows: list[dict], max_depth: int) -> list[tuple[int, int] | None]:
    """(node id, depth) of each row, or None when it has no call path (cycle, missing parent, too deep)."""
    by_local = {(r["run"], r["local"]): r for r in rows}
    out = []
    for r in rows:
        keys, seen, cur = [], set(), r
        while True:
            if id(cur) in seen:
                keys = None
                break
            seen.add(id(cur))
            keys.append(_key(cur))
            if cur["parent"] == -1:
                break
            cur = by_local.get((cur["run"], cur["parent"]))
            if cur is None:
                keys = None
                break
        if keys is None or len(keys) - 1 > max_depth:
            out.append(None)
            continue
        text = "\x1e".join(reversed(keys)).encode()
        out.append((_md5_id(text), len(keys) - 1))
    return out


@st.composite
def forests(draw):
    rows = []
    for run in range(draw(st.integers(1, 3))):
        n = draw(st.integers(1, 25))
        for local in range(n):
            if local == 0 or draw(st.integers(0, 9)) == 0:
                parent = -1
            elif draw(st.integers(0, 19)) == 0:
                parent = draw(st.integers(-3, n + 2))  # anything: a cycle, itself, a missing node, below -1
            else:
                parent = draw(st.integers(0, local - 1))
            rows.append({"run": run, "local": local, "parent": parent, "name": draw(st.sampled_from(NAMES)),
                         "type": draw(st.sampled_from(["function", "loop", None])),
                         "file": draw(st.sampled_from([None, "a.c", "b.f90"])),
                         "line": draw(st.sampled_from([None, 0, 7, 2**40])),
                         "module": draw(st.sampled_from([None, "/lib/libm.so"]))})
    return draw(st.permutations(rows))  # rows in any order, across runs


def _ids(rows: list[dict], max_depth: int):
    frames = pa.table({a: pa.array([r[a] for r in rows], pa.int64() if a == "line" else pa.string())
                       for a in ("type", "name", "file", "line", "module")})
    col = lambda a: np.array([r[a] for r in rows], np.int32)  # noqa: E731
    return call_path_ids(col("run"), col("local"), col("parent"), frame_keys(frames), max_depth)


@given(forests(), st.sampled_from([0, 1, 3, 2048]))
@settings(max_examples=300, deadline=None)
def test_ids_equal_the_md5_of_the_whole_path_text(rows, max_depth):
    got = _ids(rows, max_depth)
    expected = _reference(rows, max_depth)
    for i, (row, want) in enumerate(zip(rows, expected)):
        assert bool(got.reached[i]) == (want is not None), row
        if want is None:
            continue
        assert (int(got.node_id[i]), int(got.depth[i])) == want, row
        assert bool(got.has_parent[i]) == (row["parent"] != -1)
        if row["parent"] >= 0:
            parent = next(j for j, r in enumerate(rows) if (r["run"], r["local"]) == (row["run"], row["parent"]))
            assert int(got.parent_id[i]) == expected[parent][0]


def test_a_known_id():
    """Pinned: the id of the root frame 'main' (a function) must never change; lakes store it.  The number is
    DuckDB's ``md5_number_upper('function' || chr(31) || 'main' || chr(31) || chr(31) || chr(31))
    & 9223372036854775807``.  Changed when ids became 63-bit (top bit cleared, so they fit the lake's int64
    columns): it was 11697251941537775297, the full 64 bits; the old value masked is the new one."""
    got = _ids([{"run": 0, "local": 0, "parent": -1, "name": "main", "type": "function", "file": None,
                 "line": None, "module": None}], 8)
    assert int(got.node_id[0]) == _md5_id(b"function\x1fmain\x1f\x1f\x1f")
    assert int(got.node_id[0]) == 2473879904682999489
    assert 11697251941537775297 & MASK63 == 2473879904682999489  # an id stored before the change, remapped


def test_a_deep_chain_is_linear():
    """A chain 2,000 frames deep: the whole-text definition would hash 2,000 x 1,000 x 1 KB = 2 GB of text;
    the incremental walk hashes each 1 KB frame key once.  The ids still equal the whole-text md5."""
    n = 2000
    rows = [{"run": 0, "local": i, "parent": i - 1, "name": f"f{i:04d}" + "x" * 1000, "type": "function",
             "file": None, "line": None, "module": None} for i in range(n)]
    got = _ids(rows, 4096)
    text = "\x1e".join(_key(r) for r in rows).encode()
    assert int(got.node_id[-1]) == _md5_id(text)
    assert got.depth[-1] == n - 1 and got.reached.all()


def test_ids_equal_duckdb_md5_number_upper_on_non_ascii_paths():
    """An independent implementation of the definition: DuckDB's md5_number_upper over the path text."""
    names = ["main", "ünïcode::λ<τ>", "日本語", "a\x1eb", "MPI_Allreduce"]
    rows = [{"run": 0, "local": i, "parent": i - 1, "name": name, "type": "function" if i % 2 else "loop",
             "file": "ö.c" if i % 2 else None, "line": i * 7 if i else None, "module": "/lib/ü.so"}
            for i, name in enumerate(names)]
    got = _ids(rows, 8)
    con = duckdb.connect()
    try:
        for i in range(len(rows)):
            text = "\x1e".join(_key(r) for r in rows[: i + 1])
            want = con.execute("select md5_number_upper($t) & 9223372036854775807", {"t": text}).fetchone()[0]
            assert int(got.node_id[i]) == want
    finally:
        con.close()


def test_ids_of_generated_runs_are_63_bit_and_equal_duckdb(tmp_path):
    """Realistic trees (generated TAU and Caliper runs, normalised as ingest does): every id (nodes, edges,
    metrics) is below 2**63 and casts to int64 and back unchanged (the lake's Delta/Iceberg columns are int64),
    and every node's id is DuckDB's ``md5_number_upper(path text) & 9223372036854775807``, the path text built
    in SQL from the frames by a recursive walk from the roots."""
    from perflake import readers
    from perflake.generators import write_caliper_json_runs, write_tau_runs
    from perflake.ingest.normalize import normalize_many

    paths = write_tau_runs(tmp_path / "tau", nodes=400, ranks=2, runs=2, seed=3)
    paths += write_caliper_json_runs(tmp_path / "cali", nodes=300, ranks=2, runs=2, seed=5)
    batch = normalize_many([(f"r{i}", readers.read(p)) for i, p in enumerate(paths)])
    nodes = batch.nodes
    assert nodes.num_rows > 1000 and nodes.schema.field("node_id").type == pa.uint64()
    for table, col in ((nodes, "node_id"), (nodes, "parent_id"), (batch.edges, "parent_id"),
                       (batch.edges, "child_id"), (batch.metrics, "node_id")):
        ids = table.column(col).drop_null()
        assert len(ids) and max(ids.to_pylist()) < 2**63, col
        signed = ids.cast(pa.int64())  # a safe cast: raises on any value >= 2**63
        assert signed.cast(pa.uint64()).equals(ids) and min(signed.to_pylist()) >= 0, col
    con = duckdb.connect()
    try:
        con.register("nodes", nodes)
        got = con.execute("""
            with recursive k as (
                select run_id, node_id, parent_id,
                       coalesce(type, '') || chr(31) || coalesce(name, '') || chr(31) || coalesce(file, '')
                       || chr(31) || coalesce(cast(line as varchar), '') || chr(31) || coalesce(module, '') as key
                from nodes),
            p as (
                select run_id, node_id, key as path from k where parent_id is null
                union all
                select k.run_id, k.node_id, p.path || chr(30) || k.key
                from k join p on k.run_id = p.run_id and k.parent_id = p.node_id)
            select count(*), count(*) filter (where node_id <> md5_number_upper(path) & 9223372036854775807),
                   count(*) filter (where md5_number_upper(path) >= 9223372036854775808)
            from p""").fetchone()
    finally:
        con.close()
    assert got[0] == nodes.num_rows  # every node reached from a root, once
    assert got[1] == 0  # every id is the masked md5
    assert got[2] > 0  # and some paths' full 64-bit md5 has the top bit set: the mask was needed
