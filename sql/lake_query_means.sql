-- name: lake_query_means
-- purpose: per (run, call path), the mean of one metric over the run's rows of that call path (all ranks and
--          threads), NaN and NULL skipped: what a query condition reads of a node with multi_index_mode "off"
--          (perflake.query.predicates: pandas' mean per node, with compensated summation as here)
-- params: $files (metrics Parquet files holding the runs), $metric (metric name: read from its plain or encoded
--         column, catalogs/metric_columns.py)
-- input: query_runs(run_id VARCHAR, run INTEGER, batch VARCHAR): the runs to read and their positions
-- output: run INTEGER, node_id UBIGINT, value DOUBLE (NULL when no row has a number), n BIGINT (rows); one row per
--         (run, call path) with at least one metrics row
with per_node as (
    select
        r.run,
        m.node_id,
        favg(m.value) filter (where not isnan(m.value)) as value,
        count(*) as n
    from (
        select
            run_id,
            batch,
            node_id,
            coalesce(
                *columns(
                    lambda c: c not in ('run_id', 'batch', 'node_id', 'rank', 'thread')
                    and lake_metric_name(c) = $metric
                )
            ) as value
        from lake_metrics($files)
    ) as m
    inner join query_runs as r on m.run_id = r.run_id and m.batch = r.batch
    group by r.run, m.node_id
)

select * from per_node
