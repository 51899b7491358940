"""DuckDB connections: cheap cursors on one in-memory database per process.

``duckdb.connect()`` builds a whole database instance (about 20 ms each); a cursor on a shared instance costs
about 1 ms.  Each cursor is a connection of its own: temp tables, registered Arrow tables and variables are
private to it and vanish when it is closed, so callers stay isolated exactly as with separate databases.
The instance never downloads extensions (user SQL could otherwise trigger one).  Global settings (threads,
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
            db = _SHARED[pid] = duckdb.connect(config={"autoinstall_known_extensions": False})  # no downloads
        return db.cursor()


def for_catalog(cat) -> duckdb.DuckDBPyConnection:
    """A connection that can read the files of a lake's catalog: a cursor on the shared instance for a local
    lake; for any other filesystem a database of its own with the lake's fsspec filesystem registered
    (a filesystem is registered on a whole database, so the shared instance never gets one)."""
    if cat.local:
        return connection()
    con = duckdb.connect()
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
