"""Hatchet's JSON (one run) and Thicket's JSON (an ensemble of runs), written and read without Hatchet.

**Hatchet JSON** is what llnl-hatchet 2026.2's ``GraphFrame.to_json()`` writes and ``GraphFrame.from_json()``
(``hatchet/readers/json_reader.py``) reads; ``../shared/data/json/hatchet-graph-literal.json`` is one::

    {"graph": [{"<nid>": {"data": {<frame attributes>}, "children": [<nid>, ...]}, ...}, ...],   one object per root
     "dataframe_indices": ["node", "rank", "thread"],        the dataframe's index levels (node first)
     "dataframe": [{"node": <nid>, "rank": 0, "name": "main", "time": 1.5, ...}, ...],   one record per row
     "inclusive_metrics": [...], "exclusive_metrics": [...]}

``nid`` is the node's pre-order position (Hatchet's ``_hatchet_nid``); frames hold ``name`` and ``type`` as
Hatchet's readers make them, and file/line/module are dataframe columns.  NaN is written as null (as Hatchet's
``to_dict`` does: Hatchet reads it back as NaN; a file/line/end_line/module column without any value is left out,
else Hatchet's ``tree()`` prints 'None' after every name), infinities as ``Infinity``/``-Infinity`` (what Python's
json, and so Hatchet, writes and reads; strict JSON parsers refuse them).  Numbers are written with ``repr``, so
they read back bit for bit.  perflake adds keys that Hatchet's reader ignores, ``default_metric``, ``metadata`` (the
run's metadata, values JSON cannot hold written as text; a node-ordered (Caliper) graph's says so with
``"caliper.node_order": true``), so that :func:`read_hatchet_json` gets back what :func:`write_hatchet_json` wrote.
The nids of a node-ordered graph are its pre-order positions by frame all the same: Hatchet's ``from_json`` makes a
graph that is not node-ordered and keeps the file's nids as the nodes' numbers, which its copies then recompute by
frame -- numbers in Node order would no longer match between a frame and its ``deepcopy`` (Hatchet's own ``to_json``
writes them, with that effect).

**Thicket JSON** is what llnl-thicket 2026.1's ``Thicket.to_json()`` writes and ``Thicket.from_json()`` reads:
one graph (the union of the runs' call paths, each node also listing its ``parents``), a dataframe indexed by
``node``, ``profile`` and the location levels, ``metadata`` records (one per profile), ``profile`` (the
list of profiles), ``profile_idx_name`` and ``profile_mapping`` (profile -> source).  The union graph needs no
graph merge: a call path has the same perflake id in every run.  Thicket's documentation ("Thicket Properties")
wants integer profiles, records sorted by node then profile and every node of the graph in the dataframe: a
run labelled ``label`` (``perflake export`` uses run ids) gets the profile ``Thicket.profile_hasher(label)``
(the first 11 hex digits of the label's md5, as an integer) and its metadata record a ``run_id`` = label.  No
``stats`` key: Thicket starts an empty statsframe.  A run has no rows for a call path it lacks (Thicket's own
readers fill those with NaN through ``_fill_perfdata``; the values read the same).  As with Thicket's own
``to_json``, JSON turns the ``profile_mapping`` keys into strings.

Multi-run export, decided from Thicket's documentation (its tutorials build a Thicket from a list of profile
files, ``Thicket.from_json`` reads one serialised Thicket): several runs go to one Hatchet JSON file per run
(``<label>.json`` in a directory: any Hatchet or Thicket reads them one by one) or to one Thicket JSON file.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Mapping

import numpy as np
import pandas as pd
import pyarrow as pa

from perflake.errors import InteropError, ReaderError
from perflake.frame.graph import frame_preorder
from perflake.interop.hatchet import to_graphframe
from perflake.readers.hatchet_json import load, rows_from_spec
from perflake.readers.hatchet_layout import LOCATIONS
from perflake.readers.node_order import NODE_ORDER_KEY

EXTENSION_KEYS = ("default_metric", "metadata")
SPARSE_ATTRIBUTES = ("file", "line", "end_line", "module")  # left out of the records when no node has a value


# -- writing -------------------------------------------------------------------------------------------------
def _node_positions(index: pd.Index, position: dict[int, int]) -> np.ndarray:
    """The ``nid`` of every row: position[id(node)] over the ``node`` index level."""
    if isinstance(index, pd.MultiIndex):
        level = index.names.index("node")
        lut = np.fromiter((position[id(n)] for n in index.levels[level]), np.int64, len(index.levels[level]))
        return lut[np.asarray(index.codes[level])]
    return np.fromiter((position[id(n)] for n in index), np.int64, len(index))


def _plain(v):
    """A JSON-ready value: NaN/NA -> None, numpy scalars -> Python."""
    if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
        return None
    if isinstance(v, np.generic):
        v = v.item()
        return None if isinstance(v, float) and math.isnan(v) else v
    return v


def _json_column(series: pd.Series) -> list:
    if pd.api.types.is_float_dtype(series):
        data = series.to_numpy(dtype=np.float64, na_value=np.nan)
        out = data.tolist()
        for i in np.flatnonzero(np.isnan(data)):
            out[i] = None
        return out
    if pd.api.types.is_integer_dtype(series) and not series.hasnans:
        return series.to_numpy().tolist()
    return [_plain(v) for v in series.to_numpy(dtype=object)]


def _records(columns: dict[str, list]) -> list[dict]:
    keys = list(columns)
    return [dict(zip(keys, row)) for row in zip(*columns.values())]


def _jsonable(value):
    """``value`` through a JSON round trip (text for what JSON cannot hold)."""
    return json.loads(json.dumps(value, default=str))


def _row_columns(gf, position: dict[int, int], extra: dict[str, list] | None = None) -> dict[str, list]:
    df = gf.dataframe
    columns = {"node": _node_positions(df.index, position).tolist(), **(extra or {})}
    for level in df.index.names:
        if level != "node":
            columns[level] = df.index.get_level_values(level).to_numpy().tolist()
    for c in df.columns:
        if c in SPARSE_ATTRIBUTES and df[c].isna().all():
            continue  # Hatchet's tree() would print 'None' after every name; perflake reads it back as missing
        columns[str(c)] = _json_column(df[c])
    return columns


def to_dict(gf, *, extensions: bool = True) -> dict:
    """The GraphFrame in Hatchet's JSON layout, as a dict (module docstring); ``extensions=False`` leaves out
    perflake's two extra keys (what Hatchet's own ``to_dict``/``to_json`` write, key for key)."""
    # nids: the pre-order positions by frame, which Hatchet's from_json keeps as the nodes' numbers and its own
    # operations (copy, deepcopy) recompute; a node-ordered (Caliper) graph's own numbers would not survive them
    nodes = frame_preorder(gf.graph) if gf.graph.node_ordering else list(gf.graph)
    position = {id(n): i for i, n in enumerate(nodes)}
    graph = []
    for root in gf.graph.roots:
        graph.append({str(position[id(n)]): {"data": dict(n.frame.attrs),
                                             "children": [position[id(c)] for c in n.children]}
                      for n in root.traverse()})
    out = {"graph": graph, "dataframe_indices": list(gf.dataframe.index.names),
           "dataframe": _records(_row_columns(gf, position)),
           "inclusive_metrics": list(gf.inc_metrics), "exclusive_metrics": list(gf.exc_metrics)}
    if extensions:
        metadata = {**gf.metadata, NODE_ORDER_KEY: True} if gf.graph.node_ordering else gf.metadata
        out.update(default_metric=gf.default_metric, metadata=_jsonable(metadata))
    return out


def to_hatchet_json(gf, *, extensions: bool = True) -> str:
    """The GraphFrame as Hatchet JSON text (``hatchet.GraphFrame.from_json`` reads it)."""
    return json.dumps(to_dict(gf, extensions=extensions))


def _write(path, text: str) -> None:
    path = os.fspath(path)
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise InteropError(f"{path}: cannot write: {exc.strerror or exc}") from None


def write_hatchet_json(gf, path) -> None:
    """Write ``path``: the GraphFrame as Hatchet JSON (written under a temporary name, then renamed)."""
    _write(path, to_hatchet_json(gf))


def write_hatchet_json_dir(runs: Mapping[str, object], directory) -> list[str]:
    """One Hatchet JSON file per run, ``<directory>/<label>.json``; returns the paths written."""
    directory = os.fspath(directory)
    if os.path.exists(directory) and not os.path.isdir(directory):
        raise InteropError(f"{directory}: exists and is not a directory (several runs are written as one file each)")
    os.makedirs(directory, exist_ok=True)
    written = []
    for label, gf in runs.items():
        if not label or "/" in label or "\\" in label or label in (".", ".."):
            raise InteropError(f"{label!r}: not usable as a file name")
        path = os.path.join(directory, f"{label}.json")
        write_hatchet_json(gf, path)
        written.append(path)
    return written


def _union_graph(gfs):
    """The union of the GraphFrames' call paths as one perflake Graph (call-path ids identify nodes)."""
    from perflake.analytics.compare import nodes_table
    from perflake.frame.graph import Graph

    table = pa.concat_tables([nodes_table(gf) for gf in gfs], promote_options="permissive")
    keep = pd.Series(table.column("node_id").to_numpy()).drop_duplicates().index.to_numpy()
    return Graph.from_nodes_table(table.take(pa.array(keep)))


def thicket_profile(label: str) -> int:
    """The profile Thicket gives ``label`` (``Thicket.profile_hasher``: md5, first 11 hex digits, as an int)."""
    return int(hashlib.md5(label.encode("utf-8")).hexdigest()[:11], 16)


def to_thicket_dict(runs: Mapping[str, object], *, sources: Mapping[str, str] | None = None,
                    metadata: Mapping[str, dict] | None = None, profile_idx_name: str = "profile",
                    stats: pd.DataFrame | None = None) -> dict:
    """Several runs (label -> GraphFrame) as one Thicket JSON document (module docstring).

    ``sources``: label -> where the run came from (Thicket's ``profile_mapping``; default the label);
    ``metadata``: label -> metadata dict (default: each GraphFrame's ``metadata``); ``stats``: a statsframe
    indexed by call-path id, written as Thicket's ``stats`` records (``Thicket.from_json`` reads them into its
    statsframe; call paths not in the runs' graphs are left out).
    """
    if not runs:
        raise InteropError("no runs to export")
    labels = list(runs)
    profiles = {label: thicket_profile(label) for label in labels}
    if len(set(profiles.values())) != len(labels):
        raise InteropError("two run labels have the same Thicket profile hash: rename one")
    union = _union_graph(runs.values())
    nodes = list(union)
    index_of = {n.node_id: i for i, n in enumerate(nodes)}
    graph = {str(i): {"data": dict(n.frame.attrs), "children": [index_of[c.node_id] for c in n.children],
                      "parents": [index_of[p.node_id] for p in n.parents]} for i, n in enumerate(nodes)}
    levels = [lv for lv in LOCATIONS if any(lv in gf.dataframe.index.names for gf in runs.values())]
    parts = []
    for label, gf in runs.items():
        position = {id(n): index_of[n.node_id] for n in gf.graph}
        columns = _row_columns(gf, position, {profile_idx_name: [profiles[label]] * len(gf.dataframe)})
        for lv in levels:
            columns.setdefault(lv, [0] * len(gf.dataframe))
        parts.append(columns)
    keys = list(dict.fromkeys(k for part in parts for k in part))
    records = [rec for part in parts for rec in _records({k: part.get(k, [None] * len(part["node"])) for k in keys})]
    order = ["node", profile_idx_name, *levels]
    records.sort(key=lambda r: tuple(r[k] for k in order))  # Thicket's layout: by node, then profile
    meta = metadata or {label: gf.metadata for label, gf in runs.items()}
    exc = list(dict.fromkeys(m for gf in runs.values() for m in gf.exc_metrics))
    inc = list(dict.fromkeys(m for gf in runs.values() for m in gf.inc_metrics))
    meta_records = [{"run_id": label, **dict(meta.get(label) or {}), profile_idx_name: profiles[label]}
                    for label in labels]
    doc = {"graph": [graph], "dataframe_indices": order, "dataframe": records, "metadata": _jsonable(meta_records),
           "inclusive_metrics": inc, "exclusive_metrics": exc, profile_idx_name: [profiles[x] for x in labels],
           "profile_idx_name": profile_idx_name,
           "profile_mapping": {profiles[x]: (sources or {}).get(x, x) for x in labels}}
    if stats is not None:
        rows = stats[[i in index_of for i in stats.index]]
        columns = {"node": [index_of[i] for i in rows.index], **{str(c): _json_column(rows[c]) for c in rows.columns}}
        doc["stats"] = _jsonable(_records(columns))
    return doc


def write_thicket_json(runs: Mapping[str, object], path, **options) -> None:
    """Write ``path``: the runs as one Thicket JSON file (``thicket.Thicket.from_json`` reads it)."""
    _write(path, json.dumps(to_thicket_dict(runs, **options)))


# -- reading (perflake.readers.hatchet_json parses; here the rows become a GraphFrame) -----------------------
def from_dict(spec: dict, *, source: str = "<hatchet json>", frame_class=None):
    """A perflake GraphFrame of a Hatchet JSON document, through perflake's table path (perflake.interop.hatchet).
    A metric column whose records all hold integers is int64, as pandas makes it in Hatchet's ``from_json``.
    ``frame_class``: as for :func:`perflake.interop.hatchet.to_graphframe` (``GraphFrame.from_json`` passes its own)."""
    rows = rows_from_spec(spec, source)
    frames = rows.frames
    gf = to_graphframe(rows, spec.get("default_metric") or "time", frame_class=frame_class)  # Hatchet's: time
    links = _dag_links(spec, source)
    if links is not None:  # a node listed as the child of several: Hatchet's graph is a DAG, so is this one
        from perflake.frame.relink import relink

        relink(gf, frames, links)
    _integer_columns(gf, spec.get("dataframe") or [])
    return gf


def _dag_links(spec: dict, source: str):
    """Every (parent local id | -1, child local id) link of the JSON graph when some node has several parents
    (local ids as the reader numbers the nodes), else None (the reader's tree is the whole graph)."""
    from perflake.readers.hatchet_json import _pre_order

    local, _, _ = _pre_order(spec, source)
    links, parents = [], {}
    for g in spec["graph"]:
        for key, value in g.items():
            for c in value.get("children") or []:
                links.append((local[int(key)], local[int(c)]))
                parents[int(c)] = parents.get(int(c), 0) + 1
    if all(k < 2 for k in parents.values()):
        return None
    roots = [(-1, local[int(k)]) for g in spec["graph"] for k in g if int(k) not in parents]
    return roots + links


def _integer_columns(gf, records: list) -> None:
    df = gf.dataframe
    for c in [*gf.exc_metrics, *gf.inc_metrics]:
        if not records or c not in df.columns or not all(type(r.get(c)) is int for r in records):
            continue
        values = df[c].to_numpy(dtype=np.float64, na_value=np.nan)
        if np.isfinite(values).all() and (values == np.round(values)).all() and np.abs(values).max() < 2**53:
            df[c] = values.astype(np.int64)


def read_hatchet_json(path, *, frame_class=None):
    """Read a Hatchet JSON file (written by Hatchet's ``to_json`` or by perflake) into a perflake GraphFrame."""
    path = os.fspath(path)
    return from_dict(load(path), source=path, frame_class=frame_class)


def from_hatchet_json(text: str, *, source: str = "<hatchet json>", frame_class=None):
    """A perflake GraphFrame of Hatchet JSON text."""
    try:
        spec = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReaderError(source, f"not JSON: {exc}") from None
    return from_dict(spec, source=source, frame_class=frame_class)
