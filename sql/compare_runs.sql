-- name: compare_runs
-- purpose: compare two runs per call path (union semantics: a path on one side only is kept, NaN/NULL on
--          the other side, and marked); values are means over each run's locations
-- params: $files (metrics Parquet files of both runs), $run_a, $run_b, $metric
-- input: metrics Parquet files; callpaths_t(run_id, node_id, path) for both runs
-- output: node_id, path, a, b, diff (b - a), ratio (b / a), status ('both' | 'only a' | 'only b')
with long as (
    unpivot (
        select run_id, node_id, columns(lambda c: c = $metric)
        from read_parquet($files, union_by_name = true)
        where run_id = $run_a or run_id = $run_b
    )
    on columns(lambda c: c = $metric)
    into name metric value value
),

per_run as (
    select
        run_id,
        node_id,
        avg(value) as value
    from long
    group by run_id, node_id
),

a as (select * from per_run where run_id = $run_a),

b as (select * from per_run where run_id = $run_b),

joined as (
    select
        coalesce(a.node_id, b.node_id) as node_id,
        a.value as a,
        b.value as b,
        case when a.node_id is null then 'only b' when b.node_id is null then 'only a' else 'both' end as status
    from a
    full outer join b on a.node_id = b.node_id
),

paths as (
    select distinct on (node_id) node_id, path from callpaths_t
),

final as (
    select
        j.node_id,
        p.path,
        j.a,
        j.b,
        j.b - j.a as diff,
        case when j.a != 0 then j.b / j.a end as ratio,
        j.status
    from joined as j
    inner join paths as p on j.node_id = p.node_id
)

select * from final
order by abs(diff) desc nulls last, coalesce(b, a) desc
