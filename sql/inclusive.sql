-- name: inclusive
-- purpose: inclusive = own exclusive + all descendants' exclusive, per (node, rank, thread), in long form
-- params: $exc  (exclusive metric names), $inc  (their inclusive names, same order)
-- input: metrics_t(node_id, rank, thread, <metrics>), closure_t(ancestor_id, descendant_id)
-- output: node_id, rank, thread, metric (an inclusive name), value DOUBLE
-- invariant: for a root, value = sum of the exclusive values below it; NULL inputs are skipped.
with long as (
    unpivot (
        select node_id, rank, thread, columns(lambda c: list_contains($exc, c))
        from metrics_t
    )
    on columns(lambda c: list_contains($exc, c))
    into name metric value value
),

final as (
    select
        c.ancestor_id as node_id,
        l.rank,
        l.thread,
        $inc[list_position($exc, l.metric)] as metric,
        sum(l.value)::double as value
    from long as l
    inner join closure_t as c on l.node_id = c.descendant_id
    group by all
)

select * from final
