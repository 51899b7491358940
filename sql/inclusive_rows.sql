-- name: inclusive_rows
-- purpose: the inclusive values of sql/inclusive_wide.sql for every row of a GraphFrame's dataframe, keyed by
--          the row's position, so that the caller scatters them into the columns without a pandas reindex
--          (10M rows: 3 s of index building and hashing saved)
-- params: none
-- input: metrics_t(pos, node_id, rank, thread, ...): the dataframe's rows, pos = row position;
--        inclusive_v(run_id, node_id, rank, thread, <metrics>) from sql/inclusive_wide.sql
-- output: pos, one DOUBLE column per inclusive metric (NULL where nothing below the row's node has a value);
--         one row per dataframe row, in no particular order
with final as (
    select
        m.pos,
        i.* exclude (run_id, node_id, rank, thread)
    from metrics_t as m
    left join inclusive_v as i on m.node_id = i.node_id and m.rank = i.rank and m.thread = i.thread
)

select * from final
