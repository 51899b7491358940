-- name: statsframe_two_groups
-- purpose: per call path, what two-group comparisons need, in one pass over both groups' values: each
--          group's count, mean and sample variance (divisor count - 1), the rank sum of group 0 in the
--          combined sample (ties get their average rank) and the tie term sum(t^3 - t) over groups of t
--          equal values (Mann-Whitney U and its normal approximation, as SciPy)
-- params: none
-- input: group_values_t(grp, node_id, value): grp 0 or 1, one row per dataframe row and column (NULL and
--        NaN values are left out)
-- output: node_id, n0, n1, mean0, mean1, var0, var1 (NULL when that count < 2), rank_sum0, tie_term
with ranked as (
    select
        grp,
        node_id,
        value,
        rank() over (partition by node_id order by value)
        + (count(*) over (partition by node_id, value) - 1) / 2.0 as r,
        count(*) over (partition by node_id, value) as t
    from group_values_t
    where not isnan(value)
),

final as (
    select
        node_id,
        count(*) filter (where grp = 0) as n0,
        count(*) filter (where grp = 1) as n1,
        avg(value) filter (where grp = 0) as mean0,
        avg(value) filter (where grp = 1) as mean1,
        var_samp(value) filter (where grp = 0) as var0,
        var_samp(value) filter (where grp = 1) as var1,
        coalesce(sum(r) filter (where grp = 0), 0) as rank_sum0,
        sum(t * t - 1)::double as tie_term
    from ranked
    group by node_id
)

select * from final
