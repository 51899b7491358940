"""squash keeps exactly the (node, rank, thread) rows its input has: a row filter() removed never comes back
(issue 13, item 11).  Before the fix a squashed frame was rebuilt dense (every kept node x every location),
so a node kept at some ranks only came back with all-NaN rows at the others (tau-cpi-mpi, time > 100:
29 rows, 32 after squash; Hatchet 2026.2.0 gives 29 both times).

Properties on random trees with ranks and threads, random row masks, sparse inputs and NaN values; and the
real Hatchet (.bench-venv) on tau-cpi-mpi and on hatchet-graph-literal.json: same rows, same values.
"""

from __future__ import annotations

import math
import textwrap

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import perflake
from perflake.frame.graphframe import EmptyFilter, GraphFrame
from perflake.ingest.normalize import normalize
from perflake.interop.json_files import read_hatchet_json
from perflake.readers.base import Metric
from trees import profile
from venv_report import run_json


def frame_of(rows) -> GraphFrame:
    n = normalize(rows)
    return GraphFrame.from_tables(n.nodes, n.metrics, n.metric_info)


def located(df: pd.DataFrame) -> list[tuple]:
    """(node, rank, thread) of every row (0 for a level the index does not have)."""
    names = list(df.index.names)
    nodes = df.index.get_level_values("node")
    rank = df.index.get_level_values("rank") if "rank" in names else [0] * len(df)
    thread = df.index.get_level_values("thread") if "thread" in names else [0] * len(df)
    return list(zip(nodes, rank, thread))


def names(node) -> tuple:
    return tuple(str(n.frame["name"]) for n in node.path())


def nan_sum(values) -> float:
    real = [v for v in values if not math.isnan(v)]
    return float(sum(real)) if real else float("nan")


def same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


@st.composite
def filtered_profile(draw):
    """A random tree (names from a small alphabet, so squash merges), 1-3 ranks x 1-2 threads, a random
    subset of its (node, location) rows measured (some values NaN), and a random row mask."""
    n = draw(st.integers(1, 14))
    parents = [-1] + [draw(st.integers(0, i - 1)) for i in range(1, n)]
    nodes = [(i, p, draw(st.sampled_from("abc"))) for i, p in enumerate(parents)]
    locs = [(r, t) for r in range(draw(st.integers(1, 3))) for t in range(draw(st.integers(1, 2)))]
    values = []
    for i in range(n):
        for r, t in locs:
            if i == 0 or draw(st.integers(0, 4)):  # the root everywhere (locations exist), others mostly
                v = draw(st.one_of(st.integers(0, 50).map(float), st.just(float("nan"))))
                values.append((i, r, t, v))
    seed = draw(st.integers(0, 2**32 - 1))
    keep = draw(st.floats(0.2, 1.0))
    return nodes, values, seed, keep


@settings(max_examples=60, deadline=None)
@given(filtered_profile(), st.booleans())
def test_squash_never_adds_a_row_the_filter_removed(case, update):
    nodes, values, seed, keep = case
    gf = frame_of(profile(nodes, values, [Metric("time", "exclusive")]))
    mask = np.random.default_rng(seed).random(len(gf.dataframe)) < keep
    if not mask.any():  # nothing kept: Hatchet's EmptyFilter
        with pytest.raises(EmptyFilter):
            gf.filter(lambda df: pd.Series(mask, index=df.index), squash=False)
        return
    filtered = gf.filter(lambda df: pd.Series(mask, index=df.index), squash=False)
    out = filtered.squash(update_inclusive_columns=update)

    # what must come out: one row per (squashed call path, rank, thread) of a kept row, its values summed
    kept_ids = {n.node_id for n, _, _ in located(filtered.dataframe)}
    want_exc, want_inc = {}, {}
    for (node, r, t), exc, inc in zip(located(filtered.dataframe), filtered.dataframe["time"],
                                      filtered.dataframe["time (inc)"]):
        key = (tuple(str(a.frame["name"]) for a in node.path() if a.node_id in kept_ids), r, t)
        want_exc.setdefault(key, []).append(exc)
        want_inc.setdefault(key, []).append(inc)

    got = {(names(node), r, t): row for (node, r, t), row in
           zip(located(out.dataframe), out.dataframe[["time", "time (inc)"]].itertuples(index=False))}
    assert len(got) == len(out.dataframe)  # each (node, rank, thread) once
    assert set(got) == set(want_exc)  # nothing added back, nothing lost
    assert set(out.dataframe.index.names) == set(filtered.dataframe.index.names)  # the input's levels stay
    for key, row in got.items():
        assert same(row.time, nan_sum(want_exc[key]))
        if update:  # re-derived: the sum over the rows that exist at this location, itself and below
            below = [v.time for k, v in got.items() if k[1:] == key[1:] and k[0][:len(key[0])] == key[0]]
            assert same(row[1], nan_sum(below))
        else:  # kept as they were, merged rows summed
            assert same(row[1], nan_sum(want_inc[key]))


def test_a_node_kept_at_some_ranks_only_keeps_only_those_rows():
    # main(0) -> k(1): k is measured on ranks 0, 1, 2; the filter keeps k at rank 1 only
    nodes = [(0, -1, "main"), (1, 0, "x"), (2, 1, "k")]
    values = [(i, r, 0, float(10 * i + r)) for i in range(3) for r in range(3)]
    gf = frame_of(profile(nodes, values, [Metric("time", "exclusive")]))
    keep = (gf.dataframe["name"] == "main") | ((gf.dataframe["name"] == "k") &
                                                (gf.dataframe.index.get_level_values("rank") == 1))
    out = gf.filter(lambda df: keep)
    assert [(names(n), r) for n, r, _ in located(out.dataframe)] == [
        (("main",), 0), (("main",), 1), (("main",), 2), (("main", "k"), 1)]
    assert list(out.dataframe["time (inc)"]) == [0.0, 1.0 + 21.0, 2.0, 21.0]
    # a single rank left stays a rank level, as in Hatchet
    only = gf.filter(lambda df: pd.Series(df.index.get_level_values("rank") == 2, index=df.index))
    assert list(only.dataframe.index.names) == ["node", "rank"] and len(only.dataframe) == 3


# -- the real Hatchet --------------------------------------------------------------------------------------
HATCHET_FILTER = textwrap.dedent("""
    import json, sys
    import hatchet as ht
    kind, path, threshold = sys.argv[1], sys.argv[2], float(sys.argv[3])
    gf = ht.GraphFrame.from_tau(path) if kind == "tau" else ht.GraphFrame.from_json(open(path).read())
    report = {}
    for squash in (False, True):
        df = gf.filter(lambda row: row["time"] > threshold, squash=squash).dataframe.reset_index()
        report[str(squash)] = [[[str(n.frame["name"]) for n in rec["node"].path()], int(rec.get("rank", 0)),
                                rec["time"], rec["time (inc)"]] for rec in df.to_dict("records")]
    print(json.dumps(report))
""")


def hatchet_rows(bench_python, kind: str, path, threshold: float) -> dict:
    report = run_json([str(bench_python), "-W", "ignore", "-c", HATCHET_FILTER, kind, str(path), str(threshold)], 300)
    return {k: {(tuple(p), r): (t, i) for p, r, t, i in rows} for k, rows in report.items()}


def perflake_rows(gf, threshold: float, squash: bool) -> dict:
    out = gf.filter(lambda df: df["time"] > threshold, squash=squash).dataframe
    return {(names(n), int(r)): (t, i) for (n, r, _), t, i in zip(located(out), out["time"], out["time (inc)"])}


@pytest.mark.parametrize("kind, dataset, threshold", [
    ("tau", "tau-cpi-mpi", 100.0),  # keeps MPI_Reduce() at rank 0 only: the rows that came back
    ("json", "json/hatchet-graph-literal.json", 5.0),
])
def test_filter_and_squash_rows_and_values_are_hatchets(shared_data, bench_python, kind, dataset, threshold):
    """Hatchet 2026.2.0's filter(lambda row: row["time"] > threshold, squash=False/True): the same rows
    (call path, rank) with the same time and time (inc), both ways."""
    path = shared_data(dataset)
    gf = perflake.read_tau(path) if kind == "tau" else read_hatchet_json(path)
    theirs = hatchet_rows(bench_python, kind, path, threshold)
    for squash in (False, True):
        mine = perflake_rows(gf, threshold, squash)
        assert len(mine) == len(theirs[str(squash)]) and set(mine) == set(theirs[str(squash)])
        for key, (t, i) in theirs[str(squash)].items():
            assert mine[key] == pytest.approx((t, i), rel=1e-12), key
    if kind == "tau":
        assert len(perflake_rows(gf, threshold, False)) == len(perflake_rows(gf, threshold, True)) == 29


def test_the_issue_example_on_the_shared_literal(shared_data):
    """The issue's call: read_hatchet_json(x).filter(lambda d: d["time"] > 1e5).  On ../shared's
    hatchet-graph-literal.json (24 rows, times 0-15) nothing passes: EmptyFilter with and without squash, as
    Hatchet 2026.2.0 raises (issue 15)."""
    gf = read_hatchet_json(shared_data("json/hatchet-graph-literal.json"))
    assert len(gf.dataframe) == 24
    for squash in (False, True):
        with pytest.raises(EmptyFilter):
            gf.filter(lambda d: d["time"] > 1e5, squash=squash)
