#!/usr/bin/env bash
# Entry point of `make bench`: set up the Hatchet venv, then run the full-size benchmarks, which print
# Markdown tables and update bench/RESULTS.md.  Extra arguments go to bench_ingest_tau.py, e.g.
#   bench/run.sh --quick --no-results      # smoke test (200 nodes x 64 ranks)
#   bench/run.sh --skip-hatchet            # perflake only (no bench venv needed)
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

PERFLAKE_BENCH_VIA="bench/run.sh${*:+ $*}" exec .venv/bin/python bench/bench_ingest_tau.py "$@"
