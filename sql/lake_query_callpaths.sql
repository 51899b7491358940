-- name: lake_query_callpaths
-- purpose: the distinct call paths of the selected runs with their frames and where the runs put them among their
--          siblings; a call-path id whose parent, depth or frame differs between runs (a NULL against '', a
--          different end_line) comes back once per variant
-- params: none
-- input: nodes (sql/views/nodes.sql over the batches of the selected runs), query_runs(run_id VARCHAR, run
--        INTEGER): the selected runs
-- output: node_id, parent_id, depth, name, type, file, line, end_line, module, child_order and child_order_max
--         (the least and the greatest position among its siblings over the runs; NULL where no run stores one:
--         batches written before schema 3), n_ordered (runs storing a position), n_runs (runs holding it);
--         sorted by node_id and the frame
with final as (
    select
        * exclude (run_id, child_order),
        min(child_order) as child_order,
        max(child_order) as child_order_max,
        count(child_order) as n_ordered,
        count(*) as n_runs
    from nodes
    where run_id in (select r.run_id from query_runs as r)
    group by all
)

select * from final
order by all
