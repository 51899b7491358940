"""Schema of the lake: the version, the table names, and the Arrow schemas of the runs catalog and the
ingest log."""

from __future__ import annotations

import pyarrow as pa

SCHEMA_VERSION = 3  # a change bumps this and adds a named migration (catalogs/migrations.py)
MARKER = "perflake.json"  # at the lake root: {"format": "perflake-lake", "schema_version": 3, "migrations": [...]}
DATA_TABLES = ("nodes", "edges", "metrics")
RUNS = "runs"
INGEST_LOG = "ingest_log"  # one Parquet file per ingest invocation that attempted something (perflake.ingest_log)
INGEST_STATUSES = ("ingested", "skipped", "failed")

METRIC_STRUCT = pa.struct([("name", pa.string()), ("role", pa.string()), ("unit", pa.string()), ("pair", pa.string())])

RUNS_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),  # first 16 hex digits of content_sha256
        ("content_sha256", pa.string()),  # sha256 over the input files' relative paths and bytes
        ("batch", pa.string()),  # the ingest batch whose Parquet files hold the run's rows
        ("source", pa.string()),  # path the run was ingested from
        ("format", pa.string()),  # reader name: tau, ...
        ("reader_version", pa.string()),
        ("schema_version", pa.int32()),
        ("perflake_version", pa.string()),
        ("n_files", pa.int32()),
        ("input_bytes", pa.int64()),
        ("ranks", pa.int32()),
        ("threads", pa.int32()),
        ("n_nodes", pa.int64()),
        ("metrics", pa.list_(METRIC_STRUCT)),
        ("exc_metrics", pa.list_(pa.string())),
        ("inc_metrics", pa.list_(pa.string())),
        ("app", pa.string()),  # well-known metadata, promoted to columns (catalogs/well_known.py)
        ("nprocs", pa.int32()),
        ("launch_time", pa.timestamp("us", tz="UTC")),
        ("hostname", pa.string()),
        ("metadata", pa.string()),  # every key/value the input carries, as a JSON object
        ("ingested_at", pa.timestamp("us", tz="UTC")),
    ]
)

INGEST_LOG_SCHEMA = pa.schema(
    [
        ("attempted_at", pa.timestamp("us", tz="UTC")),  # when the input was looked at
        ("invocation", pa.string()),  # id of the ingest invocation (the log file's id)
        ("source", pa.string()),  # absolute path of the run (a file or a directory)
        ("format", pa.string()),  # reader kind: tau, caliper, ...
        ("content_sha256", pa.string()),  # NULL when the input could not be hashed
        ("status", pa.string()),  # ingested | skipped | failed
        ("reason", pa.string()),  # why skipped or failed (one line); NULL when ingested
        ("transient", pa.bool_()),  # a failure of the machine, not of the input (memory, I/O): retried next time
        ("run_id", pa.string()),  # the run ingested, or already present
        ("duration_s", pa.float64()),  # hashing + reading + this run's share of normalising and writing
        ("input_bytes", pa.int64()),
        ("stat_key", pa.string()),  # digest of the input files' names, sizes, mtimes, ctimes, inodes
        ("perflake_version", pa.string()),
        ("host", pa.string()),  # machine that ran the ingest (lakes on shared storage)
    ]
)
