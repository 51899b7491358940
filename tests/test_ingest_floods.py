"""What an ingest tells about inputs it cannot take (issue 23): a summary instead of a flood (the first problems,
then counts by kind; --json lists them all), and what cannot be read named as such -- "permission denied" for
a file or a directory that cannot be listed (never skipped silently), "symbolic link loop", "dangling symbolic
link", "empty file" -- logged once and not reported again until it changes.

Tests run as root here, where mode 000 denies nothing: the ingest then runs without the capabilities that let
root pass file modes (``setpriv --bounding-set=-dac_override,-dac_read_search``), as any other user would.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from perflake import Lake
from perflake.generators import write_caliper_json_runs
from perflake.ingest.report import IngestReport, problem_kind
from perflake.ingest.scan import scan

PERFLAKE = [sys.executable, "-m", "perflake.cli.app"]
NO_DAC = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]


def cli(*args, as_user: bool = False, timeout: int = 300):
    prefix = NO_DAC if as_user and os.geteuid() == 0 else []
    return subprocess.run([*prefix, *PERFLAKE, *map(str, args)], capture_output=True, text=True, timeout=timeout)


def _modes_deny() -> bool:
    """Whether a mode-000 file denies reading to the ingest run by ``cli(..., as_user=True)``."""
    if os.geteuid() != 0:
        return True
    if shutil.which("setpriv") is None:
        return False
    probe = subprocess.run([*NO_DAC, "sh", "-c", "f=$(mktemp) && chmod 000 $f && ! cat $f 2>/dev/null; "
                            "s=$?; rm -f $f; exit $s"], capture_output=True)
    return probe.returncode == 0


needs_modes = pytest.mark.skipif(not _modes_deny(), reason="running as root without setpriv: file modes deny nothing")


# -- floods ----------------------------------------------------------------------------------------------------
def test_thousands_of_empty_files_give_a_short_summary_and_json_lists_them_all(tmp_path):
    tree = tmp_path / "profiles"
    tree.mkdir()
    for i in range(2000):
        (tree / f"rank-{i:05d}.cali").write_bytes(b"")
    write_caliper_json_runs(tree / "good", nodes=20, ranks=1, runs=1, seed=3)
    lake = tmp_path / "lake"
    proc = cli("ingest", tree, "--lake", lake)
    assert proc.returncode == 0, proc.stderr  # warnings, not failures
    lines = proc.stderr.splitlines()
    assert len(lines) == 11  # the first 10, then the count by kind
    assert lines[0] == f"perflake: warning: {tree / 'rank-00000.cali'}: empty file: a .cali file that no reader accepts"
    assert lines[-1] == "perflake: ... and 1,990 more: 1,990 empty file (--json lists them all)"
    assert proc.stdout.strip() == ("ingested 1 runs, skipped 0 already present, 0 failed, 2000 inputs look like "
                                   "profiles but no reader accepts them")
    as_json = cli("ingest", tree, "--lake", lake, "--json")
    s = json.loads(as_json.stdout)
    assert len(as_json.stderr.splitlines()) == 11
    assert len(s["unrecognised"]) == 2000 and s["problem_kinds"] == {"empty file": 2000}
    assert {u["path"] for u in s["unrecognised"]} == {str(p) for p in tree.glob("*.cali")}


def test_the_rest_is_counted_by_kind():
    report = IngestReport()
    report.failed = [(f"/in/run{i}", f"/in/run{i}: permission denied") for i in range(3)]
    report.failed += [("/in/cut.json", "/in/cut.json: not valid JSON (truncated?): Expecting value at line 9")]
    report.failed += [("/in/loop.cali", "/in/loop.cali: symbolic link loop")]
    report.unrecognised = [(f"/in/e{i}.cali", f"/in/e{i}.cali: empty file: a .cali file that no reader accepts")
                           for i in range(4)]
    lines = report.problem_lines(limit=2)
    assert lines == ["/in/run0: permission denied", "/in/run1: permission denied",
                     "... and 7 more: 4 empty file, 1 permission denied, 1 truncated or damaged, "
                     "1 symbolic link loop (--json lists them all)"]
    assert report.problem_lines(limit=2, leave_out={"/in/run0", "/in/run1", "/in/run2"})[-1] == \
        "... and 4 more: 4 empty file (--json lists them all)"
    assert report.problem_kinds() == {"empty file": 4, "permission denied": 3, "truncated or damaged": 1,
                                      "symbolic link loop": 1}
    assert problem_kind("/in/permission denied.cali", "/in/permission denied.cali: empty file (x)") == "empty file"
    assert len(report.problem_lines()) == 9  # up to 10 problems: each on its own line


# -- what cannot be read ---------------------------------------------------------------------------------------
def test_links_that_lead_nowhere_are_named(tmp_path):
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "loop.cali").symlink_to("loop.cali")  # points to itself
    (tree / "a.json").symlink_to("b.json")
    (tree / "b.json").symlink_to("a.json")  # a loop of two
    (tree / "gone.json").symlink_to("deleted.json")
    found = scan([tree, tree / "loop.cali"])
    assert [(os.path.basename(p), r.removeprefix(p + ": ")) for p, r, _key in found.unreadable] == [
        ("a.json", "symbolic link loop"), ("b.json", "symbolic link loop"),
        ("gone.json", "dangling symbolic link (to deleted.json, which does not exist)"),
        ("loop.cali", "symbolic link loop"), ("loop.cali", "symbolic link loop")]  # walked, then named
    assert found.problems == [] and found.unrecognised == [] and found.runs == []


@needs_modes
def test_permission_denied_is_named_logged_once_and_retried_when_the_mode_changes(tmp_path):
    tree = tmp_path / "tree"
    good = write_caliper_json_runs(tree / "good", nodes=20, ranks=1, runs=1, seed=3)[0]
    locked = write_caliper_json_runs(tree / "locked", nodes=20, ranks=1, runs=1, seed=4)[0].parent
    secret = tree / "secret.cali"
    secret.write_bytes(b"CALI damaged")
    shutil.copy(write_caliper_json_runs(tmp_path / "more", nodes=20, ranks=2, runs=1, seed=5)[0],
                tree / "hidden.json")
    (tree / "loop.cali").symlink_to("loop.cali")
    (tree / "gone.json").symlink_to("deleted.json")
    for p in (locked, secret, tree / "hidden.json"):
        p.chmod(0)
    lake = tmp_path / "lake"
    try:
        first = cli("ingest", tree, "--lake", lake, "--json", as_user=True)
        assert first.returncode == 1, first.stderr
        s = json.loads(first.stdout)
        reasons = {f["path"]: f["reason"].removeprefix(f["path"] + ": ") for f in s["failed"]}
        assert reasons == {str(locked): "permission denied (cannot list the directory)",
                           str(secret): "permission denied", str(tree / "hidden.json"): "permission denied",
                           str(tree / "loop.cali"): "symbolic link loop",
                           str(tree / "gone.json"): "dangling symbolic link (to deleted.json, which does not exist)"}
        assert s["counts"]["ingested"] == 1 and s["ingested_files"][0]["path"] == str(good)
        assert s["unrecognised"] == [] and s["problem_kinds"] == {"permission denied": 3, "symbolic link loop": 1,
                                                                   "dangling symbolic link": 1}
        assert sorted(first.stderr.splitlines()) == sorted(f"perflake: {f['reason']}" for f in s["failed"])
        log = Lake(lake).sql("select source, status, reason, transient from ingest_log where status = 'failed'")
        assert sorted(log["source"]) == sorted(reasons) and not log["transient"].any()

        again = cli("ingest", tree, "--lake", lake, "--json", as_user=True)  # nothing changed: told once only
        s = json.loads(again.stdout)
        assert again.returncode == 0 and again.stderr == "" and s["failed"] == [] and s["log_file"] is None
        assert {f["path"] for f in s["skipped_failed_before"]} == set(reasons)

        locked.chmod(0o755)  # fixed: the mode changed (and with it the ctime), so tried again
        (tree / "hidden.json").chmod(0o644)
        secret.chmod(0o644)
        fixed = cli("ingest", tree, "--lake", lake, "--json", as_user=True)
        s = json.loads(fixed.stdout)
        assert fixed.returncode == 0, fixed.stderr
        assert sorted(f["path"] for f in s["ingested_files"]) == sorted([str(tree / "hidden.json"),
                                                                         str(locked / "run-000.json")])
        assert [u["path"] for u in s["unrecognised"]] == [str(secret)]  # readable now: a damaged .cali file
        assert "no reader accepts (truncated or damaged?)" in s["unrecognised"][0]["reason"]
        assert {f["path"] for f in s["skipped_failed_before"]} == {str(tree / "loop.cali"), str(tree / "gone.json")}
    finally:
        for p in (locked, secret, tree / "hidden.json"):
            p.chmod(0o755)


@needs_modes
def test_a_named_path_that_cannot_be_read_says_why(tmp_path):
    unreadable = tmp_path / "run.cali"
    unreadable.write_bytes(b"x" * 100)
    unreadable.chmod(0)
    loop = tmp_path / "loop.cali"
    loop.symlink_to(loop.name)
    try:
        proc = cli("ingest", unreadable, loop, "--lake", tmp_path / "lake", as_user=True)
        assert proc.returncode == 1
        assert proc.stderr.splitlines() == [f"perflake: {unreadable}: permission denied",
                                            f"perflake: {loop}: symbolic link loop"]
    finally:
        unreadable.chmod(0o644)
