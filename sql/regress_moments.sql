-- name: regress_moments
-- purpose: count, mean and sample variance of the per-run values of every call path in the baseline
--          (group 0) and the candidate (group 1): what Welch's t-test and the effect size need
-- params: none
-- input: run_values_t(group_id, run_id, node_id, value) from sql/ensemble_values.sql, group 0 = baseline,
--        group 1 = candidate
-- output: node_id, n0, mean0, var0, n1, mean1, var1 (n = runs with a value; var divisor n - 1, NULL when
--         n < 2; mean NULL when n = 0)
with final as (
    select
        node_id,
        count(value) filter (where group_id = 0) as n0,
        avg(value) filter (where group_id = 0) as mean0,
        var_samp(value) filter (where group_id = 0) as var0,
        count(value) filter (where group_id = 1) as n1,
        avg(value) filter (where group_id = 1) as mean1,
        var_samp(value) filter (where group_id = 1) as var1
    from run_values_t
    group by node_id
)

select * from final
