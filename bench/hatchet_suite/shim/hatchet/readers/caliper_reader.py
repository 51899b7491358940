# Hatchet's json-split reader class name -> perflake's json-split reader (another API: read(path) -> ProfileRows)
from perflake.readers.caliper_json import Reader as CaliperReader  # noqa: F401
