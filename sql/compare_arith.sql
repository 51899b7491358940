-- name: compare_arith
-- purpose: element-wise arithmetic between two GraphFrames' metric values, joined on (call-path id, rank,
--          thread, metric) with union semantics and IEEE results (x / 0 is +-inf, 0 / 0 NaN); a value missing on
--          one side is $fill; with $keep_left a result that is NULL or NaN takes the left value instead
--          (Hatchet's DataFrame.update: a node only in the left operand keeps its value, one only in the
--          right is missing)
-- params: $metrics (names present in both), $op ('add' | 'sub' | 'mul' | 'div'), $fill, $keep_left
--         ($fill: DOUBLE or NULL; $keep_left: BOOLEAN)
-- input: left_t, right_t(run_id, node_id, rank, thread, one DOUBLE column per metric) from
--        perflake.frame.tables.metrics_table
-- output: run_id, node_id, rank, thread, metric, value (long: sql/pivot_metrics.sql turns it wide)
with sides as (
    select
        0 as side,
        node_id,
        rank,
        thread,
        columns(lambda c: list_contains($metrics, c))
    from left_t
    union all by name
    select
        1 as side,
        node_id,
        rank,
        thread,
        columns(lambda c: list_contains($metrics, c))
    from right_t
),

long as (
    unpivot sides
    on columns(lambda c: list_contains($metrics, c))
    into name metric value value
),

left_long as (
    select * from long
    where side = 0
),

right_long as (
    select * from long
    where side = 1
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

computed as (
    select
        node_id,
        rank,
        thread,
        metric,
        a,
        case $op
            when 'add' then a + b
            when 'sub' then a - b
            when 'mul' then a * b
            when 'div' then a / b
        end::double as r
    from joined
),

final as (
    select
        '_' as run_id,
        node_id,
        rank,
        thread,
        metric,
        case when $keep_left and (r is null or isnan(r)) then a else r end::double as value
    from computed
)

select * from final
