#!/usr/bin/env python3
"""The built wheel, alone in a clean venv outside the checkout (issue 23, item 1).  ``make`` installs editable,
so only this shows that a user's ``pip install perflake`` works.  Standard library only; run by .ci/run:

1. builds the wheel the way pip builds it for a user (build isolation: the [build-system] setuptools from the
   index) from a clean copy of the project, and fails if the build printed a warning;
2. installs ``WHEEL[s3]`` into a new venv in a temporary directory and checks that ``perflake`` is imported
   from there;
3. from a working directory outside the checkout: ``perflake ingest`` of every dataset of the shared data into
   one lake, then ``runs``, a ``tree`` of every run, ``sql``, ``query`` (through ``python -m perflake``), each
   exiting 0 with the expected content;
4. adds what the reader tests need of the ``test`` extra (pytest, hypothesis, the profilers) and runs them
   (tests/test_<format>*.py, from the checkout, with the working directory outside it) against the installed
   package, a pytest plugin failing the session if any ``perflake`` module came from elsewhere.  The plugin
   leaves out the comparisons with the reference Hatchet that take the fixture ``bench_python`` (they check
   the code, which `make test` does, and took most of the time): PERFLAKE_WHEEL_HATCHET=1 keeps them.

Each step prints its duration.  Exit 0 when all passed; 1 with the failing step's output otherwise (the
temporary directory is then kept for a look).  ``--keep`` keeps it anyway.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[1]
SOURCES = ("pipeline", "readers", "catalogs", "sql")
PROJECT_FILES = ("pyproject.toml", "README.md", "LICENSE")
READER_TESTS = ("test_tau_*.py", "test_caliper_*.py", "test_hpctoolkit_*.py", "test_cprofile.py", "test_gprof_dot.py",
                "test_pyinstrument.py", "test_perfflowaspect.py", "test_hatchet_json_reader.py",
                "test_hatchet_literal_json.py", "test_hatchet_reader_classes.py", "test_reader_contract.py",
                "test_read_entry_points.py")
# what the reader tests import from pyproject's `test` extra (the ranges are read from the wheel's metadata);
# the rest of the extra (moto, polars, tables, linters...) would only make the install slower
READER_TEST_DEPS = ("pytest", "hypothesis", "caliper-reader", "pyinstrument", "gprof2dot")
QUERIES = ('[{"name": "main"}]', 'MATCH (".", p) WHERE p."name" =~ "MPI_.*"')
TIMEOUT_S = 900

# A pytest plugin (written into the temporary directory): the session fails unless every perflake module it
# imported lies in the clean venv.
PLUGIN = '''
import os
import sys

import pytest

VENV = os.path.realpath(os.environ["PERFLAKE_WHEEL_VENV"]) + os.sep


def _elsewhere():
    mods = [(n, getattr(m, "__file__", None)) for n, m in list(sys.modules.items())
            if n == "perflake" or n.startswith("perflake.")]
    return sorted(f"{n}: {f}" for n, f in mods if f and not os.path.realpath(f).startswith(VENV))


def pytest_configure(config):
    import perflake  # noqa: F401
    if _elsewhere():
        raise pytest.UsageError("perflake is not the installed wheel: " + "; ".join(_elsewhere()))


def pytest_collection_modifyitems(config, items):
    """The comparisons with the reference Hatchet (fixture bench_python) check the code, not the install, and
    take most of the time: `make test` runs them; here only with PERFLAKE_WHEEL_HATCHET=1."""
    if os.environ.get("PERFLAKE_WHEEL_HATCHET") == "1":
        return
    drop = [item for item in items if "bench_python" in getattr(item, "fixturenames", ())]
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = [item for item in items if item not in drop]


def pytest_terminal_summary(terminalreporter):
    import perflake
    n = sum(1 for name in sys.modules if name == "perflake" or name.startswith("perflake."))
    where = "all in the clean venv" if not _elsewhere() else "SOME ELSEWHERE"
    terminalreporter.write_line(f"perflake {perflake.__version__} from {perflake.__file__}: {n} modules, {where}")


def pytest_sessionfinish(session, exitstatus):
    bad = _elsewhere()
    if bad:
        print("\\nperflake modules imported from outside the clean venv:", *bad, sep="\\n  ")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
'''


class SmokeError(Exception):
    """A step failed: its message says which and shows the output."""


def _env(**extra: str) -> dict[str, str]:
    """This process's environment without what would leak the checkout or the dev venv into a step; also without
    PYTHONDONTWRITEBYTECODE, whose "byte-compiling is disabled" build warnings say nothing about the project."""
    drop = {"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PERFLAKE_LAKE", "PYTHONDONTWRITEBYTECODE", "COLUMNS", "LINES"}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    # pip's "Running pip as the 'root' user" and new-release notices are not the build's warnings
    return {**env, "PIP_ROOT_USER_ACTION": "ignore", "PIP_DISABLE_PIP_VERSION_CHECK": "1", **extra}


def run(cmd: list, *, cwd: Path, env: dict | None = None) -> str:
    """Run a command; its stdout (stderr joined) if it exits 0, else SmokeError with the command and output."""
    done = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env or _env(), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=TIMEOUT_S)
    if done.returncode != 0:
        raise SmokeError(f"exit {done.returncode}: {' '.join(map(str, cmd))}\n{done.stdout[-6000:]}")
    return done.stdout


def cli(work: Path, *args: str) -> str:
    """A perflake command through the venv's console script, stdout only (a warning on stderr is allowed)."""
    done = subprocess.run([str(work / "venv" / "bin" / "perflake"), *args], cwd=work / "run", env=_env(),
                          capture_output=True, text=True, timeout=TIMEOUT_S)
    if done.returncode != 0:
        raise SmokeError(f"exit {done.returncode}: perflake {' '.join(args)}\n{done.stdout[-3000:]}{done.stderr}")
    return done.stdout


def check(ok: bool, message: str) -> None:
    if not ok:
        raise SmokeError(message)


class Steps:
    def __init__(self):
        self.times: list[tuple[str, float]] = []

    def __call__(self, name: str, fn, *args):
        print(f"-- {name}", flush=True)
        start = time.monotonic()
        try:
            return fn(*args)
        finally:
            self.times.append((name, time.monotonic() - start))
            print(f"   {self.times[-1][1]:.1f} s", flush=True)


def build_wheel(work: Path) -> Path:
    src = work / "src"
    src.mkdir()
    for name in PROJECT_FILES:
        shutil.copy2(CHECKOUT / name, src / name)
    for folder in SOURCES:
        shutil.copytree(CHECKOUT / folder, src / folder, ignore=shutil.ignore_patterns("__pycache__", "*.py[co]"))
    log = run([sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "-w", work / "dist", src], cwd=work)
    (work / "build.log").write_text(log)
    warnings = [line.strip() for line in log.splitlines() if "warn" in line.lower()]
    check(not warnings, "the wheel build printed warnings (whole log: build.log):\n" + "\n".join(warnings))
    wheels = sorted((work / "dist").glob("perflake-*.whl"))
    check(len(wheels) == 1, f"expected one perflake wheel, got {wheels}")
    print(f"   {wheels[0].name}, {wheels[0].stat().st_size:,} bytes, no build warnings")
    return wheels[0]


def install(work: Path, wheel: Path) -> Path:
    run([sys.executable, "-m", "venv", work / "venv"], cwd=work)
    python = work / "venv" / "bin" / "python"
    # --no-compile: byte-compiling every dependency at install time took as long as the rest of the install
    run([python, "-m", "pip", "install", "--quiet", "--no-compile", f"{wheel}[s3]"], cwd=work)
    where = run([python, "-c", "import perflake, importlib.resources as r; print(perflake.__file__); "
                 "print(r.files('perflake').joinpath('py.typed').is_file())"], cwd=work / "run").split()
    check(where[0].startswith(f"{work / 'venv'}{os.sep}"), f"perflake imported from {where[0]}, not the clean venv")
    check(where[1] == "True", "py.typed is not installed")
    print(f"   perflake from {where[0]}")
    return python


def cli_smoke(work: Path, data: Path) -> None:
    datasets = sorted(p for p in data.iterdir() if not p.name.startswith("."))
    check(bool(datasets), f"no datasets in {data}")
    # one command for all (each process start costs seconds); the report's files say which dataset each run is
    report = json.loads(cli(work, "ingest", *map(str, datasets), "--lake", "lake", "--quiet", "--json"))
    check(report["counts"]["failed"] == 0 and not report["failed"], f"ingest: {report['counts']} {report['failed']}")
    ingested: dict[str, list[str]] = {d.name: [] for d in datasets}
    for entry in report["ingested_files"]:
        ingested[Path(entry["path"]).relative_to(data).parts[0]].append(entry["run_id"])
    for name, ids in ingested.items():
        check(bool(ids), f"ingest: no run from {data / name} ({report['counts']})")
        print(f"   ingest {name}: {len(ids)} run(s)")
    all_ids = [rid for ids in ingested.values() for rid in ids]
    check(sorted(all_ids) == sorted(report["ingested"]), f"ingest: files {all_ids} vs runs {report['ingested']}")
    runs = json.loads(cli(work, "runs", "--lake", "lake", "--format", "json"))
    check(sorted(r["run_id"] for r in runs) == sorted(all_ids), f"runs lists {len(runs)}, ingested {len(all_ids)}")
    n_nodes = {r["run_id"]: r["n_nodes"] for r in runs}
    for name, ids in ingested.items():
        for rid in ids:  # the header line, a blank line, then a line per node (more if a node has two parents)
            lines = cli(work, "tree", rid, "--lake", "lake", "--no-color").splitlines()
            check(lines[0].startswith("perflake v") and len(lines) - 2 >= max(n_nodes[rid], 1),
                  f"tree {rid} ({name}, {n_nodes[rid]} nodes): {lines[:5]}")
            print(f"   tree {rid} ({name}): {len(lines) - 2} lines for {n_nodes[rid]} nodes, {lines[2].strip()[:50]}")
    by_format = json.loads(cli(work, "sql", "select format, count(*) as n from runs group by format order by format",
                               "--lake", "lake", "--format", "json"))
    check(sum(r["n"] for r in by_format) == len(all_ids), f"sql: {by_format}")
    nodes = json.loads(cli(work, "sql", "select count(*) as n from nodes", "--lake", "lake", "--format", "json"))
    check(nodes[0]["n"] >= len(all_ids), f"sql nodes: {nodes}")
    print(f"   sql: {len(all_ids)} runs in {len(by_format)} formats, {nodes[0]['n']} nodes")
    for query in QUERIES:  # through `python -m perflake`, the other way in
        out = run([work / "venv" / "bin" / "python", "-m", "perflake", "query", query, "--lake", "lake",
                   "--format", "json"], cwd=work / "run")
        rows = json.loads(out)
        check(bool(rows) and {r["run_id"] for r in rows} <= set(all_ids), f"query {query}: {out[:500]}")
        print(f"   query {query}: {len(rows)} rows in {len({r['run_id'] for r in rows})} runs")


def reader_test_requirements(wheel: Path, names: tuple[str, ...]) -> list[str]:
    """The requirements (with their ranges) of the ``test`` extra that the wheel's METADATA lists for ``names``."""
    with zipfile.ZipFile(wheel) as zf:
        meta = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        headers = zf.read(meta).decode().split("\n\n", 1)[0].splitlines()
    found = []
    for header in headers:
        m = re.match(r"Requires-Dist: (([\w.-]+)[^;]*); extra == \"test\"$", header)
        if m and m.group(2) in names:
            found.append(m.group(1).strip())
    return found


def reader_tests(work: Path, wheel: Path, data: Path) -> None:
    python = work / "venv" / "bin" / "python"
    deps = reader_test_requirements(wheel, READER_TEST_DEPS)
    check(len(deps) == len(READER_TEST_DEPS), f"the wheel's test extra lacks some of {READER_TEST_DEPS}: {deps}")
    run([python, "-m", "pip", "install", "--quiet", "--no-compile", *deps], cwd=work)
    plugin = work / "plugin"
    plugin.mkdir()
    (plugin / "perflake_installed.py").write_text(PLUGIN)
    tests = sorted({p for pattern in READER_TESTS for p in (CHECKOUT / "tests").glob(pattern)})
    check(len(tests) >= 10, f"reader tests not found: {tests}")
    env = _env(PYTHONPATH=str(plugin), PERFLAKE_WHEEL_VENV=str(work / "venv"), PERFLAKE_TEST_DATA=str(data),
               PYTHONDONTWRITEBYTECODE="1")
    out = run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "perflake_installed", *tests],
              cwd=work / "run", env=env)
    lines = out.strip().splitlines()
    print(*[f"   {line}" for line in lines if line.startswith("perflake ")], f"   {lines[-1]}", sep="\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=Path(os.environ.get("PERFLAKE_TEST_DATA",
                                                                     CHECKOUT.parent / "shared" / "data")))
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    ap.add_argument("--no-tests", action="store_true", help="build, install and the CLI smoke only")
    args = ap.parse_args(argv)
    data = args.data.resolve()
    if not data.is_dir():
        print(f"wheel_smoke: {data}: no shared data (set PERFLAKE_TEST_DATA)", file=sys.stderr)
        return 1
    work = Path(tempfile.mkdtemp(prefix="perflake-wheel-")).resolve()
    if work.is_relative_to(CHECKOUT):
        print(f"wheel_smoke: {work} is inside the checkout (set TMPDIR elsewhere)", file=sys.stderr)
        return 1
    (work / "run").mkdir()
    print(f"wheel_smoke: in {work}, data {data}", flush=True)
    step = Steps()
    ok = False
    try:
        wheel = step("build the wheel (isolated)", build_wheel, work)
        step("install WHEEL[s3] in a clean venv", install, work, wheel)
        step("CLI smoke outside the checkout", cli_smoke, work, data)
        if not args.no_tests:
            step("reader tests against the installed wheel", reader_tests, work, wheel, data)
        ok = True
    except (SmokeError, subprocess.TimeoutExpired) as exc:
        print(f"wheel_smoke: FAILED: {exc}", file=sys.stderr)
    finally:
        total = sum(t for _, t in step.times)
        print("wheel_smoke: " + ", ".join(f"{name} {t:.0f} s" for name, t in step.times) + f"; total {total:.0f} s")
        if ok and not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"wheel_smoke: kept {work}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
