-- name: callpaths
-- purpose: the list of frame names from the root to every node of the given runs
-- params: $files (nodes Parquet files), $run_ids, $max_depth
-- input: nodes Parquet files
-- output: run_id, node_id, depth, path (LIST of names, root first)
with recursive
n as (
    select run_id, node_id, parent_id, name
    from read_parquet($files, union_by_name = true)
    where list_contains($run_ids, run_id)
),

walk as (
    select
        run_id,
        node_id,
        0 as depth,
        [name] as path
    from n
    where parent_id is null
    union all
    select
        c.run_id,
        c.node_id,
        w.depth + 1 as depth,
        list_append(w.path, c.name) as path
    from n as c
    inner join walk as w on c.run_id = w.run_id and c.parent_id = w.node_id
    where w.depth < $max_depth
)

select * from walk
