-- name: edges_from_nodes
-- purpose: the edge list of a tree; every root gets an explicit row with a NULL parent (recursion anchor)
-- params: none
-- input: nodes_t(node_id, parent_id)
-- output: parent_id UBIGINT (NULL for roots), child_id UBIGINT; sorted by parent, child
with final as (
    select
        parent_id,
        node_id as child_id
    from nodes_t
)

select * from final order by parent_id nulls first, child_id
