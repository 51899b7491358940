-- name: views/edges
-- purpose: the lake's edges table as a view over the committed batches' Parquet files
-- params: none  (the file list comes from the session variable perflake_edges_files, set from the catalog)
-- input: Parquet files of committed batches (catalogs/catalog.py)
-- output: view edges; union_by_name because batches may carry different metric columns
create or replace view edges as
select * from read_parquet(getvariable('perflake_edges_files'), union_by_name = true)
