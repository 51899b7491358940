"""Sub-commands of ``perflake`` that live in their own modules.

Each module in this package that defines ``register(sub, *, lake_arg, fmt_arg)`` adds its sub-parser(s) to the
``perflake`` command line; the parser's ``func`` default is called with the parsed arguments and returns the exit code.
A new command is a new module here, not a new branch in ``perflake.cli.app``.
"""

from __future__ import annotations

import importlib
import pkgutil


def register_all(sub, *, lake_arg, fmt_arg) -> None:
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(sub, lake_arg=lake_arg, fmt_arg=fmt_arg)
