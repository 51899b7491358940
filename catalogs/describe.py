"""The lake's description of itself: ``<root>/README.md``, for people and for engines other than perflake.

Written when a lake is created or migrated, from the schemas in catalogs/schema.py: what each table is, its
columns and types, and how to read the committed runs without perflake (the recipes the README's
"Reading a lake without perflake" section shows and tests/test_lake_engines.py runs).
"""

from __future__ import annotations

from perflake.catalogs.schema import DESCRIPTION, INGEST_LOG, RANK_SUMMARY, SCHEMA_VERSION, TABLES, stored_schema

PURPOSE = {
    "runs": "one row per run: its id, content hash, source, format, ranks, threads, metrics and metadata; "
            "**the commit point**: a run exists once its row is here",
    "nodes": "one row per run and call path: node_id (the call-path id, the same in every run), parent_id, "
             "depth, the frame (name, type, file, line, module), child_order",
    "edges": "one row per run and parent/child pair of call paths",
    "metrics": "one row per run, call path, rank and thread; one float64 column per metric "
               "(null where a run did not measure it), named by the metric unless names collide (Metric columns)",
    RANK_SUMMARY: "one row per run, call path and metric: count, total, m2 (variance = m2 / (count - ddof)), "
                  "min, max and their ranks, the top ranks, over the run's locations",
    INGEST_LOG: "one row per input an ingest attempted: ingested, skipped or failed, and why",
}

RECIPES = '''\
Every table is a **Delta Lake** table (`<table>/_delta_log/` + Parquet files).  Rows are appended to the data
tables before the `runs` row that commits them: keep the rows whose `(run_id, batch)` is in `runs` (the semi
join below) and you see exactly the committed runs, whatever an ingest is doing meanwhile.

DuckDB (no extension needed):

```python
import deltalake, duckdb
runs = deltalake.DeltaTable("LAKE/runs").to_pyarrow_table(columns=["run_id", "batch"])
metrics = duckdb.sql("select m.* exclude (batch) from read_parquet($f, union_by_name = true) m semi join runs using "
                     "(run_id, batch)", params={"f": deltalake.DeltaTable("LAKE/metrics").file_uris()}).df()
```

polars:

```python
import polars as pl
runs = pl.scan_delta("LAKE/runs").select("run_id", "batch")
metrics = pl.scan_delta("LAKE/metrics").join(runs, on=["run_id", "batch"], how="semi")
```

pyarrow:

```python
import deltalake
runs = deltalake.DeltaTable("LAKE/runs").to_pyarrow_table(columns=["run_id", "batch"])
metrics = deltalake.DeltaTable("LAKE/metrics").to_pyarrow_table().join(runs, ["run_id", "batch"], join_type="left semi")
```
'''


def metric_columns_text() -> str:
    """How metric names map to the metrics table's columns (catalogs/metric_columns.py), for other engines."""
    from perflake.catalogs.metric_columns import FULL, SHORT, SQL_DECODE

    return f"""\
## Metric columns

Metric names are data: the runs table's `metrics` list, `rank_summary.metric` and perflake's frames carry each
metric's own name.  In the `metrics` table a metric's column is its name, except where that name collides with
a column the table already had (Delta Lake, DuckDB and Spark compare column names case-insensitively; perflake
compares `unicodedata.normalize("NFKC", name).casefold()`): gprof2dot's `calls` and TAU's `Calls`, or a metric
named like a key column (`run_id`, `batch`, `node_id`, `rank`, `thread`).  Such a metric's column is
**`<name>~<the first {SHORT} hex digits of sha256(name as UTF-8)>`** (all {FULL} digits if that collides too); a
name that itself ends in `~` and the right hash of what precedes it is always stored so.  The first of colliding
names to reach the lake keeps its plain column.

To read a column back to its metric: a column `<base>~<hex>` whose `<hex>` is the first {SHORT} (or all {FULL})
lowercase hex digits of sha256(`<base>`) holds metric `<base>`; any other column holds the metric of its own
name (so a metric really named `x~1234abcd` is its own column).  Rarely (two concurrent ingests bringing names
that differ only under that normalisation) one name has two columns: each run's rows use one of them, so
coalesce them.  In DuckDB, with the column name as `c`, the metric is:

```sql
{SQL_DECODE}
```

Select a metric by that decoded name, not by its name alone: `select calls from metrics` in DuckDB resolves to a
column `Calls` if the table has one (names are case-insensitive there) while `calls` is `calls~<hash>`; instead
`select run_id, node_id, rank, thread, coalesce(*columns(lambda c: c not in ('run_id', 'node_id', 'rank', 'thread')
and <the expression above> = 'calls')) as calls from metrics`.
"""


def text(url: str) -> str:
    lines = [f"# A perflake lake (schema version {SCHEMA_VERSION})", "",
             "Call-path profiles of HPC runs (HPCToolkit, Caliper, TAU, Hatchet JSON) written by perflake "
             "(`perflake ingest PROFILES --lake " + url + "`).  `perflake.json` records the schema version and "
             "the migrations applied.  Call-path ids (`node_id`, `parent_id`, `child_id`) are 63-bit values "
             "stored as int64; `run_id` is the first 16 hex digits of the input's sha256.", "", "## Tables", ""]
    for name in TABLES:
        schema = stored_schema(name)
        lines.append(f"### `{name}`")
        lines.append("")
        lines.append(PURPOSE[name] + ".")
        lines.append("")
        cols = ", ".join(f"`{f.name}` {f.type}" for f in schema)
        extra = " + one float64 column per metric (see Metric columns)" if name == "metrics" else ""
        lines.append(f"Columns: {cols}{extra}.")
        lines.append("")
    lines += [metric_columns_text(), "## Reading it without perflake", "", RECIPES.replace("LAKE", url.rstrip("/"))]
    return "\n".join(lines)


def write_description(cat) -> None:
    """Write (or rewrite) ``<root>/README.md``."""
    cat._atomic_write(f"{cat.root}/{DESCRIPTION}", text(cat.url).encode())
