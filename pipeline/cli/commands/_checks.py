"""Checks of option values that the sub-commands make before any work: a number in its range, an output path
that can be written, a scheduler that is a name or an address.

Each failure is a :class:`~perflake.errors.UsageError`, so the command prints one line naming the option or
the path and exits 2 (EXIT_ERROR) -- never a traceback, and never after minutes of computing a result that
cannot be written.  (The leading underscore keeps this module from being registered as a sub-command.)
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from perflake.errors import UsageError


# -- numbers ---------------------------------------------------------------------------------------------------
def whole(option: str, value, *, low: int | None = None, high: int | None = None):
    """``value`` (an int, or None for an option not given) if within ``low``..``high``, else a UsageError."""
    if value is None:
        return value
    if low is not None and value < low or high is not None and value > high:
        if high is None:
            wanted = f"at least {low:,}"
        elif low is None:
            wanted = f"at most {high:,}"
        else:
            wanted = f"between {low:,} and {high:,}"
        raise UsageError(f"{option} must be {wanted}, not {value:,}")
    return value


def number(option: str, value, *, above: float | None = None, low: float | None = None,
           high: float | None = None):
    """``value`` (a float, or None) if finite and above ``above`` (exclusive) / within ``low``..``high``."""
    if value is None:
        return value
    ok = math.isfinite(value) and (above is None or value > above) and (low is None or value >= low) \
        and (high is None or value <= high)
    if not ok:
        parts = [f"above {above:g}" if above is not None else "", f"at least {low:g}" if low is not None else "",
                 f"at most {high:g}" if high is not None else ""]
        raise UsageError(f"{option} must be a finite number{' ' if any(parts) else ''}"
                         f"{' and '.join(p for p in parts if p)}, not {value:g}")
    return value


# -- output paths ----------------------------------------------------------------------------------------------
def output_file(path, *, directory_ok: bool = False) -> Path:
    """``path`` as a Path if a file can be written there: its directory exists and is writable, and it is not
    itself a directory (unless ``directory_ok``: the files go into it).  A UsageError naming the path otherwise."""
    out = Path(path)
    shown = os.fspath(path)
    if out.is_dir():
        if directory_ok:
            _writable_dir(out, shown)
            return out
        raise UsageError(f"{shown}: cannot write: it is a directory (give a file name)")
    parent = out.parent
    if not parent.exists():
        raise UsageError(f"{shown}: cannot write: no directory {os.fspath(parent)!r}")
    if not parent.is_dir():
        raise UsageError(f"{shown}: cannot write: {os.fspath(parent)!r} is not a directory")
    _writable_dir(parent, shown)
    if out.exists() and not os.access(out, os.W_OK):
        raise UsageError(f"{shown}: cannot write: the file is read-only")
    return out


def output_dir(path) -> Path:
    """``path`` as a Path if a directory can be made or filled there: not an existing file, under a directory
    (the nearest that exists) that is writable.  A UsageError naming the path otherwise."""
    out = Path(path)
    shown = os.fspath(path)
    if out.exists() and not out.is_dir():
        raise UsageError(f"{shown}: cannot write: it exists and is not a directory")
    base = out
    while not base.exists() and base != base.parent:
        base = base.parent
    if not base.is_dir():
        raise UsageError(f"{shown}: cannot write: {os.fspath(base)!r} is not a directory")
    _writable_dir(base, shown)
    return out


def _writable_dir(directory: Path, shown: str) -> Path:
    if not os.access(directory, os.W_OK | os.X_OK):
        raise UsageError(f"{shown}: cannot write: the directory {os.fspath(directory)!r} is not writable")
    return directory


def written(path, exc: OSError) -> UsageError:
    """The one-line error of a write that failed anyway (a full disk, a file system that refuses)."""
    return UsageError(f"{os.fspath(path)}: cannot write: {exc.strerror or exc}")


# -- --scheduler -----------------------------------------------------------------------------------------------
def scheduler(value: str | None) -> str | None:
    """``--scheduler``: a local scheduler name (perflake.engine.parallel.LOCAL_SCHEDULERS) or an address
    ``tcp://host:port``; anything else is a UsageError listing both (the address is tried when the work is
    fanned out, and gives up after perflake.engine.parallel.CONNECT_SECONDS)."""
    if value is None:
        return value
    from perflake.engine.parallel import LOCAL_SCHEDULERS

    if value.lower() in LOCAL_SCHEDULERS or "://" in value:
        return value
    raise UsageError(f"--scheduler {value!r}: expected one of {', '.join(sorted(LOCAL_SCHEDULERS))} or an "
                     "address such as tcp://host:8786")
