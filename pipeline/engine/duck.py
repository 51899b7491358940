"""DuckDB connections: cheap cursors on one in-memory database per process.

``duckdb.connect()`` builds a whole database instance (about 20 ms each); a cursor on a shared instance costs
about 1 ms.  Each cursor is a connection of its own: temp tables, registered Arrow tables and variables are
private to it and vanish when it is closed, so callers stay isolated exactly as with separate databases.
No instance downloads or auto-loads an extension (user SQL could otherwise trigger one: a type such as ``inet``
is then a one-line SQL error).  User SQL runs on a :func:`confined` instance of its own: it reads only the lake's
files and can change no setting.  Global settings (threads,
memory) are never changed on the shared instance; code that needs its own settings
(the Dask tasks in :mod:`perflake.engine.parallel`) opens its own database.
"""

from __future__ import annotations

import atexit
import os
import threading

import duckdb

_LOCK = threading.Lock()
_SHARED: dict[int, duckdb.DuckDBPyConnection] = {}


def connection() -> duckdb.DuckDBPyConnection:
    """A new connection (cursor) to this process's shared in-memory database; close it when done."""
    pid = os.getpid()  # a forked child must not use its parent's instance
    with _LOCK:
        db = _SHARED.get(pid)
        if db is None:
            _SHARED.clear()
            db = _SHARED[pid] = with_macros(duckdb.connect(config=OFFLINE))
        return db.cursor()


OFFLINE = {"autoinstall_known_extensions": False, "autoload_known_extensions": False}  # no download, no auto-load
LAKE_MACROS = ("nodes", "edges", "metrics", "rank_summary")  # sql/macros/lake_<table>.sql


def with_macros(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """``con``'s database with the table macros ``lake_nodes(files)``, ``lake_edges``, ``lake_metrics``,
    ``lake_rank_summary`` that read lake files as perflake sees them (sql/macros/)."""
    from perflake.engine import sqlfiles

    for table in LAKE_MACROS:
        con.execute(sqlfiles.load(f"macros/lake_{table}"))
    return con


def offline() -> duckdb.DuckDBPyConnection:
    """A new in-memory database of its own (its own settings), that never fetches or auto-loads an extension."""
    return with_macros(duckdb.connect(config=OFFLINE))


def sealed() -> duckdb.DuckDBPyConnection:
    """A database of its own that can read or write no file, load no extension and change no setting: for
    user SQL fragments (``--where``) over registered Arrow tables."""
    con = offline()
    con.execute("set enable_external_access = false")
    con.execute("set lock_configuration = true")
    return con


def confine(con: duckdb.DuckDBPyConnection, directories: list[str]) -> None:
    """From now on ``con``'s database reads and writes files only below ``directories`` (DuckDB's
    allowed_directories with external access off), loads no extension, and no statement can change a setting
    (the configuration is locked).  Call it after the views over those files are defined."""
    con.execute("set allowed_directories = $dirs", {"dirs": [d.rstrip("/") + "/" for d in directories]})
    con.execute("set enable_external_access = false")
    con.execute("set lock_configuration = true")


def for_catalog(cat, *, own: bool = False) -> duckdb.DuckDBPyConnection:
    """A connection that can read the files of a lake's catalog: a cursor on the shared instance for a local
    lake; for any other filesystem, or with ``own``, a database of its own (offline) with the lake's fsspec
    filesystem registered (a filesystem is registered on a whole database, so the shared instance never gets
    one; settings changed on an own database stay there)."""
    if cat.local and not own:
        return connection()
    con = offline()
    if not cat.local:
        con.register_filesystem(cat.fs)
    return con


@atexit.register
def _close() -> None:
    """Close the shared instance while the interpreter is whole: its worker threads are joined here rather
    than by a C++ destructor during interpreter teardown (once, under heavy load, a CLI process ended with
    "terminate called without an active exception")."""
    with _LOCK:
        db = _SHARED.pop(os.getpid(), None)
    if db is not None:
        try:
            db.close()
        except Exception:  # already closed or broken: exiting anyway
            pass
