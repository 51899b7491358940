-- name: pivot_metrics
-- purpose: long (run, node, rank, thread, metric, value) back to one DOUBLE column per metric
-- params: none  (PIVOT cannot take parameters: the caller materialises metric_long first)
-- input: metric_long(run_id, node_id, rank, thread, metric, value)
-- output: run_id, node_id, rank, thread, one column per distinct metric
pivot metric_long on metric using first(value)
group by run_id, node_id, rank, thread
