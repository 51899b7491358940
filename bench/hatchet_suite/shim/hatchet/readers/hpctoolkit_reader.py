# Hatchet's HPCToolkit (experiment.xml) reader class name -> perflake's (another API: read(path) -> ProfileRows)
from perflake.readers.hpctoolkit import Reader as HPCToolkitReader  # noqa: F401
