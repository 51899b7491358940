"""squash: after rows were removed, keep only the nodes still in the dataframe, re-parent each to its nearest
kept ancestor, merge kept siblings whose frames are now identical (values summed; all-NaN stays NaN),
re-derive call-path ids and recompute inclusive columns -- Hatchet's semantics.

The re-parenting is ``sql/squash_parents.sql``; merging, ids and inclusive values come from the one
normalisation path used at ingest (``perflake.ingest.normalize``), so a squashed frame is keyed exactly as if
its call paths had been read from a file.  On a DAG (a literal or ``from_lists`` graph) a kept node reached
through several nearest kept ancestors keeps a link to each, as in Hatchet: normalisation places it under the
smallest (its call-path id comes from that path), perflake.frame.relink adds the other links, and the inclusive
columns are recomputed over all of them.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from perflake.engine import duck, sqlfiles
from perflake.frame.graph import stored_preorder
from perflake.frame.tables import metric_roles, node_ids, to_profile_rows
from perflake.ingest.normalize import MAX_DEPTH, normalize
from perflake.vocabulary import INCLUSIVE, OTHER, Metric


def _kept_parents(gf, kept: set) -> tuple[dict, dict]:
    """(node id -> its tree parent: the smallest nearest kept ancestor, or None; node id -> every nearest kept
    ancestor, for a node reached through several: Hatchet keeps all of those links)."""
    roots = {id(r) for r in gf.graph.roots}
    rows = [(n.node_id, p.node_id if p is not None else None, n.node_id in kept)
            for n in gf.graph.traverse() for p in ([None] if id(n) in roots else []) + n.parents]
    tree = pa.table({"node_id": pa.array([r[0] for r in rows], pa.uint64()),
                     "parent_id": pa.array([r[1] for r in rows], pa.uint64()),
                     "kept": pa.array([r[2] for r in rows], pa.bool_())})
    con = duck.connection()
    try:
        con.register("tree_t", tree)
        result = sqlfiles.relation(con, "squash_parents", max_depth=MAX_DEPTH).fetchall()
    finally:
        con.close()
    found: dict = {}
    for a, b in result:
        up = found.setdefault(int(a), set())
        if b is not None and int(b) != int(a):  # a cycle through removed nodes is no link to itself
            up.add(int(b))
    return {a: min(up, default=None) for a, up in found.items()}, {a: up for a, up in found.items() if len(up) > 1}


def _dag_links(gf, parents: dict, extra: dict) -> list:
    """Every link of the squashed graph as (parent local id | -1, child local id), local ids as
    frame_tables.to_profile_rows numbers the kept nodes (stored order)."""
    order = [n.node_id for n in stored_preorder(gf.graph) if n.node_id in parents]
    local = {nid: i for i, nid in enumerate(order)}
    links = []
    for nid in order:
        ups = extra.get(nid) or ({parents[nid]} if parents[nid] is not None else set())
        if not ups:
            links.append((-1, local[nid]))
        links.extend((local[p], local[nid]) for p in sorted(ups, key=local.get))
    return links


def _row_marker(columns) -> str:
    """A column name not among ``columns``: marks the rows the input frame has."""
    name = "_perflake_row"
    while name in columns:
        name += "_"
    return name


def squash(gf, *, update_inclusive_columns: bool = True):
    """A new GraphFrame with only the nodes present in ``gf.dataframe`` (the graph of ``gf`` is untouched).

    Rows: exactly one per (squashed node, rank, thread) that some row of ``gf.dataframe`` maps to, as in
    Hatchet -- a row the filter removed does not come back as NaN, and inclusive values are re-derived for the
    rows that exist only.  Every input row carries a marker (an 'other' metric, 1.0) through normalisation,
    where merged rows sum it and rows that only the inclusive derivation creates have none; the rows without
    it are dropped.  The index keeps the input's levels (a single rank left stays a ``rank`` level).
    """
    df = gf.dataframe
    kept = set(np.unique(node_ids(df)).tolist())
    parents, extra = _kept_parents(gf, kept)
    metrics = metric_roles(gf)
    if update_inclusive_columns:  # inclusive columns paired with an exclusive one are re-derived
        metrics = [m for m in metrics if not (m.role == INCLUSIVE and m.pair)]
    rows = to_profile_rows(gf, parents, metrics)
    marker = _row_marker([*df.columns, *(m.name for m in metrics)])
    rows.values = rows.values.append_column(marker, pa.array(np.ones(rows.values.num_rows)))
    rows.metrics = [*rows.metrics, Metric(marker, OTHER)]
    n = normalize(rows)
    present = n.metrics.filter(pc.is_valid(n.metrics.column(marker))).drop_columns([marker])
    info = [m for m in n.metric_info if m.name != marker]
    levels = [lv for lv in df.index.names if lv in ("rank", "thread")]
    out = type(gf).from_tables(n.nodes, present, info, gf.metadata, sparse=True, levels=levels,
                               node_ordering=gf.graph.node_ordering)
    if extra:  # a DAG: a node keeps a link to each nearest kept ancestor (Hatchet's squash), inclusive values over them
        from perflake.frame.relink import relink
        from perflake.ops.inclusive import update_inclusive_columns as recompute_inclusive

        relink(out, rows.frames, _dag_links(gf, parents, extra))
        if update_inclusive_columns:
            recompute_inclusive(out)
    if gf.default_metric in out.dataframe.columns:
        out.default_metric = gf.default_metric
    return out
