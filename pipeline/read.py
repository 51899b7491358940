"""Read a profile straight into a GraphFrame, without a lake (same reader + SQL path as ingest)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from perflake import readers

if TYPE_CHECKING:  # imported when called: `import perflake` loads these names eagerly and must stay light
    from perflake.frame.graphframe import GraphFrame


def read(path: str | os.PathLike, kind: str | None = None) -> GraphFrame:
    """Read ``path`` (format sniffed unless ``kind`` is given) and return a GraphFrame."""
    return read_rows(readers.read(path, kind))


def frame_class() -> type[GraphFrame]:
    """perflake's GraphFrame class, imported now: what this module builds, and the default of interop's
    constructors that have no frame to take the class from when called directly (GraphFrame's classmethods pass
    their own ``cls``; no module of ops/, analytics/, render/, interop/, plots/ imports GraphFrame)."""
    from perflake.frame.graphframe import GraphFrame

    return GraphFrame


def read_rows(rows, node_ordering: bool | None = None) -> GraphFrame:
    """A GraphFrame of a reader's ProfileRows (normalised as at ingest); ``node_ordering``: see
    GraphFrame.from_tables (None: by the format)."""
    from perflake.ingest.normalize import normalize

    n = normalize(rows)
    gf = frame_class().from_tables(n.nodes, n.metrics, n.metric_info, rows.metadata, fmt=rows.format,
                                node_ordering=node_ordering)
    if rows.frame_numbers is not None:
        _add_nid(gf, rows)
    return gf


def _add_nid(gf, rows) -> None:
    """Hatchet's ``nid`` column (first, as Hatchet's Caliper readers put it): each row's node's number from the
    reader (``ProfileRows.frame_numbers``), the smallest where frames merged into one node; int64 when the
    reader's numbers are integers and every node has one (Hatchet's json-split reader), else float64 (its
    ``.cali`` reader's)."""
    import numpy as np
    import pyarrow as pa

    from perflake.ingest.normalize import local_nodes

    numbers = np.asarray(rows.frame_numbers)
    ids = local_nodes(rows.frames.add_column(0, "run_id", pa.array(np.zeros(rows.frames.num_rows, np.int32))))
    first: dict[int, float] = {}
    for lid, nid in zip(ids.column("local_id").to_pylist(), ids.column("node_id").to_pylist()):
        v = float(numbers[lid])
        if not np.isnan(v) and (nid not in first or v < first[nid]):
            first[nid] = v
    df = gf.dataframe
    column = np.fromiter((first.get(n.node_id, np.nan) for n in df.index.get_level_values("node")), np.float64,
                         len(df))
    if numbers.dtype.kind in "iu" and not np.isnan(column).any():
        column = column.astype(np.int64)
    df.insert(0, "nid", column)


def read_tau(path: str | os.PathLike) -> GraphFrame:
    """Read a TAU profile directory (``profile.N.C.T`` files, ``MULTI__*`` folders)."""
    return read(path, "tau")


def read_caliper(path: str | os.PathLike, node_ordering: bool | None = None) -> GraphFrame:
    """Read a Caliper profile: a native ``.cali`` file or a json-split file (sniffed).  Its graph is
    node-ordered as perflake.frame.defaults.node_ordered says (children walked in Caliper's Node order, a
    ``.cali`` file's in file order without it), or in frame order with ``node_ordering=False``."""
    return read_rows(readers.read(path, readers.detect_among(path, ("caliper", "caliper_json"))), node_ordering)


def read_hpctoolkit(path: str | os.PathLike) -> GraphFrame:
    """Read an HPCToolkit database: the old experiment.xml + metric-db layout, the 2021-2022 sparse layout
    (experiment.xml + profile.db) or v4 meta.db/profile.db (sniffed)."""
    return read(path, readers.detect_among(path, ("hpctoolkit", "hpctoolkit_sparse", "hpctoolkit_v4")))



def read_gprof_dot(path: str | os.PathLike) -> GraphFrame:
    """Read gprof2dot's DOT output (a gprof/callgrind/perf/pstats call graph; see perflake.readers.gprof_dot)."""
    return read(path, "gprof_dot")


def read_cprofile(path: str | os.PathLike) -> GraphFrame:
    """Read a cProfile/profile ``.pstats`` file (see perflake.readers.cprofile)."""
    return read(path, "cprofile")


def read_pyinstrument(path: str | os.PathLike) -> GraphFrame:
    """Read pyinstrument's JSON output (see perflake.readers.pyinstrument)."""
    return read(path, "pyinstrument")
