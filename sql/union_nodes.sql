-- name: union_nodes
-- purpose: the union of the call paths of the selected runs (one row per call-path id: the same id has the
--          same parent and frame in every run; end_line, not part of the identity, is the smallest) with the
--          list of names from the root.  $columns chooses the projection: only the columns named (and
--          end_line, cheap: mostly NULL) are read from the Parquet files
-- params: $files, $columns, $max_depth
--         $files: nodes Parquet files holding the selected runs; $columns: LIST of nodes columns to return,
--         'name' among them (['name'] for tabular results, every column for GraphFrame.from_tables)
-- input: selection_t(run_id, batch, ...): the selected runs
-- output: node_id, the $columns in the nodes table's order but end_line last, path (LIST of names); sorted by
--         path (tree order, siblings by name)
with recursive
picked as (
    select
        node_id,
        parent_id,
        columns(lambda c: (list_contains($columns, c) or c = 'end_line') and c not in ('node_id', 'parent_id'))
    from lake_nodes($files)
    where (run_id, batch) in (select
        s.run_id,
        s.batch
    from selection_t as s)
),

union_nodes as (
    select
        node_id,
        any_value(columns(lambda c: c not in ('node_id', 'end_line'))),
        min(end_line) as end_line
    from picked
    group by node_id
),

walk as (
    select
        node_id,
        0 as level,
        [name] as path
    from union_nodes
    where parent_id is null
    union all
    select
        c.node_id,
        w.level + 1 as level,
        list_append(w.path, c.name) as path
    from union_nodes as c
    inner join walk as w on c.parent_id = w.node_id
    where w.level < $max_depth
),

final as (
    select
        u.node_id,
        columns(lambda c: list_contains($columns, c)),
        w.path
    from union_nodes as u
    inner join walk as w on u.node_id = w.node_id
)

select * from final
order by path
