-- name: run_metrics
-- purpose: the metric rows of one run, only the metric columns the run has
-- params: $files (the run's batch file), $run_id, $metrics (the run's metric names, from the catalog)
-- input: metrics Parquet files
-- output: node_id, rank, thread, one DOUBLE column per name in $metrics
with final as (
    select
        node_id,
        rank,
        thread,
        columns(lambda c: list_contains($metrics, c))
    from lake_metrics($files)
    where run_id = $run_id
)

select * from final
