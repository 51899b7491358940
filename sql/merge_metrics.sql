-- name: merge_metrics
-- purpose: add derived metric columns to a wide metrics table (a node may have rows on one side only)
-- params: none
-- input: metrics_t(run_id, node_id, rank, thread, ...), derived_t(run_id, node_id, rank, thread, ...) with
--        disjoint metric names
-- output: run_id, node_id, rank, thread, metrics_t's metric columns, derived_t's metric columns; sorted
with final as (
    -- USING, not ON: a full outer join USING gives one coalesced copy of each key column
    select * from metrics_t
    full outer join derived_t using (run_id, node_id, rank, thread)  -- noqa: ST07
)

select * from final
order by run_id, node_id, rank, thread
