"""GraphFrame.to_hdf / from_hdf: Hatchet's HDF5 checkpoint, through pandas' HDF support (PyTables, the optional
extra ``perflake[hdf]``).

Hatchet stores its dataframe with ``DataFrame.to_hdf`` in pandas' *fixed* format, whose object columns -- the
Node objects of the index, the children and parents lists -- are Python pickles: a file that runs code when read,
and one that only Hatchet's own classes can load.  perflake writes no pickle.  Under ``key`` it stores four
PyTables *tables* (pandas ``format="table"``):

* ``<key>/rows``: the dataframe, its ``node`` level as the call-path id (uint64) and ``rank``/``thread`` as
  columns; text columns with a null marker, integer-or-null columns as float (restored from ``<key>/meta``);
* ``<key>/nodes``: per node in pre-order its call-path id, depth and frame attributes (JSON text);
* ``<key>/edges``: (parent, child) positions in the children's order (DAGs: a node with several parents);
* ``<key>/meta``: JSON text: exc/inc metrics, default metric, run metadata, index names, column dtypes.

Reading rebuilds the same graph (same call-path ids, frames and children order) and dataframe (same index, columns,
values and dtypes).  A store that Hatchet wrote (pickled objects) is refused with a one-line InteropError rather
than unpickled.
"""

from __future__ import annotations

import json
import os
import warnings

import numpy as np
import pandas as pd

from perflake.errors import InteropError

DEFAULT_KEY = "hatchet_graphframe"  # Hatchet's default key
_NULL = "\x00perflake:null"  # how a missing text value is written (a table column holds strings only)
_PARTS = ("rows", "nodes", "edges", "meta")


def _tables():
    try:
        import tables  # noqa: F401  (pandas' HDF support)
    except ImportError as exc:
        raise InteropError("HDF5 needs PyTables: pip install 'perflake[hdf]' (or: pip install tables)") from exc


def _store_kwargs(kwargs: dict) -> dict:
    allowed = {"complevel", "complib", "mode"}
    unknown = set(kwargs) - allowed
    if unknown:
        raise InteropError(f"to_hdf: unsupported option(s) {', '.join(sorted(unknown))} (perflake writes its own "
                           f"table layout; accepted: {', '.join(sorted(allowed))})")
    return kwargs


def _column_kind(s: pd.Series) -> str:
    if pd.api.types.is_bool_dtype(s):
        return "bool"
    if pd.api.types.is_numeric_dtype(s):
        return str(s.dtype)
    values = [v for v in s if v is not None and not (isinstance(v, float) and np.isnan(v))]
    if values and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in values):
        return "int-or-null"
    if all(isinstance(v, str) for v in values):
        return "text"
    raise InteropError(f"to_hdf: column {s.name!r} holds values of mixed types; HDF5 tables hold numbers or text")


def to_hdf(gf, filename, key: str = DEFAULT_KEY, **kwargs) -> None:
    """Write ``gf`` under ``key`` (other keys of the file are kept; this key is replaced)."""
    _tables()
    options = _store_kwargs(dict(kwargs))
    mode = options.pop("mode", "a")
    df = gf.dataframe
    nodes = list(gf.graph.traverse())
    pos = {id(n): i for i, n in enumerate(nodes)}
    flat = df.reset_index()
    flat["node"] = np.fromiter((n.node_id for n in flat["node"]), np.uint64, len(flat))
    kinds = {str(c): _column_kind(flat[c]) for c in flat.columns}
    for c, kind in kinds.items():
        if kind == "text":
            flat[c] = flat[c].astype(object).where(flat[c].notna(), _NULL)
        elif kind == "int-or-null":
            flat[c] = pd.to_numeric(flat[c], errors="coerce").astype(np.float64)
    flat.columns = [str(c) for c in flat.columns]
    node_table = pd.DataFrame({
        "node_id": np.fromiter((n.node_id for n in nodes), np.uint64, len(nodes)),
        "depth": np.fromiter((n.depth for n in nodes), np.int64, len(nodes)),
        "frame": pd.Series([json.dumps(n.frame.attrs, default=str) for n in nodes], dtype=object)})
    pairs = [(pos[id(p)], i) for i, n in enumerate(nodes) for p in n.parents]
    child_order = {(pos[id(n)], pos[id(c)]): k for n in nodes for k, c in enumerate(n.children)}
    pairs.sort(key=lambda pc: (pc[0], child_order.get(pc, 0)))
    edges = pd.DataFrame({"parent": np.array([p for p, _ in pairs], np.int64),
                          "child": np.array([c for _, c in pairs], np.int64)})
    meta = {"format": "perflake-graphframe-1", "exc_metrics": gf.exc_metrics, "inc_metrics": gf.inc_metrics,
            "default_metric": gf.default_metric, "metadata": gf.metadata, "index": list(df.index.names),
            "kinds": kinds, "columns": [str(c) for c in df.columns]}
    meta_table = pd.DataFrame({"json": pd.Series([json.dumps(meta, default=str)], dtype=object)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTables' NaturalNameWarning for column names such as "time (inc)"
        with pd.HDFStore(os.fspath(filename), mode=mode, **options) as store:
            for part in _PARTS:
                if f"/{key}/{part}" in store.keys():
                    store.remove(f"{key}/{part}")
            store.put(f"{key}/rows", flat, format="table", nan_rep=_NULL)
            store.put(f"{key}/nodes", node_table, format="table")
            store.put(f"{key}/edges", edges, format="table")
            store.put(f"{key}/meta", meta_table, format="table")


def _pick_key(store, filename, key):
    keys = store.keys()
    if key is None:
        found = sorted({k.rsplit("/", 1)[0].lstrip("/") for k in keys if k.endswith("/meta")})
        if len(found) != 1:
            raise InteropError(f"{filename}: {'no perflake GraphFrame' if not found else 'several GraphFrames'} in "
                               f"this HDF5 file; give key= ({', '.join(found) or 'keys: ' + ', '.join(keys)})")
        return found[0]
    key = key.strip("/")
    if f"/{key}/meta" not in keys:
        if f"/{key}" in keys:
            raise InteropError(f"{filename}: key {key!r} is a pickled DataFrame (as Hatchet writes): perflake does "
                               "not unpickle files; read it with Hatchet and export it with to_json()")
        raise InteropError(f"{filename}: no GraphFrame under key {key!r} (keys: {', '.join(keys) or 'none'})")
    return key


def from_hdf(filename, key: str | None = None, *, frame_class, **kwargs):
    """Read the GraphFrame stored under ``key`` (the only one in the file when ``key`` is None), as a
    ``frame_class`` (``GraphFrame.from_hdf`` passes its own)."""
    from perflake.frame.graph import Frame, Graph, Node

    _tables()
    if kwargs:
        raise InteropError(f"from_hdf: unsupported option(s) {', '.join(sorted(kwargs))}")
    if not os.path.isfile(filename):
        raise InteropError(f"{filename}: no such file")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            with pd.HDFStore(os.fspath(filename), mode="r") as store:
                key = _pick_key(store, filename, key)
                meta = json.loads(store.select(f"{key}/meta")["json"].iloc[0])
                flat = store.select(f"{key}/rows")
                node_table = store.select(f"{key}/nodes")
                edges = store.select(f"{key}/edges")
        except InteropError:
            raise
        except Exception as exc:  # not HDF5, damaged, another layout
            raise InteropError(f"{filename}: not a readable perflake HDF5 GraphFrame ({type(exc).__name__}: "
                               f"{str(exc).splitlines()[0] if str(exc) else ''})") from None
    nodes = [Node(Frame(json.loads(f)), depth=int(d), node_id=int(nid))
             for nid, d, f in zip(node_table["node_id"], node_table["depth"], node_table["frame"])]
    for p, c in zip(edges["parent"].tolist(), edges["child"].tolist()):
        nodes[p].children.append(nodes[c])
        nodes[c].parents.append(nodes[p])
    graph = Graph([n for n in nodes if not n.parents])
    by_id = {n.node_id: n for n in nodes}
    for c, kind in meta["kinds"].items():
        if kind == "text":
            flat[c] = pd.Series([None if (v == _NULL or v is None or (isinstance(v, float) and np.isnan(v)))
                                 else v for v in flat[c]], index=flat.index, dtype=object)
        elif kind == "int-or-null":
            flat[c] = pd.Series([None if np.isnan(v) else int(v) for v in flat[c]], index=flat.index, dtype=object)
        elif kind != "bool":
            flat[c] = flat[c].astype(kind)
    flat["node"] = pd.Series([by_id[int(i)] for i in flat["node"]], index=flat.index, dtype=object)
    df = flat.set_index(meta["index"])[meta["columns"]]
    return frame_class(graph, df, meta["exc_metrics"], meta["inc_metrics"], meta["default_metric"], meta["metadata"])
