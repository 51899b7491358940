#!/usr/bin/env bash
# Entry point of `make bench`: set up the Hatchet venv, then run the full-size benchmarks, which print
# Markdown tables and update bench/RESULTS.md: bench_ingest_tau.py (TAU), then bench_readers.py (Caliper
# json-split, HPCToolkit, 1000 .cali files vs Hatchet/Thicket), then bench_ops.py (update_inclusive_columns,
# filter + squash and call-path queries on a loaded TAU run vs Hatchet).  Extra arguments go to all three, e.g.
#   bench/run.sh --quick --no-results      # smoke test (small sizes)
#   bench/run.sh --skip-hatchet            # perflake only (no bench venv needed)
#   bench/run.sh --only imbalance          # one benchmark: every script runs only what it owns, if anything
# Exit status: the worst of the three (0 ok, 1 correctness MISMATCH, 2 a step failed).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"

if [ ! -x .venv/bin/python ]; then
    echo "bench/run.sh: .venv/bin/python not found -- create the project venv and 'pip install -e .' first" >&2
    exit 2
fi

skip_hatchet=0
for arg in "$@"; do
    [ "$arg" = "--skip-hatchet" ] && skip_hatchet=1
done
if [ "$skip_hatchet" = 0 ]; then
    bash bench/setup_venv.sh
fi

export PERFLAKE_BENCH_VIA="bench/run.sh${*:+ $*}"
status=0
.venv/bin/python bench/bench_ingest_tau.py "$@" || status=$?
rc=0
.venv/bin/python bench/bench_readers.py "$@" || rc=$?
[ "$rc" -gt "$status" ] && status=$rc
rc=0
.venv/bin/python bench/bench_ops.py "$@" || rc=$?
[ "$rc" -gt "$status" ] && status=$rc
# multi-run analytics (issue 5): bench_analytics.py (ingest of 10,000 .cali / 100 runs, groupby, ensemble, imbalance; --only NAME)
rc=0; .venv/bin/python bench/bench_analytics.py "$@" || rc=$?; [ "$rc" -gt "$status" ] && status=$rc
# HPCToolkit v4 ingest (issue 13): bench_hpctoolkit_v4.py (10,000 nodes x 64 ranks vs Hatchet's from_hpctoolkit_latest)
rc=0; .venv/bin/python bench/bench_hpctoolkit_v4.py "$@" || rc=$?; [ "$rc" -gt "$status" ] && status=$rc
# regressions (issue 16 item 4): bench_regress.py (regress between two groups of 5,000 runs; --only regress)
rc=0; .venv/bin/python bench/bench_regress.py "$@" || rc=$?; [ "$rc" -gt "$status" ] && status=$rc
# ensemble object and statistics (issue 16 items 1-2): bench_ensemble.py (1,000 runs vs Thicket, 10,000 perflake only)
rc=0; .venv/bin/python bench/bench_ensemble.py "$@" || rc=$?; [ "$rc" -gt "$status" ] && status=$rc
# scale (issue 16): bench_scale.py (10,000 runs x 1,000 nodes x 64 ranks generated + ingested in one go, then
# ensemble statistics, imbalance top-10, regress halves, call-path query; refuses when the disk is too small: --fit-disk)
rc=0; .venv/bin/python bench/bench_scale.py "$@" || rc=$?; [ "$rc" -gt "$status" ] && status=$rc
exit "$status"
