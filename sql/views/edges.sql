-- name: views/edges
-- purpose: the lake's edges table as a view over the committed batches' Parquet files
-- params: none  (the file list comes from the session variable perflake_edges_files, set from the catalog)
-- input: Parquet files of the committed batches (catalogs/catalog.py Catalog.files), table runs (the pinned runs);
--        a row is kept when the runs table names its (run_id, batch): other tools may have put other rows
--        (an uncommitted batch's, rows copied under another batch) in the same files
-- output: view edges; union_by_name because batches may carry different metric columns
create or replace view edges as
select * exclude (batch) from lake_edges(getvariable('perflake_edges_files'))
where (run_id, batch) in (select
    r.run_id,
    r.batch
from runs as r)
