"""Links beyond a call-path tree: a GraphFrame built through normalisation (a tree: each node under the first
parent it was met under) gets the links of its input back -- a literal whose entries share a
``_hatchet_nid``, Hatchet's JSON of a DAG -- so a node has several parents, as in Hatchet.

``relink(gf, frames, links)``: ``frames`` is the reader-shaped frame table the GraphFrame was normalised from
(``local_id``, ``parent_local`` and the frame columns), ``links`` every (parent local id | -1 for a root,
child local id) pair of the input in its order.  Each local id maps to its node by its call-path id (the one
identity definition: perflake.ingest.normalize.local_nodes), the nodes are linked as ``links`` say (each link once,
children and roots in the input's order; a cycle is allowed), numbered again in pre-order, and the
dataframe's rows follow the new numbering.  Values and ids are unchanged.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa


def relink(gf, frames: pa.Table, links) -> None:
    """Give ``gf`` (in place) the links of its input (module docstring)."""
    from perflake.frame.graph import Graph
    from perflake.frame.tables import rehashed as _rehashed
    from perflake.ingest.normalize import local_nodes

    ids = local_nodes(frames.add_column(0, "run_id", pa.array(np.zeros(frames.num_rows, np.int32))))
    by_id = gf.graph.node_by_id()
    node_of = dict(zip(ids.column("local_id").to_pylist(), (by_id[i] for i in ids.column("node_id").to_pylist())))
    kids: dict[int, list] = {id(n): [] for n in gf.graph}
    ups: dict[int, list] = {id(n): [] for n in gf.graph}
    roots, done = [], set()
    for p, c in links:
        child = node_of[c]
        parent = node_of[p] if p >= 0 else None
        key = (id(parent), id(child))
        if key in done:
            continue
        done.add(key)
        if parent is None:
            roots.append(child)
        else:
            kids[id(parent)].append(child)
            ups[id(child)].append(parent)
    for n in gf.graph:
        n.children, n.parents = kids[id(n)], ups[id(n)]
    gf.graph = Graph(roots, node_ordering=gf.graph.node_ordering)
    gf.graph.enumerate_traverse()
    nodes = gf.dataframe.index.get_level_values("node")
    order = np.argsort(np.fromiter((n._hatchet_nid for n in nodes), np.int64, len(nodes)), kind="stable")
    gf.dataframe = gf.dataframe.iloc[order]
    gf.dataframe.index = _rehashed(gf.dataframe.index)  # the nodes' numbers (their hashes) changed
