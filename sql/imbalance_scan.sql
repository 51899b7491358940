-- name: imbalance_scan
-- purpose: the values of one metric of some runs within one rank range (one task of pipeline/engine/parallel.py;
--          row-group statistics on the sorted run_id prune the scan)
-- params: $files (metrics Parquet files), $run_ids (of one batch), $batch, $metric, $rank_lo, $rank_hi
--         (inclusive rank range);
--         $metric: a metric name, read from its plain or encoded column (catalogs/metric_columns.py)
-- input: metrics Parquet files
-- output: run_id, node_id, rank, thread, value (DOUBLE, NULL where not measured)
with final as (
    select
        run_id,
        node_id,
        rank,
        thread,
        coalesce(
            *columns(
                lambda c: c not in ('run_id', 'batch', 'node_id', 'rank', 'thread') and lake_metric_name(c) = $metric
            )
        ) as value
    from lake_metrics($files)
    where
        list_contains($run_ids, run_id)  -- a filter, not a semi-join: 2x faster on 10 million rows
        and batch = $batch  -- a task's runs are of one batch (rows another tool put there under others: not)
        and rank between $rank_lo and $rank_hi
)

select * from final
