-- name: ensemble_quantiles
-- purpose: sql/ensemble_stats.sql plus quantiles across runs (linear interpolation, as numpy and pandas)
-- params: $ddof (delta degrees of freedom of var/std: divisor count - $ddof), $probs (LIST of
--         probabilities)
-- input: run_values_t(group_id, run_id, node_id, value) from sql/ensemble_values.sql
-- output: group_id, node_id, count (runs with a value), mean, var, std (NULL when count <= $ddof), min,
--         max, quantiles (LIST, one per $probs entry)
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

select * from final
