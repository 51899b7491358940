"""Schema of the lake: the version, the table names, and the Arrow schema of the runs catalog."""

from __future__ import annotations

import pyarrow as pa

SCHEMA_VERSION = 1
MARKER = "perflake.json"  # at the lake root: {"format": "perflake-lake", "schema_version": 1, ...}
DATA_TABLES = ("nodes", "edges", "metrics")
RUNS = "runs"

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
