-- name: squash_parents
-- purpose: for every kept node, its nearest kept ancestor (NULL when none: it becomes a root)
-- params: $max_depth  (recursion bound)
-- input: tree_t(node_id, parent_id, kept BOOLEAN): one row per parent link, roots with parent_id NULL
-- output: node_id, new_parent_id: one row per (kept node, nearest kept ancestor along some path; NULL when a
--         path from a root has none) -- a DAG node reached through several kept ancestors has several rows
with recursive
walk as (
    select
        node_id,
        kept,
        null::ubigint as nearest,
        0 as depth
    from tree_t
    where parent_id is null
    union
    select
        t.node_id,
        t.kept,
        case when w.kept then w.node_id else w.nearest end as nearest,
        w.depth + 1 as depth
    from walk as w
    inner join tree_t as t on w.node_id = t.parent_id
    where w.depth < $max_depth
),

final as (
    select distinct
        node_id,
        nearest as new_parent_id
    from walk
    where kept
)

select * from final
