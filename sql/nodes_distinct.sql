-- name: nodes_distinct
-- purpose: one row per (run, call-path id): local nodes with identical call paths merge
-- params: none
-- input: local_nodes (normalize.local_nodes: frames with node_id, parent_id, depth; call-path ids from
--        perflake.identity)
-- output: run_id, node_id, parent_id, depth, name, type, file, line, end_line, module, first_local (the
--         smallest local id of the merged nodes: where the call path first occurs in the input); sorted by run,
--         node
with final as (
    select
        run_id,
        node_id,
        any_value(parent_id) as parent_id,
        any_value(depth) as depth,
        any_value(name) as name,
        any_value(type) as type,
        any_value(file) as file,
        any_value(line) as line,
        min(end_line) as end_line,
        any_value(module) as module,
        min(local_id) as first_local
    from local_nodes
    group by run_id, node_id
)

select * from final
order by run_id, node_id
