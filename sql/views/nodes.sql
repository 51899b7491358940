-- name: views/nodes
-- purpose: the lake's nodes table as a view over the committed batches' Parquet files
-- params: none  (the file list comes from the session variable perflake_nodes_files, set from the catalog)
-- input: Parquet files of the committed batches (catalogs/catalog.py Catalog.files), table runs (the pinned runs);
--        a row is kept when the runs table names its (run_id, batch): other tools may have put other rows
--        (an uncommitted batch's, rows copied under another batch) in the same files
-- output: view nodes (catalogs/schema.py NODES_SCHEMA); child_order is NULL for runs ingested before schema 3
create or replace view nodes as
select * exclude (batch) from lake_nodes(getvariable('perflake_nodes_files'))
where (run_id, batch) in (select
    r.run_id,
    r.batch
from runs as r)
