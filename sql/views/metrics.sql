-- name: views/metrics
-- purpose: the lake's metrics table as a view over the committed batches' Parquet files
-- params: none  (the file list comes from the session variable perflake_metrics_files, set from the catalog)
-- input: Parquet files of the committed batches (catalogs/catalog.py Catalog.files), table runs (the pinned runs);
--        a row is kept when the runs table names its (run_id, batch): other tools may have put other rows
--        (an uncommitted batch's, rows copied under another batch) in the same files
-- output: view metrics; union_by_name because batches may carry different metric columns
create or replace view metrics as
select * exclude (batch) from lake_metrics(getvariable('perflake_metrics_files'))
where (run_id, batch) in (select
    r.run_id,
    r.batch
from runs as r)
