-- name: closure
-- purpose: (ancestor, descendant) pairs of each run's tree or DAG, each node its own ancestor; distinct pairs,
--          so a node reachable by several paths counts once per ancestor (Hatchet's subgraph_sum)
-- params: $max_depth  (recursion bound)
-- input: edges_t(run_id, parent_id, child_id) with roots as (run, NULL, root)
-- output: run_id, ancestor_id, descendant_id
with recursive
nodes as (
    select distinct
        run_id,
        child_id as node_id
    from edges_t
),

walk as (
    select
        run_id,
        node_id as ancestor_id,
        node_id as descendant_id,
        0 as hops
    from nodes
    union
    select
        w.run_id,
        w.ancestor_id,
        e.child_id as descendant_id,
        w.hops + 1 as hops
    from walk as w
    inner join edges_t as e on w.run_id = e.run_id and w.descendant_id = e.parent_id
    where w.hops < $max_depth
),

final as (
    select distinct
        run_id,
        ancestor_id,
        descendant_id
    from walk
)

select * from final
