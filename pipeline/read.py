"""Read a profile straight into a GraphFrame, without a lake (same reader + SQL path as ingest)."""

from __future__ import annotations

import os

from perflake import readers
from perflake.graphframe import GraphFrame
from perflake.normalize import normalize


def read(path: str | os.PathLike, kind: str | None = None) -> GraphFrame:
    """Read ``path`` (format sniffed unless ``kind`` is given) and return a GraphFrame."""
    return read_rows(readers.read(path, kind))


def read_rows(rows) -> GraphFrame:
    """A GraphFrame of a reader's ProfileRows (normalised as at ingest)."""
    n = normalize(rows)
    return GraphFrame.from_tables(n.nodes, n.metrics, n.metric_info, rows.metadata, fmt=rows.format)


def read_tau(path: str | os.PathLike) -> GraphFrame:
    """Read a TAU profile directory (``profile.N.C.T`` files, ``MULTI__*`` folders)."""
    return read(path, "tau")


def read_caliper(path: str | os.PathLike) -> GraphFrame:
    """Read a Caliper profile: a native ``.cali`` file or a json-split file (sniffed)."""
    return read(path, readers.detect_among(path, ("caliper", "caliper_json")))


def read_hpctoolkit(path: str | os.PathLike) -> GraphFrame:
    """Read an HPCToolkit database: the old experiment.xml + metric-db layout or v4 meta.db/profile.db (sniffed)."""
    return read(path, readers.detect_among(path, ("hpctoolkit", "hpctoolkit_v4")))
