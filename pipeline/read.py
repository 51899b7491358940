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


def read_rows(rows) -> GraphFrame:
    """A GraphFrame of a reader's ProfileRows (normalised as at ingest)."""
    from perflake.ingest.normalize import normalize

    n = normalize(rows)
    return frame_class().from_tables(n.nodes, n.metrics, n.metric_info, rows.metadata, fmt=rows.format)


def read_tau(path: str | os.PathLike) -> GraphFrame:
    """Read a TAU profile directory (``profile.N.C.T`` files, ``MULTI__*`` folders)."""
    return read(path, "tau")


def read_caliper(path: str | os.PathLike) -> GraphFrame:
    """Read a Caliper profile: a native ``.cali`` file or a json-split file (sniffed)."""
    return read(path, readers.detect_among(path, ("caliper", "caliper_json")))


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
