-- name: regress_ranks
-- purpose: what the Mann-Whitney U test needs per call path: the candidate's sum of mid-ranks among the
--          values of both groups (tied values share the mean of their ranks) and the tie term; one sort
--          of the distinct values per call path
-- params: none
-- input: run_values_t(group_id, run_id, node_id, value) from sql/ensemble_values.sql, group 0 = baseline,
--        group 1 = candidate
-- output: node_id, n0, n1 (values per group), rank_sum1 (DOUBLE), tie_term (sum over distinct values of
--         t^3 - t, t = how many values of both groups are equal to it)
with counted as (
    select
        node_id,
        value,
        count(*) filter (where group_id = 0) as c0,
        count(*) filter (where group_id = 1) as c1
    from run_values_t
    where value is not null
    group by node_id, value
),

ranked as (
    select
        node_id,
        c0,
        c1,
        c0 + c1 as tied,
        sum(c0 + c1) over (
            partition by node_id order by value rows between unbounded preceding and current row
        ) as upto
    from counted
),

final as (
    select
        node_id,
        sum(c0)::BIGINT as n0,
        sum(c1)::BIGINT as n1,
        sum(c1 * (upto - (tied - 1) / 2.0))::DOUBLE as rank_sum1,
        sum(tied * tied * tied - tied)::DOUBLE as tie_term
    from ranked
    group by node_id
)

select * from final
