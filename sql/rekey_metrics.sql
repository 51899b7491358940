-- name: rekey_metrics
-- purpose: re-key the readers' values by call-path id when no two local nodes share an id (nothing merges,
--          so no aggregation is needed: the fast path of normalize_metrics)
-- params: $metrics  (list of metric column names to keep)
-- input: values_in(run_id, local_id, rank, thread, <metric columns>), local_nodes(run_id, local_id, node_id)
-- output: run_id, node_id, rank, thread, one DOUBLE column per name in $metrics; sorted by run, node, rank, thread
with final as (
    select
        n.run_id,
        n.node_id,
        v.rank::integer as rank,
        v.thread::integer as thread,
        columns(lambda c: list_contains($metrics, c))::double
    from values_in as v
    inner join local_nodes as n on v.run_id = n.run_id and v.local_id = n.local_id
)

select * from final
order by run_id, node_id, rank, thread
