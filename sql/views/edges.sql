-- name: views/edges
-- purpose: the lake's edges table as a view over the committed batches' Parquet files
-- params: none  (the file list comes from the session variable perflake_edges_files, set from the catalog)
-- input: Parquet files of the committed batches (catalogs/catalog.py Catalog.files), table runs (the pinned runs);
--        perflake_exact: the files hold no run outside runs (else the filter keeps runs' rows only)
-- output: view edges; union_by_name because batches may carry different metric columns
create or replace view edges as
select * from lake_edges(getvariable('perflake_edges_files'))
where getvariable('perflake_exact') or run_id in (select r.run_id from runs as r)
