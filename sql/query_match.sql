-- name: query_match
-- purpose: run a call-path query's automaton over the graph: the nodes on every downward path that the query matches
-- params: $t_src, $t_dst, $t_elem, $t_guard  (transitions, same length), $start  (start state), $accepting  (states)
-- input: query_matches(node_id UBIGINT, elem INTEGER): node satisfies query element elem
--        (perflake/query/predicates.py);
--        query_edges(parent_id UBIGINT, child_id UBIGINT): the graph's parent -> child edges
-- output: node_id UBIGINT, one row per node lying on at least one matching path
-- automaton: a state is the query element the last node was consumed by ($start before any node); transition i
--            moves src -> dst over a node that matches element $t_elem[i] and does not match $t_guard[i] (-1: no
--            guard; Hatchet's "a star never swallows a node that matches the element after it").  Transitions out of
--            $start are taken at ANY node (a match may begin anywhere, as in Hatchet); the others follow an edge.
-- method: the steps (parent, state) -> (child, state') of the automaton along the edges, computed once; forward
--         (node, state) pairs reachable from a start over them, then backward from the accepting ones: a node is
--         returned when one of its forward pairs can still reach acceptance.
with recursive
transitions as (
    select
        unnest($t_src) as src,
        unnest($t_dst) as dst,
        unnest($t_elem) as elem,
        unnest($t_guard) as guard
),

allowed as (
    select
        m.node_id,
        t.src,
        t.dst
    from transitions as t
    inner join query_matches as m on t.elem = m.elem
    anti join query_matches as g on m.node_id = g.node_id and t.guard = g.elem
),

steps as (  -- (parent, state) -> (child, next state) along an edge, by a transition the child allows
    select
        e.parent_id,
        a.src,
        a.node_id as child_id,
        a.dst
    from query_edges as e
    inner join allowed as a on e.child_id = a.node_id
),

forward as (
    select
        a.node_id,
        a.dst as state
    from allowed as a
    where a.src = $start
    union
    select
        s.child_id as node_id,
        s.dst as state
    from forward as f
    inner join steps as s on f.node_id = s.parent_id and f.state = s.src
),

backward as (
    select
        f.node_id,
        f.state
    from forward as f
    where list_contains($accepting, f.state)
    union
    select
        f.node_id,
        f.state
    from backward as b
    inner join steps as s on b.node_id = s.child_id and b.state = s.dst
    inner join forward as f on s.parent_id = f.node_id and s.src = f.state
),

final as (
    select distinct node_id from backward
)

select * from final
