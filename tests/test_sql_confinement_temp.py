"""User SQL cannot read DuckDB's temp directory (issue 22, item 6).

DuckDB lets a database whose external access is off read and write below its temp directory (it adds the
directory to ``allowed_directories`` by itself) and the default temp directory is ``.tmp`` in the current
directory: confined SQL could read ``./.tmp/secret.txt``, or use it as a true/false oracle through a
``--where``.  Every database now spills into a folder of its own, not yet created, inside a private scratch
folder (mode 0700); a sealed database has no temp directory at all (perflake.engine.duck).  Each escape is one
one-line error naming the problem, never the file's content, whether the file exists or not.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from perflake import Lake
from perflake.analytics.ensemble_ops import sql_filter
from perflake.analytics.selection import select, select_runs
from perflake.engine import duck
from perflake.errors import LakeError, UsageError
from perflake.generators import write_tau_runs

PERFLAKE = [sys.executable, "-m", "perflake.cli.app"]
SECRET = "s3cr3t-8f1d2c-do-not-print"
ORACLES = ["(select count(*) from read_text('.tmp/secret.txt')) > 0",  # true if the file is readable
           "(select count(*) from read_text('.tmp/secret.txt')) = 0",  # and its negation
           "exists (select * from glob('.tmp/*'))",
           "(select content from read_text('.tmp/secret.txt')) like 's3%'"]


@pytest.fixture(scope="module")
def small_lake(tmp_path_factory) -> Lake:
    root = tmp_path_factory.mktemp("confine_temp")
    lake = Lake(root / "lake")
    assert lake.ingest(write_tau_runs(root / "in", nodes=12, ranks=2, runs=2, seed=5)).ok
    return lake


@pytest.fixture
def secret(tmp_path, monkeypatch) -> Path:
    """``./.tmp/secret.txt`` in the current directory (DuckDB's default temp directory)."""
    (tmp_path / ".tmp").mkdir()
    path = tmp_path / ".tmp" / "secret.txt"
    path.write_text(SECRET + "\n")
    monkeypatch.chdir(tmp_path)
    return path


def one_line_refusal(exc: BaseException) -> str:
    """A perflake error: one line; a raw DuckDB error (tests on bare connections): its first line counts."""
    msg = str(exc)
    assert SECRET not in msg, msg
    if isinstance(exc, duckdb.Error):
        msg = msg.splitlines()[0]
    assert "\n" not in msg, msg
    assert "Permission Error" in msg or "disabled by configuration" in msg, msg
    return msg


def setting(con, name: str):
    return con.execute(f"select current_setting('{name}')").fetchall()[0][0]


# -- the library ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("query", [
    "select content from read_text('.tmp/secret.txt')",
    "select content from read_text('./.tmp/secret.txt')",
    "select content from read_text('{abs}')",
    "select * from read_csv('.tmp/secret.txt', header = false)",
    "select content from read_blob('.tmp/*')",
    "select * from glob('.tmp/*')",
    "select * from glob('{dir}/*')",
    "select (select count(*) from read_text('.tmp/secret.txt')) as n",
])
def test_lake_sql_cannot_read_dot_tmp(small_lake, secret, query):
    with pytest.raises(LakeError) as info:
        small_lake.sql(query.format(abs=secret, dir=secret.parent))
    one_line_refusal(info.value)


def test_confined_temp_directory_is_private(small_lake, secret):
    con = small_lake.connect(confined=True)
    try:
        temp = setting(con, "temp_directory")
        root = duck.scratch_root()
        assert temp != ".tmp" and os.path.dirname(temp) == root and not os.path.exists(temp)
        assert stat.S_IMODE(os.stat(root).st_mode) == 0o700 and root.startswith(tempfile.gettempdir())
        allowed = setting(con, "allowed_directories")
        assert sorted(allowed) == sorted([str(small_lake.root).rstrip("/") + "/", temp + "/"])
    finally:
        con.close()
    assert len(small_lake.sql("select * from runs")) == 2  # the lake itself is still readable


def test_scratch_folder_cannot_be_read(small_lake, secret):
    """The scratch folder, another database's temp directory and the shared instance's are refused; a
    confined database's own temp directory holds nothing but its own spill files (none here)."""
    root = Path(duck.scratch_root())
    (root / "planted.txt").write_text(SECRET)
    other = duck.offline()  # another database's temp directory, with something in it
    other_temp = Path(setting(other, "temp_directory"))
    cur = duck.connection()
    shared_temp = Path(setting(cur, "temp_directory"))
    cur.close()
    assert shared_temp.parent == root and other_temp.parent == root and shared_temp != other_temp
    try:
        for folder in (other_temp, shared_temp):
            folder.mkdir(exist_ok=True)
            (folder / "planted.txt").write_text(SECRET)
        for query in (f"select content from read_text('{root}/planted.txt')", f"select * from glob('{root}/*')",
                      f"select * from glob('{root}/**')", f"select content from read_text('{other_temp}/*')",
                      f"select content from read_text('{shared_temp}/planted.txt')",
                      f"select * from glob('{shared_temp}/*')"):
            with pytest.raises(LakeError) as info:
                small_lake.sql(query)
            one_line_refusal(info.value)
        con = small_lake.connect(confined=True)
        try:
            own = setting(con, "temp_directory")
            assert con.execute(f"select * from glob('{own}/**')").fetchall() == []
            with pytest.raises(duckdb.Error) as info:  # `..` does not climb out of it
                con.execute(f"select content from read_text('{own}/../planted.txt')").fetchall()
            one_line_refusal(info.value)
        finally:
            con.close()
    finally:
        other.close()
        for folder in (other_temp, shared_temp):
            (folder / "planted.txt").unlink(missing_ok=True)
        (root / "planted.txt").unlink()


@pytest.mark.parametrize("where", ORACLES)
def test_where_oracles_are_refused(small_lake, secret, where):
    """Every ``where=`` entry point refuses the fragment, so it cannot tell whether the file exists."""
    for call in (lambda: select(small_lake, where=where),  # ensemble, regress, imbalance...: sealed
                 lambda: select_runs(small_lake, where=where),  # runs --where, query --where: confined
                 lambda: small_lake.ensemble(where=where),
                 lambda: small_lake.regress(where, "true", metric="time")):
        with pytest.raises(LakeError) as info:
            call()
        one_line_refusal(info.value)
    md = pd.DataFrame({"x": [1]}, index=pd.Index(["p"], name="profile"))
    with pytest.raises(UsageError) as info:  # Ensemble.filter_metadata(SQL): sealed
        sql_filter(md, where)
    one_line_refusal(info.value)
    assert len(select(small_lake, where="ranks >= 1").runs) == 2 and len(select_runs(small_lake, where="true")) == 2


def test_sealed_has_no_temp_directory(secret):
    con = duck.sealed()
    try:
        assert setting(con, "temp_directory") == "" and setting(con, "allowed_directories") == []
        with pytest.raises(duckdb.Error) as info:
            con.execute("select content from read_text('.tmp/secret.txt')").fetchall()
        one_line_refusal(info.value)
    finally:
        con.close()


def test_confine_moves_a_foreign_temp_directory_and_refuses_the_shared_instance(small_lake, secret):
    con = duckdb.connect()  # DuckDB's default temp directory: ./.tmp
    try:
        assert setting(con, "temp_directory") == ".tmp"
        duck.confine(con, [str(small_lake.root)])
        assert os.path.dirname(setting(con, "temp_directory")) == duck.scratch_root()
        with pytest.raises(duckdb.Error) as info:
            con.execute("select content from read_text('.tmp/secret.txt')").fetchall()
        one_line_refusal(info.value)
    finally:
        con.close()
    cur = duck.connection()
    try:
        with pytest.raises(RuntimeError, match="shared DuckDB instance cannot be confined"):
            duck.confine(cur, [str(small_lake.root)])
        assert cur.execute("select 42").fetchall() == [(42,)]  # still unlocked, still working
        assert setting(cur, "lock_configuration") is False and setting(cur, "enable_external_access") is True
    finally:
        cur.close()


def test_confined_query_still_spills(small_lake):
    """A query beyond the memory limit spills into the database's own temp directory, which is created for it
    and removed when the database closes."""
    con = duck.offline()
    try:
        con.execute("set memory_limit = '32MB'")
        con.execute("set threads = 1")
        duck.confine(con, [str(small_lake.root)])
        temp = setting(con, "temp_directory")
        rows = con.execute("select count(*), sum(x) from (select * from range(3000000) t(x) order by hash(x))")
        assert rows.fetchall() == [(3000000, 3000000 * 2999999 // 2)]
        assert os.path.isdir(temp)  # it spilled there
    finally:
        con.close()
    assert not os.path.exists(temp)


def test_scratch_folder_is_removed_at_exit(tmp_path):
    code = ("from perflake.engine import duck; c = duck.connection(); c.execute('select 1').fetchall(); "
            "print(duck.scratch_root())")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    root = proc.stdout.strip()
    assert os.path.basename(root).startswith("perflake-duckdb-") and not os.path.exists(root)
    assert list(tmp_path.iterdir()) == []  # no ./.tmp either


# -- the perflake command ------------------------------------------------------------------------------------

@pytest.mark.parametrize("argv", [
    ["sql", "select content from read_text('.tmp/secret.txt')"],
    ["sql", "select * from glob('.tmp/*')"],
    ["runs", "--where", ORACLES[0]],
    ["ensemble", "--metric", "time", "--where", ORACLES[1]],
    ["regress", "--metric", "time", "--baseline", ORACLES[0], "--candidate", "true"],
])
def test_cli_cannot_read_dot_tmp(small_lake, secret, argv):
    proc = subprocess.run([*PERFLAKE, *argv, "--lake", str(small_lake.root)], capture_output=True, text=True,
                          timeout=120, cwd=secret.parent.parent)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert SECRET not in proc.stdout + proc.stderr and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("perflake: "), proc.stderr
    assert "Permission Error" in proc.stderr, proc.stderr
