-- name: ensemble_stats
-- purpose: statistics across runs of the per-run values of every call path, per group of runs, and the
--          quantiles asked for (linear interpolation, as numpy and pandas).  With $probs empty the quantiles
--          column is not selected, so DuckDB drops that aggregate, which must keep every value
-- params: $ddof (delta degrees of freedom of var/std: divisor count - $ddof), $probs (LIST of
--         probabilities, possibly empty)
-- input: run_values_t(group_id, run_id, node_id, value) from sql/ensemble_values.sql
-- output: group_id, node_id, count (runs with a value), mean, var, std (NULL when count <= $ddof), min,
--         max, and with a non-empty $probs quantiles (LIST, one per $probs entry)
with moments as (
    select
        group_id,
        node_id,
        count(value) as count,
        avg(value) as mean,
        var_pop(value) as var_pop,
        min(value) as min,
        max(value) as max,
        quantile_cont(value, $probs) as quantiles
    from run_values_t
    group by group_id, node_id
),

final as (
    select
        group_id,
        node_id,
        count,
        mean,
        case when count > $ddof then var_pop * count / (count - $ddof) end as var,
        sqrt(case when count > $ddof then var_pop * count / (count - $ddof) end) as std,
        min,
        max,
        quantiles
    from moments
)

select columns(lambda c: c != 'quantiles' or len($probs) > 0) from final
