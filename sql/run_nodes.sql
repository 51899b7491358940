-- name: run_nodes
-- purpose: the nodes of one run (row-group statistics on the sorted run_id prune the scan)
-- params: $files (the run's batch file), $run_id, $batch (its batch)
-- input: nodes Parquet files
-- output: node_id, parent_id, depth, name, type, file, line, end_line, module
with final as (
    select * exclude (run_id)
    from lake_nodes($files)
    where run_id = $run_id and batch = $batch
)

select * from final
