#!/usr/bin/env bash
# Create the benchmark-only Hatchet/Thicket venv (.bench-venv at the repository root) if missing and
# install bench/requirements-hatchet.txt into it.  Idempotent: when the venv exists and the requirements
# file is unchanged since the last successful install (sha256 stamp inside the venv) it only checks that
# `import hatchet` works, which takes about a second.
#
#   bench/setup_venv.sh            # PYTHON=python3.11 bench/setup_venv.sh to pick the interpreter
#   FORCE=1 bench/setup_venv.sh    # re-run pip even if the stamp matches
#   BENCH_VENV=/tmp/v bench/setup_venv.sh   # another location (testing); bench_ingest_tau.py uses .bench-venv
#
# The pins were verified on CPython 3.11 / linux x86_64 (prebuilt wheels; see bench/hatchet_env.md).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${BENCH_VENV:-$repo/.bench-venv}"  # override only for testing this script
req="$repo/bench/requirements-hatchet.txt"
stamp="$venv/.perflake-bench-requirements.sha256"
python="${PYTHON:-python3}"

if [ ! -x "$venv/bin/python" ]; then
    echo "[setup_venv] creating $venv with $($python -c 'import sys; print(sys.executable, sys.version.split()[0])')"
    "$python" -m venv "$venv"
fi

want="$(sha256sum "$req" | cut -d' ' -f1)"
have="$(cat "$stamp" 2>/dev/null || true)"
if [ "${FORCE:-0}" != 1 ] && [ "$want" = "$have" ] && "$venv/bin/python" -c 'import hatchet' >/dev/null 2>&1; then
    echo "[setup_venv] $venv up to date"
    exit 0
fi

echo "[setup_venv] installing -r bench/requirements-hatchet.txt into $venv"
"$venv/bin/python" -m pip install --disable-pip-version-check -q -r "$req"
"$venv/bin/python" -c 'import hatchet' >/dev/null 2>&1 || {
    echo "[setup_venv] error: 'import hatchet' fails in $venv" >&2
    exit 1
}
echo "$want" > "$stamp"
echo "[setup_venv] done"
