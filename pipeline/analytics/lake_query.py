"""One call-path query over many runs of the lake: per run, the nodes on matching paths."""

from __future__ import annotations

import duckdb
import pandas as pd

from perflake.errors import LakeError


def select_runs(lake, runs=None, where: str | None = None, params=None) -> list[str]:
    """Run ids: the given ones (ids or prefixes), or those whose catalog row satisfies the SQL ``where``."""
    if runs:
        return [lake.resolve(r)["run_id"] for r in runs]
    if where:
        con = lake.connect(confined=True)  # the user's SQL reads the lake's files only, changes no setting
        try:
            rel = con.table("runs").filter(duckdb.SQLExpression(where)).select("run_id")
            return [r[0] for r in rel.fetchall()]
        except duckdb.Error as exc:
            raise LakeError(f"--where {where!r}: {str(exc).splitlines()[0]}") from None
        finally:
            con.close()
    return lake.catalog().runs().column("run_id").to_pylist()


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


def query(lake, q, *, runs=None, where: str | None = None, multi_index_mode: str = "off", graphframes: bool = False,
          per_run: bool = False):
    """Apply ``q`` (any query form) to each selected run.

    Returns a DataFrame (run_id, node_id, depth, name, path) of matched nodes, or with ``graphframes=True``
    a dict run_id -> filtered and squashed GraphFrame.  The runs are answered together
    (perflake.analytics.lake_match: the call paths once, the metrics in one DuckDB pass) unless the query or
    the lake needs them one by one (``per_run=True`` forces that; both give the same rows).
    """
    run_ids = select_runs(lake, runs, where)
    if not graphframes and not per_run and run_ids:
        from perflake.analytics.lake_match import Unsupported, match_runs

        try:
            return match_runs(lake, q, run_ids, multi_index_mode)
        except Unsupported:
            pass
    return _query_per_run(lake, q, run_ids, multi_index_mode, graphframes)


def _query_per_run(lake, q, run_ids: list[str], multi_index_mode: str, graphframes: bool):
    """The query applied to each run's GraphFrame in turn."""
    from perflake.query import apply

    out, frames = [], {}
    for run_id in run_ids:
        gf = lake.graphframe(run_id)
        nodes = apply(gf, q, multi_index_mode=multi_index_mode)
        if graphframes:
            frames[run_id] = gf.filter(q, multi_index_mode=multi_index_mode)
        for node in nodes:
            out.append({"run_id": run_id, "node_id": node.node_id, "depth": node.depth,
                        "name": node.frame.get("name"), "path": [str(n.frame.get("name")) for n in node.path()]})
    if graphframes:
        return frames
    return pd.DataFrame(out, columns=["run_id", "node_id", "depth", "name", "path"])
