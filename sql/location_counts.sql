-- name: location_counts
-- purpose: per run, how many ranks it has and the most threads any rank has (rank -1 holds summary
--          profiles, e.g. HPCToolkit v4's profile 0, and is not a rank)
-- params: none
-- input: metrics_t(run_id, node_id, rank, thread, ...)
-- output: run_id, ranks BIGINT, threads BIGINT
with per_rank as (
    select
        run_id,
        rank,
        count(distinct thread) as n_threads
    from metrics_t
    where rank >= 0
    group by run_id, rank
),

final as (
    select
        run_id,
        count(*) as ranks,
        max(n_threads) as threads
    from per_rank
    group by run_id
)

select * from final
