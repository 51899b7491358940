"""Schema of the lake: the version, the table names, and the Arrow schemas of its tables (the one place they are
written down: the runs catalog, the ingest log, and the fixed columns of the data tables nodes, edges, metrics)."""

from __future__ import annotations

import pyarrow as pa

SCHEMA_VERSION = 3  # a change bumps this and adds a named migration (catalogs/migrations.py)
MARKER = "perflake.json"  # at the lake root: {"format": "perflake-lake", "schema_version": 3, "migrations": [...]}
DATA_TABLES = ("nodes", "edges", "metrics")
RUNS = "runs"
INGEST_LOG = "ingest_log"  # one Parquet file per ingest invocation that attempted something (perflake.ingest.log)
INGEST_STATUSES = ("ingested", "skipped", "failed")

# The data tables, as the views of ``Lake.connect()`` show them (an empty lake registers empty tables of these
# schemas).  Ingest writes them (perflake.ingest.normalize); metrics has, after these key columns, one float64
# column per metric of the batch (null where not measured).
NODES_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("node_id", pa.uint64()),  # the call-path id (perflake.identity)
        ("parent_id", pa.uint64()),  # null for a root
        ("depth", pa.int32()),  # root 0
        ("name", pa.string()),  # the frame: perflake.vocabulary.FRAME_SCHEMA's attributes
        ("type", pa.string()),
        ("file", pa.string()),
        ("line", pa.int64()),
        ("end_line", pa.int64()),
        ("module", pa.string()),
        ("child_order", pa.int32()),  # position among its siblings in the input (null in lakes before v3)
    ]
)
EDGES_SCHEMA = pa.schema([("run_id", pa.string()), ("parent_id", pa.uint64()), ("child_id", pa.uint64())])
METRICS_KEY_SCHEMA = pa.schema([("run_id", pa.string()), ("node_id", pa.uint64()), ("rank", pa.int32()),
                                ("thread", pa.int32())])
DATA_SCHEMAS = {"nodes": NODES_SCHEMA, "edges": EDGES_SCHEMA, "metrics": METRICS_KEY_SCHEMA}
assert tuple(DATA_SCHEMAS) == DATA_TABLES

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
