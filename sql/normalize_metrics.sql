-- name: normalize_metrics
-- purpose: re-key the readers' values by call-path id, summing values of merged nodes
-- params: $metrics  (list of metric column names to keep)
-- input: values_in(run_id, local_id, rank, thread, <metric columns>), local_nodes(run_id, local_id, node_id)
-- output: run_id, node_id, rank, thread, one DOUBLE column per name in $metrics; sorted by run, node, rank, thread
-- invariant: a sum over only NULL inputs stays NULL (Hatchet's min_count=1).
with joined as (
    select
        n.run_id,
        n.node_id,
        v.rank,
        v.thread,
        v.* exclude (run_id, local_id, rank, thread)
    from values_in as v
    inner join local_nodes as n on v.run_id = n.run_id and v.local_id = n.local_id
),

final as (
    select
        run_id,
        node_id,
        rank::integer as rank,
        thread::integer as thread,
        fsum(columns(lambda c: list_contains($metrics, c)))::double  -- compensated: order-independent
    from joined
    group by run_id, node_id, rank, thread
)

select * from final
order by run_id, node_id, rank, thread
