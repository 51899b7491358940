-- name: statsframe_kendall
-- purpose: per call path, Kendall's tau-b of two columns across the dataframe rows where both have a value
--          (as SciPy's kendalltau): (concordant - discordant pairs) / sqrt(pairs untied in x * pairs untied
--          in y).  Every pair of rows of a call path is visited: quadratic in the number of rows
-- params: none
-- input: pair_values_t(node_id, k, x, y): one row per dataframe row where both columns have a (non-NaN)
--        value; k numbers the rows
-- output: node_id, n (rows), kendall (NULL when every pair is tied in x or in y)
with pairs as (
    select
        a.node_id,
        sign(a.x - b.x) as sx,
        sign(a.y - b.y) as sy
    from pair_values_t as a
    inner join pair_values_t as b on a.node_id = b.node_id and a.k < b.k
),

sums as (
    select
        node_id,
        sum(sx * sy) as s,
        count(*) filter (where sx <> 0) as untied_x,
        count(*) filter (where sy <> 0) as untied_y
    from pairs
    group by node_id
),

counts as (
    select
        node_id,
        count(*) as n
    from pair_values_t
    group by node_id
),

final as (
    select
        c.node_id,
        c.n,
        case when s.untied_x > 0 and s.untied_y > 0 then s.s / sqrt(s.untied_x::double * s.untied_y) end as kendall
    from counts as c
    left join sums as s on c.node_id = s.node_id
)

select * from final
