-- name: ensemble_values
-- purpose: the per-run value of one metric at every call path of the selected runs: the mean over the
--          run's locations (rank >= 0, every thread) where the node has a value; absent rows and NULLs
--          are excluded, rank -1 (a summary profile) is not a location
-- params: $files, $metric, $one_location
--         $files: metrics Parquet files holding the selected runs; $metric: metric name (read from its plain
--         or encoded column: catalogs/metric_columns.py);
--         $one_location: true when every selected run has one location (1 rank x 1 thread in the
--         catalog): its value at a node is then its one row's value and the per-run grouping is skipped
-- input: selection_t(run_id, batch, group_id): the selected runs and the group of each (a run may be listed
--        under several groups)
-- output: group_id, run_id, node_id, value (DOUBLE); one row per group, run and node with a value
with picked as (
    select
        run_id,
        node_id,
        coalesce(
            *columns(
                lambda c: c not in ('run_id', 'batch', 'node_id', 'rank', 'thread') and lake_metric_name(c) = $metric
            )
        ) as value
    from lake_metrics($files)
    where rank >= 0 and (run_id, batch) in (select
        s.run_id,
        s.batch
    from selection_t as s)
),

per_run as (
    select
        run_id,
        node_id,
        value
    from picked
    where $one_location and value is not null
    union all
    select
        run_id,
        node_id,
        avg(value) as value
    from picked
    where not $one_location and value is not null
    group by run_id, node_id
),

final as (
    select
        s.group_id,
        p.run_id,
        p.node_id,
        p.value
    from per_run as p
    inner join selection_t as s on p.run_id = s.run_id
)

select * from final
