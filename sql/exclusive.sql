-- name: exclusive
-- purpose: exclusive = inclusive - sum of the children's inclusive, per (run, node, rank, thread), long form
--          (for formats that only carry inclusive values; exact for trees)
-- params: $inc  (inclusive metric names), $exc  (their exclusive names, same order)
-- input: metrics_t(run_id, node_id, rank, thread, <metrics>), edges_t(run_id, parent_id, child_id)
-- output: run_id, node_id, rank, thread, metric (an exclusive name), value DOUBLE
with long as (
    unpivot (
        select
            run_id,
            node_id,
            rank,
            thread,
            columns(lambda c: list_contains($inc, c))
        from metrics_t
    )
    on columns(lambda c: list_contains($inc, c))
    into name metric value value
),

children as (
    select
        l.run_id,
        e.parent_id as node_id,
        l.rank,
        l.thread,
        l.metric,
        fsum(l.value) as value  -- compensated: the same result whatever order the join gives
    from long as l
    inner join edges_t as e on l.run_id = e.run_id and l.node_id = e.child_id
    where e.parent_id is not null
    group by all
),

final as (
    select
        l.run_id,
        l.node_id,
        l.rank,
        l.thread,
        $exc[list_position($inc, l.metric)] as metric,
        (l.value - coalesce(c.value, 0))::double as value
    from long as l
    left join children as c
        on
            l.run_id = c.run_id and l.node_id = c.node_id and l.rank = c.rank and l.thread = c.thread
            and l.metric = c.metric
)

select * from final
