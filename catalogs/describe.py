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
               "(null where a run did not measure it)",
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
        extra = " + one float64 column per metric" if name == "metrics" else ""
        lines.append(f"Columns: {cols}{extra}.")
        lines.append("")
    lines += ["## Reading it without perflake", "", RECIPES.replace("LAKE", url.rstrip("/"))]
    return "\n".join(lines)


def write_description(cat) -> None:
    """Write (or rewrite) ``<root>/README.md``."""
    cat._atomic_write(f"{cat.root}/{DESCRIPTION}", text(cat.url).encode())
