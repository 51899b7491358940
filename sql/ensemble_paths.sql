-- name: ensemble_paths
-- purpose: name and path of names from the root of every call path of the selected runs (the light
--          version of sql/ensemble_nodes.sql for tabular results: two columns read instead of nine)
-- params: $files (nodes Parquet files holding the selected runs), $max_depth
-- input: selection_t(run_id, ...): the selected runs
-- output: node_id, name, path (LIST of names); sorted by path (tree order, siblings by name)
with recursive
picked as (
    select
        node_id,
        parent_id,
        name
    from read_parquet($files, union_by_name = true)
    where run_id in (select s.run_id from selection_t as s)
),

union_nodes as (
    select
        node_id,
        any_value(parent_id) as parent_id,
        any_value(name) as name
    from picked
    group by node_id
),

walk as (
    select
        node_id,
        0 as level,
        [name] as path
    from union_nodes
    where parent_id is null
    union all
    select
        c.node_id,
        w.level + 1 as level,
        list_append(w.path, c.name) as path
    from union_nodes as c
    inner join walk as w on c.parent_id = w.node_id
    where w.level < $max_depth
),

final as (
    select
        u.node_id,
        u.name,
        w.path
    from union_nodes as u
    inner join walk as w on u.node_id = w.node_id
)

select * from final
order by path
