-- name: imbalance_summary
-- purpose: per-rank imbalance of every call path of the selected runs from the lake's rank_summary table (one
--          row per run, call path and metric: catalogs/schema.py), with each row's share of its run's total,
--          ranked: the numbers pipeline/analytics/imbalance.py merges from the metrics rows and
--          pipeline/analytics/imbalance_ranking.py ranks, in the same floating-point operations
-- params: $files, $node_files, $run_ids, $batches, $metrics, $k, $ddof, $zero, $by, $min_share, $top
--         $files: rank_summary Parquet files of the selected runs' batches; $node_files: their nodes files (the
--         root call paths: a run's total of an inclusive metric is its roots'); $run_ids, $metrics: LISTs;
--         $batches[i]: the batch of $run_ids[i];
--         $k: top ranks kept (at most the RANK_SUMMARY_TOP stored); $ddof: std divisor locations - $ddof;
--         $zero: absent='zero' (every location of the run counts, 0 where the call path has no value);
--         $by: imbalance, max, std, mean or total; $min_share: rows below it are left out (0: none); $top: the
--         first $top rows (NULL: all)
-- input: roles_t(run_id, metric, role): the role of each metric of each selected run (the runs catalog)
-- output: run_id, node_id, metric, locations, present, mean, min, max, std, imbalance, top_ranks (LIST of
--         BIGINT), total (mean * locations), share (of the run's total); largest $by first (NULL last), then the
--         larger mean, then run_id, node_id, metric (the merge's order); std, imbalance, share NULL where
--         undefined
with summary as (
    select
        run_id,
        node_id,
        metric,
        count as present,
        case when $zero then locations else count end as locations,
        total,
        m2,
        min,
        max,
        top_ranks
    from lake_rank_summary($files)
    where
        (run_id, batch) in (select unnest($run_ids), unnest($batches))
        and list_contains($metrics, metric)
),

merged as (  -- merge_partials on one partial: pooled m2, then the zeros of absent locations
    select
        *,
        total / present as mean_p,
        total / locations as mean,
        locations - present as zeros,
        m2 + present * ((total / present - total / present) * (total / present - total / present)) as m2_p
    from summary
),

stats as (
    select
        run_id,
        node_id,
        metric,
        locations,
        present,
        mean,
        case when zeros > 0 then least(min, 0.0) else min end as min,
        case when zeros > 0 then greatest(max, 0.0) else max end as max,
        case
            when locations > $ddof
                then sqrt(
                    (m2_p + present * ((mean_p - mean) * (mean_p - mean)) + zeros * (mean * mean))
                    / greatest(locations - $ddof, 1)
                )
        end as std,
        top_ranks[1:$k]::bigint[] as top_ranks,
        mean * locations as total
    from merged
),

roots as (
    select distinct node_id
    from lake_nodes($node_files)
    where (run_id, batch) in (select unnest($run_ids), unnest($batches)) and parent_id is null
),

counted as (  -- what a run's total adds up: its roots for an inclusive metric, every call path otherwise
    select
        s.run_id,
        s.metric,
        fsum(case when isnan(s.total) then 0.0 else s.total end) as run_total
    from stats as s
    left join roles_t as r on s.run_id = r.run_id and s.metric = r.metric
    where
        coalesce(r.role, '') != 'inclusive'
        or s.node_id in (select roots.node_id from roots)
    group by s.run_id, s.metric
),

shares as (
    select
        s.*,
        case when s.mean > 0 then s.max / s.mean end as imbalance,
        case when c.run_total > 0 then s.total / c.run_total end as share
    from stats as s
    left join counted as c on s.run_id = c.run_id and s.metric = c.metric
),

final as (
    select
        * exclude (imbalance, top_ranks, total, share),
        imbalance,
        top_ranks,
        total,
        share
    from shares
    where $min_share <= 0 or coalesce(nullif(share, 'nan'::double), 0.0) >= $min_share
)

select * from final
order by
    nullif(
        case $by
            when 'imbalance' then imbalance when 'max' then max when 'std' then std when 'mean' then mean
            else total
        end,
        'nan'::double
    ) desc nulls last,
    nullif(mean, 'nan'::double) desc nulls last,
    run_id asc,
    node_id asc,
    metric asc
limit $top
