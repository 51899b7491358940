-- name: ensemble_stats
-- purpose: statistics across runs of the per-run values of every call path, per group of runs (the
--          moments only: sql/ensemble_quantiles.sql adds quantiles, which must keep every value)
-- params: $ddof (delta degrees of freedom of var/std: divisor count - $ddof)
-- input: run_values_t(group_id, run_id, node_id, value) from sql/ensemble_values.sql
-- output: group_id, node_id, count (runs with a value), mean, var, std (NULL when count <= $ddof), min,
--         max
with moments as (
    select
        group_id,
        node_id,
        count(value) as count,
        avg(value) as mean,
        var_pop(value) as var_pop,
        min(value) as min,
        max(value) as max
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
        max
    from moments
)

select * from final
