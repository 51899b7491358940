-- name: reached_counts
-- purpose: per run, how many frames got a call-path id (fewer than the run's frames = cycle or too deep)
-- params: none
-- input: local_nodes(run_id, ...)
-- output: run_id, reached BIGINT
select run_id, count(*) as reached from local_nodes group by run_id
