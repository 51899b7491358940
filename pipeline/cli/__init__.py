"""The ``perflake`` command: app builds the parser and runs a sub-command; commands/ has one module each.

Compatibility: ``perflake.cli:main`` (entry points installed before the move) and ``python -m perflake.cli``
still run the command: ``main`` is imported from :mod:`perflake.cli.app` on first use (see ``__main__.py``).
"""

from __future__ import annotations


def __getattr__(name: str):
    if name == "main":
        from perflake.cli.app import main

        return main
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
