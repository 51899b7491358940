"""The perflake command: real subprocesses, real exit codes, one-line errors (no tracebacks)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import lake_files

PERFLAKE = [sys.executable, "-m", "perflake.cli.app"]


def run(*args, check_code=None):
    proc = subprocess.run([*PERFLAKE, *map(str, args)], capture_output=True, text=True, timeout=120)
    if check_code is not None:
        assert proc.returncode == check_code, proc.stderr
    return proc


def test_bad_path_is_one_line_and_nonzero(tmp_path):
    proc = run("ingest", tmp_path / "missing", "--lake", tmp_path / "lake")
    assert proc.returncode == 1
    assert proc.stderr.strip() == f"perflake: {tmp_path / 'missing'}: no such file or directory"
    assert "Traceback" not in proc.stderr
    assert proc.stdout.strip() == "ingested 0 runs, skipped 0 already present, 1 failed"


def test_not_a_lake_exits_2(tmp_path):
    proc = run("runs", "--lake", tmp_path / "nolake")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "not a perflake lake" in proc.stderr


def test_generate_ingest_query_tree(tmp_path):
    run("generate", "tau", tmp_path / "gen", "--nodes", 80, "--ranks", 4, "--runs", 2, "--seed", 1, check_code=0)
    lake = tmp_path / "lake"
    proc = run("ingest", tmp_path / "gen", "--lake", lake, "--json", check_code=0)
    summary = json.loads(proc.stdout)
    assert len(summary["ingested"]) == 2 and summary["failed"] == []
    again = run("ingest", tmp_path / "gen", "--lake", lake, check_code=0)
    assert again.stdout.strip() == "ingested 0 runs, skipped 2 already present, 0 failed"
    csv = run("sql", "select count(distinct run_id) as runs, max(rank) + 1 as ranks from metrics", "--lake", lake,
              "--format", "csv", check_code=0)
    assert csv.stdout.splitlines() == ["runs,ranks", "2,4"]
    run_id = summary["ingested"][0]
    tree = run("tree", run_id, "--lake", lake, "--no-header", "--depth", 2, check_code=0)
    assert tree.stdout.splitlines()[0].endswith(" .TAU application")
    imb = run("imbalance", "--lake", lake, "--format", "json", "--top", 3, check_code=0)
    rows = json.loads(imb.stdout)
    assert len(rows) == 3 and all(r["imbalance"] >= 1 for r in rows)
    cmp = run("compare", *summary["ingested"], "--lake", lake, "--format", "csv", check_code=0)
    assert cmp.stdout.splitlines()[0] == "name,path,a,b,runs_a,runs_b,diff,ratio,speedup,status"


def test_bad_sql_is_one_line(tmp_path, shared_data):
    lake = tmp_path / "lake"
    run("ingest", shared_data("tau-cpi-mpi"), "--lake", lake, check_code=0)
    before = lake_files(lake)
    proc = run("sql", "select nope from metrics", "--lake", lake)
    assert proc.returncode == 2 and proc.stderr.startswith("perflake: SQL error:") and proc.stderr.count("\n") == 1
    assert lake_files(lake) == before


def test_corrupt_profile_fails_cleanly(tmp_path, shared_data):
    src = shared_data("tau-cpi-mpi")
    bad = tmp_path / "bad"
    bad.mkdir()
    for f in Path(src).iterdir():
        (bad / f.name).write_bytes(f.read_bytes())
    (bad / "profile.2.0.0").write_bytes((Path(src) / "profile.2.0.0").read_bytes()[:3000])
    lake = tmp_path / "lake"
    proc = run("ingest", bad, "--lake", lake)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().startswith(f"perflake: {bad / 'profile.2.0.0'}: truncated")
    assert "0 runs" in proc.stdout


@pytest.mark.skipif(not os.access(sys.executable, os.X_OK), reason="needs a runnable interpreter")
def test_console_script_is_installed():
    exe = Path(sys.executable).with_name("perflake")
    assert exe.exists(), "pip install should create the perflake command"
    assert subprocess.run([str(exe), "--version"], capture_output=True, text=True).stdout.startswith("perflake ")


def test_query_takes_both_dialects_and_tree_refuses_typos(tmp_path, shared_data):
    lake = tmp_path / "lake"
    proc = run("ingest", shared_data("tau-cpi-mpi"), "--lake", lake, "--json", check_code=0)
    (run_id,) = json.loads(proc.stdout)["ingested"]
    string = run("query", 'MATCH (".", p) WHERE p."name" STARTS WITH "MPI_Init"', "--lake", lake, "--format", "csv",
                 check_code=0)
    obj = run("query", '[{"name": "MPI_Init.*"}]', "--lake", lake, "--format", "csv", check_code=0)
    assert obj.stdout == string.stdout
    assert obj.stdout.splitlines()[1:] == [f"{run_id},1,MPI_Init(),.TAU application > MPI_Init()"]
    pair = run("query", '[{"name": ".TAU application"}, ["+", {"name": "MPI_.*"}]]', "--lake", lake,
               "--format", "csv", check_code=0)  # a JSON pair is a (quantifier, predicate) tuple
    same = run("query", 'MATCH (".", p)->("+", q) WHERE p."name" = ".TAU application" AND q."name" =~ "MPI_.*"',
               "--lake", lake, "--format", "csv", check_code=0)
    assert pair.stdout == same.stdout and len(pair.stdout.splitlines()) > 3
    typo = run("query", 'MATCH (".", p)->("*", q) WHERE p."nme" = "main" AND q."time (inc)" > 1', "--lake", lake)
    assert typo.returncode == 0 and typo.stdout.strip() == "(no rows)"
    assert typo.stderr == "perflake: warning: no selected run has an attribute or metric 'nme': it matches nothing\n"
    assert run("query", '[{"type": "function"}, "*", {"Calls": "> 1"}]', "--lake", lake).stderr == ""
    bad = run("query", '[{"name": ', "--lake", lake)
    assert bad.returncode == 2 and bad.stderr.startswith("perflake: the query looks like the object dialect")
    for args, message in ((("--metric", "tme"), "no metric 'tme' in this frame"),
                          (("--rank", 99), "rank 99 is not in")):
        proc = run("tree", run_id, "--lake", lake, *args)
        assert proc.returncode == 2 and message in proc.stderr and proc.stderr.count("\n") == 1 and not proc.stdout


def test_runs_where_and_the_perflake_lake_variable(tmp_path, shared_data):
    lake = tmp_path / "lake"
    run("ingest", shared_data("tau-cpi-mpi"), shared_data("hpctoolkit-cpi-database"), "--lake", lake, check_code=0)
    tau = run("runs", "--lake", lake, "--where", "format = 'tau'", "--format", "csv", check_code=0).stdout.splitlines()
    assert len(tau) == 2 and tau[1].split(",")[1] == "tau"
    both = run("runs", "--lake", lake, "--format", "csv", check_code=0).stdout.splitlines()
    assert len(both) == 3
    bad = run("runs", "--lake", lake, "--where", "nope > 1")
    assert bad.returncode == 2 and bad.stderr.startswith("perflake: --where 'nope > 1': ")
    env = {**os.environ, "PERFLAKE_LAKE": str(lake)}
    for args in (["runs", "--format", "csv"], ["ingest", str(shared_data("tau-cpi-mpi"))]):
        proc = subprocess.run([*PERFLAKE, *args], capture_output=True, text=True, timeout=120, env=env)
        assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ingested 0 runs, skipped 1 already present, 0 failed"
    import perflake
    from perflake.errors import UsageError

    with pytest.raises(UsageError, match="one run id .* not list"):
        perflake.Lake(lake).graphframe(tau[1:])


def test_a_file_of_a_directory_profile_says_to_pass_the_directory(tmp_path, shared_data):
    tau = shared_data("tau-cpi-mpi")
    proc = run("tree", tau / "profile.0.0.0")
    assert proc.returncode == 2
    assert proc.stderr == f"perflake: {tau / 'profile.0.0.0'}: one file of the tau profile {tau}: pass that directory\n"
    xml = shared_data("hpctoolkit-cpi-database") / "experiment.xml"
    proc = run("ingest", xml, "--lake", tmp_path / "lake")
    assert proc.returncode == 1 and "one file of the hpctoolkit profile" in proc.stderr
    empty = tmp_path / "tau"
    shutil.copytree(tau, empty)
    (empty / "profile.1.0.0").write_bytes(b"")  # (rank 0's file is what the format is recognised by)
    proc = run("tree", empty)
    assert proc.returncode == 2 and proc.stderr.strip().endswith("profile.1.0.0: empty file (a TAU profile starts "
                                                                 "with '<count> templated_functions...')")
