-- name: inclusive_wide
-- purpose: inclusive sums in wide form: per (run, ancestor, rank, thread) the sum over its descendants (itself
--          included) of every exclusive column named in $exc. Columns keep the exclusive names; the caller
--          renames them to the inclusive names (identifiers cannot be bound).
-- params: $exc  (exclusive metric names)
-- input: metrics_t(run_id, node_id, rank, thread, <metrics>), closure_t(run_id, ancestor_id, descendant_id)
-- output: run_id, node_id, rank, thread, one DOUBLE column per name in $exc holding inclusive values
-- invariant: for a root, the value is the sum of the exclusive values below it; NULL inputs are skipped.
--            fsum (compensated) and not sum: a parallel sum adds in the order the join happens to give, so
--            the same frame could get inclusive values differing in the last bit from one call to the next.
with final as (
    select
        cl.run_id,
        cl.ancestor_id as node_id,
        m.rank,
        m.thread,
        fsum(columns(lambda c: list_contains($exc, c)))::double
    from metrics_t as m
    inner join closure_t as cl on m.run_id = cl.run_id and m.node_id = cl.descendant_id
    group by cl.run_id, cl.ancestor_id, m.rank, m.thread
)

select * from final
