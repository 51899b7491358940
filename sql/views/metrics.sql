-- name: views/metrics
-- purpose: the lake's metrics table as a view over the committed batches' Parquet files
-- params: none  (the file list comes from the session variable perflake_metrics_files, set from the catalog)
-- input: Parquet files of committed batches (catalogs/catalog.py)
-- output: view metrics; union_by_name because batches may carry different metric columns
create or replace view metrics as
select * from read_parquet(getvariable('perflake_metrics_files'), union_by_name = true)
