-- name: run_metrics
-- purpose: the metric rows of one run, only the metric columns the run has
-- params: $files (the run's batch file), $run_id, $batch (its batch), $metrics (the run's metric names, from the
--         catalog)
-- input: metrics Parquet files
-- output: node_id, rank, thread, the metrics table's columns holding the names in $metrics: a name's plain or
--         encoded column (catalogs/metric_columns.py; the caller names them back with metric_columns.to_names)
with final as (
    select
        node_id,
        rank,
        thread,
        columns(
            lambda c: c not in ('run_id', 'batch', 'node_id', 'rank', 'thread')
            and list_contains($metrics, lake_metric_name(c))
        )
    from lake_metrics($files)
    where run_id = $run_id and batch = $batch
)

select * from final
