"""Other tools' objects and files: llnl-hatchet GraphFrames, Hatchet/Thicket JSON, Hatchet literals.

hatchet converts live ``hatchet.GraphFrame`` objects, json_files writes and reads Hatchet's and
Thicket's JSON files (its old path ``perflake.hatchet_json`` still imports), literal reads and writes
Hatchet's graph literals.

Compatibility: ``perflake.interop`` was one module; its public names (``to_hatchet``, ``from_hatchet``,
``to_graphframe``...) are still reached here, imported from :mod:`perflake.interop.hatchet` on first use.
"""

from __future__ import annotations

import importlib


def __getattr__(name: str):
    if not name.startswith("_"):
        hatchet = importlib.import_module(f"{__name__}.hatchet")
        value = getattr(hatchet, name, None)
        if value is not None and not isinstance(value, type(importlib)):
            return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
