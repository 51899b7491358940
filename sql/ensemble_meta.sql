-- name: ensemble_meta
-- purpose: the values of the requested metadata keys of each selected run (JSON paths bound as values,
--          never spliced into the text)
-- params: $paths (LIST of JSON paths such as '$."compiler"', one per metadata key)
-- input: selected_runs (catalog rows chosen by the caller: the runs table filtered by its where)
-- output: run_id, meta (LIST of VARCHAR, one per $paths entry, NULL where the run lacks the key)
with final as (
    select
        run_id,
        json_extract_string(metadata, $paths) as meta
    from selected_runs
)

select * from final
