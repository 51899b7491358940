-- name: value_stats
-- purpose: statistics of the values of every call path per key, in one pass: the count, sum, mean, variance,
--          standard deviation, extremes and the quantiles asked for (linear interpolation, as numpy's and
--          pandas' default).  The key is a group of runs (perflake.analytics.ensemble) or an Ensemble column
--          (perflake.analytics.ensemble_stats).  With $probs empty the quantiles column is not selected, so
--          DuckDB drops that aggregate, which must keep every value.  NULL and NaN values are skipped, as
--          pandas' and Thicket's groupby statistics skip NaN
-- params: $key, $ddof, $probs
--         $key: the name of the key column of stat_values_t (kept under that name in the output);
--         $ddof: delta degrees of freedom of var/std (divisor count - $ddof; pandas' default is 1);
--         $probs: LIST of probabilities in [0, 1], possibly empty
-- input: stat_values_t(<$key>, node_id, value, ...): one row per value (other columns are ignored)
-- output: <$key>, node_id, count, sum, mean, var, std (both NULL when count <= $ddof), min, max,
--         and with a non-empty $probs quantiles (LIST, one per $probs entry); only keys and call paths with a
--         value
with kept as (
    select
        columns(lambda c: c = $key),
        node_id,
        value
    from stat_values_t
    where not isnan(value)
),

moments as (
    select
        columns(lambda c: c = $key),
        node_id,
        count(value) as count,
        sum(value) as sum,
        avg(value) as mean,
        var_pop(value) as var_pop,
        min(value) as min,
        max(value) as max,
        quantile_cont(value, $probs) as quantiles
    from kept
    group by all
),

final as (
    select
        columns(lambda c: c = $key),
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
