-- name: statsframe_moments
-- purpose: per column and call path, in one pass over the values of an Ensemble's dataframe: the count,
--          sum, mean, variance, standard deviation and extremes (sql/statsframe_quantiles.sql adds quantiles,
--          which must keep every value).  NULL and NaN values are skipped, as pandas' groupby statistics skip NaN
-- params: $ddof
--         $ddof: delta degrees of freedom of var/std (divisor count - $ddof; pandas' default is 1)
-- input: stat_values_t(col, node_id, profile, value): one row per dataframe row and requested column
-- output: col, node_id, count, sum, mean, var, std (both NULL when count <= $ddof), min, max; only call
--         paths with at least one value
with kept as (
    select
        col,
        node_id,
        value
    from stat_values_t
    where not isnan(value)
),

moments as (
    select
        col,
        node_id,
        count(value) as count,
        sum(value) as sum,
        avg(value) as mean,
        var_pop(value) as var_pop,
        min(value) as min,
        max(value) as max
    from kept
    group by col, node_id
),

final as (
    select
        col,
        node_id,
        count,
        sum,
        mean,
        case when count > $ddof then var_pop * count / (count - $ddof) end as var,
        sqrt(case when count > $ddof then var_pop * count / (count - $ddof) end) as std,
        min,
        max
    from moments
)

select * from final
