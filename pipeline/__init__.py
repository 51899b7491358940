"""perflake: a columnar data lake for HPC call-path profiles.

Quick start::

    import perflake
    lake = perflake.Lake("./lake")
    lake.ingest(["runs/"])                  # TAU, ... sniffed; idempotent
    lake.sql("select * from runs")          # DuckDB SQL over runs, nodes, edges, metrics
    gf = lake.graphframe(run_id)            # a Hatchet-style GraphFrame
    print(gf.tree())
    gf = perflake.read_tau("profile-dir")   # no lake needed
"""

__version__ = "0.1.0"

from perflake.errors import LakeError, PerflakeError, ReaderError  # noqa: E402
from perflake.graphframe import GraphFrame  # noqa: E402
from perflake.lake import Lake  # noqa: E402
from perflake.read import read, read_caliper, read_hpctoolkit, read_tau  # noqa: E402
from perflake.read import read_cprofile, read_gprof_dot, read_pyinstrument  # noqa: E402

__all__ = ["GraphFrame", "Lake", "LakeError", "PerflakeError", "ReaderError", "read", "read_caliper", "read_hpctoolkit", "read_tau", "__version__",
           "read_cprofile", "read_gprof_dot", "read_pyinstrument"]
