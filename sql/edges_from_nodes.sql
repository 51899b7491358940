-- name: edges_from_nodes
-- purpose: the edge list of each run's tree; every root gets an explicit row with a NULL parent (recursion anchor)
-- params: none
-- input: nodes_t(run_id, node_id, parent_id)
-- output: run_id, parent_id UBIGINT (NULL for roots), child_id UBIGINT; sorted by run, parent, child
with final as (
    select
        run_id,
        parent_id,
        node_id as child_id
    from nodes_t
)

select * from final
order by run_id, parent_id nulls first, child_id
