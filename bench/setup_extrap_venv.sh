#!/usr/bin/env bash
# Create the Extra-P reference venv (.extrap-venv at the repository root) if missing and install
# bench/requirements-extrap.txt into it: the real `extrap` that tests/test_models.py cross-checks perflake's
# scaling models against.  extrap 4.2.5 pins numpy < 2 (and needs PySide6), so it cannot share .bench-venv.
# Idempotent like bench/setup_venv.sh: a matching sha256 stamp and a working `import extrap` skip pip.
#
#   bench/setup_extrap_venv.sh           # PYTHON=python3.11 to pick the interpreter, FORCE=1 to re-run pip
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${EXTRAP_VENV:-$repo/.extrap-venv}"
req="$repo/bench/requirements-extrap.txt"
stamp="$venv/.perflake-extrap-requirements.sha256"
python="${PYTHON:-python3}"

if [ ! -x "$venv/bin/python" ]; then
    echo "[setup_extrap_venv] creating $venv"
    "$python" -m venv "$venv"
fi

want="$(sha256sum "$req" | cut -d' ' -f1)"
have="$(cat "$stamp" 2>/dev/null || true)"
check='from extrap.modelers.model_generator import ModelGenerator'
if [ "${FORCE:-0}" != 1 ] && [ "$want" = "$have" ] && "$venv/bin/python" -c "$check" >/dev/null 2>&1; then
    echo "[setup_extrap_venv] $venv up to date"
    exit 0
fi

echo "[setup_extrap_venv] installing -r bench/requirements-extrap.txt into $venv"
"$venv/bin/python" -m pip install --disable-pip-version-check -q -r "$req"
"$venv/bin/python" -c "$check" >/dev/null 2>&1 || {
    echo "[setup_extrap_venv] error: 'import extrap' fails in $venv" >&2
    exit 1
}
echo "$want" > "$stamp"
echo "[setup_extrap_venv] done"
