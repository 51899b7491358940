-- name: imbalance_partial
-- purpose: mergeable per-rank statistics of every call path over the locations (rank >= 0, thread) of one
--          task's input, where the node has a value; pipeline/analytics/imbalance.py merges the partials of a run's
--          rank ranges and applies absent='exclude' or 'zero'
-- params: $k, $one_thread, $count_locations
--         $k: how many top ranks to keep; $one_thread: true when every location of the input is thread 0 of
--         its rank (a rank's value is then its one value, and the per-rank grouping, costly over 10 million
--         rows, is skipped); $count_locations: false leaves locations NULL, uncounted (absent='exclude'
--         does not use it)
-- input: imbalance_source(run_id, node_id, rank, thread, value) from sql/imbalance_scan.sql or a GraphFrame
-- output: run_id, node_id, n (locations with a value), total (sum), m2 (sum of squared deviations from
--         the partial mean), min, max, top_ranks, top_values (the $k ranks with the largest value, a rank's
--         value being its max over threads; ties to the lower rank), locations (locations of the run in the
--         input, with or without a value at this node)
-- method: one hash aggregation gives the moments and, on one-thread input, a quick top k (max_by on the
--         value alone, whose order among equal values is arbitrary) with the $k + 1 largest values.  When
--         the k-th and (k+1)-th largest differ, the quick top k holds the right ranks: sorting its (value
--         desc, rank asc) pairs gives the exact answer.  Only where they tie (a rank could be swapped for
--         a lower one of the same value), and for every node of multi-thread input, the exact top k is
--         taken with the (value desc, rank asc) key over the node's rows at or above its k-th largest
--         value.  A struct key over all 10 million rows costs 3x the numeric one.  That exact path reads
--         imbalance_source again rather than the measured rows: a join waiting for the aggregation would
--         buffer all of them (632 MiB instead of 254 MiB at 10,000 nodes x 1,024 ranks).
with source as (
    select * from imbalance_source
    where rank >= 0
),

measured as (
    select * from source
    where value is not null
),

stats as (
    select
        run_id,
        node_id,
        count(*) as n,
        sum(value) as total,
        var_pop(value) * count(*) as m2,
        min(value) as min,
        max(value) as max,
        max_by(rank, value, $k) as quick_ranks,
        max(value, $k + 1) as head
    from measured
    group by run_id, node_id
),

quick as (  -- (value desc, rank asc) order among equal values
    select
        run_id,
        node_id,
        list_sort(list_transform(list_zip(head[1:$k], quick_ranks), lambda p: { 'v': -p[1], 'r': p[2] })) as pairs
    from stats
),

tied as (
    select
        run_id,
        node_id,
        case when $one_thread then list_min(head[1:$k]) end as cut  -- per location, not per rank: no cut
    from stats
    where not $one_thread or (len(head) > $k and head[$k] = head[$k + 1])
),

per_rank as (
    select
        m.run_id,
        m.node_id,
        m.rank,
        m.value
    from imbalance_source as m
    inner join tied as t on m.run_id = t.run_id and m.node_id = t.node_id
    where $one_thread and m.rank >= 0 and m.value >= t.cut
    union all
    select
        m.run_id,
        m.node_id,
        m.rank,
        max(m.value) as value
    from measured as m
    where not $one_thread
    group by m.run_id, m.node_id, m.rank
),

exact as (
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
    where $count_locations
    group by run_id
),

final as (
    select
        s.run_id,
        s.node_id,
        s.n,
        s.total,
        s.m2,
        s.min,
        s.max,
        coalesce(e.top_ranks, list_transform(q.pairs, lambda p: p['r'])) as top_ranks,
        coalesce(e.top_values, list_transform(q.pairs, lambda p: -p['v'])) as top_values,
        l.locations
    from stats as s
    inner join quick as q on s.run_id = q.run_id and s.node_id = q.node_id
    left join exact as e on s.run_id = e.run_id and s.node_id = e.node_id
    left join locations as l on s.run_id = l.run_id
)

select * from final
