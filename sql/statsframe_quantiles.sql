-- name: statsframe_quantiles
-- purpose: per column and call path, in one pass over the values of an Ensemble's dataframe: the count, sum,
--          mean, variance, standard deviation, extremes and the quantiles asked for (linear interpolation, as
--          numpy's and pandas' default).  With $probs empty the quantiles column is not selected, so DuckDB
--          drops that aggregate, which must keep every value.  NULL and NaN values are skipped, as pandas'
--          groupby statistics skip NaN
-- params: $ddof, $probs
--         $ddof: delta degrees of freedom of var/std (divisor count - $ddof; pandas' default is 1);
--         $probs: LIST of probabilities in [0, 1], possibly empty
-- input: stat_values_t(col, node_id, profile, value): one row per dataframe row and requested column
-- output: col, node_id, count, sum, mean, var, std (both NULL when count <= $ddof), min, max,
--         and with a non-empty $probs quantiles (LIST, one per $probs entry); only call paths with a value
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
        max(value) as max,
        quantile_cont(value, $probs) as quantiles
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
        max,
        quantiles
    from moments
)

select columns(lambda c: c != 'quantiles' or len($probs) > 0) from final
