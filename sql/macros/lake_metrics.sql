-- name: macros/lake_metrics
-- purpose: the rows of lake metrics files as perflake sees them: call-path ids back to UBIGINT (stored as int64,
--          63-bit values: the cast is exact), the ingest batch
--          column kept: readers keep the rows whose (run_id, batch) the runs table names (another tool
--          may have put other rows in the same files)
-- params: f  (a list of Parquet files of the metrics table: catalogs/catalog.py Catalog.files)
-- input: Parquet files of the metrics Delta table (catalogs/schema.py stored_schema)
-- output: table macro lake_metrics(f): the metrics columns of catalogs/schema.py, union_by_name over the files
create or replace macro lake_metrics(f) as table
    select * replace (node_id::ubigint as node_id)
    from read_parquet(f, union_by_name = true)
