-- name: lake_query_rows
-- purpose: every metrics row of one metric for some runs: what a query condition tests row by row with
--          multi_index_mode "any" or "all" (perflake/analytics/lake_match.py reduces the rows per node)
-- params: $files (metrics Parquet files holding the runs), $metric (metric name: read from its plain or encoded
--         column, catalogs/metric_columns.py)
-- input: query_runs(run_id VARCHAR, run INTEGER, batch VARCHAR): the runs to read and their positions
-- output: run INTEGER, node_id UBIGINT, value DOUBLE (NULL where not measured); one row per metrics row
with final as (
    select
        r.run,
        m.node_id,
        coalesce(
            *columns(
                lambda c: c not in ('run_id', 'batch', 'node_id', 'rank', 'thread') and lake_metric_name(c) = $metric
            )
        ) as value
    from lake_metrics($files) as m
    inner join query_runs as r on m.run_id = r.run_id and m.batch = r.batch
)

select * from final
