-- name: lake_query_members
-- purpose: the call paths each selected run holds (a call-path query over runs: perflake/analytics/lake_match.py)
-- params: $files (nodes Parquet files holding the selected runs)
-- input: query_runs(run_id VARCHAR, run INTEGER): the selected runs and their positions in the answer
-- output: run INTEGER, node_id UBIGINT; one row per (run, call path)
with final as (
    select
        r.run,
        n.node_id
    from read_parquet($files, union_by_name = true) as n
    inner join query_runs as r on n.run_id = r.run_id
)

select * from final
