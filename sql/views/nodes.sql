-- name: views/nodes
-- purpose: the lake's nodes table as a view over the committed batches' Parquet files
-- params: none  (the file list comes from the session variable perflake_nodes_files, set from the catalog)
-- input: Parquet files of the committed batches (catalogs/catalog.py Catalog.files), table runs (the pinned runs);
--        perflake_exact: the files hold no run outside runs (else the filter keeps runs' rows only)
-- output: view nodes (catalogs/schema.py NODES_SCHEMA); child_order is NULL for runs ingested before schema 3
create or replace view nodes as
select * from lake_nodes(getvariable('perflake_nodes_files'))
where getvariable('perflake_exact') or run_id in (select r.run_id from runs as r)
