-- name: statsframe_correlation
-- purpose: per call path, the correlation of two columns across the dataframe rows where both have a value:
--          Pearson's r and Spearman's rho (Pearson's r of the ranks, ties given their average rank, as SciPy)
-- params: none
-- input: pair_values_t(node_id, k, x, y): one row per dataframe row where both columns have a (non-NaN)
--        value; k numbers the rows
-- output: node_id, n (pairs), pearson, spearman (NULL when a column is constant or n < 2)
with ranked as (
    select
        node_id,
        x,
        y,
        rank() over (partition by node_id order by x) + (count(*) over (partition by node_id, x) - 1) / 2.0 as rx,
        rank() over (partition by node_id order by y) + (count(*) over (partition by node_id, y) - 1) / 2.0 as ry
    from pair_values_t
),

final as (
    select
        node_id,
        count(*) as n,
        corr(x, y) as pearson,
        corr(rx, ry) as spearman
    from ranked
    group by node_id
)

select * from final
