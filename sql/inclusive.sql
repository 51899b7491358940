-- name: inclusive
-- purpose: inclusive = own exclusive + all descendants' exclusive, per (run, node, rank, thread), long form
-- params: $exc  (exclusive metric names), $inc  (their inclusive names, same order)
-- input: metrics_t(run_id, node_id, rank, thread, <metrics>), closure_t(run_id, ancestor_id, descendant_id)
-- output: run_id, node_id, rank, thread, metric (an inclusive name), value DOUBLE
-- invariant: for a root, value = sum of the exclusive values below it; NULL inputs are skipped.
with long as (
    unpivot (
        select run_id, node_id, rank, thread, columns(lambda c: list_contains($exc, c))
        from metrics_t
    )
    on columns(lambda c: list_contains($exc, c))
    into name metric value value
),

final as (
    select
        l.run_id,
        c.ancestor_id as node_id,
        l.rank,
        l.thread,
        $inc[list_position($exc, l.metric)] as metric,
        sum(l.value)::double as value
    from long as l
    inner join closure_t as c on l.run_id = c.run_id and l.node_id = c.descendant_id
    group by all
)

select * from final
