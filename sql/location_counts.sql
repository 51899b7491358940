-- name: location_counts
-- purpose: how many ranks a run has, and the most threads any rank has
-- params: none
-- input: metrics_t(node_id, rank, thread, ...)
-- output: ranks BIGINT, threads BIGINT (one row)
with per_rank as (
    select
        rank,
        count(distinct thread) as n_threads
    from metrics_t
    group by rank
),

final as (
    select
        count(*) as ranks,
        coalesce(max(n_threads), 0) as threads
    from per_rank
)

select * from final
