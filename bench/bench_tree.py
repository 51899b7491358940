#!/usr/bin/env python3
"""Benchmark: ``GraphFrame.tree()`` of a 10,000-node TAU run (issue 6: under 0.5 s; Hatchet 4.3 s).

    .venv/bin/python bench/bench_tree.py              # perflake only; Hatchet's figure is the issue's 4.3 s
    .venv/bin/python bench/bench_tree.py --hatchet    # also time Hatchet's tree() in .bench-venv (slow load)

Dataset: ``perflake.generators.WRITERS["tau"](out, nodes=10000, ranks=2, runs=1, seed=1)`` under
bench/work/tree-tau-10000x2 (generated once).  Prints the best of ``--reps`` renders (no colour, header
included, as Hatchet prints it); the load (``perflake.read_tau``) is timed for the record, not a target.
Correctness: one line per node (plus the 6-line banner).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HATCHET_SECONDS = 4.3  # the figure for Hatchet's tree() of a 10,000-node run
TARGET_SECONDS = 0.5
HATCHET_SNIPPET = """
import sys, time, warnings
warnings.filterwarnings("ignore")
import hatchet as ht
gf = ht.GraphFrame.from_tau(sys.argv[1])
t0 = time.perf_counter(); text = gf.tree(); print(time.perf_counter() - t0, len(text.splitlines()))
"""


def dataset() -> Path:
    from perflake.generators import WRITERS

    out = REPO / "bench" / "work" / "tree-tau-10000x2"
    run = out / "run-000"
    if not (run / "profile.1.0.0").exists():
        WRITERS["tau"](out, nodes=10_000, ranks=2, runs=1, seed=1)
    return run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--hatchet", action="store_true", help="also time Hatchet's tree() in .bench-venv")
    args = parser.parse_args()
    import perflake

    run = dataset()
    t0 = time.perf_counter()
    gf = perflake.read_tau(run)
    load = time.perf_counter() - t0
    times = []
    for _ in range(args.reps):
        t0 = time.perf_counter()
        text = gf.tree(colour=False)
        times.append(time.perf_counter() - t0)
    ok = len(text.splitlines()) == len(gf.graph) + 6
    best = min(times)
    print(f"tree() of {len(gf.graph)} nodes x 2 ranks: perflake {best:.3f} s (best of {args.reps}; load {load:.2f} s); "
          f"target < {TARGET_SECONDS} s: {'met' if best < TARGET_SECONDS else 'NOT met'}; "
          f"Hatchet {HATCHET_SECONDS} s (issue) = {HATCHET_SECONDS / best:.0f}x; lines {'OK' if ok else 'MISMATCH'}")
    if args.hatchet:
        python = REPO / ".bench-venv" / "bin" / "python"
        done = subprocess.run([str(python), "-c", HATCHET_SNIPPET, str(run)], capture_output=True, text=True)
        if done.returncode != 0:
            print(f"Hatchet failed: {done.stderr.strip().splitlines()[-1:]}")
            return 2
        seconds, lines = done.stdout.split()
        print(f"Hatchet tree() measured here: {float(seconds):.2f} s ({lines} lines) = {float(seconds) / best:.0f}x")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
