from perflake.errors import *  # noqa: F401,F403
from perflake.frame.graphframe import *  # noqa: F401,F403
from perflake.frame.graphframe import EmptyFilter, GraphFrame, InvalidFilter  # noqa: F401
