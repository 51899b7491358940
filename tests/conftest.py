"""Shared fixtures.  Real data from ../shared is read in place (env PERFLAKE_TEST_DATA); with
PERFLAKE_REQUIRE_SHARED=1 (CI) a missing dataset fails the test instead of skipping it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
DATA = Path(os.environ.get("PERFLAKE_TEST_DATA", SHARED / "data"))
GOLDEN = Path(os.environ.get("PERFLAKE_TEST_GOLDEN", DATA.parent / "golden"))


def pytest_sessionstart(session):
    """The CLI fits tables to $COLUMNS: the tests see whole values whatever terminal runs them.  (Without a
    terminal, `import readline` -- pytest's pdb -- also exports COLUMNS=80 LINES=24 into the C environment that
    subprocesses inherit.)  Tests of the width set COLUMNS themselves."""
    for name in ("COLUMNS", "LINES"):
        os.environ.pop(name, None)
        os.unsetenv(name)


def _missing(msg: str):
    """A missing reference (dataset, venv): the test fails under CI (PERFLAKE_REQUIRE_SHARED=1), skips elsewhere."""
    if os.environ.get("PERFLAKE_REQUIRE_SHARED") == "1":
        pytest.fail(msg)
    pytest.skip(msg)


def _need(path: Path) -> Path:
    if not path.exists():
        _missing(f"shared test data not found: {path} (set PERFLAKE_TEST_DATA)")
    return path


BENCH_PYTHON = ROOT / ".bench-venv" / "bin" / "python"


def need_bench_python() -> Path:
    """The Python of ``.bench-venv`` (llnl-hatchet/llnl-thicket, made by bench/setup_venv.sh), for tests that
    compare with the real Hatchet.  Missing: the test fails under CI (PERFLAKE_REQUIRE_SHARED=1, where .ci/run
    creates the venv first) and skips elsewhere with the reason."""
    if not BENCH_PYTHON.exists():
        _missing(f"{BENCH_PYTHON} not found (bench/setup_venv.sh creates it): real llnl-hatchet is not available")
    return BENCH_PYTHON


@pytest.fixture
def bench_python() -> Path:
    """Path of the reference venv's Python (see need_bench_python)."""
    return need_bench_python()


@pytest.fixture
def shared_data():
    """shared_data("tau-cpi-mpi") -> Path of a dataset under ../shared/data."""
    return lambda name: _need(DATA / name)


@pytest.fixture
def golden():
    """golden("tau-cpi-mpi") -> DataFrame with `callpath` as a tuple of names."""

    def load(name: str) -> pd.DataFrame:
        df = pd.read_csv(_need(GOLDEN / f"{name}.csv"))
        df["callpath"] = [tuple(json.loads(c)) for c in df["callpath"]]
        return df

    return load


@pytest.fixture
def lake(tmp_path):
    from perflake import Lake

    return Lake(tmp_path / "lake")


def lake_files(root: Path) -> dict[str, bytes]:
    """Every file under a lake root with its bytes (to prove that something left the lake unchanged)."""
    if not root.exists():
        return {}
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}
