"""How much of llnl-hatchet's own test suite passes on perflake: a measure for issue 15 ("a Hatchet script runs
unchanged on perflake"), not a test of ours.

Hatchet's tests ship inside the installed package in .bench-venv (hatchet/tests/*.py).  This script copies them
into a temporary folder (never into the project), points their ``data_dir`` fixture at ../shared/data (the same
public datasets; those it lacks make their tests error, reported apart), puts ``shim/`` first on sys.path so that
``import hatchet`` gives perflake's objects under Hatchet's module names, and runs them with perflake's Python.

    .venv/bin/python bench/hatchet_suite/run.py [-k EXPR] [--json out.json] [--show-failures N]

Prints passed/failed/error per test file and in all; ``--json`` writes every test's outcome.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
DATA = Path(os.environ.get("PERFLAKE_TEST_DATA", REPO.parent / "shared" / "data"))


def hatchet_tests() -> Path:
    found = glob.glob(str(REPO / ".bench-venv" / "lib" / "python3*" / "site-packages" / "hatchet" / "tests"))
    if not found:
        sys.exit("run.py: .bench-venv with llnl-hatchet not found (bench/setup_venv.sh creates it)")
    return Path(found[0])


def prepare(dest: Path) -> None:
    src = hatchet_tests()
    for f in src.glob("*.py"):
        text = f.read_text()
        if f.name == "conftest.py":
            text = text.replace('os.path.join(parent, "data")', repr(str(DATA)))
        shutil.copy(f, dest / f.name)
        (dest / f.name).write_text(text)
    (dest / "data").symlink_to(DATA)  # fixtures that join os.path.dirname(__file__) and "data" themselves
    (dest / "pytest.ini").write_text("[pytest]\npython_files = *.py\naddopts = -p no:cacheprovider\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-k", default=None)
    ap.add_argument("--json", default=None)
    ap.add_argument("--show-failures", type=int, default=0)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="hatchet-suite-") as tmp:
        tmp = Path(tmp)
        prepare(tmp)
        report = tmp / "report.xml"
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE / "shim"), os.environ.get("PYTHONPATH", "")]))
        cmd = ([sys.executable, "-m", "pytest", "-q", "-rN", "--tb=line", "--continue-on-collection-errors",
                f"--junitxml={report}", str(tmp), "--timeout=120"] if _has_timeout()
               else [sys.executable, "-m", "pytest", "-q", "--tb=line", "--continue-on-collection-errors",
                     f"--junitxml={report}", str(tmp)])
        if args.k:
            cmd += ["-k", args.k]
        proc = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True)
        outcomes = _parse(report)
    _print(outcomes, args.show_failures)
    if args.json:
        Path(args.json).write_text(json.dumps(outcomes, indent=1))
    if not outcomes:
        print(proc.stdout[-3000:], proc.stderr[-3000:])
    return 0


def _has_timeout() -> bool:
    import importlib.util

    return importlib.util.find_spec("pytest_timeout") is not None


def _parse(report: Path) -> dict:
    import xml.etree.ElementTree as ET

    if not report.exists():
        return {}
    out = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        name = f"{case.get('classname', '').split('.')[-1]}::{case.get('name')}"
        outcome, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = {"failure": "failed", "error": "error", "skipped": "skipped"}[child.tag]
                message = (child.get("message") or "").splitlines()[0][:300] if child.get("message") else ""
        if outcome == "error" and ("No such file" in message or "FileNotFoundError" in message):
            outcome = "no data"
        out[name] = {"outcome": outcome, "message": message}
    return out


def _print(outcomes: dict, show: int) -> None:
    per_file: dict[str, dict[str, int]] = {}
    for name, o in outcomes.items():
        f = name.split("::")[0]
        per_file.setdefault(f, {}).setdefault(o["outcome"], 0)
        per_file[f][o["outcome"]] += 1
    kinds = ["passed", "failed", "error", "no data", "skipped"]
    print(f"{'file':<18}" + "".join(f"{k:>9}" for k in kinds))
    for f in sorted(per_file):
        print(f"{f:<18}" + "".join(f"{per_file[f].get(k, 0):>9}" for k in kinds))
    total = {k: sum(v.get(k, 0) for v in per_file.values()) for k in kinds}
    print(f"{'all':<18}" + "".join(f"{total[k]:>9}" for k in kinds))
    ran = total["passed"] + total["failed"] + total["error"]
    if ran:
        print(f"passed {total['passed']} of {ran} that ran ({100 * total['passed'] / ran:.0f}%); "
              f"{total['no data']} need data ../shared lacks")
    shown = 0
    for name, o in outcomes.items():
        if o["outcome"] in ("failed", "error") and shown < show:
            message = re.sub(r"\s+", " ", o["message"])[:200]
            print(f"  {o['outcome']}: {name}: {message}")
            shown += 1


if __name__ == "__main__":
    sys.exit(main())
