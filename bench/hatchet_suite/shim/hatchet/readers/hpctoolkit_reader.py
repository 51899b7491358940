# Hatchet's reader class name -> perflake's (read() gives the GraphFrame from_* gives)
from perflake.interop.hatchet_readers import HPCToolkitReader  # noqa: F401
