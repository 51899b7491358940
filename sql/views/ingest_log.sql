-- name: views/ingest_log
-- purpose: the lake's ingest log (one row per input an ingest attempted) as a view over its Parquet files
-- params: none  (the file list comes from the session variable perflake_ingest_log_files, set by Lake.connect)
-- input: the live files of the ingest_log Delta table when the connection was made (a compaction meanwhile
--        removes them from later versions only: they stay on disk until a vacuum)
-- output: view ingest_log: attempted_at, invocation, source, format, content_sha256, status, reason, transient, run_id,
--         duration_s, input_bytes, stat_key, perflake_version, host
create or replace view ingest_log as
select * from read_parquet(getvariable('perflake_ingest_log_files'), union_by_name = true)
