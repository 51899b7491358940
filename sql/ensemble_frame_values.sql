-- name: ensemble_frame_values
-- purpose: the values of an Ensemble's dataframe: per (run, call path) -- per (run, call path, rank) with
--          $per_rank -- the mean of every requested metric over the run's locations (rank >= 0; every thread)
--          where the call path has a row.  NULL and NaN are left out of each mean (a location without the
--          metric is not a zero); rank -1 (a summary profile) is not a location
-- params: $files, $metrics, $per_rank, $one_location
--         $files: metrics Parquet files holding the selected runs; $metrics: LIST of metric names
--         (those no file has are simply absent from the output); $per_rank: one row per rank instead of one
--         per run; $one_location: true when every selected run has one location (1 rank x 1 thread in the
--         catalog): a row is then its own mean and the grouping is skipped
-- input: selection_t(run_id, batch): the selected runs
-- output: node_id, profile (the run id), rank (-1 unless $per_rank), one DOUBLE column per metrics-table column
--         holding a name of $metrics: the name's plain or encoded column (catalogs/metric_columns.py; the caller
--         names them back with metric_columns.to_names)
with picked as (
    select
        run_id,
        node_id,
        rank,
        nullif(
            columns(
                lambda c: c not in ('run_id', 'batch', 'node_id', 'rank', 'thread')
                and list_contains($metrics, lake_metric_name(c))
            )::double,
            'nan'::double
        )
    from lake_metrics($files)
    where rank >= 0 and (run_id, batch) in (select
        s.run_id,
        s.batch
    from selection_t as s)
),

single as (
    select
        node_id,
        run_id as profile,
        case when $per_rank then rank else -1 end as rank,
        columns(lambda c: c not in ('run_id', 'node_id', 'rank'))
    from picked
    where $one_location
),

averaged as (
    select
        node_id,
        run_id as profile,
        case when $per_rank then rank else -1 end as rank,
        avg(columns(lambda c: c not in ('run_id', 'node_id', 'rank')))
    from picked
    where not $one_location
    group by all
),

final as (
    select * from single
    union all
    select * from averaged
)

select * from final
