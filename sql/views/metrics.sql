-- name: views/metrics
-- purpose: the lake's metrics table as a view over the committed batches' Parquet files
-- params: none  (the file list comes from the session variable perflake_metrics_files, set from the catalog)
-- input: Parquet files of the committed batches (catalogs/catalog.py Catalog.files), table runs (the pinned runs);
--        perflake_exact: the files hold no run outside runs (else the filter keeps runs' rows only)
-- output: view metrics; union_by_name because batches may carry different metric columns
create or replace view metrics as
select * from lake_metrics(getvariable('perflake_metrics_files'))
where getvariable('perflake_exact') or run_id in (select r.run_id from runs as r)
