-- name: statsframe_outliers
-- purpose: boxplot outliers per column and call path: the values outside the fences [lower, upper]
--          (Tukey's: quartiles -/+ 1.5 IQR), their profiles, and the whiskers (the most extreme values
--          inside the fences, as matplotlib draws them)
-- params: none
-- input: stat_values_t(col, node_id, profile, value); fences_t(col, node_id, lower, upper)
-- output: col, node_id, n_outliers, outliers (LIST of profiles, by profile), whisker_low, whisker_high
with kept as (
    select
        v.col,
        v.node_id,
        v.profile,
        v.value,
        v.value < f.lower or v.value > f.upper as outside
    from stat_values_t as v
    inner join fences_t as f on v.col = f.col and v.node_id = f.node_id
    where not isnan(v.value)
),

final as (
    select
        col,
        node_id,
        count(*) filter (where outside) as n_outliers,
        coalesce(list(profile order by profile) filter (where outside), []) as outliers,
        min(value) filter (where not outside) as whisker_low,
        max(value) filter (where not outside) as whisker_high
    from kept
    group by col, node_id
)

select * from final
