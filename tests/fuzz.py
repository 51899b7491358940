"""Deterministic fuzzing of perflake's readers over mutated copies of the real profiles in ``../shared/data``.

A *case* is (format, dataset, mutation, seed) and is written ``tau:tau-cpi-mpi:truncate:17``.  Everything about
the mutated input derives from the case and the dataset's bytes, so a case id reproduces the same input on
any machine.  Each case is copied into its own temporary directory (the shared data is never written), mutated,
then read by the format's reader in a worker process that runs under ``RLIMIT_AS`` (1.5 GB) and a watchdog
(10 s per case).  The outcome of a case is one of:

* ``ok``     the read succeeded and the result satisfies the reader contract (readers/base.py) and normalises;
* ``error``  a :class:`perflake.errors.PerflakeError` with a one-line message naming the input or a file in it;
* ``bug``    anything else: another exception, a contract violation, a bad message (listed with its cause);
* ``hang``   the case took longer than the time limit (the worker is killed and restarted);
* ``crash``  the worker died (a signal, an abort, the memory limit hit in C code).

Command line (from the project root, with the venv's python)::

    python tests/fuzz.py run [--cases 1000] [--seed 0] [--workers 2]   # summary, failures with their ids
    python tests/fuzz.py one tau:tau-cpi-mpi:truncate:17              # in this process: the traceback, if any
    python tests/fuzz.py show tau:tau-cpi-mpi:truncate:17 OUT          # write the mutated input under OUT

The worker uses pyarrow's system allocator: mimalloc (the default) reserves 1 GB of address space up front,
which would count against ``RLIMIT_AS`` without ever being used.
"""

from __future__ import annotations

import json
import os
import random
import re
import resource
import selectors
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("PERFLAKE_TEST_DATA", ROOT.parent / "shared" / "data"))
TIMEOUT = 10.0  # CPU seconds per case
STALL = 300.0  # wall-clock seconds without an answer: a worker blocked without using the CPU
MEMORY = 1536 << 20  # bytes of address space per worker
RECYCLE = 900  # MiB: a worker whose address space grew beyond this is replaced before its next case
HUGE_LINE = 50 << 20  # the "50 MB single line"

# format -> real inputs under DATA (a file, or a directory for the multi-file formats)
SOURCES = {
    "caliper": [
        "caliper-example-cali/example-profile.cali",
        "caliper-lulesh-cali/lulesh-annotation-profile.cali",
        "caliper-ordered-cali/230525-151052_1930517_eWbGeyrlBOPT.cali",
        "caliper-ordered-cali-mpi/230525-151723_1930647_FSY8b8cKSEEi.cali",
        "caliper-sw4-cuda-activity-profile-cali/caliper_cuda_activity_profile_summary_v2.cali",
        "rajaperf-quartz/gcc10.3.1_1048576/O3/1/Base_Seq-default.cali",
    ],
    "caliper_json": ["caliper-cpi-json/cpi-callpath-profile.json",
                     "caliper-lulesh-json/lulesh-annotation-profile.json"],
    "cprofile": ["generated:workload.pstats"],  # made by tests/pyprofiles.py (no shared dataset): see source()
    "gprof_dot": ["gprof2dot-cpi/callgrind.dot.64042.0.1"],
    "hatchet_json": ["json/hatchet-graph-literal.json"],
    "hpctoolkit": ["hpctoolkit-cpi-database"],
    "hpctoolkit_v4": ["hpctoolkit-gamess"],
    "perfflowaspect": ["generated:perfflow.node17.4001.pfw"],  # perflake.generators.perfflowaspect (no shared data)
    "pyinstrument": ["generated:session.json"],
    "tau": ["tau-cpi-mpi"],
}
# formats with no real input under DATA: their own test file fuzzes databases of their generator
GENERATED_ONLY = {"hpctoolkit_sparse": "tests/test_hpctoolkit_sparse.py"}
# share of the cases per format (hpctoolkit_v4 is small: its only real database takes ~0.4 s to read)
WEIGHTS = {"caliper": 0.2, "caliper_json": 0.15, "hatchet_json": 0.06, "hpctoolkit": 0.18, "hpctoolkit_v4": 0.07,
           "tau": 0.16, "gprof_dot": 0.05, "cprofile": 0.08, "pyinstrument": 0.05,
           "perfflowaspect": 0.05}  # cprofile: most byte mutations
# break its binary marshal data, so it needs more cases to read enough of them right
TEXT = {"caliper", "caliper_json", "gprof_dot", "hatchet_json", "hpctoolkit", "perfflowaspect", "pyinstrument",
        "tau"}  # text files
BINARY = {"cprofile", "hpctoolkit", "hpctoolkit_v4"}  # formats with binary files

# random mutations, by weight; "text" ones apply to text files (xml, json, cali, TAU), "binary" ones to binary
BYTE_MUTATIONS = {"flip": 4, "truncate": 4, "zero": 2, "duplicate": 2, "delete": 2, "header": 2}
TEXT_MUTATIONS = {"number": 3, "nan": 3, "utf8": 2, "line": 3, "punct": 2, "combo": 2}
BINARY_MUTATIONS = {"word": 4, "float": 3}
# structural mutations, each planned a fixed number of times per format (on top of the random ones)
STRUCTURAL = {
    "caliper": {"empty_file": 1, "empty_dir": 1, "missing": 1, "huge_line": 1},
    "caliper_json": {"empty_file": 1, "empty_dir": 1, "missing": 1, "huge_line": 1, "json_deep": 2, "json_shape": 8},
    "cprofile": {"empty_file": 1, "missing": 1},
    "gprof_dot": {"empty_file": 1, "missing": 1, "huge_line": 1},
    "hatchet_json": {"empty_file": 1, "missing": 1, "huge_line": 1, "json_deep": 1, "hatchet_shape": 10},
    "hpctoolkit": {"empty_file": 2, "empty_dir": 1, "missing": 4, "huge_line": 1, "rename": 6, "metricdb_shape": 6,
                   "xml_hostile": 6},
    "hpctoolkit_v4": {"empty_file": 2, "empty_dir": 1, "missing": 3, "huge_line": 1},
    "perfflowaspect": {"empty_file": 1, "missing": 1, "huge_line": 1, "json_deep": 1},
    "pyinstrument": {"empty_file": 1, "missing": 1, "huge_line": 1, "json_deep": 1},
    "tau": {"empty_file": 1, "empty_dir": 1, "missing": 2, "huge_line": 1, "rename": 6, "tau_count": 6, "tau_multi": 6},
}

ABSURD_NUMBERS = [b"1e999", b"-1e999", b"99999999999999999999999999999", b"-99999999999999999999", b"4294967296",
                  b"2147483648", b"-2147483649", b"-1", b"0", b"1e308", b"-0", b"1.5", b"0x10", b"1e-400", b"+",
                  b"", b"18446744073709551616", b"9" * 400, b"9" * 5000]
NAN_TEXT = [b"nan", b"NaN", b"-nan", b"inf", b"-inf", b"Infinity", b"-Infinity", b"INF", b"1e999"]
BAD_UTF8 = [b"\xff", b"\xfe\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe2\x82", b"\x00", b"\xc0\xaf"]
PUNCT = [b"\\", b",", b"=", b'"', b"\t", b"\r", b"<", b">", b"&", b"]", b"[", b"{", b"}", b":", b"=>", b"\n", b" "]
MAGICS = [b"__rec=", b"HPCTOOLKIT", b"HPCPROF-metricdb__", b"{", b"<?xml", b"\x00\x00\x00\x00", b"\xef\xbb\xbf",
          b"23 templated_functions", b"PK\x03\x04", b"\x89PNG"]
_NUMBER_RE = re.compile(rb"(?<![A-Za-z_])-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")
_WORD_RE = re.compile(rb"[A-Za-z_]{3,}")


@dataclass(frozen=True)
class Case:
    kind: str
    dataset: str
    mutation: str
    seed: int

    @property
    def id(self) -> str:
        return f"{self.kind}:{self.dataset}:{self.mutation}:{self.seed}"

    @classmethod
    def parse(cls, text: str) -> Case:
        kind, rest = text.split(":", 1)
        dataset, mutation, seed = rest.rsplit(":", 2)
        return cls(kind, dataset, mutation, int(seed))


def plan(n: int = 1000, seed: int = 0) -> list[Case]:
    """At least ``n`` cases over every format: the structural mutations of each format, then random ones.

    Cases are interleaved across formats, so any prefix (or any worker's share) covers every format."""
    rng = random.Random(seed)
    per_kind: dict[str, list[Case]] = {}
    for kind in sorted(SOURCES):
        cases = []
        for mutation, times in STRUCTURAL[kind].items():
            cases += [Case(kind, rng.choice(SOURCES[kind]), mutation, rng.randrange(1 << 30)) for _ in range(times)]
        names = [*BYTE_MUTATIONS, *(TEXT_MUTATIONS if kind in TEXT else ()),
                 *(BINARY_MUTATIONS if kind in BINARY else ())]
        weights = [{**BYTE_MUTATIONS, **TEXT_MUTATIONS, **BINARY_MUTATIONS}[m] for m in names]
        want = max(round(n * WEIGHTS[kind]), len(cases) + 1)
        while len(cases) < want:
            cases.append(Case(kind, rng.choice(SOURCES[kind]), rng.choices(names, weights)[0], rng.randrange(1 << 30)))
        per_kind[kind] = cases
    out, i = [], 0
    while any(i < len(c) for c in per_kind.values()):
        out += [c[i] for c in per_kind.values() if i < len(c)]
        i += 1
    while len(out) < n:  # rounding: top up with random byte mutations of the text formats
        kind = rng.choice(sorted(TEXT))
        out.append(Case(kind, rng.choice(SOURCES[kind]), rng.choice(list(BYTE_MUTATIONS)), rng.randrange(1 << 30)))
    return out


# -- building a mutated input ---------------------------------------------------------------------------------


def _input_files(kind: str, src: Path) -> list[Path]:
    """The files of a real input that are copied (what the reader consumes)."""
    if src.is_file():
        return [src]
    if kind == "hpctoolkit":
        return [src / "experiment.xml", *sorted(src.glob("*.metric-db"))]
    if kind == "hpctoolkit_v4":
        return [src / n for n in ("meta.db", "profile.db", "cct.db")]
    return sorted(p for p in src.rglob("profile.*") if p.is_file())


def copy_input(kind: str, src: Path, dest: Path) -> Path:
    """Copy the input into ``dest``; return the path the reader gets."""
    if src.is_file():
        dest.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dest / src.name)
        return dest / src.name
    run = dest / src.name
    for f in _input_files(kind, src):
        target = run / f.relative_to(src)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(f, target)  # copyfile: the copy is writable even though the source is not
    return run


def _members(path: Path) -> list[Path]:
    return [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())


def _targets(kind: str, path: Path, want: str) -> list[Path]:
    """Member files a byte mutation may hit; ``want`` is "text", "binary" or "any"."""
    members = _members(path)
    if kind == "hpctoolkit":
        xml = [m for m in members if m.name == "experiment.xml"]
        dbs = [m for m in members if m.suffix == ".metric-db"]
        return {"text": xml, "binary": dbs}.get(want, xml + xml + xml + dbs)  # the XML about as often as all dbs
    if kind == "hpctoolkit_v4":
        return [m for m in members if m.name in ("meta.db", "profile.db")]
    return members


def _range(rng: random.Random, n: int) -> tuple[int, int]:
    length = rng.choice([1, 2, 4, 8, 16, 64, 512, 4096, n // 3 or 1])
    start = rng.randrange(max(n - length, 0) + 1)
    return start, min(start + length, n)


def _byte_mutation(rng: random.Random, name: str, data: bytes) -> tuple[bytes, str]:
    n = len(data)
    if n == 0:
        return b"\xff", "an empty file became one 0xff byte"
    b = bytearray(data)
    if name == "flip":
        spots = sorted(rng.randrange(n) for _ in range(rng.choice([1, 1, 2, 4, 16])))
        for pos in spots:
            b[pos] ^= rng.randrange(1, 256)
        return bytes(b), f"bytes flipped at {spots[:6]}"
    if name == "truncate":
        cut = rng.choice([rng.randrange(n), rng.randrange(min(n, 64)), n - 1 - rng.randrange(min(n, 64))])
        return data[:cut], f"truncated to {cut} of {n} bytes"
    start, stop = _range(rng, n)
    if name == "zero":
        b[start:stop] = bytes(stop - start)
        return bytes(b), f"bytes {start}:{stop} zeroed"
    if name == "duplicate":
        return data[:stop] + data[start:], f"bytes {start}:{stop} duplicated"
    if name == "delete":
        return data[:start] + data[stop:], f"bytes {start}:{stop} deleted"
    if name == "header":
        if rng.random() < 0.5:
            magic = rng.choice(MAGICS)
            return magic + data[len(magic) if rng.random() < 0.5 else 0 :], f"header replaced by {magic!r}"
        spots = sorted(rng.randrange(min(n, 64)) for _ in range(rng.randint(1, 4)))
        for pos in spots:
            b[pos] = rng.randrange(256)
        return bytes(b), f"header bytes {spots} randomised"
    raise ValueError(name)


def _text_mutation(rng: random.Random, name: str, data: bytes) -> tuple[bytes, str]:
    if name in ("number", "nan"):
        found = list(_NUMBER_RE.finditer(data))
        if not found:
            return data + b"nan", "nan appended (no number found)"
        m = rng.choice(found)
        new = rng.choice(ABSURD_NUMBERS if name == "number" else NAN_TEXT)
        return data[: m.start()] + new + data[m.end() :], f"number {m.group()[:20]!r} at {m.start()} -> {new[:20]!r}"
    if name == "utf8":
        words = list(_WORD_RE.finditer(data))  # inside a name, where it hurts
        bad = rng.choice(BAD_UTF8)
        if words:
            word = rng.choice(words)
            pos = rng.randrange(word.start() + 1, word.end())
        else:
            pos = rng.randrange(len(data) + 1)
        return data[:pos] + bad + data[pos:], f"{bad!r} inserted at {pos}"
    if name == "punct":  # a separator, quote or escape where it does not belong
        spots = sorted(rng.randrange(len(data) + 1) for _ in range(rng.choice([1, 1, 2, 5])))
        out = bytearray(data)
        for pos in reversed(spots):
            out[pos:pos] = rng.choice(PUNCT)
        return bytes(out), f"punctuation inserted at {spots}"
    if name == "combo":  # several mutations on top of each other
        what = []
        for _ in range(rng.randint(2, 4)):
            m = rng.choice(["flip", "delete", "duplicate", "number", "nan", "utf8", "line", "punct"])
            data, w = (_byte_mutation if m in BYTE_MUTATIONS else _text_mutation)(rng, m, data)
            what.append(w)
        return data, "; ".join(what)
    if name == "line":
        lines = data.split(b"\n")
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        op = rng.choice(["delete", "duplicate", "swap", "cut", "join", "reverse"])
        if op == "delete":
            del lines[i]
        elif op == "duplicate":
            lines.insert(j, lines[i])
        elif op == "swap":
            lines[i], lines[j] = lines[j], lines[i]
        elif op == "cut":
            lines[i] = lines[i][: rng.randrange(len(lines[i]) + 1)]
        elif op == "join" and i + 1 < len(lines):
            lines[i : i + 2] = [lines[i] + lines[i + 1]]
        elif op == "reverse":
            lines[min(i, j) : max(i, j) + 1] = lines[min(i, j) : max(i, j) + 1][::-1]
        return b"\n".join(lines), f"line {op} ({i}, {j})"
    raise ValueError(name)


_WORDS = [0, 1, 2, 0xFF, 0xFFFF, 0x7FFFFFFF, 0xFFFFFFFF, 0x80000000, 1 << 40, (1 << 63) - 1, (1 << 64) - 1]
_FLOATS = [float("nan"), float("inf"), float("-inf"), 1e308, -1e308, 5e-324, -0.0, 1e20]


def _binary_mutation(rng: random.Random, name: str, data: bytes, path: Path) -> tuple[bytes, str]:
    n = len(data)
    if n < 8:
        return data + b"\0" * 8, "zeros appended"
    b = bytearray(data)
    order = ">" if path.suffix == ".metric-db" else "<"
    if name == "word":
        size = rng.choice([2, 4, 8])
        pos = rng.randrange(0, min(n - size, 4096 if rng.random() < 0.6 else n - size) + 1) // size * size
        value = rng.choice(_WORDS + [n, n - 1, n + 1, rng.randrange(n)]) & ((1 << (8 * size)) - 1)
        struct.pack_into(order + {2: "H", 4: "I", 8: "Q"}[size], b, pos, value)
        return bytes(b), f"{size}-byte word at {pos} -> {value:#x}"
    if name == "float":
        value = rng.choice(_FLOATS)
        if path.suffix == ".metric-db":  # an aligned value after the 32-byte header
            pos = min(32 + 8 * rng.randrange(max((n - 32) // 8, 1)), n - 8)
        else:
            pos = rng.randrange(n - 7)
        struct.pack_into(order + "d", b, pos, value)
        return bytes(b), f"float at {pos} -> {value!r}"
    raise ValueError(name)


def _structural(rng: random.Random, case: Case, path: Path, root: Path) -> tuple[Path, str]:
    m, kind = case.mutation, case.kind
    members = _members(path)
    if m == "empty_file":
        f = rng.choice(members)
        f.write_bytes(b"")
        return path, f"{f.name} emptied"
    if m == "empty_dir":
        empty = root / "empty"
        empty.mkdir()
        return empty, "an empty directory"
    if m == "missing":
        f = rng.choice(members)
        f.unlink()
        return path, f"{f.name} deleted"
    if m == "huge_line":
        f = rng.choice(_targets(kind, path, "any"))
        data = f.read_bytes()
        pos = rng.randrange(len(data) + 1)
        with open(f, "wb") as fh:
            fh.write(data[:pos])
            fh.write(b"A" * HUGE_LINE)
            fh.write(data[pos:])
        return path, f"{HUGE_LINE} bytes without a newline inserted into {f.name} at {pos}"
    if m == "rename":
        f = rng.choice([x for x in members if x.name != "experiment.xml"])
        if kind == "tau":
            new = rng.choice(["profile.2147483648.0.0", "profile.99999999999999999999.0.0", "profile.0.4294967296.0",
                              "profile.0.0.2147483647", "profile.0.1.0", "profile.1.0.0", "profile.-1.0.0"])
        else:
            stem = f.name.split("-")[0]
            new = rng.choice([f"{stem}-2147483648-000-a8c00270-1-0.metric-db",  # absurd rank
                              f"{stem}-000000-000-a8c00270-9-0.metric-db",  # rank 0 twice
                              f"{stem}-000001-4294967296-a8c00270-9-0.metric-db",  # absurd thread
                              "x.metric-db", f"{stem}-99999999999999999999-000-zz-1-0.metric-db",
                              f"{stem}-000007-000-a8c00270-1-0.metric-db"])  # a rank more
        if new == f.name:
            return path, f"{f.name} kept its name"
        if rng.random() < 0.5:
            shutil.copyfile(f, f.parent / new)
            return path, f"{f.name} copied as {new}"
        f.rename(f.parent / new)
        return path, f"{f.name} renamed {new}"
    if m == "tau_count":
        f = rng.choice(members)
        data = f.read_bytes()
        new = rng.choice([b"0", b"1", b"22", b"24", b"99999999", b"1" + b"0" * 30, b"-3", b"2147483648"])
        f.write_bytes(re.sub(rb"^\d+", new, data, count=1))
        return path, f"{f.name}: function count -> {new.decode()}"
    if m == "tau_multi":  # MULTI__ folders that disagree: a missing rank, or different entries
        second = rng.choice(["PAPI_TOT_CYC", "CPU_TIME", "TIME"])
        time_dir, other = path / "MULTI__TIME", path / f"MULTI__{second}x"
        time_dir.mkdir()
        for f in members:
            f.rename(time_dir / f.name)
        shutil.copytree(time_dir, other)
        victims = sorted(other.iterdir())
        victim = rng.choice(victims)
        how = rng.choice(["missing", "line", "extra"])
        if how == "missing":
            victim.unlink()
        elif how == "line":
            lines = victim.read_bytes().split(b"\n")
            i = rng.randrange(2, 24)
            lines.insert(i, lines[i])
            lines[0] = re.sub(rb"^\d+", lambda x: str(int(x.group()) + 1).encode(), lines[0])
            victim.write_bytes(b"\n".join(lines))
        else:
            shutil.copyfile(victim, other / "profile.9.0.0")
        return path, f"MULTI__TIME and {other.name}: {how} ({victim.name})"
    if m == "metricdb_shape":  # a metric-db whose table has another shape than the XML's
        f = rng.choice([x for x in members if x.suffix == ".metric-db"])
        data = f.read_bytes()
        n_nodes, n_metrics = struct.unpack_from(">II", data, 24)
        nn, nm = rng.choice([(n_nodes - 1, n_metrics), (n_nodes + 1, n_metrics), (n_nodes, n_metrics - 1),
                             (0, 0), (1, 1), (n_nodes * 2, n_metrics)])
        body = (data[32:] * 3)[: 8 * nn * nm]
        f.write_bytes(data[:24] + struct.pack(">II", nn, nm) + body)
        return path, f"{f.name}: {nn} nodes x {nm} metrics (was {n_nodes} x {n_metrics})"
    if m == "xml_hostile":
        f = path / "experiment.xml"
        data = f.read_bytes()
        end = data.find(b"]>")
        evil = rng.choice([
            b'<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">',
            b'<!ENTITY x SYSTEM "file:///etc/passwd">',
            b'<!ENTITY % p SYSTEM "http://127.0.0.1:9/evil.dtd"> %p;',
            b'<!ENTITY u SYSTEM "http://127.0.0.1:9/x" NDATA gif>',
        ])
        if rng.random() < 0.3:
            evil = b'SYSTEM "http://127.0.0.1:9/x.dtd"'
            data = data.replace(b"<!DOCTYPE HPCToolkitExperiment [", b"<!DOCTYPE HPCToolkitExperiment " + evil + b" [")
        else:
            data = data[:end] + evil + data[end:]
        data = re.sub(rb'(<PF [^>]*n=")', rb"\1&x;" if rng.random() < 0.5 else rb"\1", data, count=1)
        f.write_bytes(data)
        return path, f"hostile DTD in experiment.xml: {evil[:40]!r}"
    if m == "json_deep":
        data = path.read_bytes()
        key = {"caliper_json": b'"nodes"', "pyinstrument": b'"root_frame"',
               "perfflowaspect": b'"name"'}.get(case.kind, b'"dataframe"')
        pos = data.find(key)
        deep = b"[" * 200_000 + b"]" * 200_000
        path.write_bytes(data[:pos] + b'"deep": ' + deep + b", " + data[pos:])
        return path, "200,000 nested lists"
    if m == "json_shape":  # valid JSON, wrong shapes
        doc = json.loads(path.read_bytes())
        what = rng.choice(["parent", "column", "label", "rank", "data_row", "columns", "metadata", "nodes", "data_str"])
        if what == "parent" and doc["nodes"]:
            doc["nodes"][rng.randrange(len(doc["nodes"]))]["parent"] = rng.choice([-1, 10**9, "0", 1.5, None, 0])
        elif what == "column" and doc["nodes"]:
            doc["nodes"][rng.randrange(len(doc["nodes"]))]["column"] = rng.choice([None, 5, "mpi.rank"])
        elif what == "label" and doc["nodes"]:
            label = rng.choice([None, 7, ["x"], {"a": 1}, "\u0000", "\ud800"])
            doc["nodes"][rng.randrange(len(doc["nodes"]))]["label"] = label
        elif what == "rank" and doc["data"]:
            row = rng.choice(doc["data"])
            row[rng.randrange(len(row))] = rng.choice([-5, 2**40, 1.5, "x", None, True, 1e308])
        elif what == "data_row" and doc["data"]:
            doc["data"][rng.randrange(len(doc["data"]))] = rng.choice([[], [1], None, "row", {"a": 1}])
        elif what == "columns":
            doc["columns"] = rng.choice([doc["columns"][:-1], doc["columns"] + ["extra"], [1, 2], "path"])
        elif what == "metadata":
            doc["column_metadata"] = rng.choice([[], [None] * len(doc["columns"]), {"a": 1}])
        elif what == "nodes":
            doc["nodes"] = rng.choice([[], [None], [{"parent": 0}], "nodes"])
        else:
            doc["data"] = [[str(c) for c in row] for row in doc["data"]]
        path.write_text(json.dumps(doc, indent=1))
        return path, f"json shape: {what}"
    if m == "hatchet_shape":  # valid Hatchet JSON syntax, wrong shapes
        doc = json.loads(path.read_bytes())
        what = rng.choice(["data", "children", "node", "rank", "value", "indices", "metrics", "metadata", "graph"])
        nodes = doc["graph"][0]
        key = rng.choice(list(nodes))
        records = doc["dataframe"]
        if what == "data":
            nodes[key]["data"] = rng.choice([None, 5, [], {}, "x", {"name": None}, {"name": ["a"]}, {"name": 2**70}])
        elif what == "children":
            nodes[key]["children"] = rng.choice([None, "1", [None], [key], [-1], [1.5], [2**70], {"a": 1}])
        elif what == "node" and records:
            rng.choice(records)["node"] = rng.choice([None, "x", 1.5, -1, 2**70, [0], True])
        elif what == "rank":
            doc["dataframe_indices"] = ["node", "rank"]
            for r in records:
                r["rank"] = rng.choice([0, -3, 2**40, 1.5, "x", None, True])
        elif what == "value" and records:
            rng.choice(records)[rng.choice(["time", "time (inc)", "name", "line", "file"])] = rng.choice(
                ["x", None, [1], {"a": 1}, 1e308, -1e308, True, 2**70, "\ud800"])
        elif what == "indices":
            doc["dataframe_indices"] = rng.choice([None, "node", [], [None], ["rank"], ["node", "node"], 5])
        elif what == "metrics":
            doc[rng.choice(["inclusive_metrics", "exclusive_metrics"])] = rng.choice([None, "time", [None], [5], {}])
        elif what == "metadata":
            doc["metadata"] = rng.choice([None, [], "x", {"a": [1, {"b": None}]}, 5])
        else:
            doc["graph"] = rng.choice([[], [None], [{}], {"0": {}}, [{"x": {"data": {"name": "a"}}}], "graph"])
        path.write_text(json.dumps(doc, indent=1))
        return path, f"hatchet json shape: {what}"
    raise ValueError(f"unknown mutation {m!r}")


def source(dataset: str, data: Path = DATA) -> Path:
    """The real input named ``dataset``: a path under ``data``, or, for ``generated:NAME``, a file that
    tests/pyprofiles.py makes with the real profiler (deterministic bytes: cProfile with a counting timer,
    pyinstrument's own renderer on fixed samples)."""
    if dataset.startswith("generated:"):
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import pyprofiles

        return pyprofiles.generated(dataset.split(":", 1)[1])
    return data / dataset


def materialize(case: Case, root: Path, data: Path = DATA) -> tuple[Path, str]:
    """Copy the case's dataset under ``root`` and mutate it; (path for the reader, what was done)."""
    rng = random.Random(f"{case.id}")
    path = copy_input(case.kind, source(case.dataset, data), root / "input")
    m = case.mutation
    if m in BYTE_MUTATIONS or m in TEXT_MUTATIONS or m in BINARY_MUTATIONS:
        want = "text" if m in TEXT_MUTATIONS else "binary" if m in BINARY_MUTATIONS else "any"
        f = rng.choice(_targets(case.kind, path, want))
        data_in = f.read_bytes()
        if m in BYTE_MUTATIONS:
            out, what = _byte_mutation(rng, m, data_in)
        elif m in TEXT_MUTATIONS:
            out, what = _text_mutation(rng, m, data_in)
        else:
            out, what = _binary_mutation(rng, m, data_in, f)
        f.write_bytes(out)
        return path, f"{f.relative_to(root)}: {what}"
    return _structural(rng, case, path, root)


def build_folder(cases: list[Case], folder: Path, data: Path = DATA) -> list[tuple[Case, Path, str]]:
    """Materialize ``cases`` side by side under ``folder`` (one sub-folder each): (case, input path, what)."""
    out = []
    for i, case in enumerate(cases):
        path, what = materialize(case, folder / f"{i:03d}", data)
        out.append((case, path, what))
    return out


# -- checking one case ---------------------------------------------------------------------------------------


def contract_problems(rows) -> list[str]:
    """Violations of the reader contract (readers/base.py) by a ProfileRows; vectorised, cheap."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from perflake.readers.base import EXCLUSIVE, FRAME_SCHEMA, INCLUSIVE, OTHER

    out = []
    f, v = rows.frames, rows.values
    if not f.schema.equals(FRAME_SCHEMA):
        return [f"frames schema {f.schema} is not FRAME_SCHEMA"]
    n = f.num_rows
    if n == 0:
        out.append("no frames")
    local = f.column("local_id").to_numpy()
    parent = f.column("parent_local").fill_null(-2).to_numpy()
    if not np.array_equal(local, np.arange(n)):
        out.append("local ids are not 0..n-1")
    bad = (parent != -1) & ((parent < 0) | (parent >= np.arange(n)))
    if bad.any():
        out.append(f"frame {int(np.argmax(bad))}: parent {int(parent[bad][0])} does not precede it")
    if f.column("name").null_count:
        out.append("a frame without a name")
    if v.column_names[:3] != ["local_id", "rank", "thread"]:
        return out + [f"values columns start {v.column_names[:3]}"]
    for c in ("local_id", "rank", "thread"):
        col = v.column(c)
        if not pa.types.is_integer(col.type) or col.null_count:
            out.append(f"values column {c}: {col.type} with {col.null_count} nulls")
    ids = v.column("local_id")
    if v.num_rows and (pc.min(ids).as_py() < 0 or pc.max(ids).as_py() >= n):
        out.append("a value row refers to no frame")
    names = [m.name for m in rows.metrics]
    if v.column_names[3:] != names or len(set(names)) != len(names):
        out.append(f"metric columns {v.column_names[3:]} do not match the metrics {names}")
        return out
    for m in rows.metrics:
        col = v.column(m.name)
        if m.role not in (EXCLUSIVE, INCLUSIVE, OTHER):
            out.append(f"metric {m.name!r}: role {m.role!r}")
        if col.type != pa.float64():
            out.append(f"metric {m.name!r} is {col.type}, not float64")
        elif np.isinf(col.to_numpy(zero_copy_only=False)).any():
            out.append(f"metric {m.name!r} holds an infinity")
    if not isinstance(rows.metadata, dict):
        out.append("metadata is not a dict")
    else:
        try:  # the catalog stores it as strict JSON text (no NaN, no Infinity, no lone surrogate)
            json.dumps(rows.metadata, default=str, allow_nan=False, ensure_ascii=False).encode("utf-8")
        except (TypeError, ValueError, UnicodeError) as exc:
            out.append(f"metadata cannot be stored as JSON: {str(exc)[:100]}")
    return out


def _where(exc: BaseException) -> str:
    frames = [fr for fr in traceback.extract_tb(exc.__traceback__) if "/tests/" not in fr.filename]
    fr = frames[-1] if frames else None
    mine = [x for x in frames if "/site-packages/" not in x.filename]
    here = mine[-1] if mine else fr
    return f"{os.path.relpath(here.filename, ROOT)}:{here.lineno}" if here else "?"


def check(kind: str, path: Path, root: Path) -> tuple[str, str]:
    """(outcome, detail) of reading ``path`` with the ``kind`` reader; ``root`` holds every input file."""
    from perflake.errors import PerflakeError, ReaderError
    from perflake.ingest.normalize import normalize
    from perflake.readers import detect, get_reader

    try:
        detect(str(path))
    except Exception as exc:  # sniffing must answer True/False, whatever the input
        return "bug", f"sniffing raised {type(exc).__name__}: {exc} at {_where(exc)}"
    reader = get_reader(kind)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a warning would be a stray line on the user's terminal
            reader.files(str(path))
            rows = reader.read(str(path))
            problems = contract_problems(rows)
            if problems:
                return "bug", "contract: " + "; ".join(problems[:3])
            normalize(rows)
    except PerflakeError as exc:
        msg = str(exc)
        where = getattr(exc, "path", None)
        if "\n" in msg:
            return "bug", f"a message of several lines: {msg[:200]!r}"
        if not isinstance(exc, ReaderError) or not where:
            return "bug", f"{type(exc).__name__} that names no file: {msg[:200]}"
        if not (where == str(path) or where.startswith(str(root) + os.sep)) or not msg.startswith(f"{where}: "):
            return "bug", f"the message does not name the input or a file of it: {msg[:200]}"
        if len(msg) > len(where) + 400:
            return "bug", f"a message of {len(msg)} characters: {msg[:200]}..."
        return "error", msg.replace(str(root), "<case>")
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:
        return "bug", f"{type(exc).__name__}: {str(exc)[:200]} at {_where(exc)}"
    return "ok", f"{rows.frames.num_rows} frames, {rows.values.num_rows} value rows"


def _selftest(case: Case) -> dict:
    """Cases of kind ``selftest`` check the watchdog itself: ``hang`` spins, ``stall`` sleeps, ``crash``
    aborts, ``memory`` allocates more than the limit, ``ok`` does nothing."""
    if case.dataset == "hang":  # spins: caught by the CPU-time limit
        while True:
            pass
    elif case.dataset == "stall":  # blocks without using the CPU: caught by the wall-clock guard
        time.sleep(3600)
    elif case.dataset == "crash":
        os.abort()
    elif case.dataset == "memory":
        try:
            bytearray(2 * MEMORY)
        except MemoryError:
            return {"id": case.id, "outcome": "bug", "detail": "MemoryError", "what": "", "seconds": 0.0}
    return {"id": case.id, "outcome": "ok", "detail": "", "what": "", "seconds": 0.0}


def run_one(case: Case, workdir: Path, data: Path = DATA) -> dict:
    if case.kind == "selftest":
        return _selftest(case)
    root = Path(tempfile.mkdtemp(prefix="case-", dir=workdir))
    try:
        try:
            path, what = materialize(case, root, data)
        except Exception as exc:  # a fuzzer bug, not a reader bug: reported as such
            return {"id": case.id, "outcome": "bug", "detail": f"fuzz.materialize failed: {exc!r} at {_where(exc)}",
                    "what": "", "seconds": 0.0}
        t0 = time.perf_counter()
        outcome, detail = check(case.kind, path, root)
        return {"id": case.id, "outcome": outcome, "detail": detail, "what": what,
                "seconds": round(time.perf_counter() - t0, 4)}
    finally:
        shutil.rmtree(root, ignore_errors=True)


# -- workers and watchdog -------------------------------------------------------------------------------------


def _vm_size_mb() -> int:
    """This process's address space (what RLIMIT_AS limits), in MiB."""
    with open("/proc/self/status") as fh:
        return next((int(line.split()[1]) >> 10 for line in fh if line.startswith("VmSize:")), 0)


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def worker_main(case_file: str, start: int, workdir: str, data: str) -> None:
    """Read the cases of ``case_file`` from index ``start``; print START/END lines (the watchdog's heartbeat)."""
    _limit_memory()
    import perflake.ingest.normalize  # noqa: F401  (imports before the first case: they do not count against it)
    from perflake.readers import REGISTRY, get_reader

    for kind in REGISTRY:
        get_reader(kind)
    ids = Path(case_file).read_text().split("\n")
    out = sys.stdout
    out.write("READY\n")
    out.flush()
    for i in range(int(start), len(ids)):
        if not ids[i]:
            continue
        out.write(f"START {i}\n")
        out.flush()
        result = run_one(Case.parse(ids[i]), Path(workdir), Path(data))
        result["vm_mb"] = _vm_size_mb()
        out.write("END " + json.dumps(result) + "\n")
        out.flush()
        if result["vm_mb"] > RECYCLE:  # DuckDB's and the allocators' caches must not count against the next case
            return


class _Worker:
    def __init__(self, case_file: Path, start: int, workdir: Path, data: Path):
        env = {**os.environ, "ARROW_DEFAULT_MEMORY_POOL": "system", "MALLOC_ARENA_MAX": "2", "OMP_NUM_THREADS": "1",
               "PYTHONHASHSEED": "0"}
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "worker", *map(str, (case_file, start, workdir, data))],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=str(ROOT), start_new_session=True)
        self.buf = b""
        self.current: int | None = None
        self.next = start
        self.started = time.monotonic()
        self.cpu0 = 0.0
        self.ready = False

    def cpu(self) -> float:
        """CPU seconds the worker has used (user + system, all its threads), from /proc."""
        try:
            with open(f"/proc/{self.proc.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def mark(self) -> None:
        self.started, self.cpu0 = time.monotonic(), self.cpu()

    def lines(self) -> list[str]:
        chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
        if not chunk:
            raise EOFError
        self.buf += chunk
        *done, self.buf = self.buf.split(b"\n")
        return [d.decode() for d in done]

    def kill(self) -> str:
        try:
            os.killpg(self.proc.pid, 9)
        except ProcessLookupError:
            pass
        self.proc.wait()
        err = self.proc.stderr.read().decode(errors="replace")
        self.proc.stdout.close()
        self.proc.stderr.close()
        return err


def run_cases(cases: list[Case], workdir: Path, *, data: Path = DATA, workers: int = 2, timeout: float = TIMEOUT,
              startup: float = 120.0, stall: float = STALL) -> list[dict]:
    """Run every case in ``workers`` processes with a per-case watchdog; one result dict per case, in order.

    A case hangs when its worker spends more than ``timeout`` seconds of CPU on it (a loop: CPU time does not
    stretch when the machine is busy, so a loaded machine does not turn slow cases into hangs), or when it
    answers nothing for ``stall`` seconds of wall-clock time (blocked without using the CPU)."""
    workdir.mkdir(parents=True, exist_ok=True)
    shares = [cases[w::workers] for w in range(workers)]
    results: dict[str, dict] = {}
    sel = selectors.DefaultSelector()
    live: dict[int, tuple[_Worker, Path, list[Case]]] = {}

    def spawn(w: int, start: int, case_file: Path, share: list[Case]) -> None:
        if start < len(share):
            wk = _Worker(case_file, start, workdir, data)
            sel.register(wk.proc.stdout, selectors.EVENT_READ, w)
            live[w] = (wk, case_file, share)

    for w, share in enumerate(shares):
        case_file = workdir / f"cases-{w}.txt"
        case_file.write_text("\n".join(c.id for c in share) + "\n")
        spawn(w, 0, case_file, share)

    def fail(w: int, outcome: str, detail: str) -> None:
        wk, case_file, share = live.pop(w)
        sel.unregister(wk.proc.stdout)
        err = wk.kill().strip().splitlines()
        i = wk.current
        if i is None:  # died before starting a case: a harness problem, not a case's
            raise RuntimeError(f"fuzz worker failed to start: {' / '.join(err[-5:])}")
        results[share[i].id] = {"id": share[i].id, "outcome": outcome, "what": "",
                                "seconds": round(time.monotonic() - wk.started, 2),
                                "detail": detail + (f" (stderr: {err[-1][:200]})" if err else "")}
        spawn(w, i + 1, case_file, share)

    while live:
        now = time.monotonic()
        for w, (wk, _, _) in list(live.items()):
            if wk.current is None:
                if now - wk.started > startup:
                    fail(w, "hang", f"no answer within {startup:.0f} s")
            elif wk.cpu() - wk.cpu0 > timeout:
                fail(w, "hang", f"more than {timeout:.0f} s of CPU")
            elif now - wk.started > stall:
                fail(w, "hang", f"no answer within {stall:.0f} s")
        if not live:
            break
        for key, _ in sel.select(timeout=0.2):
            w = key.data
            wk = live[w][0]
            try:
                lines = wk.lines()
            except EOFError:
                code = wk.proc.wait()
                if wk.current is None and code == 0:  # finished its share, or retired to be replaced
                    sel.unregister(wk.proc.stdout)
                    wk.kill()
                    _, case_file, share = live.pop(w)
                    spawn(w, wk.next, case_file, share)
                else:
                    fail(w, "crash", f"the worker died (exit status {code})")
                continue
            for line in lines:
                if line.startswith("START "):
                    wk.current = int(line[6:])
                    wk.mark()
                elif line.startswith("END "):
                    res = json.loads(line[4:])
                    results[res["id"]] = res
                    wk.next, wk.current, wk.started = wk.current + 1, None, time.monotonic()
                elif line == "READY":
                    wk.ready, wk.started = True, time.monotonic()
    return [results.get(c.id, {"id": c.id, "outcome": "bug", "detail": "no result", "what": "", "seconds": 0})
            for c in cases]


def summary(results: list[dict]) -> str:
    """Counts per format and outcome, the slowest cases, and every failure with its id."""
    table = Counter((r["id"].split(":", 1)[0], r["outcome"]) for r in results)
    kinds = sorted({k for k, _ in table})
    outcomes = ["ok", "error", "bug", "hang", "crash"]
    lines = [f"{'format':<14}" + "".join(f"{o:>7}" for o in outcomes) + f"{'total':>7}"]
    for k in kinds:
        counts = [table[k, o] for o in outcomes]
        lines.append(f"{k:<14}" + "".join(f"{c:>7}" for c in counts) + f"{sum(counts):>7}")
    slow = sorted(results, key=lambda r: -r.get("seconds", 0))[:3]
    lines.append("slowest: " + ", ".join(f"{r['id']} {r.get('seconds', 0):.2f}s" for r in slow))
    for r in results:
        if r["outcome"] not in ("ok", "error"):
            lines.append(f"{r['outcome'].upper()} {r['id']}: {r['detail']}  [{r.get('what', '')}]")
    return "\n".join(lines)


def failures(results: list[dict]) -> list[dict]:
    return [r for r in results if r["outcome"] not in ("ok", "error")]


def _main(argv: list[str]) -> int:
    import argparse

    if argv and argv[0] == "worker":
        worker_main(*argv[1:5])
        return 0
    sys.path.insert(0, str(ROOT))
    p = argparse.ArgumentParser(prog="tests/fuzz.py")
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--cases", type=int, default=1000)
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--workers", type=int, default=2)
    r.add_argument("--only", help="only cases of this format")
    o = sub.add_parser("one")
    o.add_argument("case")
    s = sub.add_parser("show")
    s.add_argument("case")
    s.add_argument("out")
    args = p.parse_args(argv)
    if args.cmd == "run":
        cases = [c for c in plan(args.cases, args.seed) if not args.only or c.kind == args.only]
        t0 = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="perflake-fuzz-") as tmp:
            results = run_cases(cases, Path(tmp), workers=args.workers)
        print(summary(results))
        print(f"{len(results)} cases in {time.monotonic() - t0:.1f} s")
        return 1 if failures(results) else 0
    case = Case.parse(args.case)
    if args.cmd == "show":
        path, what = materialize(case, Path(args.out))
        print(f"{path}\n{what}")
        return 0
    with tempfile.TemporaryDirectory(prefix="perflake-fuzz-") as tmp:
        path, what = materialize(case, Path(tmp))
        print(what)
        from perflake.readers import get_reader

        rows = get_reader(case.kind).read(str(path))  # a traceback here is the bug
        print(contract_problems(rows) or "read fine", check(case.kind, path, Path(tmp)))
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
