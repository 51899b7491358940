"""Columns as Hatchet types them (issue 15, theme 9 of the issue), reader by reader, compared with llnl-hatchet
2026.2.0 in .bench-venv on the same files: the dataframe's column set and dtypes, and for HPCToolkit the names and
file context ``tree()`` prints (``<unknown file>``).  Every column or dtype that differs is listed below with its
reason (README "Differences from Hatchet"); anything else must match Hatchet exactly."""

from __future__ import annotations

import re

import numpy as np
import pytest

import hatchet_load
from conftest import DATA, _need, need_bench_python
from perflake import GraphFrame

CASES = {  # name: (Hatchet's call, perflake's call), both on the same file under ../shared/data
    "tau": ("GraphFrame.from_tau(D + 'tau-cpi-mpi')", lambda d: GraphFrame.from_tau(d / "tau-cpi-mpi")),
    "caliper_json": ("GraphFrame.from_caliper(D + 'caliper-lulesh-json/lulesh-annotation-profile.json', "
                     "node_ordering=False)",  # Hatchet's default node_ordering=True fails on a file without it
                     lambda d: GraphFrame.from_caliper(d / "caliper-lulesh-json/lulesh-annotation-profile.json")),
    "cali": ("GraphFrame.from_caliperreader(D + 'caliper-lulesh-cali/lulesh-annotation-profile.cali')",
             lambda d: GraphFrame.from_caliperreader(d / "caliper-lulesh-cali/lulesh-annotation-profile.cali")),
    "cali_ordered": ("GraphFrame.from_caliperreader("
                     "D + 'caliper-ordered-cali/230525-151052_1930517_eWbGeyrlBOPT.cali')",
                     lambda d: GraphFrame.from_caliperreader(
                         d / "caliper-ordered-cali/230525-151052_1930517_eWbGeyrlBOPT.cali")),
    "hpctoolkit": ("GraphFrame.from_hpctoolkit(D + 'hpctoolkit-cpi-database')",
                   lambda d: GraphFrame.from_hpctoolkit(d / "hpctoolkit-cpi-database")),
}

# Hatchet's reader-internal columns perflake does not add: ``nid`` for HPCToolkit (its XML id; perflake adds
# Hatchet's ``nid`` for Caliper files only: tests/test_caliper_traversal.py), ``type``
# (HPCToolkit's XML tag PF/S/L; perflake's frame type is node.frame["type"]), ``spot.channel`` (a string attribute:
# perflake keeps numeric attributes only, formats.md B.20)
HATCHET_ONLY = {"nid", "type", "spot.channel"}
# perflake's uniform frame columns (every reader has them, None where the format has no such data) and the
# inclusive column it derives from an exclusive one when the file lacks it
PERFLAKE_ONLY = {"file", "module", "line", "end_line", "time (inc)"}
DTYPE_DIFFERENCES = {  # (case, column): (Hatchet's, perflake's): why
    ("tau", "file"): ("int64", "object"),  # Hatchet's TAU reader writes 0 for a missing file; perflake None
    ("tau", "module"): ("int64", "object"),  # same
    ("tau", "line"): ("int64", "object"),  # same for a missing line (TAU's cpi run has none)
    ("tau", "end_line"): ("int64", "object"),  # same
    ("hpctoolkit", "line"): ("int64", "object"),  # HPCToolkit's line 0 means unknown: perflake None, not 0
    ("cali", "count"): ("int64", "float64"),  # every perflake metric is float64 (NaN where not measured)
}


HATCHET_CODE = """
from hatchet import GraphFrame
D = {data!r} + "/"
rows = []
for case, call in {calls!r}.items():
    gf = eval(call)
    for c, t in gf.dataframe.dtypes.items():
        rows.append([case, str(c), str(t)])
gf = GraphFrame.from_hpctoolkit(D + "hpctoolkit-cpi-database")
rows.append(["hpctoolkit_tree", "", gf.tree(metric_column="time", render_header=False)])
result = pd.DataFrame(rows, columns=["case", "column", "dtype"])
"""


@pytest.fixture(scope="module")
def hatchets():
    need_bench_python()
    data = _need(DATA)
    code = HATCHET_CODE.format(data=str(data), calls={k: v[0] for k, v in CASES.items()})
    out: dict = {}
    for case, column, dtype in hatchet_load.recipe(code)["frame"]["values"]:
        out.setdefault(case, {})[column] = dtype
    return out


@pytest.mark.parametrize("case", list(CASES))
def test_columns_and_dtypes_are_hatchets(hatchets, case):
    gf = CASES[case][1](_need(DATA))
    ours = {str(c): str(t) for c, t in gf.dataframe.dtypes.items()}
    theirs = hatchets[case]
    assert set(theirs) - set(ours) <= HATCHET_ONLY, "a Hatchet column perflake lacks, not listed as a difference"
    assert set(ours) - set(theirs) <= PERFLAKE_ONLY, "a perflake column Hatchet lacks, not listed as a difference"
    for c in set(ours) & set(theirs):
        want = DTYPE_DIFFERENCES.get((case, c), (theirs[c], theirs[c]))
        assert (theirs[c], ours[c]) == want, c
    assert gf.dataframe["name"].dtype == object  # pandas 3 would make it its string dtype


def test_line_is_int64_where_every_line_is_known():
    lit = [{"frame": {"name": "main", "type": "function", "file": "a.c", "line": 3}, "metrics": {"time": 1.0},
            "children": [{"frame": {"name": "f", "type": "function", "file": "a.c", "line": 9},
                          "metrics": {"time": 2.0}}]}]
    gf = GraphFrame.from_literal(lit)
    assert gf.dataframe["line"].dtype == np.int64 and list(gf.dataframe["line"]) == [3, 9]
    assert gf.dataframe["file"].dtype == object and gf.dataframe["name"].dtype == object
    lit[0]["children"][0]["frame"].pop("line")
    partial = GraphFrame.from_literal(lit).dataframe["line"]
    assert partial.dtype == object and list(partial) == [3, None]


def _name_and_context(text: str) -> set:
    """Each tree line without its value and drawing: "name context"."""
    out = set()
    for line in hatchet_load.ANSI.sub("", text).splitlines():
        m = re.match(r"^[\s\u2502\u251c\u2514\u2500]*\S+ (.*)$", line)
        if m:
            out.add(m.group(1))
    return out


def test_hpctoolkit_unknown_file_prints_as_hatchet(hatchets):
    gf = GraphFrame.from_hpctoolkit(_need(DATA / "hpctoolkit-cpi-database"))
    text = gf.tree(metric_column="time", render_header=False)
    theirs = _name_and_context(hatchets["hpctoolkit_tree"][""])
    assert "<program root> <unknown file>" in theirs and "<unknown file>:0 <unknown file>" in theirs
    assert _name_and_context(text) == theirs
    # the lake keeps an unknown file as null (the canonical model); only the rendering spells it
    assert gf.dataframe["file"].isna().any()
    assert "0.000 <program root> <unknown file>" in text
