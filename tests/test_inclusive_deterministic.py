"""Inclusive values do not depend on the order a parallel join hands rows to the sum.

CI once saw ``GraphFrame.from_caliperreader`` give two frames of the same ``.cali`` file whose inclusive times
differed in the last bit: DuckDB's parallel ``sum`` adds in whatever order the closure join produces.  The SQL
now uses ``fsum`` (compensated summation), whose result is the correctly rounded sum on these data, so each
inclusive value must equal ``math.fsum`` of the exclusive values below the node, bit for bit, on every call."""

from __future__ import annotations

import math

import numpy as np
import pytest

from conftest import DATA, _need
from perflake import GraphFrame

FILES = ["caliper-lulesh-cali/lulesh-annotation-profile.cali",
         "caliper-sw4-cuda-activity-profile-cali/caliper_cuda_activity_profile_summary_v2.cali"]


def _subtree(node):
    seen, stack = {}, [node]
    while stack:
        n = stack.pop()
        if id(n) not in seen:
            seen[id(n)] = n
            stack.extend(n.children)
    return seen.values()


@pytest.mark.parametrize("rel", FILES)
def test_inclusive_is_the_correctly_rounded_sum_on_every_call(rel):
    path = _need(DATA / rel)
    frames = [GraphFrame.from_caliperreader(path) for _ in range(6)]
    gf = frames[0]
    pairs = [(e, f"{e} (inc)") for e in gf.exc_metrics if f"{e} (inc)" in gf.dataframe.columns]
    assert pairs, "the file has exclusive metrics with derived inclusive columns"
    for other in frames[1:]:
        for _, inc in pairs:
            assert np.array_equal(other.dataframe[inc].to_numpy(), gf.dataframe[inc].to_numpy(), equal_nan=True)
    df = gf.dataframe
    checked = 0
    for node in gf.graph.traverse():
        for exc, inc in pairs:
            below = [df.loc[n, exc] for n in _subtree(node)]
            below = [float(v) for v in below if not np.isnan(v)]
            want = math.fsum(below) if below else np.nan
            got = float(df.loc[node, inc])
            assert (np.isnan(want) and np.isnan(got)) or got == want, (node, inc, got, want)
            checked += 1
    assert checked >= len(df)
