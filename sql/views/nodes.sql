-- name: views/nodes
-- purpose: the lake's nodes table as a view over the committed batches' Parquet files
-- params: none  (the file list comes from the session variable perflake_nodes_files, set from the catalog)
-- input: Parquet files of committed batches (catalogs/catalog.py)
-- output: view nodes; union_by_name because batches may carry different metric columns; child_order (schema 3)
--         is always a column: NULL for batches written before it existed (the empty branch adds it; filters
--         still reach the Parquet scan)
create or replace view nodes as
select * from read_parquet(getvariable('perflake_nodes_files'), union_by_name = true)
union all by name
select * from (select null::integer as child_order) as no_rows
where false
