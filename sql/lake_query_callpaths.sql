-- name: lake_query_callpaths
-- purpose: the distinct call paths of the selected runs with their frames; a call-path id whose parent, depth or
--          frame differs between runs (a NULL against '', a different end_line) comes back once per variant
-- params: $files (nodes Parquet files holding the selected runs)
-- input: query_runs(run_id VARCHAR, run INTEGER): the selected runs
-- output: node_id, parent_id, depth, name, type, file, line, end_line, module; sorted by node_id
with picked as (
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
    where run_id in (select r.run_id from query_runs as r)
),

final as (
    select distinct * from picked
)

select * from final
order by node_id, parent_id, depth, name, type, file, line, end_line, module
