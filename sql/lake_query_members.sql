-- name: lake_query_members
-- purpose: the call paths each selected run holds, with the run's position of each among its siblings (a call-path
--          query over runs: perflake/analytics/lake_match.py)
-- params: none
-- input: nodes (sql/views/nodes.sql over the batches of the selected runs), query_runs(run_id VARCHAR, run
--        INTEGER): the selected runs and their positions in the answer
-- output: run INTEGER, node_id UBIGINT, child_order INTEGER (NULL in batches written before schema 3); one row per
--         (run, call path)
with final as (
    select
        r.run,
        n.node_id,
        n.child_order
    from nodes as n
    inner join query_runs as r on n.run_id = r.run_id
)

select * from final
