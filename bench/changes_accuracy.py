#!/usr/bin/env python3
"""Accuracy of ``perflake changes`` on generated nightly series: recall and precision per injected shift.

    .venv/bin/python bench/changes_accuracy.py [--seeds 200] [--runs 365]

For each seed, ``nightly_series(runs, seed=seed)`` (365 nights, 40 call paths, shifts of 3%, 10% and 30% at
runs 200, 120 and 290 in three call paths picked by the seed, per-path noise 1-5%, 1.5% outlier nights) is
segmented by ``perflake.analytics.changes.detect`` with its defaults, on exactly the per-run values the lake
gives for the exclusive metric ``time`` (tests/test_changes.py checks that equality through a real lake).
Per shift size: recall = seeds where a change was found within +-TOL runs of the injected run, precision =
such changes / all changes reported on that call path; false = changes on the untouched call paths.  The
README's numbers come from this script.
"""
from __future__ import annotations

import argparse
import sys

import numpy as np


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, default=200)
    p.add_argument("--runs", type=int, default=365)
    a = p.parse_args(argv)
    from perflake.analytics.changes import detect
    from perflake.generators.nightly import nightly_series

    tols = (1, 5)
    found_near = {}  # (size, tol) -> seeds with a change within tol
    reported, noise = {}, {}
    false = untouched = 0
    for seed in range(a.seeds):
        s = nightly_series(runs=a.runs, seed=seed)
        found, _, _ = detect(s.run_values().T)
        shifted = {x.node: x for x in s.shifts}
        for i in range(len(s.tree)):
            pos = found.get(i, np.empty(0, dtype=np.int64))
            if i not in shifted:
                untouched += 1
                false += len(pos)
                continue
            x = shifted[i]
            reported[x.size] = reported.get(x.size, 0) + len(pos)
            noise.setdefault(x.size, []).append(x.noise)
            for tol in tols:
                near = int(np.any(np.abs(pos - x.run) <= tol))
                found_near[x.size, tol] = found_near.get((x.size, tol), 0) + near
    print(f"{a.seeds} seeds x {a.runs} runs; changes on untouched call paths: {false} in {untouched} call-path series")
    print("| shift | noise of the shifted path (median, range) | recall +-1 | precision +-1 | recall +-5 "
          "| precision +-5 |")
    print("|---|---|---|---|---|---|")
    for size in sorted(reported):
        nz = np.array(noise[size])
        cells = []
        for tol in tols:
            hit = found_near[size, tol]
            cells += [f"{hit / a.seeds:.0%} ({hit}/{a.seeds})",
                      f"{hit / reported[size]:.0%} ({hit}/{reported[size]})" if reported[size] else "-"]
        print(f"| {size:.0%} | {np.median(nz):.1%} ({nz.min():.1%}-{nz.max():.1%}) | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
