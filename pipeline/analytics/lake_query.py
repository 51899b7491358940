"""One call-path query over many runs of the lake: per run, the nodes on matching paths."""

from __future__ import annotations

import pandas as pd

from perflake.analytics.selection import select_runs

__all__ = ["FRAME_ATTRIBUTES", "query", "select_runs", "unknown_attributes"]

FRAME_ATTRIBUTES = ("name", "type", "file", "line", "end_line", "module", "depth")


def unknown_attributes(lake, q, run_ids: list[str]) -> list[str]:
    """Attributes ``q`` tests that neither a frame nor any metric of the runs ``run_ids`` has: a typo matches
    nothing (as in Hatchet), so the CLI warns about it."""
    from perflake.query.compound import CompoundQuery
    from perflake.query.matching import to_query
    from perflake.query.model import conds

    def attrs(query) -> set[str]:
        if isinstance(query, CompoundQuery):
            return {a for sub in query.subqueries for a in attrs(sub)}
        return {c.attr for e in getattr(query, "elements", []) for c in conds(e.predicate) if c.attr}

    wanted = attrs(to_query(q))
    if not wanted:
        return []
    rows = lake.catalog().runs().to_pylist()
    known = set(FRAME_ATTRIBUTES) | {m["name"] for r in rows if r["run_id"] in set(run_ids) for m in r["metrics"]}
    return sorted(wanted - known)


def query(lake, q, *, runs=None, where: str | None = None, multi_index_mode: str = "mean",
          graphframes: bool = False, per_run: bool = False):
    """Apply ``q`` (any query form) to each selected run.

    ``multi_index_mode`` defaults to perflake's "mean" (a condition reads each node's mean over ranks/threads), so
    one query works on single- and multi-rank runs alike; Hatchet's "off" refuses multi-rank runs.

    Returns a DataFrame (run_id, node_id, depth, name, path) of matched nodes, runs in selection order and each
    run's nodes in its pre-order, or with ``graphframes=True`` a dict run_id -> filtered and squashed GraphFrame.
    The runs are answered together (perflake.analytics.lake_match: the call paths once, the metrics in one
    DuckDB pass) unless the query or the lake needs them one by one (a Python predicate, runs ordering the same
    siblings differently, ...: lake_match says which); ``per_run=True`` forces run by run.  Both give the same
    rows in the same order (tests/test_lake_query_runs.py).
    """
    run_ids = select_runs(lake, runs, where)
    if not graphframes and not per_run and run_ids and (multi_index_mode != "off" or _one_location(lake, run_ids)):
        from perflake.analytics.lake_match import Unsupported, match_runs

        try:  # lake_match's "off" is a node's mean: perflake's "mean", and Hatchet's "off" on one location
            return match_runs(lake, q, run_ids, "off" if multi_index_mode in ("mean", "off") else multi_index_mode)
        except Unsupported:
            pass
    return _query_per_run(lake, q, run_ids, multi_index_mode, graphframes)


def _one_location(lake, run_ids: list[str]) -> bool:
    """Every run has one rank and one thread (its frames have one row per node: Hatchet's "off" applies)."""
    wanted = set(run_ids)
    rows = [r for r in lake.catalog().runs().to_pylist() if r["run_id"] in wanted]
    return all(r["ranks"] == 1 and r["threads"] == 1 for r in rows)


def _query_per_run(lake, q, run_ids: list[str], multi_index_mode: str, graphframes: bool):
    """The query applied to each run's GraphFrame in turn."""
    from perflake.ops.filter import filter_rows
    from perflake.query import apply

    out, frames = [], {}
    for run_id in run_ids:
        gf = lake.graphframe(run_id)
        nodes = apply(gf, q, multi_index_mode=multi_index_mode)
        if graphframes:
            frames[run_id] = filter_rows(gf, q, multi_index_mode=multi_index_mode, allow_empty=True).squash()
        for node in nodes:
            out.append({"run_id": run_id, "node_id": node.node_id, "depth": node.depth,
                        "name": node.frame.get("name"), "path": [str(n.frame.get("name")) for n in node.path()]})
    if graphframes:
        return frames
    return pd.DataFrame(out, columns=["run_id", "node_id", "depth", "name", "path"])
