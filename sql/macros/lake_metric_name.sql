-- name: macros/lake_metric_name
-- purpose: the metric a column of the metrics table holds: decode(c) of catalogs/metric_columns.py (a column
--          <name>~<first 8 or all 64 hex digits of sha256(name)> holds <name>; any other column its own name)
-- params: c  (a column name; used inside COLUMNS(lambda c: ...) by the sql/ files that read metric columns)
-- input: none
-- output: scalar macro lake_metric_name(c) -> VARCHAR
create or replace macro lake_metric_name(c) as
case
    when regexp_matches(c, '~[0-9a-f]{8}$') and left(sha256(left(c, -9)), 8) = right(c, 8) then left(c, -9)
    when regexp_matches(c, '~[0-9a-f]{64}$') and sha256(left(c, -65)) = right(c, 64) then left(c, -65)
    else c
end
