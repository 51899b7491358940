"""Well-known run metadata promoted to catalog columns, found under the names each format uses."""

from __future__ import annotations

import datetime as dt
import os

_APP_KEYS = ("Executable", "executable", "executablepath", "spot.executable", "cmdline", "Command Line", "title")
_HOST_KEYS = ("Hostname", "hostname", "cluster", "Node Name")
_TIME_KEYS = ("launchdate", "Starting Timestamp", "date")


def _timestamp(value) -> dt.datetime | None:
    if isinstance(value, (int, float)) and value > 0:
        seconds = value / 1e6 if value > 1e14 else value  # TAU writes microseconds since the epoch
        return dt.datetime.fromtimestamp(seconds, tz=dt.timezone.utc)
    if isinstance(value, str):
        try:
            stamp = dt.datetime.fromisoformat(value)
        except ValueError:
            return None
        return stamp if stamp.tzinfo else stamp.replace(tzinfo=dt.timezone.utc)
    return None


def _first_string(value) -> str | None:
    """A string, or the first element of a list of strings (Adiak writes cmdline as a list)."""
    if isinstance(value, list) and value:
        value = value[0]
    return value if isinstance(value, str) and value.strip() else None


def promote(metadata: dict, ranks: int) -> dict:
    """The catalog columns app, nprocs, launch_time, hostname from a run's metadata."""
    app = next((_first_string(metadata.get(k)) for k in _APP_KEYS if _first_string(metadata.get(k))), None)
    if app:
        app = os.path.basename(app.split()[0]) if app.strip() else None
    stamp = next((t for t in (_timestamp(metadata.get(k)) for k in _TIME_KEYS) if t is not None), None)
    nprocs = metadata.get("jobsize", metadata.get("mpi.world.size", ranks))
    return {
        "app": app,
        "nprocs": int(nprocs) if isinstance(nprocs, (int, float)) else ranks,
        "launch_time": stamp,
        "hostname": next((str(metadata[k]) for k in _HOST_KEYS if k in metadata), None),
    }
