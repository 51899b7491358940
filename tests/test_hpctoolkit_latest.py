"""``GraphFrame.from_hpctoolkit_latest``: Hatchet's view of a v4 database, compared with llnl-hatchet 2026.2.0.

Hatchet runs in ``.bench-venv`` (tests/hatchet_v4_load.py) on the same database with the same keywords; both
sides are summed per call path of names (and location), since Hatchet keeps one node per context and perflake
merges siblings with the same frame.  Deviations, each asserted below (see perflake.interop.hpctoolkit_latest):

* B.8: ``name`` is not in ``exc_metrics``.  ``file``, ``line`` and ``module`` are extra columns (B.10).
* Item 1 of issue 13: copied sources by their original path.  hpctoolkit-gamess stores the pre-2023 form
  ``gamess-1n-siCap-gpu.d/src/<path>``, which Hatchet shows as stored: its names are mapped to ``/<path>``.  On
  a copy rewritten to the current form ``src/<path>`` Hatchet and perflake give the same names unmapped.
* B.7: parallel mode crashes in Hatchet on this database; it runs here with its binary search bounded (the
  only change).  perflake's index is (node, rank, thread); Hatchet's (node, profile) is mapped to (rank,
  thread) through ``metadata["hpctoolkit.profiles"]``, whose pairs are checked against Hatchet's profile table.
* B.12: no ``date`` / ``nodes`` metadata.
"""

from __future__ import annotations

import functools
import json
import shutil

import numpy as np
import pandas as pd
import pytest

from perflake.errors import FormatNotRecognized, UsageError
from perflake.frame.graphframe import GraphFrame
from v4_patch import COPIED, rewrite_sources

SAMPLE = "hpctoolkit-gamess"
COPIED_AS = "gamess-1n-siCap-gpu.d/src/"
KEYWORDS = [  # each compared with Hatchet on hpctoolkit-gamess (summary mode unless said)
    {"max_depth": 6},
    {"min_percentage_of_application_time": 1},
    {"exclude_mpi_function_details": True, "exclude_openmp_function_details": True,
     "exclude_cuda_function_details": True, "exclude_system_libraries_source_code": True},
    {"exclude_function_call_lines": True},
    {"exclude_no_source_code_instructions": True, "exclude_instructions": True},
    {"exclude_non_function_nodes": True, "label_function_nodes": False},
    {"metric_names": ["time", "gker"], "metric_scopes": ["i"], "summary_metrics": ["sum"]},
    {"parallel_profiles_mode": True, "profile_ranks": [3, 12], "max_depth": 9, "_guard": True},
]


@functools.lru_cache(maxsize=4)
def _hatchet(path: str, cases: str) -> list[dict]:
    import hatchet_v4_load

    return hatchet_v4_load.load(path, json.loads(cases))


def hatchet(path, *cases: dict) -> list[dict]:
    return _hatchet(str(path), json.dumps(list(cases)))


def _table(paths: list, locations: list | None, values: list[dict], metrics: list[str]) -> pd.DataFrame:
    """Rows keyed by call path (+ rank, thread), same keys summed (NaN when no value at all)."""
    df = pd.DataFrame(values, columns=metrics, dtype=float)
    path_index = pd.Index(paths, dtype=object, tupleize_cols=False)
    if locations is None:
        df.index = path_index
    else:
        ranks, threads = zip(*locations) if locations else ((), ())
        df.index = pd.MultiIndex.from_arrays([path_index, np.asarray(ranks, np.int64), np.asarray(threads, np.int64)])
    return df.groupby(level=list(range(df.index.nlevels)), sort=True).sum(min_count=1)


def theirs(report: dict, metrics: list[str], rename=lambda name: name, location=None) -> pd.DataFrame:
    paths = [tuple(rename(n) for n in path) for path, _, _ in report["rows"]]
    where = [location[profile] for _, profile, _ in report["rows"]] if location else None
    return _table(paths, where, [{m: cols.get(m) for m in metrics} for _, _, cols in report["rows"]], metrics)


def ours(gf, metrics: list[str]) -> pd.DataFrame:
    df = gf.dataframe
    paths = [tuple(str(n.frame.get("name")) for n in node.path()) for node in df.index.get_level_values("node")]
    where = None
    if "rank" in df.index.names:
        where = list(zip(df.index.get_level_values("rank").astype(int),
                         df.index.get_level_values("thread").astype(int)))
    return _table(paths, where, df[metrics].to_dict("records"), metrics)


def assert_same(mine: pd.DataFrame, gold: pd.DataFrame) -> None:
    assert mine.index.equals(gold.index), (mine.index.difference(gold.index)[:3], gold.index.difference(mine.index)[:3])
    close = np.isclose(mine.to_numpy(), gold.to_numpy(), rtol=1e-9, atol=0, equal_nan=True)
    assert close.all(), f"{(~close).sum()} values differ, e.g. {mine.index[np.argwhere(~close)[0][0]]}"


def unpack_copied(name: str) -> str:
    return name.replace(COPIED_AS, "/")


def test_default_view_is_hatchets(shared_data, bench_python):
    db = shared_data(SAMPLE)
    (h,) = hatchet(db, {})
    gf = GraphFrame.from_hpctoolkit_latest(db)
    df = gf.dataframe
    assert h["index"] == list(df.index.names) == ["node"]
    assert h["columns"] == list(df.columns[:3]) == ["time (inc)", "name", "time"]
    assert list(df.columns[3:]) == ["file", "line", "module"]  # B.10: perflake keeps them
    assert h["inc"] == gf.inc_metrics == ["time (inc)"] and h["default"] == gf.default_metric == "time (inc)"
    assert h["exc"] == ["name", "time"] and gf.exc_metrics == ["time"]  # B.8
    mine, gold = ours(gf, ["time (inc)", "time"]), theirs(h, ["time (inc)", "time"], unpack_copied)
    assert_same(mine, gold)
    # one node per context in Hatchet, identical siblings merged here; as many call paths of names
    assert len(h["rows"]) == h["nodes"] == 11292 and len(df) == len(gf.graph) == 8399 and len(gold) == 8396
    assert gold.loc[[("entry",)], "time (inc)"].iloc[0] == pytest.approx(1608.492466, rel=1e-12)
    assert gold.notna().sum().to_dict() == {"time (inc)": 8070, "time": 2166}
    assert [str(r.frame["name"]) for r in gf.graph.roots] == ["entry"] and gf.graph.roots[0].frame["type"] == "entry"
    assert h["metadata_keys"] == ["date", "file_path", "nodes"]  # B.12: perflake has no date/nodes
    assert gf.metadata["file_path"] == str(db) and "date" not in gf.metadata
    assert gf.metadata["hpctoolkit.view"] == "hatchet" and gf.metadata["hpctoolkit.missing_contexts"] == 5931


def test_default_view_matches_the_shared_golden(shared_data, golden):
    """../shared/golden/hpctoolkit-gamess.csv (Hatchet's summary view) without running Hatchet: same call paths
    (copied sources by their original path, item 1), same values, no path missing or extra."""
    import golden as golden_check

    gold = golden(SAMPLE)
    gold["callpath"] = [tuple(unpack_copied(n) for n in c) for c in gold["callpath"]]
    gf = GraphFrame.from_hpctoolkit_latest(shared_data(SAMPLE))
    mine = golden_check.compare(gf, gold)
    assert set(mine.index) == set(gold["callpath"]) and len(mine) == 8396


def test_parallel_view_is_hatchets(shared_data, bench_python):
    db = shared_data(SAMPLE)
    (h,) = hatchet(db, {"parallel_profiles_mode": True, "_guard": True})
    gf = GraphFrame.from_hpctoolkit_latest(db, parallel_profiles_mode=True)
    df = gf.dataframe
    assert h["index"] == ["node", "profile"] and list(df.index.names) == ["node", "rank", "thread"]
    assert h["columns"] == list(df.columns[:3]) == ["name", "time (inc)", "time"]
    assert h["inc"] == gf.inc_metrics and gf.exc_metrics == ["time"] and gf.default_metric == "time (inc)"
    # Hatchet's profile numbers are profile.db's; metadata says where each one is
    location = {p["profile"]: (p["rank"], p["thread"]) for p in gf.metadata["hpctoolkit.profiles"]}
    assert len(h["profiles"]) == 40
    for p in h["profiles"]:
        assert location[p["profile"]] == (p["rank"], int(p["thread"]))
    metrics = ["time (inc)", "time"]
    mine = ours(gf, metrics)
    gold = theirs(h, metrics, unpack_copied, location)
    measured = mine[mine.notna().any(axis=1)]
    assert_same(measured, gold)
    assert len(h["rows"]) == 40331 and len(gold) == 33562
    # B.7: a node without any value keeps one NaN row here, none in Hatchet
    empty = df[metrics].isna().all(axis=1)
    nodes = df.index.get_level_values("node")
    assert empty.sum() == 328 and not nodes[empty].duplicated().any() and not nodes[empty].isin(nodes[~empty]).any()
    assert len(df.index.get_level_values("node").unique()) == len(gf.graph) == 8399


@pytest.mark.parametrize("case", KEYWORDS, ids=lambda c: ",".join(k for k in c if k != "_guard"))
def test_keywords_are_hatchets(case, shared_data, bench_python):
    db = shared_data(SAMPLE)
    reports = hatchet(db, *KEYWORDS)
    h = reports[KEYWORDS.index(case)]
    gf = GraphFrame.from_hpctoolkit_latest(db, **{k: v for k, v in case.items() if k != "_guard"})
    metrics = [c for c in h["columns"] if c != "name"]
    assert list(gf.dataframe.columns[: len(h["columns"])]) == h["columns"]
    assert gf.inc_metrics == h["inc"] and gf.exc_metrics == [c for c in h["exc"] if c != "name"]
    parallel = case.get("parallel_profiles_mode", False)
    location = {p["profile"]: (p["rank"], p["thread"]) for p in gf.metadata["hpctoolkit.profiles"]}
    mine = ours(gf, metrics)
    gold = theirs(h, metrics, unpack_copied, location if parallel else None)
    assert_same(mine[mine.notna().any(axis=1)] if parallel else mine, gold)
    if parallel:
        assert {int(r) for r in gf.dataframe.index.get_level_values("rank")} == {3, 12}


def test_keyword_effects(shared_data):
    """The keywords do what their names say on hpctoolkit-gamess (Hatchet's semantics, checked above)."""
    db = shared_data(SAMPLE)
    depth = GraphFrame.from_hpctoolkit_latest(db, max_depth=3)
    assert max(n.depth for n in depth.graph.traverse()) == 3
    big = GraphFrame.from_hpctoolkit_latest(db, min_percentage_of_application_time=10)
    inc = big.dataframe["time (inc)"]
    assert (inc >= 0.1 * 1608.492466).all() and 5 < len(big.graph) < 200
    funcs = GraphFrame.from_hpctoolkit_latest(db, exclude_non_function_nodes=True, label_function_nodes=False)
    assert {n.frame["type"] for n in funcs.graph.traverse()} == {"entry", "function"}
    assert not any(str(n.frame["name"]).startswith("function: ") for n in funcs.graph.traverse())
    stats = GraphFrame.from_hpctoolkit_latest(db, metric_names=["time"], metric_scopes=["i", "e", "p"])
    assert list(stats.dataframe.columns[:4]) == ["time (inc)", "name", "time", "time (point)"]  # B.9: own name
    assert stats.exc_metrics == ["time", "time (point)"] and stats.inc_metrics == ["time (inc)"]
    # Hatchet raises KeyError(None) in summary mode when no time metric is asked for; perflake reads it
    gpu = GraphFrame.from_hpctoolkit_latest(db, metric_names=["gpuop"])
    assert gpu.inc_metrics == ["gpuop (inc)"] and gpu.default_metric is None
    full = GraphFrame.from_hpctoolkit(db).dataframe.xs((-1, -1), level=("rank", "thread"))
    main = [n for n in full.index if n.frame["name"] == "main thread"]
    root_gpu = gpu.dataframe.loc[gpu.graph.roots[0], "gpuop (inc)"]  # rows are in context-id order, as Hatchet's
    assert root_gpu == pytest.approx(full.loc[main, "sum(gpuop (inc))"].iloc[0], rel=1e-12)


def test_squash_rederives_inclusive_from_function_scope_as_hatchet(shared_data, bench_python):
    """``time`` is the function scope (as in Hatchet), which repeats a function's cost on its lines and loops;
    a squash that re-derives ``time (inc)`` from it (Hatchet's default) gives the same wrong total in both
    tools: documented in perflake.interop.hpctoolkit_latest.  ``update_inc_cols=False`` keeps the database's values."""
    db = shared_data(SAMPLE)
    case = {"max_depth": 8}
    before, after = hatchet(db, case, {**case, "_filter_all": True})
    gf = GraphFrame.from_hpctoolkit_latest(db, **case)
    kept = gf.filter(lambda row: True)
    assert_same(ours(kept, ["time (inc)", "time"]), theirs(after, ["time (inc)", "time"], unpack_copied))
    root = kept.dataframe["time (inc)"].iloc[0]  # squash numbers in pre-order: the root first
    assert root == pytest.approx(gf.dataframe["time"].sum(), rel=1e-12) == pytest.approx(0.860282, rel=1e-6)
    assert gf.dataframe.loc[gf.graph.roots[0], "time (inc)"] == pytest.approx(1608.492466, rel=1e-12)
    assert_same(ours(gf.filter(lambda row: True, update_inc_cols=False), ["time (inc)", "time"]),
                theirs(before, ["time (inc)", "time"], unpack_copied))


def test_copied_sources_in_the_current_form_are_named_as_hatchet_names_them(shared_data, bench_python, tmp_path):
    base = shared_data(SAMPLE)
    db = rewrite_sources(base, tmp_path / "db", lambda f, p: (f, "src/" + p[len(COPIED_AS):]) if f & COPIED else None)
    shutil.copyfile(base / "cct.db", db / "cct.db")  # Hatchet needs it
    (h,) = hatchet(db, {})
    gf = GraphFrame.from_hpctoolkit_latest(db)
    gold = theirs(h, ["time (inc)", "time"])  # no renaming
    assert_same(ours(gf, ["time (inc)", "time"]), gold)
    assert any("line /opt/cray/pe/gcc/10.3.0/snos/include/g++/bits/stl_map.h:" in n for p in gold.index for n in p)


def test_perflake_operations_work_on_the_view(shared_data):
    db = shared_data(SAMPLE)
    gf = GraphFrame.from_hpctoolkit_latest(db, parallel_profiles_mode=True)
    text = gf.tree(rank=0, thread=0, render_header=False, colour=False).splitlines()
    assert text[:2] == ["100.268 entry", "└─ 100.268 function: gamess_ [gamess.00.x]"]
    hot = gf.filter(lambda row: row["time (inc)"] > 50, squash=True)
    assert 0 < len(hot.graph) < len(gf.graph) and set(hot.dataframe.index.get_level_values("rank")) <= set(range(16))
    flat = GraphFrame.from_hpctoolkit_latest(db).flat_profile()
    assert len(flat) > 100


def test_only_v4_databases(shared_data):
    with pytest.raises(FormatNotRecognized, match="not a hpctoolkit_v4 profile"):
        GraphFrame.from_hpctoolkit_latest(shared_data("hpctoolkit-cpi-database"))
    with pytest.raises(UsageError, match=r"no values for metric_names=\['nosuch'\].*metrics: .*time"):
        GraphFrame.from_hpctoolkit_latest(shared_data(SAMPLE), metric_names=["nosuch"])
