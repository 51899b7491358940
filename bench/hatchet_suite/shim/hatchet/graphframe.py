from perflake.errors import *  # noqa: F401,F403
from perflake.graphframe import *  # noqa: F401,F403
from perflake.graphframe import EmptyFilter, GraphFrame, InvalidFilter  # noqa: F401
