-- name: closure
-- purpose: (ancestor, descendant) pairs of a tree or DAG, each node its own ancestor; distinct pairs, so a
--          node reachable by several paths counts once per ancestor (Hatchet's subgraph_sum)
-- params: $max_depth  (recursion bound)
-- input: edges_t(parent_id, child_id) with roots as (NULL, root)
-- output: ancestor_id, descendant_id
with recursive
nodes as (
    select child_id as node_id from edges_t
),

walk as (
    select
        node_id as ancestor_id,
        node_id as descendant_id,
        0 as hops
    from nodes
    union
    select
        w.ancestor_id,
        e.child_id as descendant_id,
        w.hops + 1 as hops
    from walk as w
    inner join edges_t as e on w.descendant_id = e.parent_id
    where w.hops < $max_depth
),

final as (
    select distinct
        ancestor_id,
        descendant_id
    from walk
)

select * from final
