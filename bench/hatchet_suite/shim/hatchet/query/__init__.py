from perflake.query import *  # noqa: F401,F403
from perflake.query import __all__ as _names  # noqa: F401
