"""Reader registry: format name -> module holding a ``Reader`` class, imported on first use.

Add a format by writing ``readers/<name>.py`` with a ``Reader`` class (see :mod:`perflake.readers.base`) and
one line here.  Readers parse and normalise only: no DuckDB, no GraphFrame.
"""

from __future__ import annotations

import importlib
import os
from types import MappingProxyType

from perflake.errors import FormatNotRecognized

_REGISTRY = {
    "caliper": "perflake.readers.caliper",
    "caliper_json": "perflake.readers.caliper_json",
    "cprofile": "perflake.readers.cprofile",
    "gprof_dot": "perflake.readers.gprof_dot",
    "hatchet_json": "perflake.readers.hatchet_json",
    "hpctoolkit": "perflake.readers.hpctoolkit",
    "hpctoolkit_sparse": "perflake.readers.hpctoolkit_sparse",
    "hpctoolkit_v4": "perflake.readers.hpctoolkit_v4",
    "perfflowaspect": "perflake.readers.perfflowaspect",
    "pyinstrument": "perflake.readers.pyinstrument",
    "tau": "perflake.readers.tau",
}
REGISTRY = MappingProxyType(_REGISTRY)
assert list(_REGISTRY) == sorted(_REGISTRY), "keep the registry sorted"


def get_reader(kind: str):
    """An instance of the reader for ``kind`` (``"tau"``, ...)."""
    try:
        module = importlib.import_module(_REGISTRY[kind])
    except KeyError:
        raise FormatNotRecognized(kind, f"unknown format; known: {', '.join(_REGISTRY)}") from None
    return module.Reader()


def detect(path: str | os.PathLike) -> str | None:
    """The format name of ``path`` (a file or a directory), or None when no reader recognises it."""
    path = os.fspath(path)
    for kind, modname in _REGISTRY.items():
        if importlib.import_module(modname).Reader.sniff(path):
            return kind
    return None


def read(path: str | os.PathLike, kind: str | None = None):
    """Parse ``path`` with the reader for ``kind`` (sniffed when None) and return its ProfileRows."""
    path = os.fspath(path)
    if kind is None:
        if not os.path.exists(path):
            raise FormatNotRecognized(path, "no such file or directory")
        kind = detect(path)
        if kind is None:
            raise FormatNotRecognized(path, part_of(path) or "not a profile perflake can read (formats: "
                                      + ", ".join(_REGISTRY) + ")")
    return get_reader(kind).read(path)


def detect_among(path: str | os.PathLike, kinds) -> str:
    """The first of ``kinds`` whose reader recognises ``path``; a FormatNotRecognized error otherwise."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FormatNotRecognized(path, "no such file or directory")
    for kind in kinds:
        if kind in _REGISTRY and importlib.import_module(_REGISTRY[kind]).Reader.sniff(path):
            return kind
    raise FormatNotRecognized(path, f"not a {' or '.join(kinds)} profile")


def part_of(path: str | os.PathLike) -> str | None:
    """For a file inside a directory-format profile (a TAU ``profile.N.C.T``, an HPCToolkit ``*.metric-db``):
    a message saying to pass the directory; None otherwise."""
    path = os.fspath(path)
    parent = os.path.dirname(os.path.abspath(path))
    if os.path.isfile(path) and (kind := detect(parent)):
        return f"one file of the {kind} profile {parent}: pass that directory"
    return None
