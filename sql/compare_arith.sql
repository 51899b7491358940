-- name: compare_arith
-- purpose: element-wise arithmetic between two GraphFrames' metric values, joined on (call-path id, rank,
--          thread, metric) with union semantics: a value missing on one side is $fill (NULL: the result is
--          missing too); a result is missing where both sides are; x / 0 is missing, not inf
-- params: $metrics (metric column names present in both), $op ('add' | 'sub' | 'mul' | 'div'), $fill
--         (DOUBLE or NULL)
-- input: left_t, right_t(run_id, node_id, rank, thread, one DOUBLE column per metric) from
--        perflake.frame_tables.metrics_table
-- output: run_id, node_id, rank, thread, metric, value (long: sql/pivot_metrics.sql turns it wide)
with left_long as (
    unpivot (
        select
            node_id,
            rank,
            thread,
            columns(lambda c: list_contains($metrics, c))
        from left_t
    )
    on columns(lambda c: list_contains($metrics, c))
    into name metric value value
),

right_long as (
    unpivot (
        select
            node_id,
            rank,
            thread,
            columns(lambda c: list_contains($metrics, c))
        from right_t
    )
    on columns(lambda c: list_contains($metrics, c))
    into name metric value value
),

joined as (
    select
        coalesce(l.node_id, r.node_id) as node_id,
        coalesce(l.rank, r.rank) as rank,
        coalesce(l.thread, r.thread) as thread,
        coalesce(l.metric, r.metric) as metric,
        coalesce(l.value, $fill) as a,
        coalesce(r.value, $fill) as b
    from left_long as l
    full outer join right_long as r
        on l.node_id = r.node_id and l.rank = r.rank and l.thread = r.thread and l.metric = r.metric
),

final as (
    select
        '_' as run_id,
        node_id,
        rank,
        thread,
        metric,
        case $op
            when 'add' then a + b
            when 'sub' then a - b
            when 'mul' then a * b
            when 'div' then case when b != 0 then a / b end
        end::double as value
    from joined
)

select * from final
