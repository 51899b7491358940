"""Schema of the lake: the version, the table names, and the Arrow schemas of its tables (the one place they are
written down: the runs catalog, the ingest log, and the fixed columns of the data tables nodes, edges, metrics,
rank_summary)."""

from __future__ import annotations

import pyarrow as pa

SCHEMA_VERSION = 5  # a change bumps this and adds a named migration (catalogs/migrations.py)
MARKER = "perflake.json"  # at the lake root: {"format": "perflake-lake", "schema_version": 5, "migrations": [...]}
DESCRIPTION = "README.md"  # at the lake root: what the tables are, for people and other engines (catalogs/describe.py)
RANK_SUMMARY = "rank_summary"  # per run, call path and metric: the statistics over its locations (schema 4)
DATA_TABLES = ("nodes", "edges", "metrics", RANK_SUMMARY)
RUNS = "runs"
INGEST_LOG = "ingest_log"  # one row per input an ingest attempted (perflake.ingest.log)
TABLES = (RUNS, *DATA_TABLES, INGEST_LOG)  # every table is a Delta Lake table in <root>/<name>/ (catalogs/delta.py)
# the column whose range in a file says which commits the file holds (readers pick files by it; compaction merges
# whole keys): the ingest batch, or the ingest invocation in the log
KEY_COLUMN = {RUNS: "batch", INGEST_LOG: "invocation", **{t: "batch" for t in DATA_TABLES}}
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
# rank_summary: written with the batch's other data files (perflake.ingest.summarize), one row per run, call path
# and metric with a value at a location (rank >= 0, any thread; rank -1, a summary profile, is not a location):
# what every per-rank question needs (imbalance, the per-run means of ensembles, comparisons and regressions)
# without reading the per-rank rows again.  Files sorted by metric, run_id, node_id; they do not store the mean
# (13 MiB of 86 for 1,000 runs of 1,000 call paths and 2 metrics): the view computes it, as every reader does.
RANK_SUMMARY_TOP = 8  # top_ranks holds at most this many ranks (imbalance's k above it reads the metrics rows)
RANK_SUMMARY_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("node_id", pa.uint64()),
        ("metric", pa.string()),
        ("count", pa.int64()),  # locations with a value
        ("total", pa.float64()),  # sum of the values
        ("mean", pa.float64()),  # total / count (the view's; not in the files)
        ("m2", pa.float64()),  # sum of squared deviations from mean: variance = m2 / (count - ddof)
        ("min", pa.float64()),
        ("max", pa.float64()),
        ("min_rank", pa.int32()),  # rank of a location holding min (ties: the lowest rank)
        ("max_rank", pa.int32()),  # rank of a location holding max (ties: the lowest rank) = top_ranks[1]
        ("top_ranks", pa.list_(pa.int32())),  # the RANK_SUMMARY_TOP ranks of largest value, a rank's value being
        # its max over threads, ties to the lower rank (a prefix of it is the top k for any smaller k)
        ("locations", pa.int64()),  # locations of the run (rank >= 0, any thread), with or without a value here
    ]
)
RANK_SUMMARY_FILE_SCHEMA = RANK_SUMMARY_SCHEMA.remove(RANK_SUMMARY_SCHEMA.get_field_index("mean"))
DATA_SCHEMAS = {"nodes": NODES_SCHEMA, "edges": EDGES_SCHEMA, "metrics": METRICS_KEY_SCHEMA,
                RANK_SUMMARY: RANK_SUMMARY_SCHEMA}
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


# -- the tables as stored (schema 5: Delta Lake tables, catalogs/delta.py) -----------------------------------------
# Open table formats have no unsigned 64-bit integer, so the call-path id columns are stored as int64: the ids are
# 63-bit (perflake.identity), so the value is the same in every engine; the lake's views give them back as UBIGINT.
# Every data table carries ``batch`` (the ingest commit that wrote the row) after run_id: a reader keeps the rows
# of the batches the runs table names (catalogs/delta.py).  run_id is a plain string in every table.
ID_COLUMNS = {"nodes": ("node_id", "parent_id"), "edges": ("parent_id", "child_id"), "metrics": ("node_id",),
              RANK_SUMMARY: ("node_id",)}


def stored_schema(table: str) -> pa.Schema:
    """The schema a table is created with (metrics gains one nullable float64 column per metric as batches
    bring them: schema evolution by merge)."""
    if table == RUNS:
        return RUNS_SCHEMA
    if table == INGEST_LOG:
        return INGEST_LOG_SCHEMA
    base = RANK_SUMMARY_FILE_SCHEMA if table == RANK_SUMMARY else DATA_SCHEMAS[table]
    fields = [pa.field(f.name, pa.int64()) if f.name in ID_COLUMNS[table] else f for f in base]
    return pa.schema([fields[0], pa.field("batch", pa.string()), *fields[1:]])
