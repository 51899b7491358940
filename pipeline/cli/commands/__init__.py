"""Sub-commands of ``perflake``, one module each.

``commands/<name>.py`` is the sub-command ``perflake <name>``: it defines ``register(sub, *, lake_arg, fmt_arg)``,
which adds its sub-parser (``lake_arg``/``fmt_arg`` add the shared ``--lake``/``--format`` options) with the
command's function as the parser's ``func`` default; that function takes the parsed arguments and returns the
exit code.  What several commands share (printing a table, the metric default, loading one run, exit codes) is
in ``_common.py``.  A new command is a new module here; :mod:`perflake.cli.app` only wires them.
"""

from __future__ import annotations

import importlib
import pkgutil

# The order of `perflake --help`: the commands of the everyday workflow first, as the help has always listed
# them; any other module follows alphabetically.
ORDER = ("ingest", "runs", "sql", "tree", "imbalance", "compare", "ensemble", "scaling", "query", "vacuum", "compact",
         "generate")


def names() -> list[str]:
    """The sub-command modules, in the order they are registered."""
    found = {m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_")}
    return [n for n in ORDER if n in found] + sorted(found - set(ORDER))


def register_all(sub) -> None:
    from perflake.cli.commands._common import fmt_arg, lake_arg

    for name in names():
        module = importlib.import_module(f"{__name__}.{name}")
        module.register(sub, lake_arg=lake_arg, fmt_arg=fmt_arg)
