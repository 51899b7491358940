-- name: normalize_nodes
-- purpose: give every node of the readers' frame tables its call-path id. THE definition of identity.
-- params: $max_depth  (recursion bound; nodes deeper than this are not returned and the caller reports it)
-- input: frames_in(run_id, local_id, parent_local, name, type, file, line, end_line, module)  (readers/base.py
--        plus the run the rows belong to: many runs are normalised in one pass)
-- output: run_id, local_id, node_id UBIGINT, parent_id UBIGINT (NULL for a root), depth INTEGER (root 0),
--         name, type, file, line, end_line, module
-- identity: frame_key = type, name, file, line, module joined by chr(31), NULL written as '';
--           node_id = md5_number_upper(frame keys from the root to the node joined by chr(30)),
--           i.e. the first 8 bytes of that md5 digest read as a little-endian unsigned 64-bit integer.
--           Same frames on the path => same id, in every run, process, machine and version.
-- invariant: siblings with identical frames get the same node_id (they merge, as Hatchet's normalize()).
with recursive
frames as (
    select
        *,
        concat_ws(
            chr(31),
            coalesce(type, ''),
            coalesce(name, ''),
            coalesce(file, ''),
            coalesce(cast(line as varchar), ''),
            coalesce(module, '')
        ) as frame_key
    from frames_in
),

paths as (
    select
        run_id,
        local_id,
        frame_key as path_key,
        0 as depth
    from frames
    where parent_local = -1
    union all
    select
        f.run_id,
        f.local_id,
        p.path_key || chr(30) || f.frame_key as path_key,
        p.depth + 1 as depth
    from frames as f
    inner join paths as p on f.run_id = p.run_id and f.parent_local = p.local_id
    where p.depth < $max_depth
),

ids as (
    select
        run_id,
        local_id,
        depth,
        md5_number_upper(path_key) as node_id
    from paths
),

final as (
    select
        f.run_id,
        f.local_id,
        i.node_id,
        pi.node_id as parent_id,
        i.depth::integer as depth,
        f.name,
        f.type,
        f.file,
        f.line,
        f.end_line,
        f.module
    from frames as f
    inner join ids as i on f.run_id = i.run_id and f.local_id = i.local_id
    left join ids as pi on f.run_id = pi.run_id and f.parent_local = pi.local_id
)

select * from final
