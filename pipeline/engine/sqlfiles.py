"""The only way into ``sql/``: load a statement by name and run it with bound parameters.

Every ``sql/<name>.sql`` holds one statement and starts with a comment header::

    -- name: <name>
    -- purpose: ...
    -- params: $a, $b          (or: none)
    -- input: relations the caller must provide (registered Arrow tables or temp tables)
    -- output: columns

Values are always bound (``$name``), never pasted into the text.  Identifiers cannot be bound, so metric
columns are picked with bound lists (``COLUMNS(lambda c: list_contains($metrics, c))``).

A file's inputs are named by its caller: :func:`scope` opens a cursor of its own with the inputs registered
under the names the header lists (Arrow tables, DataFrames, or other sql/ files as relations); what a caller
registers or materialises there is private to it and vanishes when the scope ends, so no caller ever sees
another's names and nothing needs to be released.
"""

from __future__ import annotations

import contextlib
import functools
import re
from importlib import resources

import duckdb

from perflake.engine import duck

_PARAM_RE = re.compile(r"^--\s*params:\s*(.*)$", re.M)


@functools.cache
def load(name: str) -> str:
    """The text of ``sql/<name>.sql`` (``name`` may contain ``/`` for sub-folders)."""
    return resources.files("perflake.sql").joinpath(f"{name}.sql").read_text(encoding="utf-8")


@functools.cache
def declared_params(name: str) -> frozenset[str]:
    """The parameter names the header of ``sql/<name>.sql`` declares."""
    m = _PARAM_RE.search(load(name))
    if not m or m.group(1).strip().lower().startswith("none"):
        return frozenset()
    return frozenset(p.strip().lstrip("$") for p in re.findall(r"\$\w+", m.group(1)))


def run(con: duckdb.DuckDBPyConnection, name: str, **params) -> duckdb.DuckDBPyConnection:
    """Execute ``sql/<name>.sql`` on ``con`` with ``params`` bound by name; returns the connection (fetch from it)."""
    expected = declared_params(name)
    if set(params) != expected:
        raise TypeError(f"sql/{name}.sql takes {sorted(expected)}, got {sorted(params)}")
    return con.execute(load(name), params or None)


def relation(con: duckdb.DuckDBPyConnection, name: str, **params) -> duckdb.DuckDBPyRelation:
    """``sql/<name>.sql`` as a lazy DuckDB relation (for statements that are a single SELECT)."""
    expected = declared_params(name)
    if set(params) != expected:
        raise TypeError(f"sql/{name}.sql takes {sorted(expected)}, got {sorted(params)}")
    return con.sql(load(name), params=params or None)


def quote_ident(name: str) -> str:
    """The one place an identifier is spliced into SQL: double-quoted, embedded quotes doubled."""
    return '"' + name.replace('"', '""') + '"'


def materialize(con: duckdb.DuckDBPyConnection, table: str, name: str, **params) -> None:
    """``create or replace temp table <table> as <sql/name.sql>`` with ``params`` bound."""
    expected = declared_params(name)
    if set(params) != expected:
        raise TypeError(f"sql/{name}.sql takes {sorted(expected)}, got {sorted(params)}")
    con.execute(f"create or replace temp table {quote_ident(table)} as " + load(name), params or None).fetchall()


@contextlib.contextmanager
def scope(con: duckdb.DuckDBPyConnection | None = None, *, tables: dict | None = None, views: dict | None = None):
    """A cursor of its own on ``con``'s database (on the shared instance when ``con`` is None) holding the inputs
    of sql/ files: ``tables`` (``{name: Arrow table, DataFrame or relation}``) registered, then ``views``
    (``{name: (sql file name, params)}``, inputs of the later files) registered in order.  Everything registered
    or materialised in the cursor is private to it and dropped on exit."""
    cur = duck.connection() if con is None else con.cursor()
    try:
        for name, data in (tables or {}).items():
            cur.register(name, data)
        for name, (sql_name, params) in (views or {}).items():
            cur.register(name, relation(cur, sql_name, **params))  # a registered relation is private to cur
        yield cur
    finally:
        cur.close()
