"""Hatchet's literal format in and out: ``from_literal``, ``from_lists`` and ``to_literal``.

A literal is a list of roots ``{"frame": {"name": ..., "type": ...}, "metrics": {...}, "children": [...]}``.
``from_literal`` turns it into reader rows and sends them through the same normalisation as every profile
(``perflake.ingest.normalize``), so a literal's call paths get the ids they would get from a file.  As in Hatchet,
a metric whose name ends in ``(inc)`` is inclusive and every other numeric metric is exclusive (an
exclusive ``X`` and an inclusive ``X (inc)`` are a pair; a metric named ``line`` is a metric); nothing is
derived; ``default_metric`` is ``time`` when there is one; children and roots keep the literal's order
(``node.children``), traversals go in frame order.  Entries that share a ``_hatchet_nid`` are one node, as in
Hatchet: the first entry makes it, a later one links it under another parent (its metrics are ignored, its
children are the node's), so a literal can describe a DAG, even a cycle.  perflake extras: a metric value
may be a list (one value per rank), non-numeric metric values and the ``attributes`` dict that
``to_literal`` writes become dataframe columns, and the frame keys ``file``, ``line``, ``end_line`` and
``module`` in ``frame`` or ``attributes`` (``file``/``module`` also as text in ``metrics``) are frame
attributes (part of identity).  Differences from Hatchet: siblings with identical frames merge (values
summed, as for every profile perflake reads), ``_hatchet_nid`` is renumbered in pre-order, and frame keys
other than name/type/file/line/end_line/module are ignored.

``from_lists(*lists)``: ``Graph.from_lists(*lists)`` (a Node object used twice is one node with two
parents), every node with ``time`` = 1 and ``time (inc)`` derived, columns ``time``, ``name``, ``time (inc)``:
Hatchet's behaviour, siblings with equal names included (call-path ids by perflake.frame.graph_ids).

``to_literal(gf, name="name", rank=0, thread=0, cat_columns=[])``: the graph in pre-order (roots and
children in frame order, as Hatchet writes them), each node with its ``name``, ``frame`` (with
file/line/module when known, so the literal reads back to the same ids), ``metrics`` (the exclusive and
inclusive metrics at (rank, thread), plus ``_hatchet_nid``), ``attributes`` (``cat_columns``) and
``children`` when it has any; a node met again (DAG) is listed again without its children.  A value that
was not measured stays NaN (Hatchet writes 0 for some of them).
"""

from __future__ import annotations

import numbers

import numpy as np
import pandas as pd
import pyarrow as pa

from perflake.frame.graph import NO_TYPE, ordered
from perflake.readers.base import EXCLUSIVE, FRAME_SCHEMA, INCLUSIVE, OTHER, Metric, ProfileRows

FRAME_ATTRS = ("file", "line", "end_line", "module")
TEXT_ATTRS = ("file", "module")  # also read from "metrics" when they hold text there
_SKIP = ("_hatchet_nid",)


def _walk(literal) -> list[tuple[int, int, dict]]:
    """(local id, parent local id, node) in pre-order, without recursion."""
    roots = [literal] if isinstance(literal, dict) else list(literal)
    out, stack = [], [(node, -1) for node in reversed(roots)]
    while stack:
        node, parent = stack.pop()
        if not isinstance(node, dict) or not ((node.get("frame") or {}).get("name") or node.get("name")):
            raise ValueError(f"literal node without a frame name: {node!r:.80}")
        out.append((len(out), parent, node))
        stack.extend((child, len(out) - 1) for child in reversed(node.get("children") or []))
    return out


def _frame(node: dict) -> dict:
    frame, metrics, attributes = node.get("frame") or {}, node.get("metrics") or {}, node.get("attributes") or {}
    kind = frame.get("type")
    out = {"name": str(frame.get("name") or node.get("name")), "type": None if kind == NO_TYPE else kind}
    for key in FRAME_ATTRS:
        value = frame.get(key, attributes.get(key))
        if value is None and key in TEXT_ATTRS and isinstance(metrics.get(key), str):
            value = metrics[key]
        missing = value is None or (isinstance(value, float) and np.isnan(value))
        out[key] = None if missing else int(value) if key in ("line", "end_line") else str(value)
    return out


def _is_number(value) -> bool:
    if isinstance(value, (list, tuple)):
        return all(_is_number(v) for v in value)
    return value is None or (isinstance(value, numbers.Number) and not isinstance(value, bool))


def _roles(names: list[str]) -> tuple[list[Metric], list[str]]:
    """Metrics for normalisation (an unpaired exclusive one as 'other', so nothing is derived) and the
    exclusive names to restore afterwards."""
    present = set(names)
    metrics, exclusive = [], []
    for name in names:
        stem = name[: -len("(inc)")].rstrip() if name.endswith("(inc)") else None
        if stem is not None:
            metrics.append(Metric(name, INCLUSIVE, None, stem if stem in present else None))
        elif f"{name} (inc)" in present:
            metrics.append(Metric(name, EXCLUSIVE, None, f"{name} (inc)"))
        else:
            metrics.append(Metric(name, OTHER))
        if stem is None:
            exclusive.append(name)
    return metrics, exclusive


def _hatchet_id(node: dict):
    """The entry's ``_hatchet_nid`` when it names a node (a number other than -1), else None."""
    nid = (node.get("metrics") or {}).get("_hatchet_nid")
    ok = isinstance(nid, numbers.Number) and not isinstance(nid, bool) and nid == nid and nid != -1
    return nid if ok else None


def _shared(rows):
    """Hatchet's rule for entries sharing a ``_hatchet_nid``: the first is the node, a later one is that node
    again under another parent (its metrics are ignored, its children are the node's).  Returns the rows of the
    distinct nodes (renumbered, each under the first parent it appears under) and, when some entry repeats a
    node, every (parent row | -1, child row) link in the literal's order; else None."""
    first, canon = {}, []
    for i, (_, _, node) in enumerate(rows):
        nid = _hatchet_id(node)
        canon.append(first.setdefault(nid, i) if nid is not None else i)
    kept = [i for i in range(len(rows)) if canon[i] == i]
    if len(kept) == len(rows):
        return rows, None
    new = {old: k for k, old in enumerate(kept)}
    out = [(k, new[canon[rows[i][1]]] if rows[i][1] >= 0 else -1, rows[i][2]) for k, i in enumerate(kept)]
    links = [(new[canon[p]] if p >= 0 else -1, new[canon[i]]) for i, (_, p, _) in enumerate(rows)]
    return out, links


def _paths(parents: list[int], keys: list[tuple]) -> list[tuple]:
    """The tuple of frame keys from the root to each row (parents listed before their children)."""
    out: list[tuple] = []
    for parent, key in zip(parents, keys):
        out.append((out[parent] if parent >= 0 else ()) + (key,))
    return out


def _extra_columns(gf, rows, nodes: pa.Table, columns: dict[str, list]) -> None:
    """Attach per-node non-numeric values (by call path) to the dataframe."""
    keyed = ("name", "type", *FRAME_ATTRS)
    lit_keys = [tuple(_frame(node)[k] for k in keyed) for _, _, node in rows]
    lit_paths = _paths([p for _, p, _ in rows], lit_keys)
    table = nodes.sort_by("depth").to_pydict()
    index = {nid: i for i, nid in enumerate(table["node_id"])}
    parents = [index.get(p, -1) if p is not None else -1 for p in table["parent_id"]]
    node_paths = _paths(parents, [tuple(table[k][i] for k in keyed) for i in range(len(parents))])
    path_id = dict(zip(node_paths, table["node_id"]))
    from perflake.frame.tables import node_ids

    row_ids = node_ids(gf.dataframe)
    for column, values in columns.items():
        per_node: dict = {}
        for path, value in zip(lit_paths, values):
            if value is not None:
                per_node.setdefault(path_id.get(path), value)
        cells = np.empty(len(row_ids), dtype=object)
        cells[:] = [per_node.get(int(i)) for i in row_ids.tolist()]
        gf.dataframe[column] = pd.Series(cells, index=gf.dataframe.index, dtype=object)


def from_literal(literal, *, frame_class):
    """A GraphFrame (of ``frame_class``: ``GraphFrame.from_literal`` passes its own) of a Hatchet literal (module
    docstring)."""
    from perflake.ingest.normalize import normalize

    rows, links = _shared(_walk(literal))
    names = list(dict.fromkeys(k for _, _, node in rows for k in (node.get("metrics") or {})
                                if k not in TEXT_ATTRS and k not in _SKIP))
    numeric = [m for m in names if all(_is_number((node.get("metrics") or {}).get(m)) for _, _, node in rows)]
    text = {m: [(node.get("metrics") or {}).get(m) for _, _, node in rows] for m in names if m not in numeric}
    for i, (_, _, node) in enumerate(rows):
        for key, value in (node.get("attributes") or {}).items():
            if key not in FRAME_ATTRS:
                text.setdefault(key, [None] * len(rows))[i] = value
    frames = [_frame(node) for _, _, node in rows]
    ranks = max([len(v) for _, _, node in rows for v in (node.get("metrics") or {}).values()
                 if isinstance(v, (list, tuple))] + [1])
    frame_table = pa.table({"local_id": pa.array(range(len(rows)), pa.int32()),
                            "parent_local": pa.array([p for _, p, _ in rows], pa.int32()),
                            **{k: pa.array([f[k] for f in frames], FRAME_SCHEMA.field(k).type)
                               for k in FRAME_SCHEMA.names[2:]}}, schema=FRAME_SCHEMA)
    values = {"local_id": np.repeat(np.arange(len(rows), dtype=np.int32), ranks),
              "rank": np.tile(np.arange(ranks, dtype=np.int32), len(rows)),
              "thread": np.zeros(len(rows) * ranks, np.int32)}
    for m in numeric:
        column = []
        for _, _, node in rows:
            v = (node.get("metrics") or {}).get(m)
            v = list(v) + [None] * (ranks - len(v)) if isinstance(v, (list, tuple)) else [v] * ranks
            column.extend(np.nan if x is None else float(x) for x in v)
        values[m] = np.asarray(column, dtype=np.float64)
    metrics, exclusive = _roles(numeric)
    profile = ProfileRows(format="literal", source="<literal>", frames=frame_table,
                          values=pa.table(values), metrics=metrics)
    n = normalize(profile)
    gf = frame_class.from_tables(n.nodes, n.metrics, n.metric_info)
    unused = [c for c in FRAME_ATTRS if c in gf.dataframe.columns and gf.dataframe[c].isna().all()]
    gf.dataframe = gf.dataframe.drop(columns=unused)
    gf.exc_metrics = [m for m in exclusive if m in gf.dataframe.columns]
    gf.inc_metrics = [m.name for m in metrics if m.role == INCLUSIVE and m.name in gf.dataframe.columns]
    gf.default_metric = "time" if "time" in gf.dataframe.columns else (gf.exc_metrics + gf.inc_metrics + [None])[0]
    if text:
        _extra_columns(gf, rows, n.nodes, text)
    if links is not None:
        from perflake.frame.relink import relink

        relink(gf, frame_table, links)
    metric_cols = [m.name for m in metrics if m.name in gf.dataframe.columns]  # the literal's order (a "line"
    gf.dataframe = gf.dataframe[[c for c in gf.dataframe.columns if c not in metric_cols] + metric_cols]  # too)
    return gf


def from_lists(*lists, frame_class):
    """A GraphFrame (of ``frame_class``: ``GraphFrame.from_lists`` passes its own) of ``Graph.from_lists(*lists)``:
    ``time`` = 1 per node, ``time (inc)`` derived (module docstring); a Node object used twice in the lists is one
    node with two parents, as in Hatchet."""
    from perflake.frame.graph import Graph

    graph = Graph.from_lists(*lists)
    nodes = list(graph)
    names = pd.Series([n.frame.get("name") for n in nodes], dtype=object).to_numpy()
    df = pd.DataFrame({"time": np.ones(len(nodes)), "name": names}, index=pd.Index(nodes, name="node", dtype=object))
    gf = frame_class(graph, df, ["time"], [], default_metric="time")
    gf.update_inclusive_columns()
    return gf


def _plain(value):
    if isinstance(value, (np.floating, float)):
        return float(value)
    if isinstance(value, np.integer):
        return int(value)
    return value


def to_literal(gf, name: str = "name", rank: int = 0, thread: int = 0, cat_columns=()) -> list[dict]:
    """The graph as a Hatchet literal, values at (rank, thread) (module docstring)."""
    df = gf.dataframe
    mask = np.ones(len(df), dtype=bool)
    for level, want in (("rank", rank), ("thread", thread)):
        if level in df.index.names:
            mask &= df.index.get_level_values(level).to_numpy() == want
    sub = df[mask]
    from perflake.frame.tables import node_ids

    row_of = {int(i): k for k, i in reversed(list(enumerate(node_ids(sub))))}
    metrics = [m for m in [*gf.exc_metrics, *gf.inc_metrics] if m in df.columns]
    attrs = [c for c in FRAME_ATTRS if c in df.columns]
    wanted = [*metrics, *attrs, *[c for c in cat_columns if c in df.columns], *([name] if name in df.columns else [])]
    columns = {c: sub[c].to_numpy() for c in dict.fromkeys(wanted)}

    def entry(node) -> dict:
        i = row_of.get(node.node_id)
        frame = dict(node.frame.attrs)
        for c in attrs:
            v = columns[c][i] if i is not None else None
            if v is not None and not (isinstance(v, float) and np.isnan(v)):
                frame[c] = _plain(v)
        label = columns[name][i] if i is not None and name in columns else node.frame.get("name")
        values = {m: (_plain(columns[m][i]) if i is not None else float("nan")) for m in metrics}
        values["_hatchet_nid"] = node._hatchet_nid
        return {"name": _plain(label), "frame": frame, "metrics": values,
                "attributes": {c: (_plain(columns[c][i]) if i is not None else None) for c in cat_columns
                               if c in columns}}

    out, seen = [], set()
    stack = [(root, out) for root in reversed(ordered(gf.graph.roots))]
    while stack:
        node, siblings = stack.pop()
        item = entry(node)
        siblings.append(item)
        if id(node) in seen:  # met again (a DAG or a cycle): listed, its children under its first entry only
            continue
        seen.add(id(node))
        if node.children:
            item["children"] = []
            stack.extend((child, item["children"]) for child in reversed(ordered(node.children)))
    for item in _iter(out):
        if item.get("children") == []:
            del item["children"]
    return out


def _iter(items):
    stack = list(items)
    while stack:
        item = stack.pop()
        yield item
        stack.extend(item.get("children", []))
