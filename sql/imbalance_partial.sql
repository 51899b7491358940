-- name: imbalance_partial
-- purpose: mergeable per-rank statistics of every call path over the locations (rank >= 0, thread) of one
--          task's input, where the node has a value; pipeline/imbalance.py merges the partials of a run's
--          rank ranges and applies absent='exclude' or 'zero'
-- params: $k (how many top ranks to keep), $one_thread (true when every location of the input is thread 0
--         of its rank: a rank's value is then its one value, and the per-rank grouping, costly over
--         10 million rows, is skipped)
-- input: imbalance_source(run_id, node_id, rank, thread, value) from sql/imbalance_scan.sql or a GraphFrame
-- output: run_id, node_id, n (locations with a value), total (sum), m2 (sum of squared deviations from
--         the partial mean), min, max, top_ranks, top_values (the $k ranks with the largest value, a rank's
--         value being its max over threads; ties to the lower rank), locations (locations of the run in the
--         input, with or without a value at this node)
with source as (
    select * from imbalance_source
    where rank >= 0
),

measured as (
    select * from source
    where value is not null
),

moments as (
    select
        run_id,
        node_id,
        count(*) as n,
        sum(value) as total,
        var_pop(value) * count(*) as m2,
        min(value) as min,
        max(value) as max
    from measured
    group by run_id, node_id
),

per_rank as (
    select
        run_id,
        node_id,
        rank,
        value
    from measured
    where $one_thread
    union all
    select
        run_id,
        node_id,
        rank,
        max(value) as value
    from measured
    where not $one_thread
    group by run_id, node_id, rank
),

top as (
    select
        run_id,
        node_id,
        max_by(rank, row(value, -rank), $k) as top_ranks,
        max_by(value, row(value, -rank), $k) as top_values
    from per_rank
    group by run_id, node_id
),

locations as (
    select
        run_id,
        count(distinct rank::bigint * 4294967296 + thread) as locations
    from source
    group by run_id
),

final as (
    select
        m.run_id,
        m.node_id,
        m.n,
        m.total,
        m.m2,
        m.min,
        m.max,
        t.top_ranks,
        t.top_values,
        l.locations
    from moments as m
    inner join top as t on m.run_id = t.run_id and m.node_id = t.node_id
    inner join locations as l on m.run_id = l.run_id
)

select * from final
