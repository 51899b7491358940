"""Bounded memory and input limits of the TAU, gprof2dot DOT, cProfile/pstats (and pyinstrument) readers
(issue 23, item 2).

Every case runs the reader in a child process under an address-space limit (RLIMIT_AS, 2 GiB) on a generated
input, and the child reports what the read did: the growth of its peak RSS (VmHWM) across the read, the
bytes it read from files (/proc/self/io rchar), and the nodes built or the one-line error.  Memory, bytes and
nodes -- never wall-clock time.

* a file much larger than its call tree (a deep recursion's quadratic TAU callpath names, huge but allowed
  metadata lines, DOT comments and relabelled nodes, pstats entries repeated under one key) is read with a
  peak-RSS growth far below the file's size;
* each limit of readers/limits.py (MAX_FRAME_TEXT, MAX_ATTRIBUTE_TEXT, MAX_CALL_DEPTH, MAX_NODES) and a file
  that is not text of the format (a 2 GiB sparse file of NULs) are refused in exactly one line naming the file
  and the limit, after reading a bounded number of bytes (a few MiB of a file of hundreds);
* a call path MAX_CALL_DEPTH frames deep is read, gets its ids with linear hashing, and is ingested; one frame
  more is refused.  MAX_NODES is lowered in the child for its cases (the same code path, a small input).
"""

from __future__ import annotations

import hashlib
import json
import marshal
import os
import resource
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest

from perflake.readers.limits import MAX_ATTRIBUTE_TEXT, MAX_CALL_DEPTH, MAX_FRAME_TEXT, MAX_NODES

AS_LIMIT = 2 << 30  # bytes of address space for each child: a reader loading a 2 GiB input whole fails
MIB = 1 << 20
ROOT = ".TAU application"

CHILD = textwrap.dedent("""
    import json, os, sys
    import perflake.readers.limits as limits
    for name, value in json.loads(os.environ.get("LIMITS", "{}")).items():
        setattr(limits, name, value)  # before any reader module imports it
    from perflake.errors import ReaderError
    from perflake.readers import get_reader
    reader = get_reader(sys.argv[1])
    reader.read(sys.argv[3])  # a small input of the format first: libraries' first-use costs are not the input's
    def hwm():  # peak RSS of this process image in KiB (ru_maxrss would carry the parent's over fork + exec)
        with open("/proc/self/status") as fh:
            return int(next(line for line in fh if line.startswith("VmHWM:")).split()[1])
    def rchar():
        with open("/proc/self/io") as fh:
            return int(next(line for line in fh if line.startswith("rchar:")).split()[1])
    base, read0 = hwm(), rchar()
    out = {}
    try:
        rows = reader.read(sys.argv[2])
        out["nodes"], out["rows"] = rows.frames.num_rows, rows.values.num_rows
        out["names"] = rows.frames.column("name").to_pylist()[:3]
    except ReaderError as exc:
        out["message"] = str(exc)
    out["read_mib"] = (rchar() - read0) / 2**20
    out["growth_mib"] = (hwm() - base) / 1024
    print(json.dumps(out))
""")


def _limit_as():
    resource.setrlimit(resource.RLIMIT_AS, (AS_LIMIT, AS_LIMIT))


@pytest.fixture(scope="module", autouse=True)
def small_inputs(tmp_path_factory):
    """A small valid input of each format, read first by every child (module imports and libraries' first-use
    allocations are then outside the measured read)."""
    tmp = tmp_path_factory.mktemp("small")
    frame = '{"function": "f", "file_path_short": "a.py", "line_no": 1, "time": 1.0, "children": []}'
    (tmp / "small.json").write_text('{"duration": 1.0, "root_frame": ' + frame + "}")
    SMALL.update(tau=tau_chain(tmp / "tau", 10), gprof_dot=dot_chain(tmp / "small.dot", 10),
                 cprofile=pstats_chain(tmp / "small.pstats", 10), pyinstrument=tmp / "small.json")


SMALL: dict[str, Path] = {}


def run_reader(kind: str, path: Path, **limits) -> dict:
    env = {**os.environ, "LIMITS": json.dumps(limits)}
    args = [str(path), str(SMALL[kind])]
    proc = subprocess.run([sys.executable, "-c", CHILD, kind, *args], capture_output=True, text=True,
                          env=env, preexec_fn=_limit_as, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def refused(got: dict, path: Path, *words: str) -> str:
    """The one-line message of a refusal, checked: it names the file and says ``words``."""
    message = got.get("message")
    assert message is not None, f"accepted: {got}"
    assert message.startswith(f"{path}: ") and "\n" not in message, message
    for word in words:
        assert word in message, message
    return message


# -- inputs ---------------------------------------------------------------------------------------------------


def tau_file(path: Path, entries: list[str], legend: str = "<metadata></metadata>", tail: bytes = b"") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(f"{len(entries)} templated_functions_MULTI_TIME\n"
                 f"# Name Calls Subrs Excl Incl ProfileCalls # {legend}\n".encode())
        for e in entries:
            fh.write(f'"{e}" 1 1 1.5 2.5 0 GROUP="TAU_USER" \n'.encode())
        fh.write(b"0 aggregates\n" + tail)
    return path


def tau_chain(folder: Path, depth: int, width: int = 8, every_level: bool = True) -> Path:
    """A recursion ``depth`` frames deep (the root included), as TAU writes it: a callpath entry per level whose
    name is the whole path (quadratic in the depth), or only the deepest entry (TAU creates the ancestors)."""
    frames = [ROOT] + [f"f{i:0{width - 3}d}()" for i in range(1, depth)]
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "profile.0.0.0", "w") as fh:
        levels = range(2, depth + 1) if every_level else [depth]
        fh.write(f"{1 + len(levels)} templated_functions_MULTI_TIME\n"
                 "# Name Calls Subrs Excl Incl ProfileCalls # <metadata></metadata>\n")
        fh.write(f'"{ROOT}" 1 1 1 100 0 GROUP="TAU_DEFAULT" \n')
        path = ROOT
        for d in range(2, depth + 1):
            path += " => " + frames[d - 1]
            if d in levels:
                fh.write(f'"{path}" 1 1 1 {depth - d + 1} 0 GROUP="TAU_CALLPATH" \n')
        fh.write("0 aggregates\n")
    return folder


def sparse(path: Path, size: int, head: bytes = b"") -> Path:
    """``head`` then NULs up to ``size`` bytes (a sparse file: no disk, no time to write)."""
    with open(path, "wb") as fh:
        fh.write(head)
        fh.truncate(size)
    return path


def dot_label(name: str, inc: float, exc: float, calls: int) -> str:
    return f'label="{name}\\n{inc:.2f}%\\n({exc:.2f}%)\\n{calls}\u00d7"'


def dot_chain(path: Path, n: int) -> Path:
    lines = ["digraph {"]
    lines += [f"f{i} [{dot_label(f'f{i}', 100 - i / n, 0.01, 1)}];" for i in range(n)]
    lines += [f'f{i} -> f{i + 1} [label="{100 - (i + 1) / n:.2f}%\\n1\u00d7"];' for i in range(n - 1)]
    path.write_text("\n".join(lines + ["}"]), encoding="utf-8")
    return path


def pstats_chain(path: Path, n: int) -> Path:
    stats = {}
    for i in range(n):
        callers = {("m.py", i, f"f{i - 1}"): (1, 1, 0.001, float(n - i))} if i else {}
        stats[("m.py", i + 1, f"f{i}")] = (1, 1, 0.001, float(n - i), callers)
    path.write_bytes(marshal.dumps(stats))
    return path


# -- (a) large files, small trees: peak memory follows the tree ----------------------------------------------


def test_a_deep_tau_recursion_is_read_in_memory_far_below_its_quadratic_file(tmp_path):
    folder = tau_chain(tmp_path / "deep", 2500, width=30)  # names: 2,500 x 1,250 x 34 bytes
    size = (folder / "profile.0.0.0").stat().st_size
    assert size > 100 * MIB
    got = run_reader("tau", folder)
    assert got["nodes"] == 2500 and got["rows"] == 2500 and got["names"][:2] == [ROOT, "f" + "0" * 26 + "1()"]
    # the old reader held the file, its names and their dictionary: more than 3 x the file (measured: 641 MiB at
    # 88 MB); here a few blocks in flight and allocator slack (measured: 35 MiB at 36 MiB, 45 MiB at 146 MiB)
    assert got["growth_mib"] < 64, got


def test_tau_files_with_huge_allowed_metadata_lines_are_read_in_bounded_memory(tmp_path):
    value = "v" * (MAX_ATTRIBUTE_TEXT - 100)  # just below the limit of one metadata value
    legend = "<metadata>" + "".join(f"<attribute><name>k{i}</name><value>{value}</value></attribute>"
                                    for i in range(3)) + "</metadata>"
    folder = tmp_path / "meta"
    entries = [ROOT, f"{ROOT} => main()", f"{ROOT} => main() => solve()"]
    for rank in range(24):
        tau_file(folder / f"profile.{rank}.0.0", entries, legend)
    size = sum(f.stat().st_size for f in folder.iterdir())
    assert size > 70 * MIB
    got = run_reader("tau", folder)
    assert got["nodes"] == 3 and got["rows"] == 3 * 24
    assert got["growth_mib"] < 20, got  # rank 0's metadata (3 MiB) is kept; the other 23 lines are skipped


def test_a_dot_file_of_comments_and_relabelled_nodes_is_read_in_bounded_memory(tmp_path):
    comment = "/* " + "c" * (MAX_ATTRIBUTE_TEXT - 10) + " */\n"
    big_label = 'label="' + "x" * (MAX_ATTRIBUTE_TEXT - 100) + '"'
    parts = ["digraph {\n"]
    for _ in range(30):
        parts += [comment, f"a [{big_label}];\n"]  # a node relabelled again and again: only the last label counts
    parts += [f"a [{dot_label('a', 100, 40, 1)}];\n", f"b [{dot_label('b', 60, 60, 2)}];\n",
              'a -> b [label="60.00%\\n2\u00d7"];\n' * 20_000, "}\n"]
    path = tmp_path / "big.dot"
    path.write_text("".join(parts), encoding="utf-8")
    size = path.stat().st_size
    assert size > 60 * MIB
    got = run_reader("gprof_dot", path)
    assert got["nodes"] == 2 and got["rows"] == 2 and got["names"] == ["a", "b"]
    assert got["growth_mib"] < 30, got  # the old reader held the text, its tokens and every edge statement


def test_a_pstats_file_repeating_long_entries_is_read_in_bounded_memory(tmp_path):
    key = marshal.dumps(("/src/app.py", 7, "g" * (MAX_FRAME_TEXT - 10)), 2)  # version 2: no references
    entry = key + marshal.dumps((3, 3, 0.5, 0.75, {}), 2)
    main = marshal.dumps(("/src/app.py", 1, "main"), 2) + marshal.dumps((1, 1, 0.25, 1.0, {}), 2)
    path = tmp_path / "repeated.pstats"
    path.write_bytes(b"{" + main + entry * 1000 + b"0")  # one function written 1,000 times: the last one counts
    size = path.stat().st_size
    assert size > 60 * MIB
    got = run_reader("cprofile", path)
    assert got["nodes"] == 2 and got["rows"] == 2 and got["names"][0] in ("main", "g" * (MAX_FRAME_TEXT - 10))
    assert got["growth_mib"] < 20, got


# -- (b) limits: one line, naming the file and the limit, after a bounded read --------------------------------


def test_two_gib_of_nuls_is_refused_after_its_first_block_by_every_reader(tmp_path):
    folder = tmp_path / "tau"
    folder.mkdir()
    nul = sparse(folder / "profile.0.0.0", 2 << 30)
    refused(got := run_reader("tau", folder), nul, "not a TAU profile")
    assert got["read_mib"] < 2 and got["growth_mib"] < 20
    for kind, name, words in (("gprof_dot", "nul.dot", ("not DOT", "line 1")),
                              ("cprofile", "nul.pstats", ("not a pstats file",)),
                              ("pyinstrument", "nul.json", ("not JSON",))):
        path = sparse(tmp_path / name, 2 << 30)
        got = run_reader(kind, path)
        refused(got, path, *words)
        assert got["read_mib"] < 2 and got["growth_mib"] < 20, (kind, got)


def test_tau_limits_are_refused_in_one_line_after_a_bounded_read(tmp_path):
    long_name = "n" * (2 * MAX_FRAME_TEXT + 100)
    deep = " => ".join([ROOT] + [f"f{i}" for i in range(1, MAX_CALL_DEPTH + 1)])
    cases = {
        "name": ([ROOT, long_name], ("timer name", "MAX_FRAME_TEXT")),
        "depth": ([ROOT, deep], (f"{MAX_CALL_DEPTH + 1} frames", "MAX_CALL_DEPTH")),
    }
    tail = b"\0" * (64 * MIB)  # the rest of a damaged file: never read
    for case, (entries, words) in cases.items():
        file = tau_file(tmp_path / case / "profile.0.0.0", entries, tail=tail)
        got = run_reader("tau", file.parent)
        refused(got, file, *words)
        assert got["read_mib"] < 8, (case, got)
    value = "<metadata><attribute><name>big</name><value>" + "v" * (MAX_ATTRIBUTE_TEXT + MAX_FRAME_TEXT + 100)
    file = tau_file(tmp_path / "attribute" / "profile.0.0.0", [ROOT], legend=value, tail=tail)
    got = run_reader("tau", file.parent)
    refused(got, file, "line 2", "metadata attribute", "MAX_ATTRIBUTE_TEXT")
    assert got["read_mib"] < 4, got
    file = tmp_path / "count" / "profile.0.0.0"
    file.parent.mkdir()
    file.write_text(f"{2 * MAX_NODES + 2} templated_functions_MULTI_TIME\n# Name\n")
    refused(run_reader("tau", file.parent), file, f"announces {2 * MAX_NODES + 2} function entries", "MAX_NODES")
    file = tmp_path / "line1" / "profile.0.0.0"
    file.parent.mkdir()
    sparse(file, 1 << 30, b"5 templated_functions_MULTI_TIME")
    got = run_reader("tau", file.parent)
    refused(got, file, "line 1 is longer", "MAX_FRAME_TEXT")
    assert got["read_mib"] < 1, got


def test_tau_node_count_is_refused_as_soon_as_it_passes_max_nodes(tmp_path):
    entries = [ROOT] + [f"{ROOT} => f{i}()" for i in range(1500)]
    file = tau_file(tmp_path / "many" / "profile.0.0.0", entries)
    refused(run_reader("tau", file.parent, MAX_NODES=1000), file, "more than 1000 call-tree nodes", "MAX_NODES")
    flat = tau_file(tmp_path / "flat" / "profile.0.0.0", [ROOT] + [f"f{i}()" for i in range(1500)])
    refused(run_reader("tau", flat.parent, MAX_NODES=1000), flat, "more than 1000", "MAX_NODES")
    assert run_reader("tau", file.parent, MAX_NODES=1501)["nodes"] == 1501


def test_dot_limits_are_refused_in_one_line_after_a_bounded_read(tmp_path):
    tail = "\n" + "/* the rest */\n" * (4 * MIB)  # 60 MiB never read
    cases = {
        "id.dot": ("digraph { " + "n" * (MAX_FRAME_TEXT + 1) + " [label=\"x\\n1%\"]; }", ("node ID", "MAX_FRAME_TEXT")),
        "string.dot": ('digraph { a [label="' + "s" * (MAX_ATTRIBUTE_TEXT + 10) + '"]; }', ("MAX_ATTRIBUTE_TEXT",)),
        "html.dot": ("digraph { a [label=<" + "h" * (MAX_ATTRIBUTE_TEXT + 10) + ">]; }", ("MAX_ATTRIBUTE_TEXT",)),
    }
    for name, (text, words) in cases.items():
        path = tmp_path / name
        path.write_text(text + tail)
        got = run_reader("gprof_dot", path)
        refused(got, path, *words)
        assert got["read_mib"] < 8, (name, got)
    many = tmp_path / "many.dot"
    many.write_text("digraph {\n" + "".join(f"n{i} [{dot_label(f'n{i}', 1, 1, 1)}];\n" for i in range(3000)) + "}")
    refused(run_reader("gprof_dot", many, MAX_NODES=1000), many, "more than 1000 nodes", "MAX_NODES")
    deep = dot_chain(tmp_path / "deep.dot", MAX_CALL_DEPTH + 1)
    refused(run_reader("gprof_dot", deep), deep, f"{MAX_CALL_DEPTH + 1} frames", "MAX_CALL_DEPTH")
    assert run_reader("gprof_dot", dot_chain(tmp_path / "ok.dot", MAX_CALL_DEPTH))["nodes"] == MAX_CALL_DEPTH


def test_pstats_and_pyinstrument_limits_are_refused_in_one_line(tmp_path):
    long = tmp_path / "long.pstats"
    long.write_bytes(b"{" + marshal.dumps(("m.py", 1, "x" * (MAX_FRAME_TEXT + 1)), 2)[:-1] + b"\0" * (64 * MIB))
    got = run_reader("cprofile", long)
    refused(got, long, f"a string of {MAX_FRAME_TEXT + 1} bytes", "MAX_FRAME_TEXT")
    assert got["read_mib"] < 4, got
    many = tmp_path / "many.pstats"
    many.write_bytes(marshal.dumps({("m.py", i, f"f{i}"): (1, 1, 0.1, 0.1, {}) for i in range(3000)}))
    refused(run_reader("cprofile", many, MAX_NODES=1000), many, "more than 1000 functions", "MAX_NODES")
    deep = pstats_chain(tmp_path / "deep.pstats", MAX_CALL_DEPTH + 1)
    refused(run_reader("cprofile", deep), deep, f"{MAX_CALL_DEPTH + 1} frames", "MAX_CALL_DEPTH")
    assert run_reader("cprofile", pstats_chain(tmp_path / "ok.pstats", MAX_CALL_DEPTH))["nodes"] == MAX_CALL_DEPTH
    opening = '{"function": "f", "file_path_short": "a.py", "line_no": 1, "time": 1.0, "children": ['
    text = opening * MAX_CALL_DEPTH + opening + "]}" + "]}" * MAX_CALL_DEPTH  # MAX_CALL_DEPTH + 1 frames deep
    path = tmp_path / "deep.json"
    path.write_text('{"duration": 1.0, "root_frame": ' + text + "}")
    refused(run_reader("pyinstrument", path), path, "MAX_CALL_DEPTH")


# -- deep paths end to end -------------------------------------------------------------------------------------


class _CountingMd5:
    """hashlib.md5 counting the bytes it hashes (copies of a state included), to measure identity's work."""

    hashed = 0

    def __init__(self, h):
        self.h = h

    @classmethod
    def new(cls, data: bytes = b""):
        cls.hashed += len(data)
        return cls(hashlib.md5(data))

    def copy(self):
        return _CountingMd5(self.h.copy())

    def update(self, data: bytes) -> None:
        _CountingMd5.hashed += len(data)
        self.h.update(data)

    def digest(self) -> bytes:
        return self.h.digest()


def test_a_tau_path_max_call_depth_deep_is_read_and_hashed_in_linear_work(tmp_path, monkeypatch):
    import perflake.identity as identity
    from perflake.readers.tau import Reader

    rows = Reader().read(str(tau_chain(tmp_path / "deep", MAX_CALL_DEPTH, every_level=False)))
    assert rows.frames.num_rows == MAX_CALL_DEPTH and rows.values.num_rows == 2
    monkeypatch.setattr(identity, "hashlib", types.SimpleNamespace(md5=_CountingMd5.new))
    keys = identity.frame_keys(rows.frames)
    _CountingMd5.hashed = 0
    ids = identity.call_path_ids(rows.frames.column("local_id").to_numpy() * 0, rows.frames.column("local_id")
                                 .to_numpy(), rows.frames.column("parent_local").to_numpy(), keys, MAX_CALL_DEPTH)
    key_bytes = sum(len(k.encode()) for k in keys.to_pylist())
    assert _CountingMd5.hashed == key_bytes + MAX_CALL_DEPTH - 1  # each key once, plus a separator per edge
    assert ids.reached.all() and int(ids.depth.max()) == MAX_CALL_DEPTH - 1
    deepest = int(rows.frames.column("local_id").to_numpy()[ids.depth == MAX_CALL_DEPTH - 1][0])
    path_text = "\x1e".join(keys.to_pylist()[: deepest + 1]).encode()  # pre-order chain: ancestors come first
    assert int(ids.node_id[deepest]) == int.from_bytes(hashlib.md5(path_text).digest()[:8], "little") & (2**63 - 1)
    too_deep = tau_chain(tmp_path / "deeper", MAX_CALL_DEPTH + 1, every_level=False)
    refused(run_reader("tau", too_deep), too_deep / "profile.0.0.0", f"{MAX_CALL_DEPTH + 1} frames", "MAX_CALL_DEPTH")


INGEST = textwrap.dedent("""
    import json, sys
    from perflake import Lake
    def hwm():  # peak RSS of this process image in KiB (ru_maxrss would carry the parent's over fork + exec)
        with open("/proc/self/status") as fh:
            return int(next(line for line in fh if line.startswith("VmHWM:")).split()[1])
    lake = Lake(sys.argv[1])
    report = lake.ingest(sys.argv[2:])
    runs = lake.runs()
    print(json.dumps({"failed": [str(f) for f in report.failed], "nodes": sorted(runs["n_nodes"].tolist()),
                      "peak_mib": hwm() / 1024}))
""")


def test_paths_max_call_depth_deep_are_ingested_in_bounded_memory(tmp_path):
    inputs = tmp_path / "in"
    tau_chain(inputs / "tau", MAX_CALL_DEPTH, every_level=False)
    pstats_chain(inputs / "chain.pstats", MAX_CALL_DEPTH)
    dot_chain(inputs / "chain.dot", MAX_CALL_DEPTH)
    proc = subprocess.run([sys.executable, "-c", INGEST, str(tmp_path / "lake"), str(inputs / "tau"),
                           str(inputs / "chain.pstats"), str(inputs / "chain.dot")], capture_output=True, text=True,
                          preexec_fn=_limit_as, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout)
    assert got["failed"] == [] and got["nodes"] == [MAX_CALL_DEPTH] * 3
    assert got["peak_mib"] < 600, got  # three 4,096-deep chains; a quadratic ancestor table would not fit
