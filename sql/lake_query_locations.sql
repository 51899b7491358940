-- name: lake_query_locations
-- purpose: per run, how many ranks, threads and (rank, thread) locations its metrics rows have: a run's
--          GraphFrame is indexed by rank/thread when it has several, with one row per node and location
-- params: $files (metrics Parquet files holding the runs)
-- input: query_runs(run_id VARCHAR, run INTEGER, batch VARCHAR): the runs to count and their positions
-- output: run INTEGER, ranks BIGINT, threads BIGINT, locations BIGINT; runs without metrics rows are absent
with final as (
    select
        r.run,
        count(distinct m.rank) as ranks,
        count(distinct m.thread) as threads,
        count(distinct row(m.rank, m.thread)) as locations
    from lake_metrics($files) as m
    inner join query_runs as r on m.run_id = r.run_id and m.batch = r.batch
    group by r.run
)

select * from final
