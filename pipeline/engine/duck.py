"""DuckDB connections: cheap cursors on one in-memory database per process.

``duckdb.connect()`` builds a whole database instance (about 20 ms each); a cursor on a shared instance costs
about 1 ms.  Each cursor is a connection of its own: temp tables, registered Arrow tables and variables are
private to it and vanish when it is closed, so callers stay isolated exactly as with separate databases.
No instance downloads or auto-loads an extension (user SQL could otherwise trigger one: a type such as ``inet``
is then a one-line SQL error).  User SQL runs on a :func:`confined` instance of its own: it reads only the lake's
files and can change no setting.  Global settings (threads,
memory) are never changed on the shared instance; code that needs its own settings
(the Dask tasks in :mod:`perflake.engine.parallel`) opens its own database.

Temp (spill) directories.  DuckDB's default temp directory is ``.tmp`` in the current directory, and a database
whose external access is turned off may still read and write files below its temp directory (DuckDB adds it to
``allowed_directories`` by itself, and no setting removes it): confined SQL could read ``./.tmp/*``.  So every
database opened here spills into a folder of its own, not yet created, inside this process's private scratch
folder (:func:`scratch_root`: mode 0700 under ``tempfile.gettempdir()``, removed at exit); DuckDB creates that
folder when it first spills and removes it when the database closes.  Confined SQL can read that folder only,
which holds nothing but its own database's spill files; the scratch folder itself, the other databases' folders
and ``./.tmp`` are refused.  A :func:`sealed` database has no temp directory at all (it reads no file; it
cannot spill).

Under a finite address-space limit (``ulimit -v``) every database gets the threads and the memory limit of
:func:`perflake.engine.resources.duckdb_config` (unlimited: DuckDB's defaults, nothing changes).
"""

from __future__ import annotations

import atexit
import itertools
import os
import shutil
import tempfile
import threading

import duckdb

from perflake.engine import resources

_LOCK = threading.Lock()
_SHARED: dict[int, duckdb.DuckDBPyConnection] = {}
_SHARED_TEMP: dict[int, str] = {}  # pid -> the shared instance's temp directory
_SCRATCH_LOCK = threading.Lock()
_SCRATCH: dict[int, str] = {}  # pid -> this process's private scratch folder
_TEMP_IDS = itertools.count()


def connection() -> duckdb.DuckDBPyConnection:
    """A new connection (cursor) to this process's shared in-memory database; close it when done."""
    pid = os.getpid()  # a forked child must not use its parent's instance
    with _LOCK:
        db = _SHARED.get(pid)
        if db is None:
            _SHARED.clear()
            _SHARED_TEMP.clear()
            temp = _SHARED_TEMP[pid] = temp_directory()
            config = {**OFFLINE, "temp_directory": temp, **resources.duckdb_config()}
            db = _SHARED[pid] = with_macros(duckdb.connect(config=config))
        return db.cursor()


def scratch_root() -> str:
    """This process's private scratch folder: created on first use with mode 0700 (mkdtemp: a name of its own)
    under ``tempfile.gettempdir()``, removed at exit; a forked child makes its own."""
    pid = os.getpid()
    with _SCRATCH_LOCK:
        root = _SCRATCH.get(pid)
        if root is None or not os.path.isdir(root):
            _SCRATCH.clear()
            root = _SCRATCH[pid] = tempfile.mkdtemp(prefix=f"perflake-duckdb-{pid}-")
        return root


def temp_directory() -> str:
    """A temp directory for one new database: a path not yet created inside :func:`scratch_root`, used by no
    other database (DuckDB creates it when the database first spills and removes it when it closes)."""
    return os.path.join(scratch_root(), f"db-{next(_TEMP_IDS)}")


def _own_temp(path: str) -> bool:
    """Whether ``path`` is a temp directory handed to one database by :func:`temp_directory` (not the shared
    instance's)."""
    path = path.rstrip("/")
    root = _SCRATCH.get(os.getpid())
    return (root is not None and os.path.dirname(path) == root and os.path.basename(path).startswith("db-")
            and path != _SHARED_TEMP.get(os.getpid()))


OFFLINE = {"autoinstall_known_extensions": False, "autoload_known_extensions": False}  # no download, no auto-load
OWN_SHARE = 2  # under an address-space limit a database of its own gets half of DuckDB's memory (the shared one all)
LAKE_MACROS = ("nodes", "edges", "metrics", "rank_summary", "metric_name")  # sql/macros/lake_<name>.sql


def with_macros(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """``con``'s database with the table macros ``lake_nodes(files)``, ``lake_edges``, ``lake_metrics``,
    ``lake_rank_summary`` that read lake files as perflake sees them, and ``lake_metric_name(column)``, the
    metric a metrics column holds (catalogs/metric_columns.py) (sql/macros/)."""
    from perflake.engine import sqlfiles

    for table in LAKE_MACROS:
        con.execute(sqlfiles.load(f"macros/lake_{table}"))
    return con


def offline() -> duckdb.DuckDBPyConnection:
    """A new in-memory database of its own (its own settings), that never fetches or auto-loads an extension;
    it spills into a temp directory of its own in the private scratch folder (:func:`temp_directory`)."""
    config = {**OFFLINE, "temp_directory": temp_directory(), **resources.duckdb_config(OWN_SHARE)}
    return with_macros(duckdb.connect(config=config))


def sealed() -> duckdb.DuckDBPyConnection:
    """A database of its own that can read or write no file, load no extension and change no setting: for
    user SQL fragments (``--where``) over registered Arrow tables.  It has no temp directory (DuckDB would let
    it read its temp directory): it never spills, and a query beyond its memory is an out-of-memory error."""
    con = with_macros(duckdb.connect(config={**OFFLINE, "temp_directory": "", **resources.duckdb_config(OWN_SHARE)}))
    con.execute("set enable_external_access = false")
    con.execute("set lock_configuration = true")
    return con


def confine(con: duckdb.DuckDBPyConnection, directories: list[str]) -> None:
    """From now on ``con``'s database reads and writes files only below ``directories`` (DuckDB's
    allowed_directories with external access off) and below its own empty temp directory (which DuckDB allows
    by itself: see the module's docstring), loads no extension, and no statement can change a setting (the
    configuration is locked).  Call it after the views over those files are defined, on a database of its own
    (:func:`offline`; any other gets a temp directory of its own first, if it has not spilled yet): never on
    the shared instance."""
    temp = con.execute("select current_setting('temp_directory')").fetchone()[0]
    if temp and temp.rstrip("/") == _SHARED_TEMP.get(os.getpid()):
        raise RuntimeError("confine: a cursor of the shared DuckDB instance cannot be confined (use offline())")
    if temp and not _own_temp(temp):  # '': no temp directory, nothing to allow
        try:
            con.execute("set temp_directory = $dir", {"dir": temp_directory()})
        except duckdb.Error as exc:
            raise RuntimeError(f"confine: cannot move the database's temp directory {temp!r} into the private "
                               f"scratch folder: {str(exc).splitlines()[0]}") from None
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
    with _SCRATCH_LOCK:
        root = _SCRATCH.pop(os.getpid(), None)  # only the folder this process made (not a forked parent's)
    if root is not None:
        shutil.rmtree(root, ignore_errors=True)
