"""perflake: a columnar data lake for HPC call-path profiles.

Quick start::

    import perflake
    lake = perflake.Lake("./lake")
    lake.ingest(["runs/"])                  # TAU, ... sniffed; idempotent
    lake.sql("select * from runs")          # DuckDB SQL over runs, nodes, edges, metrics, rank_summary
    gf = lake.graphframe(run_id)            # a Hatchet-style GraphFrame
    print(gf.tree())
    gf = perflake.read_tau("profile-dir")   # no lake needed

The package is lazy (PEP 562): ``import perflake`` (and so ``import perflake.readers.tau``) loads nothing else;
each public name below is imported on first use.  Modules of perflake never import this package root: the
version is in :mod:`perflake._version`.
"""

from __future__ import annotations

import importlib

from perflake import errors as _errors
from perflake._version import __version__
from perflake.engine import resources as _resources

# Eager, and light (perflake.read imports its GraphFrame and SQL path when called): the function `read` must
# shadow the submodule `perflake.read` before anything imports that submodule, which would otherwise set the
# package attribute `read` to the module.
from perflake.read import (
    read,
    read_caliper,
    read_cprofile,
    read_gprof_dot,
    read_hpctoolkit,
    read_pyinstrument,
    read_tau,
)

# Under an address-space limit (ulimit -v) the allocators and thread pools must be set before pyarrow, DuckDB or
# delta-rs start (perflake.engine.resources); unlimited, this is one getrlimit call.  A limit below perflake's
# minimum, or a bad PERFLAKE_THREADS / PERFLAKE_DUCKDB_MEMORY, is raised by the first lake or engine use (or the
# CLI's start, as one line), not by the import.
try:
    _resources.configure(check=False)
except _errors.PerflakeError:
    pass

# public name -> module defining it (imported on first attribute access)
_PUBLIC = {
    "Ensemble": "perflake.analytics.ensemble_frame",
    "GraphFrame": "perflake.frame.graphframe",
    "Lake": "perflake.lake",
    "LakeError": "perflake.errors",
    "PerflakeError": "perflake.errors",
    "ReaderError": "perflake.errors",
}

__all__ = ["Ensemble", "GraphFrame", "Lake", "LakeError", "PerflakeError", "ReaderError", "read", "read_caliper",
           "read_cprofile",
           "read_gprof_dot", "read_hpctoolkit", "read_pyinstrument", "read_tau", "__version__"]


def __getattr__(name: str):
    if name in _PUBLIC:
        value = getattr(importlib.import_module(_PUBLIC[name]), name)
    elif not name.startswith("__"):  # a submodule (`perflake.query`, `perflake.plots`...): import it on first use
        try:
            value = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC))


# --- compat: old import paths of moved public modules (written by relayout.py) ---
_MOVED_MODULES = {  # relayout: keep
    'perflake.hatchet_json': 'perflake.interop.json_files',  # relayout: keep
    'perflake.query.engine': 'perflake.query.matching',  # relayout: keep
    'perflake.plots.imbalance': 'perflake.plots.imbalance_bars',  # relayout: keep
    'perflake.plots.scaling': 'perflake.plots.scaling_lines',  # relayout: keep
}


class _MovedModule:
    """Import hook: an old path in _MOVED_MODULES imports the module at its new path (the same module object)."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        if name not in _MOVED_MODULES:
            return None
        import importlib.util

        return importlib.util.spec_from_loader(name, _MovedModule)

    @staticmethod
    def create_module(spec):
        module = importlib.import_module(_MOVED_MODULES[spec.name])
        spec.loader_state = module.__spec__
        return module

    @staticmethod
    def exec_module(module):
        module.__spec__ = module.__spec__.loader_state  # the import machinery set the alias spec: restore


if not any(f is _MovedModule for f in __import__("sys").meta_path):
    __import__("sys").meta_path.append(_MovedModule)
# --- end of compat ---
