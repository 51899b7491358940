"""perflake.read_* on every format, sniffed, and ingest of a whole folder of mixed formats."""

from __future__ import annotations

import pytest

import perflake
from perflake.errors import FormatNotRecognized


@pytest.mark.parametrize("func,ds,nodes", [
    ("read_caliper", "caliper-lulesh-cali/lulesh-annotation-profile.cali", 19),
    ("read_caliper", "caliper-lulesh-json/lulesh-annotation-profile.json", 24),
    ("read_hpctoolkit", "hpctoolkit-cpi-database", 28),  # 34 frames, identical siblings merged
    ("read", "tau-cpi-mpi", 12),
])
def test_entry_points_sniff_the_format(func, ds, nodes, shared_data):
    gf = getattr(perflake, func)(shared_data(ds))
    assert len(gf.graph) == nodes and gf.exc_metrics


def test_hpctoolkit_v4_is_sniffed(shared_data):
    gf = perflake.read_hpctoolkit(shared_data("hpctoolkit-gamess"))
    assert "time (inc)" in gf.inc_metrics and len(gf.graph) == 8410  # no node for contexts absent from meta.db


def test_wrong_format_is_a_clear_error(shared_data):
    with pytest.raises(FormatNotRecognized, match="not a hpctoolkit or hpctoolkit_sparse or hpctoolkit_v4 profile"):
        perflake.read_hpctoolkit(shared_data("tau-cpi-mpi"))


def test_whole_shared_folder_ingests(shared_data, lake):
    report = lake.ingest([shared_data("caliper-cpi-json").parent])
    assert not report.failed
    formats = lake.sql("select format, count(*) as n from runs group by format order by format")
    assert dict(zip(formats["format"], formats["n"])) == {
        "caliper": 10, "caliper_json": 2, "gprof_dot": 1, "hatchet_json": 1, "hpctoolkit": 1, "hpctoolkit_v4": 1,
        "tau": 1}  # gprof_dot: gprof2dot-cpi, passed over silently before issue 13 item 8
