"""Metric names are data: how a metric's name maps to its column in the lake's ``metrics`` table, and back.

The one place this rule is written down (catalogs/describe.py repeats it for other engines; the ``sql/`` files
that read metric columns call the DuckDB macro ``lake_metric_name(c)``, sql/macros/lake_metric_name.sql, which is
:data:`SQL_DECODE`: the same :func:`decode` in DuckDB).

The metrics table has one float64 column per metric (Delta schema evolution by merge).  Delta Lake (delta-rs),
DuckDB and Spark resolve column names case-insensitively, so two metrics whose names differ only in case --
gprof2dot's ``calls`` and TAU's ``Calls`` -- cannot both be plain columns.  Two names *collide* when their
:func:`key` is equal: ``unicodedata.normalize("NFKC", name).casefold()`` (stricter than any engine's folding).

The rule
--------
* The **encoded** column of a name is ``<name>~<first 8 hex digits of sha256(name as UTF-8)>``
  (:func:`encoded`); the whole 64-digit hash only when that 8-digit form collides too (a metric literally named
  like another's encoded column in another case).
* **Decoding** (:func:`decode`): a column ``<base>~<hex>`` whose hex is the first 8 (or all 64) lowercase hex
  digits of sha256(base) holds metric ``base``; any other column holds the metric of its own name.  A real
  metric named ``x~1234abcd`` (not x's hash) is therefore read as itself; a name that *would* decode to
  something else ("looks encoded") is never a plain column: it always gets its encoded column.
* **Writing** (:func:`assign`, ingest): a name keeps the column the lake's metrics table already has for it
  (the plain one, else an encoded one); a new name is a plain column unless its key collides with a column
  the table already has (another metric's, or a key column: run_id, batch, node_id, rank, thread) or with a
  name of the same batch placed before it (names are placed in sorted order), in which case it gets its
  encoded column.  So the first of colliding names to reach a lake keeps its plain name; the others are
  encoded, whatever the order they come in.
* **Reading**: a column ``c`` holds metric ``N`` iff ``c`` is not a key column and ``decode(c) == N``; readers
  need not know the table's schema.  Normally one column per name.  Two concurrent ingests whose names
  collide only under NFKC casefolding (delta-rs's own duplicate check is simpler) may both add columns for one
  name; every run's rows use exactly one of them (a batch writes one column per name), so readers coalesce
  the columns of a name (:func:`to_names`; ``coalesce(*columns(...))`` in SQL).

The runs catalog (``runs.metrics``), the rank summary (``rank_summary.metric``) and every GraphFrame, ensemble
and statistic carry the metric's real name; only the metrics table's column may be encoded.
"""

from __future__ import annotations

import hashlib
import unicodedata
from collections.abc import Iterable

SEP = "~"
SHORT, FULL = 8, 64  # hex digits of sha256 in an encoded column: the short form, or the whole hash
KEY_COLUMNS = ("run_id", "batch", "node_id", "rank", "thread")  # the metrics table's columns that are no metric
_HEX = frozenset("0123456789abcdef")

# decode(c) in DuckDB: the body of the macro lake_metric_name(c) (sql/macros/lake_metric_name.sql holds it
# verbatim: tests/test_metric_names.py checks it, and that it agrees with decode() on awkward names)
SQL_DECODE = """case
    when regexp_matches(c, '~[0-9a-f]{8}$') and left(sha256(left(c, -9)), 8) = right(c, 8) then left(c, -9)
    when regexp_matches(c, '~[0-9a-f]{64}$') and sha256(left(c, -65)) = right(c, 64) then left(c, -65)
    else c
end"""


def key(name: str) -> str:
    """What engines may fold a column name to: two names with the same key cannot both be columns."""
    return unicodedata.normalize("NFKC", name).casefold()


def _sha(name: str) -> str:
    return hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()


def encoded(name: str, digits: int = SHORT) -> str:
    """The encoded column of ``name``: ``<name>~<first digits hex of sha256(name)>``."""
    return f"{name}{SEP}{_sha(name)[:digits]}"


def decode(column: str) -> str:
    """The metric a column holds: ``base`` for ``base~<sha256(base)[:8] or [:64]>``, else the column's name."""
    base, sep, suffix = column.rpartition(SEP)
    if sep and len(suffix) in (SHORT, FULL) and set(suffix) <= _HEX and _sha(base).startswith(suffix):
        return base
    return column


def plain_allowed(name: str, reserved: Iterable[str] = KEY_COLUMNS) -> bool:
    """Whether ``name`` may ever be its own column: it does not look encoded and is no key column."""
    return decode(name) == name and key(name) not in {key(r) for r in reserved}


def candidates(name: str, reserved: Iterable[str] = KEY_COLUMNS) -> list[str]:
    """Every column that may hold metric ``name`` (those :func:`decode` maps to it, key columns left out)."""
    out = [name] if plain_allowed(name, reserved) else []
    return out + [encoded(name, SHORT), encoded(name, FULL)]


def assign(names: Iterable[str], existing: Iterable[str] = (), *, reserved: Iterable[str] = KEY_COLUMNS
           ) -> dict[str, str]:
    """name -> column for the metrics ``names`` written next to the columns ``existing`` (the metrics table's
    schema, key columns included), by the rule of the module docstring.  Deterministic: the names are placed
    in sorted order.  Raises ValueError in the one case no column is free (a lake holding metrics literally
    named like every encoded form of ``name`` in another case)."""
    reserved = tuple(reserved)
    present = set(existing)
    taken = {key(c) for c in present} | {key(r) for r in reserved}
    out: dict[str, str] = {}
    for name in sorted(set(names)):
        forms = [encoded(name, SHORT), encoded(name, FULL)]
        plain = plain_allowed(name, reserved)
        column = next((c for c in ([name] if plain else []) + forms if c in present), None)
        if column is None:
            free = [c for c in ([name] if plain else []) + forms if key(c) not in taken]
            if not free:
                raise ValueError(f"metric {name!r}: its name and its encoded columns {forms} all collide with "
                                 "columns the metrics table has (names differing only in case)")
            column = free[0]
        out[name] = column
        present.add(column)
        taken.add(key(column))
    return out


def internal(names: Iterable[str], reserved: Iterable[str]) -> dict[str, str]:
    """name -> a column name distinct from every other under :func:`key` and from ``reserved``: what a metric's
    column is called inside one DuckDB statement (a table with ``calls`` and ``Calls`` would lose one)."""
    return assign(names, reserved=reserved)


def is_identity(mapping: dict[str, str]) -> bool:
    return all(k == v for k, v in mapping.items())


def to_names(table, keys: Iterable[str]):
    """A pyarrow table whose columns after ``keys`` are metrics-table columns, with those columns named by the
    metric they hold (:func:`decode`); columns of one name (see the module docstring) coalesced into one."""
    import pyarrow.compute as pc

    keys = set(keys)
    groups: dict[str, list[int]] = {}
    for i, c in enumerate(table.column_names):
        groups.setdefault(c if c in keys else decode(c), []).append(i)
    if all(len(v) == 1 and table.column_names[v[0]] == k for k, v in groups.items()):
        return table
    import pyarrow as pa

    arrays, fields = [], []
    for name, cols in groups.items():
        column = table.column(cols[0])
        if len(cols) > 1:
            column = pc.coalesce(*(table.column(i) for i in cols))
        arrays.append(column)
        fields.append(pa.field(name, column.type))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))
