"""Hatchet's ``drop_index_levels`` and ``groupby_aggregate``: fewer rows, by location or by a column.

``drop_index_levels(gf, function=np.mean)`` (in place, as Hatchet): one row per node; the exclusive and
inclusive metrics are reduced over the dropped levels (rank, thread) with ``function``, every other column
keeps the node's first row.  numpy reductions are handed to pandas by name (``np.mean`` -> ``"mean"``, NaN
skipped), which is what pandas does with them for Hatchet today, without its deprecation warning.

``groupby_aggregate(gf, groupby_function, agg_function)`` (a new GraphFrame): rows grouped by the values of a
column (or several), per location; ``agg_function`` is a pandas aggregation, usually a dict
``{column: function}`` (columns not named are dropped, as Hatchet does; a single function applies to the
metrics).  The graph has one node per group, frame ``{"name": <value>, "type": <column>}``, and a link
``A -> B`` wherever a node of group A has a child of group B (A != B): a DAG in general, as in Hatchet.
A group node's id is the call-path id of a root with that frame (``perflake.identity``).
Differences from Hatchet: it works on multi-rank frames (Hatchet's fails unless the index is ``node``
alone), keeps the rank/thread levels, and adds no ``nid`` column.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from perflake.frame.graph import Frame, Graph, Node
from perflake.frame.tables import node_ids
from perflake.identity import call_path_ids, frame_keys

_PANDAS_NAMES = {np.mean: "mean", np.nanmean: "mean", np.sum: "sum", np.nansum: "sum", np.max: "max",
                 np.nanmax: "max", np.min: "min", np.nanmin: "min", np.median: "median", np.nanmedian: "median",
                 np.std: "std", np.nanstd: "std", np.var: "var", np.nanvar: "var", len: "size"}


def pandas_function(function):
    """numpy reductions by their pandas names; anything else unchanged."""
    try:
        return _PANDAS_NAMES.get(function, function)
    except TypeError:
        return function


def _node_codes(index: pd.Index) -> tuple[np.ndarray, pd.Index]:
    if isinstance(index, pd.MultiIndex):
        level = index.names.index("node")
        return index.codes[level], index.levels[level]
    codes, uniques = pd.factorize(index)
    return codes, pd.Index(uniques, dtype=object)


def drop_index_levels(gf, function=np.mean) -> None:
    """Keep only the ``node`` index level: metrics reduced with ``function``, other columns from the first row."""
    df = gf.dataframe
    if list(df.index.names) == ["node"]:
        return
    codes, nodes = _node_codes(df.index)
    metrics = [c for c in df.columns if c in gf.exc_metrics or c in gf.inc_metrics]
    others = [c for c in df.columns if c not in metrics]
    used, first = np.unique(codes, return_index=True)
    out = pd.DataFrame(index=pd.Index(np.asarray(nodes, dtype=object)[used], name="node", dtype=object))
    if metrics:
        reduced = df[metrics].groupby(codes, sort=True).agg(pandas_function(function))
        for c in metrics:
            out[c] = reduced[c].to_numpy()
    for c in others:
        out[c] = df[c].to_numpy()[first]
    gf.dataframe = out[list(df.columns)]


def _group_ids(names: list[str], kind: str) -> list[int]:
    """The call-path id of a root frame {name, type=kind} for each name (the one identity definition)."""
    n = len(names)
    frames = pa.table({"type": pa.array([kind] * n, pa.string()), "name": pa.array(names, pa.string()),
                       "file": pa.nulls(n, pa.string()), "line": pa.nulls(n, pa.int64()),
                       "module": pa.nulls(n, pa.string())})
    zeros, roots = np.zeros(n, np.int32), np.full(n, -1, np.int32)
    ids = call_path_ids(zeros, np.arange(n, dtype=np.int32), roots, frame_keys(frames), 0)
    return [int(i) for i in ids.node_id]


def _group_graph(gf, node_group: dict[int, int], labels: list[str], kind: str) -> tuple[Graph, list[Node]]:
    """One node per group; links between the groups of linked nodes (nearest grouped ancestor for nodes
    without a group)."""
    ids = _group_ids(labels, kind)
    groups = [Node(Frame({"name": label, "type": kind}), node_id=nid) for label, nid in zip(labels, ids)]
    links, roots, effective = set(), set(), {}
    for node in gf.graph.traverse():  # pre-order: parents are resolved before their children
        up = [effective[id(p)] for p in node.parents if id(p) in effective]
        own = node_group.get(node.node_id, -1)
        effective[id(node)] = own if own >= 0 else (up[0] if up else -1)
        if own < 0:
            continue
        if not any(u >= 0 for u in up):
            roots.add(own)
        links.update((u, own) for u in up if u >= 0 and u != own)
    for parent, child in sorted(links):
        groups[parent].children.append(groups[child])
        groups[child].parents.append(groups[parent])
    for g in groups:
        g.children.sort(key=lambda n: n.frame.tuple_repr)
    return Graph([groups[r] for r in sorted(roots)]), groups  # depths: the first path found from a root


def groupby_aggregate(gf, groupby_function, agg_function):
    """A new GraphFrame with one node per value of the ``groupby_function`` column(s) (module docstring)."""
    df = gf.dataframe
    if not isinstance(groupby_function, (str, list, tuple)):
        raise TypeError("groupby_aggregate groups by a column name or a list of column names")
    keys = [groupby_function] if isinstance(groupby_function, str) else list(groupby_function)
    missing = [k for k in keys if k not in df.columns]
    if missing:
        raise KeyError(f"no column {missing[0]!r} to group by (columns: {', '.join(map(str, df.columns))})")
    label = df[keys[0]].astype(str) if len(keys) == 1 else df[keys].astype(str).agg(", ".join, axis=1)
    label = label.where(df[keys].notna().all(axis=1))
    codes, labels = pd.factorize(label.to_numpy(dtype=object), sort=True, use_na_sentinel=True)
    kind = ", ".join(map(str, keys))
    row_nodes = node_ids(df)
    first = pd.Series(codes).groupby(row_nodes, sort=False).first()
    node_group = {int(k): int(v) for k, v in first.items()}
    graph, groups = _group_graph(gf, node_group, [str(x) for x in labels], kind)

    levels = [name for name in df.index.names if name != "node"]
    if isinstance(agg_function, dict):
        spec = {c: pandas_function(f) for c, f in agg_function.items()}
    else:
        spec = {c: pandas_function(agg_function) for c in df.columns if c in gf.exc_metrics or c in gf.inc_metrics}
    keep = codes >= 0
    by = [codes[keep]] + [df.index.get_level_values(name)[keep] for name in levels]
    out = df[keep].groupby(by, sort=True).agg(spec)
    group_codes = out.index.get_level_values(0).to_numpy() if levels else out.index.to_numpy()
    group_nodes = np.empty(len(groups), dtype=object)
    group_nodes[:] = groups
    order = np.lexsort([*(out.index.get_level_values(i).to_numpy() for i in range(len(levels), 0, -1)),
                        np.asarray([g._hatchet_nid for g in groups])[group_codes]])
    out, group_codes = out.iloc[order], group_codes[order]
    arrays = [pd.Index(group_nodes[group_codes], dtype=object)] + [out.index.get_level_values(i + 1)
                                                                    for i in range(len(levels))]
    out.index = (pd.MultiIndex.from_arrays(arrays, names=["node", *levels]) if levels
                 else pd.Index(arrays[0], name="node", dtype=object))
    out = out.drop(columns=[c for c in ("name",) if c in out.columns])
    out.insert(0, "name", np.asarray([str(x) for x in labels], dtype=object)[group_codes])
    exc = [m for m in gf.exc_metrics if m in out.columns]
    inc = [m for m in gf.inc_metrics if m in out.columns]
    default = gf.default_metric if gf.default_metric in out.columns else (exc + inc + [None])[0]
    return type(gf)(graph, out, exc, inc, default, gf.metadata)
