"""tree() against Hatchet 2026.2.0's output on the real cpi-mpi TAU profiles.

Deviation, on purpose: Hatchet prints a context column " 0" after every TAU name because its TAU reader fills
the missing `file` with the integer 0 (formats.md B.24); perflake keeps `file` missing and prints nothing.
"""

from __future__ import annotations

import pytest

import perflake
from perflake.errors import RenderError
from perflake.generators import write_tau_runs

HATCHET_TAU = """\
51781.000 .TAU application 0
├─ 218.000 MPI_Bcast() 0
├─ 25.000 MPI_Comm_rank() 0
├─ 31.000 MPI_Comm_size() 0
├─ 32304.000 MPI_Finalize() 0
│  ├─ 27.000 MPI_Comm_get_attr() 0
│  ├─ 27490.000 MPI_File_open() 0
│  ├─ 296.000 MPI_Info_create() 0
│  └─ 33.000 MPI_Info_free() 0
├─ 298.000 MPI_Get_processor_name() 0
├─ 17983.000 MPI_Init() 0
└─ 473.000 MPI_Reduce() 0
"""


def test_tree_matches_hatchet_text(shared_data):
    """The tree is Hatchet's; the header is perflake's own line naming the metric, not Hatchet's banner and
    version (perflake is not Hatchet 2026.2.0: printing its banner would say so)."""
    gf = perflake.read_tau(shared_data("tau-cpi-mpi"))
    expected = f"perflake v{perflake.__version__} \u00b7 metric: time (inc)\n\n" + HATCHET_TAU.replace(" 0\n", "\n")
    assert gf.tree(colour=False) == expected
    assert "hatchet" not in gf.tree(colour=False).lower() and "2026" not in gf.tree(colour=False)
    two = gf.tree(metric_column=["time (inc)", "time"], depth=1, colour=False)
    assert two.splitlines()[0] == f"perflake v{perflake.__version__} \u00b7 metrics: time (inc), time"


def test_tree_options(shared_data):
    gf = perflake.read_tau(shared_data("tau-cpi-mpi"))
    text = gf.tree(metric_column=["time (inc)", "time"], precision=2, rank=1, render_header=False, colour=False)
    assert text.splitlines()[0] == "55329.00 419.00 .TAU application"
    assert gf.tree(depth=1, render_header=False, colour=False) == "51781.000 .TAU application\n"
    coloured = gf.tree(render_header=False, colour=True)
    assert "\033[38;5;196m51781.000\033[0m .TAU application\033[0m" in coloured
    assert "\033[4mLegend\033[0m (Metric: time (inc) Min: 25.00 Max: 51781.00)" in coloured


def test_long_names_are_shortened_unless_expanded(tmp_path):
    run = write_tau_runs(tmp_path, nodes=60, ranks=2, seed=3)[0]
    gf = perflake.read_tau(run)
    long = [n.frame["name"] for n in gf.graph.traverse() if len(n.frame["name"]) > 39]
    assert long, "the generator makes some long C++ names"
    short = gf.tree(colour=False)
    assert long[0] not in short and long[0][:18] + "..." + long[0][-18:] in short
    assert long[0] in gf.tree(colour=False, expand_name=True)


def test_tree_is_linear_in_nodes(tmp_path):
    """Not a timing target (those live in bench/): a 10,000-node tree must render, one line per node."""
    run = write_tau_runs(tmp_path, nodes=10_000, ranks=1, seed=5)[0]
    gf = perflake.read_tau(run)
    text = gf.tree(render_header=False, colour=False)
    assert len(text.splitlines()) == len(gf.graph)


# llnl-hatchet 2026.2.0: GraphFrame.from_caliper(<lulesh json>, node_ordering=False).tree(render_header=False)
# (node_ordering=True, Hatchet's default, fails on this file: it has no "Node order" column).
HATCHET_LULESH = """\
121489.000 main
├─ 528.000 LagrangeLeapFrog
│  ├─ 21493.000 CalcTimeConstraintsForElems
│  │  ├─ 85866.000 CalcCourantConstraintForElems
│  │  └─ 29653.000 CalcHydroConstraintForElems
│  ├─ 663.000 LagrangeElements
│  │  ├─ 14072.000 ApplyMaterialPropertiesForElems
│  │  │  └─ 244008.000 EvalEOSForElems
│  │  │     ├─ 222116.000 CalcEnergyForElems
│  │  │     │  └─ 188615.000 CalcPressureForElems
│  │  │     └─ 7973.000 CalcSoundSpeedForElems
│  │  ├─ 21891.000 CalcLagrangeElements
│  │  │  └─ 642566.000 CalcKinematicsForElems
│  │  ├─ 356717.000 CalcQForElems
│  │  │  ├─ 431829.000 CalcMonotonicQGradientsForElems
│  │  │  └─ 162256.000 CalcMonotonicQRegionForElems
│  │  └─ 16902.000 UpdateVolumesForElems
│  └─ 206007.000 LagrangeNodal
│     └─ 411190.000 CalcForceForNodes
│        └─ 8780.000 CalcVolumeForceForElems
│           ├─ 597414.000 CalcHourglassControlForElems
│           │  └─ 1223331.000 CalcFBHourglassForceForElems
│           └─ 448597.000 IntegrateStressForElems
└─ 418469.000 TimeIncrement
"""
# llnl-hatchet 2026.2.0, same frame:
# tree(render_header=False, metric_column=["time (inc)", "time"], precision=0, depth=3)
HATCHET_LULESH_TWO_METRICS = """\
5882425 121489 main
├─ 5342467 528 LagrangeLeapFrog
│  ├─ 137012 21493 CalcTimeConstraintsForElems
│  ├─ 2309608 663 LagrangeElements
│  └─ 2895319 206007 LagrangeNodal
└─ 418469 418469 TimeIncrement
"""


def test_tree_matches_hatchet_on_caliper_json(shared_data, tmp_path):
    """Hatchet's Caliper readers default to the exclusive ``time`` (its TAU reader to ``time (inc)``):
    perflake picks the same default per format, read directly or from a lake."""
    path = shared_data("caliper-lulesh-json") / "lulesh-annotation-profile.json"
    gf = perflake.read_caliper(path)
    assert gf.default_metric == "time"
    assert gf.tree(render_header=False, colour=False) == HATCHET_LULESH
    lake = perflake.Lake(tmp_path / "lake")
    (run,) = lake.ingest([path]).ingested
    assert lake.graphframe(run).tree(render_header=False, colour=False) == HATCHET_LULESH
    assert perflake.read_tau(shared_data("tau-cpi-mpi")).default_metric == "time (inc)"
    two = gf.tree(metric_column=["time (inc)", "time"], precision=0, depth=3, render_header=False, colour=False)
    assert two == HATCHET_LULESH_TWO_METRICS


def test_tree_positional_arguments_follow_hatchet(shared_data):
    """tree(metric_column, annotation_column, precision, ...) in Hatchet's order."""
    gf = perflake.read_tau(shared_data("tau-cpi-mpi"))
    assert gf.tree("time", None, 1, render_header=False, colour=False).startswith("449.0 .TAU application\n")


def test_a_cali_without_time_defaults_to_an_inclusive_metric_as_hatchet(shared_data):
    """Hatchet's from_caliperreader on sw4's CUDA activity profile: no ``time``, no
    ``avg#inclusive#sum#time.duration``: its default is the first inclusive metric (not the exclusive one
    perflake derives, on which ``main`` shows 0.19 of its 271 s)."""
    path = next((shared_data("caliper-sw4-cuda-activity-profile-cali")).glob("*.cali"))
    gf = perflake.read_caliper(path)
    assert gf.default_metric == "inclusive#scale#sum#cupti.host.duration"
    assert gf.tree(depth=0, precision=3, render_header=False, colour=False).startswith("271.49")


def test_a_typo_in_the_metric_or_a_missing_rank_is_an_error_not_a_tree_of_nan(shared_data):
    gf = perflake.read_tau(shared_data("tau-cpi-mpi"))
    with pytest.raises(RenderError, match=r"no metric 'tme' in this frame \(metrics: time, "):
        gf.tree(metric_column="tme")
    with pytest.raises(RenderError, match=r"no metric 'nope'"):
        gf.tree(metric_column=["time", "nope"])
    with pytest.raises(RenderError, match=r"rank 99 is not in this frame \(ranks 0\.\.3\)"):
        gf.tree(rank=99)
    # rank 3 exists
    assert gf.tree(rank=3, render_header=False, colour=False).startswith("52908.000 .TAU application\n")


def test_a_rank_asked_of_a_frame_without_ranks_is_an_error(shared_data):
    gf = perflake.read_caliper(next(shared_data("caliper-lulesh-cali").glob("*.cali")))
    assert "rank" not in gf.dataframe.index.names
    with pytest.raises(RenderError, match=r"rank 5 is not in this frame: it has one rank"):
        gf.tree(rank=5)
    assert gf.tree(rank=0, render_header=False, colour=False) == gf.tree(render_header=False, colour=False)
