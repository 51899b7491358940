"""The built wheel (issue 23, item 1): it holds every file the package needs at its ``perflake.*`` path and nothing
else, its metadata is right, and the build prints no warning.  ``make`` installs editable, so without this test
nothing would notice a file missing from a real install (``sql/macros/*.sql`` was, and a pip-installed perflake
could not ingest).

The wheel is built the way a user's ``pip install ./perflake`` builds it, from a clean copy of the project (a
stale ``build/`` of the checkout would otherwise end up in the wheel, and the checkout stays untouched), but
without build isolation: the venv's setuptools (pyproject's ``test`` extra pins the [build-system] range) builds
it, so the test needs no network.  ``.ci/wheel_smoke.sh`` builds with isolation and installs the wheel in a
clean venv.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

import perflake

ROOT = Path(__file__).resolve().parents[1]
# source folder -> its path inside the wheel (pyproject [tool.setuptools] package-dir)
LAYOUT = {"pipeline": "perflake", "readers": "perflake/readers", "catalogs": "perflake/catalogs",
          "sql": "perflake/sql"}
PROJECT_FILES = ("pyproject.toml", "README.md", "LICENSE")
DIST_INFO = {"METADATA", "WHEEL", "entry_points.txt", "top_level.txt", "RECORD", "licenses/LICENSE"}
BUILD_TIMEOUT_S = 600


def _junk(path: Path) -> bool:
    return "__pycache__" in path.parts or path.suffix in (".pyc", ".pyo")


def source_files() -> set[str]:
    """Every file of the source folders, named by its path in the wheel."""
    found = set()
    for folder, target in LAYOUT.items():
        for path in (ROOT / folder).rglob("*"):
            if path.is_file() and not _junk(path.relative_to(ROOT)):
                found.add(f"{target}/{path.relative_to(ROOT / folder).as_posix()}")
    return found


def _copy_project(dest: Path) -> Path:
    """What an sdist holds: pyproject, README and the source folders, without bytecode (and without build/)."""
    dest.mkdir()
    for name in PROJECT_FILES:
        shutil.copy2(ROOT / name, dest / name)
    for folder in LAYOUT:
        shutil.copytree(ROOT / folder, dest / folder, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.pyo"))
    return dest


def _setuptools_major() -> int:
    return int(metadata.version("setuptools").split(".")[0])


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(names in the wheel, the wheel's path, pip's verbose output of the build)."""
    if _setuptools_major() < 77:
        pytest.fail(f"setuptools {metadata.version('setuptools')} in this venv is older than pyproject's test extra "
                    "pins (>=77): run `make` to reinstall")
    tmp = tmp_path_factory.mktemp("wheel")
    src = _copy_project(tmp / "src")
    out = tmp / "dist"
    # PYTHONDONTWRITEBYTECODE makes setuptools log "byte-compiling is disabled" warnings that say nothing about
    # the project; a user's build has it unset.
    # --no-index: nothing is fetched (pip's root-user notice is not the build's either).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PIP_ROOT_USER_ACTION"] = "ignore"
    cmd = [sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "--no-build-isolation", "--no-index",
           "-w", str(out), str(src)]
    done = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    log = done.stdout + done.stderr
    assert done.returncode == 0, f"wheel build failed:\n{log[-4000:]}"
    wheels = sorted(out.glob("perflake-*.whl"))
    assert [w.name for w in wheels] == [f"perflake-{perflake.__version__}-py3-none-any.whl"]
    with zipfile.ZipFile(wheels[0]) as zf:
        names = zf.namelist()
    return names, wheels[0], log


def test_the_wheel_holds_every_source_file_at_its_package_path(built):
    names, _, _ = built
    in_wheel = {n for n in names if n.startswith("perflake/")}
    expected = source_files()
    assert "perflake/py.typed" in expected, "the PEP 561 marker pipeline/py.typed is missing"
    assert {n for n in expected if n.startswith("perflake/sql/macros/")}, "no sql/macros in the tree?"
    assert sorted(expected - in_wheel) == [], "source files missing from the wheel (pyproject packages/package-data)"
    assert sorted(in_wheel - expected) == [], "files in the wheel that the source tree does not have"
    assert len(names) == len(set(names)), "a file is twice in the wheel"


def test_the_wheel_holds_nothing_but_the_package_and_its_metadata(built):
    names, _, _ = built
    dist_info = f"perflake-{perflake.__version__}.dist-info"
    assert {n.split("/")[0] for n in names} == {"perflake", dist_info}
    assert {n.split("/", 1)[1] for n in names if n.startswith(dist_info + "/")} == DIST_INFO


def test_the_wheel_metadata(built):
    _, wheel, _ = built
    dist_info = f"perflake-{perflake.__version__}.dist-info"
    with zipfile.ZipFile(wheel) as zf:
        meta = zf.read(f"{dist_info}/METADATA").decode()
        entry_points = zf.read(f"{dist_info}/entry_points.txt").decode()
        top_level = zf.read(f"{dist_info}/top_level.txt").decode()
    headers = meta.split("\n\n", 1)[0].splitlines()
    assert "License-Expression: MIT" in headers and "License-File: LICENSE" in headers
    assert not [h for h in headers if h.startswith("License:")], "the deprecated License field is back"
    assert f"Version: {perflake.__version__}" in headers
    assert {h.split(": ", 1)[1] for h in headers if h.startswith("Provides-Extra:")} >= {"s3", "test", "hdf"}
    assert [h for h in headers if re.match(r"Requires-Dist: duckdb\b", h)], "runtime dependencies missing"
    assert re.search(r"^\[console_scripts\]\nperflake = perflake\.cli\.app:main$", entry_points, re.M)
    assert top_level.split() == ["perflake"]


def test_the_build_prints_no_warning(built):
    """SetuptoolsDeprecationWarning, BuildBackendWarning ("`project.license` as a TOML table is deprecated",
    "Package 'perflake.sql.views' is absent from the `packages` configuration"), distutils' "warning: ..."."""
    _, _, log = built
    assert "Successfully built perflake" in log
    assert [line for line in log.splitlines() if re.search(r"warn", line, re.I)] == []


def test_python_dash_m_perflake_is_the_cli(tmp_path):
    done = subprocess.run([sys.executable, "-m", "perflake", "--version"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert (done.returncode, done.stdout.strip()) == (0, f"perflake {perflake.__version__}")
    done = subprocess.run([sys.executable, "-m", "perflake", "runs", "--lake", str(tmp_path / "none")],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.startswith(f"perflake: {tmp_path / 'none'}: not a perflake lake")


def test_importing_perflake_main_runs_nothing(tmp_path):
    done = subprocess.run([sys.executable, "-c", "import perflake.__main__"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
