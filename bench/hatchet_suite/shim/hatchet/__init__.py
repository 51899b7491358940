"""A ``hatchet`` import name over perflake, for measuring how much Hatchet-based code runs unchanged on perflake
(bench/hatchet_suite/run.py).  Only names: every object is perflake's own.  Not installed, not shipped."""

from perflake import GraphFrame  # noqa: F401
from perflake.query import QueryMatcher  # noqa: F401

try:
    from perflake._version import __version__  # noqa: F401
except ImportError:
    from perflake import __version__  # noqa: F401
