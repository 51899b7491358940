-- name: imbalance
-- purpose: per-rank load imbalance of every call path of the given runs: statistics over the locations
--          (rank, thread) where the node has a value (absent locations are excluded)
-- params: $files (metrics Parquet files), $run_ids, $metrics (metric names to analyse)
-- input: metrics Parquet files; callpaths_t(run_id, node_id, path) from sql/callpaths.sql
-- output: run_id, node_id, path, metric, locations, mean, min, max, std (sample, ddof=1),
--         imbalance (max/mean), max_rank (a rank holding the max)
with long as (
    unpivot (
        select run_id, node_id, rank, thread, columns(lambda c: list_contains($metrics, c))
        from read_parquet($files, union_by_name = true)
        where list_contains($run_ids, run_id)
    )
    on columns(lambda c: list_contains($metrics, c))
    into name metric value value
),

stats as (
    select
        run_id,
        node_id,
        metric,
        count(*) as locations,
        avg(value) as mean,
        min(value) as min,
        max(value) as max,
        stddev_samp(value) as std,
        arg_max(rank, value) as max_rank
    from long
    group by run_id, node_id, metric
),

final as (
    select
        s.run_id,
        s.node_id,
        p.path,
        s.metric,
        s.locations,
        s.mean,
        s.min,
        s.max,
        s.std,
        case when s.mean > 0 then s.max / s.mean end as imbalance,
        s.max_rank
    from stats as s
    inner join callpaths_t as p on s.run_id = p.run_id and s.node_id = p.node_id
)

select * from final
order by imbalance desc nulls last, mean desc
