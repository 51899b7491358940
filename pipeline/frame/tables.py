"""GraphFrame <-> tables: the bridge that lets every GraphFrame operation run as SQL over Arrow tables.

``node_ids(df)`` maps a dataframe's ``node`` index level to call-path ids without a Python loop over rows;
``edges(graph)`` lists every parent link (DAGs included); ``to_profile_rows(gf, ...)`` turns a (possibly
filtered) GraphFrame back into reader-shaped rows so that squash re-uses the one normalisation path.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from perflake.frame.graph import frame_type, stored_preorder
from perflake.vocabulary import EXCLUSIVE, FRAME_SCHEMA, INCLUSIVE, OTHER, Metric, ProfileRows

EXTRA_FRAME_COLUMNS = ("file", "module", "line", "end_line")  # frame columns of a dataframe besides name


def typed_frame_column(name: str, per_node: np.ndarray, per_row, index) -> pd.Series:
    """A frame column of a dataframe as Hatchet types it: object dtype (not pandas 3's string dtype), except
    ``line``/``end_line``, int64 when every node's is known.  ``per_node``: object array, one value per node;
    ``per_row``: spreads it over the dataframe's rows (``index``)."""
    values = per_row(per_node)
    if name in ("line", "end_line") and len(per_node) and all(v is not None for v in per_node):
        return pd.Series(values.astype(np.int64), index=index)
    return pd.Series(values, index=index, dtype=object)

FRAME_COLUMNS = ("file", "line", "end_line", "module")


def node_ids(df: pd.DataFrame) -> np.ndarray:
    """The call-path id of every row of ``df`` (index level ``node``), vectorised over the index codes."""
    index = df.index
    if isinstance(index, pd.MultiIndex):
        level = index.names.index("node")
        uniques = index.levels[level]
        codes = index.codes[level]
    else:
        codes, uniques = pd.factorize(index)
    ids = np.fromiter((n.node_id for n in uniques), dtype=np.uint64, count=len(uniques))
    return ids[codes]


def locations(df: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(rank, thread) of every row; 0 where the index has no such level."""
    names = list(df.index.names)
    n = len(df)
    rank = df.index.get_level_values("rank").to_numpy(np.int32) if "rank" in names else np.zeros(n, np.int32)
    thread = df.index.get_level_values("thread").to_numpy(np.int32) if "thread" in names else np.zeros(n, np.int32)
    return rank, thread


def edges(graph) -> pa.Table:
    """(run_id, parent_id, child_id) for every parent link of the graph; roots as (NULL, root)."""
    parents, children = [], []
    for node in graph.traverse():
        if not node.parents:
            parents.append(None)
            children.append(node.node_id)
        for p in node.parents:
            parents.append(p.node_id)
            children.append(node.node_id)
    n = len(children)
    return pa.table({"run_id": pa.repeat(pa.scalar("_", pa.string()), n), "parent_id": pa.array(parents, pa.uint64()),
                     "child_id": pa.array(children, pa.uint64())})


def metrics_table(df: pd.DataFrame, columns: list[str]) -> pa.Table:
    """(run_id, node_id, rank, thread, <columns>) from a GraphFrame dataframe."""
    rank, thread = locations(df)
    data = {"run_id": pa.repeat(pa.scalar("_", pa.string()), len(df)), "node_id": pa.array(node_ids(df), pa.uint64()),
            "rank": pa.array(rank), "thread": pa.array(thread)}
    for c in columns:
        data[c] = pa.array(df[c].to_numpy(dtype=np.float64, na_value=np.nan), pa.float64(), from_pandas=True)
    return pa.table(data)


def inclusive_partner(gf, exclusive: str) -> str | None:
    """The inclusive metric of ``gf`` paired with ``exclusive`` by Hatchet's names: ``X (inc)`` (TAU,
    HPCToolkit, json-split) or ``inclusive#X`` (Caliper's native attributes)."""
    return next((c for c in (f"{exclusive} (inc)", f"inclusive#{exclusive}") if c in gf.inc_metrics), None)


def exclusive_partner(gf, inclusive: str) -> str | None:
    """The exclusive metric of ``gf`` paired with ``inclusive`` (see :func:`inclusive_partner`)."""
    for prefix, suffix in (("", " (inc)"), ("inclusive#", "")):
        if inclusive.startswith(prefix) and inclusive.endswith(suffix) and len(inclusive) > len(prefix + suffix):
            base = inclusive[len(prefix):len(inclusive) - len(suffix)]
            if base in gf.exc_metrics:
                return base
    return None


def metric_roles(gf) -> list[Metric]:
    """The GraphFrame's numeric columns as Metrics (exclusive/inclusive from its lists, the rest other)."""
    out = []
    for c in gf.dataframe.columns:
        if c == "name" or c in FRAME_COLUMNS or not pd.api.types.is_numeric_dtype(gf.dataframe[c]):
            continue
        role = EXCLUSIVE if c in gf.exc_metrics else INCLUSIVE if c in gf.inc_metrics else OTHER
        out.append(Metric(c, role))
    pairs = {m.name: m for m in out}
    for m in list(out):
        if m.role == EXCLUSIVE:
            inc = inclusive_partner(gf, m.name)
            if inc in pairs:
                out[out.index(m)] = Metric(m.name, EXCLUSIVE, None, inc)
                out[out.index(pairs[inc])] = Metric(inc, INCLUSIVE, None, m.name)
    return out


def to_profile_rows(gf, kept_parent: dict[int, int | None], metrics: list[Metric]) -> ProfileRows:
    """Rows of the kept nodes of ``gf``, each re-parented as ``kept_parent`` says (node_id -> node_id or None).

    Frames come from the nodes (name, type) and the dataframe's file/line/module columns, so identity is
    re-derived by ``perflake.identity`` exactly as at ingest.
    """
    by_id = gf.graph.node_by_id()
    order = [n.node_id for n in stored_preorder(gf.graph) if n.node_id in kept_parent]  # children as stored
    local = {nid: i for i, nid in enumerate(order)}
    attrs = {}
    df = gf.dataframe
    present = [c for c in FRAME_COLUMNS if c in df.columns]
    if present:
        first = df[present].groupby(node_ids(df), sort=False).first()
        attrs = {int(k): v for k, v in zip(first.index, first.to_dict("records"))}

    def attr(nid, key, kind):
        v = attrs.get(nid, {}).get(key)
        if v is None or (isinstance(v, float) and np.isnan(v)) or (kind is int and isinstance(v, str)):
            return None
        return kind(v)

    frames = pa.table(
        {
            "local_id": pa.array(range(len(order)), pa.int32()),
            "parent_local": pa.array([local[kept_parent[n]] if kept_parent[n] is not None else -1 for n in order],
                                     pa.int32()),
            "name": [str(by_id[n].frame.get("name")) for n in order],
            "type": [frame_type(by_id[n].frame) for n in order],
            "file": [attr(n, "file", str) for n in order],
            "line": [attr(n, "line", int) for n in order],
            "end_line": [attr(n, "end_line", int) for n in order],
            "module": [attr(n, "module", str) for n in order],
        },
        schema=FRAME_SCHEMA,
    )
    ids = node_ids(df)
    kept_ids = np.fromiter(local.keys(), np.uint64, len(local))
    kept_lids = np.fromiter(local.values(), np.int32, len(local))
    sorter = np.argsort(kept_ids)
    keep = np.isin(ids, kept_ids)
    sub = df[keep]
    rank, thread = locations(sub)
    lids = kept_lids[sorter[np.searchsorted(kept_ids, ids[keep], sorter=sorter)]]
    values = {"local_id": pa.array(lids), "rank": pa.array(rank), "thread": pa.array(thread)}
    for m in metrics:
        values[m.name] = pa.array(sub[m.name].to_numpy(dtype=np.float64, na_value=np.nan), pa.float64())
    return ProfileRows(format="graphframe", source="<GraphFrame>", frames=frames, values=pa.table(values),
                       metrics=metrics, metadata=dict(gf.metadata))


def rehashed(index: pd.Index) -> pd.Index:
    """The same index rebuilt, so that pandas hashes its Node values anew."""
    if isinstance(index, pd.MultiIndex):
        level = index.names.index("node")
        fresh = pd.Index(list(index.levels[level]), dtype=object, name="node")
        return index.set_levels(fresh, level=level, verify_integrity=False)
    return pd.Index(list(index), dtype=object, name=index.name)
