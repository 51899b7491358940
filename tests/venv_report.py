"""Run a helper script of tests/ under another venv's Python and read the one JSON line it prints.

The reference tools cannot share perflake's venv: llnl-hatchet / llnl-thicket live in ``.bench-venv`` (pandas 2;
bench/setup_venv.sh), Extra-P in ``.extrap-venv`` (numpy < 2; bench/setup_extrap_venv.sh).  The scripts that run
there (hatchet_load.py, hatchet_v4_load.py, hatchet_callgraph.py, extrap_models.py) and the tests that call them
share this module: stdlib only, so it imports under every one of those Pythons.
"""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH_PYTHON = ROOT / ".bench-venv" / "bin" / "python"
EXTRAP_PYTHON = ROOT / ".extrap-venv" / "bin" / "python"


def run_json(args: list[str], timeout: float, failure: str | None = None):
    """Run ``args``; the JSON of the last line it prints.  An AssertionError with ``failure`` (default: the
    command line and "failed") and the end of its stderr when it exits with an error."""
    done = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise AssertionError(f"{failure or ' '.join(args) + ' failed'}:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.splitlines()[-1])


def value(v):
    """A dataframe cell as JSON: NumPy scalars as Python ones, NaN as null, any other object as its str."""
    if hasattr(v, "item"):
        v = v.item()
    if isinstance(v, float) and math.isnan(v):
        return None
    return v if v is None or isinstance(v, (int, float, str, bool)) else str(v)
