-- name: views/nodes
-- purpose: the lake's nodes table as a view over the committed batches' Parquet files
-- params: none  (the file list comes from the session variable perflake_nodes_files, set from the catalog)
-- input: Parquet files of committed batches (catalogs/catalog.py)
-- output: view nodes; union_by_name because batches may carry different metric columns
create or replace view nodes as
select * from read_parquet(getvariable('perflake_nodes_files'), union_by_name = true)
