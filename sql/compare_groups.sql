-- name: compare_groups
-- purpose: two groups of runs side by side per call path, union semantics: a path measured on one side
--          only is kept with NULL on the other and marked in status; biggest regressions (b - a) first
-- params: none
-- input: group_stats_t(group_id, node_id, count, mean) from sql/value_stats.sql (key group_id) with group 0 = side A
--        and group 1 = side B (mean = mean over the group's runs of each run's mean over locations)
-- output: node_id, a, b, runs_a, runs_b (runs with a value), diff (b - a), ratio (b / a), speedup (a / b),
--         status ('both' | 'only a' | 'only b'); ratio and speedup NULL where the divisor is 0
with side_a as (
    select
        node_id,
        mean,
        count
    from group_stats_t
    where group_id = 0
),

side_b as (
    select
        node_id,
        mean,
        count
    from group_stats_t
    where group_id = 1
),

joined as (
    select
        coalesce(a.node_id, b.node_id) as node_id,
        a.mean as a,
        b.mean as b,
        coalesce(a.count, 0) as runs_a,
        coalesce(b.count, 0) as runs_b,
        case when a.node_id is null then 'only b' when b.node_id is null then 'only a' else 'both' end as status
    from side_a as a
    full outer join side_b as b on a.node_id = b.node_id
),

final as (
    select
        node_id,
        a,
        b,
        runs_a,
        runs_b,
        b - a as diff,
        case when a != 0 then b / a end as ratio,
        case when b != 0 then a / b end as speedup,
        status
    from joined
)

select * from final
order by diff desc nulls last, coalesce(b, a) desc nulls last, node_id
