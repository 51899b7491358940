-- name: compare_union_nodes
-- purpose: the union of two GraphFrames' call paths as one nodes table (a call-path id means the same
--          path, parent and frame on both sides; frame attributes taken from the left where it has them)
-- params: none
-- input: nodes_left, nodes_right(node_id, parent_id, depth, name, type, file, line, end_line, module)
-- output: node_id, parent_id, depth, name, type, file, line, end_line, module; one row per node_id
with both_sides as (
    select
        0 as side,
        *
    from nodes_left
    union all by name
    select
        1 as side,
        *
    from nodes_right
),

final as (
    select distinct on (node_id) * exclude (side)
    from both_sides
    order by node_id, side
)

select * from final
