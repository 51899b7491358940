-- name: ensemble_frame_values_summary
-- purpose: the values of an Ensemble's dataframe with one row per (run, call path), as
--          sql/ensemble_frame_values.sql gives them (the mean of every requested metric over the run's locations
--          where the call path has a value), read from the lake's rank_summary table (per run, call path and
--          metric: total and count over those locations) instead of the per-rank metrics rows, in long form
-- params: $files (rank_summary Parquet files holding the selected runs), $metrics (LIST of metric names)
-- input: selection_t(run_id, batch): the selected runs
-- output: node_id, profile (the run id), metric, value (DOUBLE: total / count, NULL where count is 0);
--         one row per run, call path and requested metric the summary holds
with final as (
    select
        s.node_id,
        s.run_id as profile,
        s.metric,
        case when s.count > 0 then s.total / s.count end as value
    from lake_rank_summary($files) as s
    where list_contains($metrics, s.metric) and (s.run_id, s.batch) in (select
        r.run_id,
        r.batch
    from selection_t as r)
)

select * from final
