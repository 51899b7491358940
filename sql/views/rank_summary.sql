-- name: views/rank_summary
-- purpose: the lake's rank_summary table (catalogs/schema.py: per run, call path and metric, the statistics
--          over the run's locations) as a view over the committed batches' Parquet files
-- params: none  (the file list comes from the session variable perflake_rank_summary_files, set from the catalog)
-- input: Parquet files of committed batches (catalogs/catalog.py); written with each batch since schema 4, by
--        the migration 0003-rank-summary for the batches before
-- output: view rank_summary: run_id, node_id, metric, count, total, mean, m2, min, max, min_rank, max_rank,
--         top_ranks, locations
create or replace view rank_summary as
select
    run_id,
    node_id,
    metric,
    count,
    total,
    total / count as mean,  -- not stored: the files hold what cannot be derived
    m2,
    min,
    max,
    min_rank,
    max_rank,
    top_ranks,
    locations
from lake_rank_summary(getvariable('perflake_rank_summary_files'))
where (run_id, batch) in (select
    r.run_id,
    r.batch
from runs as r)
