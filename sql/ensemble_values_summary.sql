-- name: ensemble_values_summary
-- purpose: the per-run value of one metric at every call path of the selected runs, as sql/ensemble_values.sql
--          defines it (the mean over the run's locations -- rank >= 0, every thread -- where the node has a
--          value), read from the lake's rank_summary table (one row per run, call path and metric: the mean
--          is total / count there) instead of the per-rank metrics rows
-- params: $files, $metric
--         $files: rank_summary Parquet files holding the selected runs; $metric: metric name
-- input: selection_t(run_id, batch, group_id): the selected runs and the group of each (a run may be listed
--        under several groups)
-- output: group_id, run_id, node_id, value (DOUBLE); one row per group, run and node with a value
with final as (
    select
        s.group_id,
        p.run_id,
        p.node_id,
        p.total / p.count as value
    from lake_rank_summary($files) as p
    inner join selection_t as s on p.run_id = s.run_id and p.batch = s.batch
    where p.metric = $metric
)

select * from final
