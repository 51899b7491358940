-- name: ensemble_nodes
-- purpose: the union of the call paths of the selected runs (one row per call-path id: the same id has the
--          same parent and frame in every run) with the list of names from the root
-- params: $files (nodes Parquet files holding the selected runs), $max_depth
-- input: selection_t(run_id, ...): the selected runs
-- output: node_id, parent_id, depth, name, type, file, line, end_line, module, path (LIST of names)
with recursive
picked as (
    select
        node_id,
        parent_id,
        depth,
        name,
        type,
        file,
        line,
        end_line,
        module
    from read_parquet($files, union_by_name = true)
    where run_id in (select s.run_id from selection_t as s)
),

union_nodes as (
    select
        node_id,
        any_value(parent_id) as parent_id,
        any_value(depth) as depth,
        any_value(name) as name,
        any_value(type) as type,
        any_value(file) as file,
        any_value(line) as line,
        min(end_line) as end_line,
        any_value(module) as module
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
        u.*,
        w.path
    from union_nodes as u
    inner join walk as w on u.node_id = w.node_id
)

select * from final
