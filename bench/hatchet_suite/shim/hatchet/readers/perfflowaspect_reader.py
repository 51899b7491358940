# Hatchet's reader class name -> perflake's (read() gives the GraphFrame from_* gives)
from perflake.interop.hatchet_readers import PerfFlowAspectReader  # noqa: F401
