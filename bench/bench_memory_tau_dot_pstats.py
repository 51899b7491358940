#!/usr/bin/env python3
"""Benchmark: peak RSS against input size for the TAU, gprof2dot DOT and cProfile/pstats readers (issue 23, item 2).

Run from the repository root::

    .venv/bin/python bench/bench_memory_tau_dot_pstats.py            # 3 sizes per input shape
    .venv/bin/python bench/bench_memory_tau_dot_pstats.py --quick    # smaller sizes

For each reader, two input shapes at 3 sizes each, generated under bench/work/memory-tau-dot-pstats/:

* ``tree``: the call tree grows with the file (TAU: a synthetic run of N nodes x 16 ranks,
  ``write_tau_runs``; DOT: N functions with their call edges; pstats: N functions with callers);
* ``file``: the file grows, the tree does not (TAU: a recursion D deep, whose callpath names make the file
  quadratic in D; DOT: a 2-node graph relabelled/commented many times; pstats: one long entry repeated).

Each measurement is one child process (``python -c``) that reads a small input of the format first (imports and
first-use allocations), then the measured input, and reports its peak RSS (VmHWM) before and after (the growth is the
reader's), the nodes built and the CPU seconds of the read.  Prints a Markdown table; writes nothing else.
"""

from __future__ import annotations

import argparse
import json
import marshal
import pathlib
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[1]
WORK = REPO / "bench" / "work" / "memory-tau-dot-pstats"
sys.path.insert(0, str(REPO / "tests"))

CHILD = """
import json, sys, time
from perflake.readers import get_reader
def hwm():  # peak RSS of this process image in KiB (ru_maxrss would carry the parent's over fork + exec)
    with open("/proc/self/status") as fh:
        return int(next(line for line in fh if line.startswith("VmHWM:")).split()[1])
reader = get_reader(sys.argv[1])
reader.read(sys.argv[3])
base = hwm()
t0 = time.process_time()
rows = reader.read(sys.argv[2])
print(json.dumps({"nodes": rows.frames.num_rows, "cpu_s": time.process_time() - t0, "base_mib": base / 1024,
                  "peak_mib": hwm() / 1024}))
"""


def size_of(path: pathlib.Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) if path.is_dir() else path.stat().st_size


def tau_tree(out: pathlib.Path, n: int) -> pathlib.Path:
    from perflake.generators import write_tau_runs

    return write_tau_runs(out, nodes=n, ranks=16, runs=1, seed=1)[0]


def tau_file(out: pathlib.Path, depth: int) -> pathlib.Path:
    from test_reader_memory_tau_dot_pstats import tau_chain

    return tau_chain(out, depth, width=30)


def dot_tree(out: pathlib.Path, n: int) -> pathlib.Path:
    lines = ["digraph {"]
    for i in range(n):
        lines.append(f'f{i} [label="lib.so\\nf{i}\\n{100 - 50 * i / n:.2f}%\\n(0.01%)\\n{i + 1}\u00d7"];')
        for j in ((i - 1) // 2, (i - 1) // 3) if i else ():
            lines.append(f'f{j} -> f{i} [label="{50 - 40 * i / n:.2f}%\\n{i}\u00d7"];')
    out.write_text("\n".join(lines + ["}"]), encoding="utf-8")
    return out


def dot_file(out: pathlib.Path, repeats: int) -> pathlib.Path:
    from perflake.readers.limits import MAX_ATTRIBUTE_TEXT

    comment = "/* " + "c" * (MAX_ATTRIBUTE_TEXT - 10) + " */\n"
    with open(out, "w", encoding="utf-8") as fh:
        fh.write("digraph {\n")
        for _ in range(repeats):
            fh.write(comment + 'a [label="' + "x" * (MAX_ATTRIBUTE_TEXT - 100) + '"];\n')
        fh.write('a [label="a\\n100.00%\\n(40.00%)\\n1\u00d7"];\nb [label="b\\n60.00%\\n(60.00%)\\n2\u00d7"];\n')
        fh.write('a -> b [label="60.00%\\n2\u00d7"];\n}\n')
    return out


def pstats_tree(out: pathlib.Path, n: int) -> pathlib.Path:
    stats = {}
    for i in range(n):
        callers = {("/src/m.py", j + 1, f"f{j}"): (1, 1, 0.001, 0.5) for j in {(i - 1) // 2, (i - 1) // 3}} if i else {}
        stats[("/src/m.py", i + 1, f"f{i}")] = (i + 1, i + 1, 0.001, float(n - i), callers)
    out.write_bytes(marshal.dumps(stats))
    return out


def pstats_file(out: pathlib.Path, repeats: int) -> pathlib.Path:
    from perflake.readers.limits import MAX_FRAME_TEXT

    entry = marshal.dumps(("/src/app.py", 7, "g" * (MAX_FRAME_TEXT - 10)), 2) + marshal.dumps((3, 3, 0.5, 0.75, {}), 2)
    main = marshal.dumps(("/src/app.py", 1, "main"), 2) + marshal.dumps((1, 1, 0.25, 1.0, {}), 2)
    out.write_bytes(b"{" + main + entry * repeats + b"0")
    return out


SHAPES = {  # reader, shape -> (generator, 3 sizes, quick sizes)
    ("tau", "tree"): (tau_tree, (1_000, 10_000, 100_000), (500, 2_000, 8_000)),
    ("tau", "file"): (tau_file, (1_000, 2_000, 4_000), (500, 1_000, 1_500)),
    ("gprof_dot", "tree"): (dot_tree, (1_000, 10_000, 100_000), (500, 2_000, 8_000)),
    ("gprof_dot", "file"): (dot_file, (8, 64, 256), (4, 16, 32)),
    ("cprofile", "tree"): (pstats_tree, (1_000, 10_000, 100_000), (500, 2_000, 8_000)),
    ("cprofile", "file"): (pstats_file, (250, 2_000, 8_000), (100, 500, 1_000)),
}
SUFFIX = {"tau": "", "gprof_dot": ".dot", "cprofile": ".pstats"}


def measure(kind: str, path: pathlib.Path, small: pathlib.Path) -> dict:
    proc = subprocess.run([sys.executable, "-c", CHILD, kind, str(path), str(small)], capture_output=True, text=True,
                          check=True)
    return json.loads(proc.stdout)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes")
    args = ap.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)
    rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    print(f"commit {rev} (plus the working tree); command: {' '.join(sys.argv)}\n")
    print("| reader | shape | parameter | input MiB | nodes | peak RSS growth MiB | growth / input | read CPU s |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    for (kind, shape), (make, sizes, quick) in SHAPES.items():
        small = make(WORK / f"{kind}-{shape}-small{SUFFIX[kind]}", 10 if shape == "tree" or kind == "tau" else 1)
        for size in quick if args.quick else sizes:
            path = WORK / f"{kind}-{shape}-{size}{SUFFIX[kind]}"
            made = path / "run-000" if (kind, shape) == ("tau", "tree") else path  # write_tau_runs' layout
            path = made if made.exists() else make(path, size)
            got = measure(kind, path, small)
            mib = size_of(path) / 2**20
            growth = got["peak_mib"] - got["base_mib"]
            print(f"| {kind} | {shape} | {size:,} | {mib:,.1f} | {got['nodes']:,} | {growth:,.1f} | "
                  f"{growth / mib:.2f} | {got['cpu_s']:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
