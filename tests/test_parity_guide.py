"""Hatchet's user guide and tutorial, run on perflake GraphFrames of the real profiles in ../shared/data.

The examples are those of llnl-hatchet's ``docs/analysis_examples.rst`` ("Reading different file formats",
"Generating a flat profile", "Identifying load imbalance", "Comparing multiple executions", "Filtering by
library", "Analyzing strong/weak scaling performance") and ``docs/basic_tutorial.rst`` (Hatchet 101: the
dataframe, ``tree()`` and its options, ``drop_index_levels``, ``filter``, dividing two GraphFrames).  Each test
runs the recipe as the guide writes it and checks the numbers against the goldens that llnl-hatchet 2026.2.0
wrote for the same files (../shared/golden, tests/golden.py) or a hand computation.  The ``*_as_hatchet`` tests
run the same recipe with Hatchet itself, in .bench-venv (it requires pandas<3), on perflake's Hatchet JSON export of
the same frames, and compare (tests/hatchet_load.recipe; they fail under CI when that venv is missing).  Hatchet's
``tree()`` of our exported JSON is compared with ours through .bench-venv (tests/hatchet_load.py) when that venv
exists.

The guide's datasets (LULESH at 1..512 cores, Kripke) are not public; the nearest real ones are used: LULESH
(Caliper json-split, 8 ranks) for load imbalance, HPCToolkit cpi (4 ranks) for the flat profile and the library
filter, RAJAPerf on quartz (4 trials at problem size 1M, 1 at 2M) for comparisons and size scaling, and a
generated TAU application at 1 and 4 ranks for strong/weak scaling.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

import golden as golden_check
import hatchet_load
from conftest import need_bench_python
from perflake.frame.graphframe import GraphFrame
from perflake.frame.tables import node_ids
from perflake.generators import write_tau_runs
from perflake.interop.json_files import read_hatchet_json, write_hatchet_json
from perflake.read import read, read_caliper, read_hpctoolkit, read_tau

TAU = "tau-cpi-mpi"
LULESH = "caliper-lulesh-json/lulesh-annotation-profile.json"
HPCTOOLKIT = "hpctoolkit-cpi-database"
RAJA = "rajaperf-quartz/gcc10.3.1_{size}/O3/{trial}/Base_Seq-default.cali"
RAJA_GOLD = "rajaperf-quartz_gcc10.3.1_{size}_O3_{trial}_Base_Seq-default"
AVG = "Avg time/rank"
# formats.md B.1 (see tests/test_hpctoolkit_old.py): Hatchet names this statement after the wrong file
B1_FINALIZE = ("<program root>", "main", "62:MPI_Finalize", "PMPI_Finalize", "294:MPID_Finalize",
               "162:MPIDI_CH3_Finalize", "230:psm_dofinalize", "36:<unknown procedure>", "<unknown procedure>",
               "<unknown procedure>")
B1_GOLDEN, B1_OURS = B1_FINALIZE + ("interp.c:0",), B1_FINALIZE + ("<unknown file>:0",)


def raja(shared_data, size=1048576, trial=1) -> GraphFrame:
    return read_caliper(shared_data(RAJA.format(size=size, trial=trial)))


def raja_gold(golden, size=1048576, trial=1) -> pd.DataFrame:
    return golden(RAJA_GOLD.format(size=size, trial=trial))


def gold_table(gold: pd.DataFrame, metrics, *, rename=None) -> pd.DataFrame:
    """A golden keyed by (callpath[, rank]), same-name siblings summed (as golden.compare reads it)."""
    gold = gold.copy()
    if rename:
        gold["callpath"] = [rename.get(p, p) for p in gold["callpath"]]
    keys = ["callpath", *[c for c in golden_check.LOCATION if c in gold.columns]]
    return gold.groupby(keys, sort=True)[list(metrics)].sum(min_count=1)


def drop_index_levels(gf: GraphFrame, function=np.mean) -> GraphFrame:
    """``gf.drop_index_levels(function)`` of Hatchet on a copy: GraphFrame.drop_index_levels when perflake has it,
    else the same recipe with pandas (metrics reduced per node with ``function``, other columns: first value)."""
    out = gf.copy()
    if hasattr(out, "drop_index_levels"):
        result = out.drop_index_levels(function=function)
        return result if isinstance(result, GraphFrame) else out
    if list(out.dataframe.index.names) == ["node"]:
        return out
    how = {np.mean: "mean", np.max: "max", np.min: "min", np.sum: "sum"}.get(function, function)
    metrics = set(out.exc_metrics + out.inc_metrics)
    out.dataframe = out.dataframe.groupby(level="node", sort=False).agg(
        {c: how if c in metrics else "first" for c in out.dataframe.columns})
    return out


def by_node_id(gf: GraphFrame, metric: str) -> pd.Series:
    return pd.Series(gf.dataframe[metric].to_numpy(dtype=float), index=node_ids(gf.dataframe)).sort_index()


def as_hatchet(code: str, tmp_path, **frames: GraphFrame) -> dict:
    """Run ``code`` with the real Hatchet (.bench-venv): each frame is exported with perflake's Hatchet JSON writer
    and loaded by ``hatchet.GraphFrame.from_json`` under its keyword's name; the code sets ``result``."""
    need_bench_python()
    files = {}
    for name, gf in frames.items():
        files[name] = tmp_path / f"{name}.json"
        write_hatchet_json(gf, files[name])
    return hatchet_load.recipe(code, **files)


def hatchet_by_callpath(report: dict, metrics, locations) -> pd.DataFrame:
    """golden_check.by_callpath of the GraphFrame that a Hatchet recipe returned."""
    rows = [{"callpath": tuple(path), "rank": rank, "thread": thread, **values}
            for path, rank, thread, _profile, values in report["rows"]]
    df = pd.DataFrame(rows)
    for loc in locations:
        df[loc] = df[loc].astype("int64")
    return df.groupby(["callpath", *locations], sort=True)[list(metrics)].sum(min_count=1)


def hatchet_frame(report: dict) -> pd.DataFrame:
    """The pandas table that a Hatchet recipe returned."""
    frame = report["frame"]
    index = pd.MultiIndex.from_tuples([tuple(k) for k in frame["index"]], names=frame["index_names"])
    if index.nlevels == 1:
        index = index.get_level_values(0)
    return pd.DataFrame(frame["values"], index=index, columns=frame["columns"])


def assert_tables_close(got: pd.DataFrame, want: pd.DataFrame, rtol: float = 1e-9) -> None:
    assert got.index.equals(want.index), f"rows differ: {got.index.symmetric_difference(want.index)[:5].tolist()}"
    np.testing.assert_allclose(got.to_numpy(dtype=float), want.to_numpy(dtype=float), rtol=rtol, equal_nan=True)


# -- Reading different file formats --------------------------------------------------------------------------
READS = [
    (TAU, read_tau, "tau-cpi-mpi", ()),
    (LULESH, read_caliper, "caliper-lulesh-json", ()),
    ("caliper-lulesh-cali/lulesh-annotation-profile.cali", read_caliper, "caliper-lulesh-cali", ()),
    (HPCTOOLKIT, read_hpctoolkit, "hpctoolkit-cpi-database", (B1_GOLDEN,)),  # B.1, see above
    (RAJA.format(size=1048576, trial=1), read_caliper, RAJA_GOLD.format(size=1048576, trial=1), ()),
    ("json/hatchet-graph-literal.json", read_hatchet_json, "hatchet-json", ()),  # GraphFrame.from_json
]


@pytest.mark.parametrize("dataset, reader, gold, skip", READS, ids=[r[2] for r in READS])
def test_reading_each_format_gives_hatchets_values(shared_data, golden, dataset, reader, gold, skip):
    gf = reader(shared_data(dataset))
    golden_check.compare(gf, golden(gold), skip_paths=skip)  # every golden row: call path, rank, each metric


def test_hatchet_101_dataframe(shared_data, golden):
    """Tutorial: print(gf.dataframe), its index levels, sort_values by time, a scaled column."""
    gf = read_caliper(shared_data(LULESH))
    assert list(gf.dataframe.index.names) == ["node", "rank"]
    sorted_df = gf.dataframe.sort_values(by=["time"], ascending=False)
    top = sorted_df.iloc[0]
    gold = golden("caliper-lulesh-json")
    best = gold.loc[gold["time"].idxmax()]
    assert (top.name[0].frame["name"], top.name[1], top["time"]) == (best["callpath"][-1], best["rank"], best["time"])
    gf.dataframe["scale"] = gf.dataframe["time"] * 4
    assert gf.dataframe.sort_values(by=["scale"], ascending=True)["scale"].iloc[0] == 4 * gold["time"].min()


# -- tree() ------------------------------------------------------------------------------------------------------
TAU_TREE = """\
51781.000 .TAU application
├─ 218.000 MPI_Bcast()
├─ 25.000 MPI_Comm_rank()
├─ 31.000 MPI_Comm_size()
├─ 32304.000 MPI_Finalize()
│  ├─ 27.000 MPI_Comm_get_attr()
│  ├─ 27490.000 MPI_File_open()
│  ├─ 296.000 MPI_Info_create()
│  └─ 33.000 MPI_Info_free()
├─ 298.000 MPI_Get_processor_name()
├─ 17983.000 MPI_Init()
└─ 473.000 MPI_Reduce()
"""  # Hatchet's print(gf.tree()) of these files, less the " 0" context its TAU reader adds (B.24)
_LINE = re.compile(r"^((?:│  |   |├─ |└─ )*)(\S+) (.+)$")


def tree_values(text: str) -> dict[tuple, float]:
    """{call path of names: value} of a tree() text without context columns (one metric)."""
    out, stack = {}, []
    for line in text.splitlines():
        m = _LINE.match(line)
        if not m:
            continue
        depth = len(m.group(1)) // 3
        stack[depth:] = [m.group(3)]
        out[tuple(stack)] = float(m.group(2))
    return out


def test_tree_text_and_options(shared_data, golden):
    """Tutorial: gf.tree(), metric_column=, depth=, rank=; every number printed is the golden's at that rank."""
    gf = read_tau(shared_data(TAU))
    text = gf.tree(colour=False)
    assert text.endswith(TAU_TREE) and text.startswith("perflake ")  # perflake's header (not Hatchet's), the tree
    gold = gold_table(golden("tau-cpi-mpi"), ["time", "time (inc)"])
    for options, metric, rank in [({}, "time (inc)", 0), ({"metric_column": "time"}, "time", 0),
                                  ({"rank": 2}, "time (inc)", 2), ({"depth": 2, "metric_column": "time"}, "time", 0)]:
        shown = tree_values(gf.tree(colour=False, render_header=False, **options))
        assert len(shown) == (8 if "depth" in options else 12)
        for path, value in shown.items():
            assert value == round(gold.loc[(path, rank), metric], 3), (options, path)


@pytest.mark.parametrize("dataset, metric", [(TAU, "time (inc)"), (LULESH, "time"), (HPCTOOLKIT, "time (inc)"),
                                             (RAJA.format(size=1048576, trial=1), AVG)])
def test_tree_is_hatchets_tree_of_our_export(shared_data, tmp_path, dataset, metric):
    """Hatchet's own tree() (.bench-venv) of the exported run prints what ours prints; Hatchet writes 'None'
    where a node has no file, perflake nothing -- except HPCToolkit's unknown file, which perflake prints
    '<unknown file>' as Hatchet's HPCToolkit reader does (perflake.render.tree's docstring;
    tests/test_hatchet_columns.py)."""
    need_bench_python()
    gf = read(shared_data(dataset))
    write_hatchet_json(gf, tmp_path / "run.json")
    theirs = hatchet_load.load("hatchet", tmp_path / "run.json", metric)["tree"]
    if gf.graph.node_ordering:  # Hatchet's from_json makes a frame-ordered graph (perflake.interop.json_files)
        gf = read_caliper(shared_data(dataset), node_ordering=False)
    ours = gf.tree(metric_column=metric, render_header=False, colour=False)
    if dataset == HPCTOOLKIT:
        assert " <unknown file>\n" in ours
        ours = ours.replace(" <unknown file>\n", "\n")
    assert theirs.replace(" None\n", "\n") == ours


# -- Generating a flat profile (HPCToolkit: drop_index_levels, groupby name, sum, sort by time) -------------------
def expected_flat(golden) -> pd.DataFrame:
    """The guide's recipe on Hatchet's golden: mean over ranks per call path, summed per function name."""
    per_path = gold_table(golden("hpctoolkit-cpi-database"), ["time", "time (inc)"], rename={B1_GOLDEN: B1_OURS})
    mean = per_path.groupby(level="callpath").mean()
    return mean.groupby([p[-1] for p in mean.index]).sum().rename_axis("name").sort_index()


def test_flat_profile(shared_data, golden):
    gf = read_hpctoolkit(shared_data(HPCTOOLKIT))
    flat = gf.flat_profile(metrics=["time", "time (inc)"])
    assert flat["time"].is_monotonic_decreasing  # not a timing: sorted by time, descending, as the guide sorts
    # by hand from the golden's per-rank values: <unknown file>:0 sits at three call paths (one is B.1's), each
    # reduced with the mean over the 4 ranks, then summed; interp.c:0 keeps its one path under __GI_sched_yield
    unknown = sum(v / 4 for v in (0, 0, 0, 0, 663611, 664498, 712503, 765482, 257678, 280921, 227842, 209850,
                                  59960, 35980, 59961, 23976))
    assert flat.index[:2].tolist() == ["<unknown file>:0", "interp.c:0"]
    assert flat["time"].iloc[:2].tolist() == [unknown, (17989 + 17991) / 4] == [990565.5, 8995.0]
    assert_tables_close(flat.sort_index(), expected_flat(golden))
    # the guide's own lines on a perflake GraphFrame give the same table
    reduced = drop_index_levels(gf)
    grouped = reduced.dataframe.groupby("name")[["time", "time (inc)"]].sum()
    assert_tables_close(grouped.sort_index(), expected_flat(golden))


def test_flat_profile_as_hatchet(shared_data, tmp_path):
    gf = read_hpctoolkit(shared_data(HPCTOOLKIT))
    theirs = hatchet_frame(as_hatchet(
        "gf.drop_index_levels()\n"
        "result = gf.dataframe.groupby('name')[['time', 'time (inc)']].sum().sort_values(by=['time'], ascending=False)",
        tmp_path, gf=gf))
    ours = gf.flat_profile(metrics=["time", "time (inc)"])
    assert_tables_close(ours.sort_index(), theirs.sort_index())


# -- Identifying load imbalance (LULESH: drop_index_levels mean and max, then divide) -----------------------------
def expected_imbalance(golden) -> pd.Series:
    per_rank = gold_table(golden("caliper-lulesh-json"), ["time"])["time"]
    grouped = per_rank.groupby(level="callpath")
    return (grouped.max() / grouped.mean()).rename("imbalance")


def imbalance_by_path(gf1: GraphFrame) -> pd.Series:
    paths = [tuple(str(n.frame.get("name")) for n in node.path()) for node in gf1.dataframe.index]
    index = pd.Index(paths, name="callpath", tupleize_cols=False)
    return pd.Series(gf1.dataframe["imbalance"].to_numpy(), index=index).sort_index()


def test_load_imbalance(shared_data, golden):
    gf1 = read_caliper(shared_data(LULESH))
    gf2 = gf1.copy()
    gf1 = drop_index_levels(gf1, np.mean)
    gf2 = drop_index_levels(gf2, np.max)
    gf1.dataframe["imbalance"] = gf2.dataframe["time"].div(gf1.dataframe["time"])
    sorted_df = gf1.dataframe.sort_values(by=["imbalance"], ascending=False)
    want = expected_imbalance(golden)
    got = imbalance_by_path(gf1)
    assert got.index.equals(want.index)
    np.testing.assert_allclose(got.to_numpy(), want.to_numpy(), rtol=1e-12)
    assert sorted_df.iloc[0]["name"] == want.idxmax()[-1] == "LagrangeLeapFrog"
    assert sorted_df.iloc[0]["imbalance"] == pytest.approx(3520 / 894.5)  # max / mean over the 8 ranks, by hand
    # perflake's own load_imbalance gives the same ratios (LULESH's region names are unique)
    stats = read_caliper(shared_data(LULESH)).load_imbalance(metric="time")
    assert dict(zip(stats["name"], stats["imbalance"])) == pytest.approx({p[-1]: v for p, v in want.items()}, rel=1e-12)


def test_load_imbalance_as_hatchet(shared_data, tmp_path):
    gf = read_caliper(shared_data(LULESH))
    theirs = as_hatchet("gf2 = gf.deepcopy()\n"
                        "gf.drop_index_levels(function=np.mean)\n"
                        "gf2.drop_index_levels(function=np.max)\n"
                        "gf.dataframe['imbalance'] = gf2.dataframe['time'].div(gf.dataframe['time'])\n"
                        "result = gf", tmp_path, gf=gf)
    ours = drop_index_levels(gf, np.mean)
    ours.dataframe["imbalance"] = drop_index_levels(gf, np.max).dataframe["time"].div(ours.dataframe["time"])
    assert_tables_close(hatchet_by_callpath(theirs, ["imbalance"], []), imbalance_by_path(ours).to_frame(),
                        rtol=1e-12)


# -- Comparing multiple executions (gf3 = gf2 - gf1, sorted by time) --------------------------------------------
def test_comparing_executions(shared_data, golden):
    gf1, gf2 = raja(shared_data, trial=1), raja(shared_data, trial=2)
    gf2 = drop_index_levels(gf2)  # one rank already: a no-op, as the guide writes it
    gf3 = gf2 - gf1
    metrics = ["Min time/rank", "Max time/rank", AVG, "Total time"]
    got = golden_check.by_callpath(gf3, metrics, [])
    want = gold_table(raja_gold(golden, trial=2), metrics) - gold_table(raja_gold(golden, trial=1), metrics)
    assert_tables_close(got, want, rtol=1e-9)
    sorted_df = gf3.dataframe.sort_values(by=[AVG], ascending=False)
    assert sorted_df.iloc[0]["name"] == want[AVG].idxmax()[-1]
    assert sorted_df.iloc[0][AVG] == pytest.approx(want[AVG].max(), rel=1e-12)


def test_comparing_executions_as_hatchet(shared_data, tmp_path):
    gf1, gf2 = raja(shared_data, trial=1), raja(shared_data, trial=3)
    theirs = as_hatchet("result = gf2 - gf1", tmp_path, gf1=gf1, gf2=gf2)
    assert_tables_close(hatchet_by_callpath(theirs, [AVG], []), golden_check.by_callpath(gf2 - gf1, [AVG], []))


# -- Filtering by library (filter by name or load module, squash, subtract) ---------------------------------------
def test_filter_mpi_and_squash_tutorial(shared_data, golden):
    """Tutorial: gf.filter(lambda x: x['name'].startswith('MPI_'), squash=True) on the TAU cpi run."""
    gf = read_tau(shared_data(TAU))
    filter_gf = gf.filter(lambda x: x["name"].startswith("MPI_"), squash=True)
    names = sorted(n.frame["name"] for n in filter_gf.graph)
    assert len(names) == 11 and all(n.startswith("MPI_") for n in names)
    assert sorted(r.frame["name"] for r in filter_gf.graph.roots) == [
        "MPI_Bcast()", "MPI_Comm_rank()", "MPI_Comm_size()", "MPI_Finalize()", "MPI_Get_processor_name()",
        "MPI_Init()", "MPI_Reduce()"]  # .TAU application is gone: its children are roots now
    gold = gold_table(golden("tau-cpi-mpi"), ["time", "time (inc)"])
    got = golden_check.by_callpath(filter_gf, ["time", "time (inc)"], ["rank"])
    for (path, rank), row in got.iterrows():
        old = (".TAU application", *path)
        assert row["time"] == gold.loc[(old, rank), "time"]
        children = [p for p, r in gold.index if len(p) == len(old) + 1 and p[:-1] == old and r == rank]
        assert row["time (inc)"] == row["time"] + sum(gold.loc[(c, rank), "time"] for c in children)
    assert got.loc[(("MPI_Finalize()",), 0), "time (inc)"] == 4458 + 27 + 27490 + 296 + 33 == 32304


MPI_LIBRARY = ["162:MPIDI_CH3_Finalize", "198:MPIR_Init_thread", "230:psm_dofinalize", "24:psm_doinit",
               "294:MPID_Finalize", "363:MPIDI_CH3_Init", "512:MPID_Init", "PMPI_Finalize", "PMPI_Init"]


def test_filter_by_load_module_then_squash(shared_data, golden):
    """'Filtering by library' with the library itself: the nodes whose load module is MVAPICH's libmpi."""
    gf = read_hpctoolkit(shared_data(HPCTOOLKIT))
    mpi = gf.filter(lambda x: "libmpi" in str(x["module"]))
    assert sorted(n.frame["name"] for n in mpi.graph) == MPI_LIBRARY
    assert sorted(r.frame["name"] for r in mpi.graph.roots) == ["PMPI_Finalize", "PMPI_Init"]
    gold = gold_table(golden("hpctoolkit-cpi-database"), ["time"], rename={B1_GOLDEN: B1_OURS})["time"]
    got = golden_check.by_callpath(mpi, ["time", "time (inc)"], ["rank"])
    original = {p[-1]: p for p, _ in gold.index if p[-1] in MPI_LIBRARY}  # each of these names occurs once
    assert sorted(original) == MPI_LIBRARY
    for (path, rank), row in got.iterrows():
        assert row["time"] == gold.loc[(original[path[-1]], rank)]  # exclusive time in the library, as Hatchet read it
    for rank in range(4):  # inclusive time is re-derived over the kept nodes only: the library's own time
        for root in ("PMPI_Init", "PMPI_Finalize"):
            below = [v for (p, r), v in got["time"].items() if r == rank and p[0] == root]
            assert got.loc[((root,), rank), "time (inc)"] == sum(below)


def test_filter_squash_subtract_between_sizes(shared_data, golden):
    """The guide's recipe (filter both runs by name, squash, subtract) with RAJAPerf's Apps_ kernels, 1M vs 2M."""
    squashed = []
    for size in (1048576, 2097152):
        gf = drop_index_levels(raja(shared_data, size=size))
        filtered_gf = gf.filter(lambda x: x["name"].startswith("Apps_"), squash=False)
        squashed.append(filtered_gf.squash())
    diff_gf = squashed[1] - squashed[0]
    assert all(len(r.path()) == 1 and r.frame["name"].startswith("Apps_") for r in diff_gf.graph.roots)
    assert len(diff_gf.graph) == len(diff_gf.graph.roots) == 15
    got = golden_check.by_callpath(diff_gf, [AVG], [])[AVG]
    gold = [gold_table(raja_gold(golden, size=s), [AVG])[AVG] for s in (1048576, 2097152)]
    want = (gold[1] - gold[0])[[p[-1].startswith("Apps_") for p in gold[0].index]]
    want.index = [(p[-1],) for p in want.index]
    assert_tables_close(got.to_frame(), want.sort_index().to_frame())
    assert diff_gf.dataframe.sort_values(by=[AVG], ascending=False).iloc[0]["name"] == want.idxmax()[0]


def test_filter_squash_as_hatchet(shared_data, tmp_path):
    gf = read_tau(shared_data(TAU))
    # num_procs=1: Hatchet's default forks one process per CPU (multiprocess)
    theirs = as_hatchet("result = gf.filter(lambda x: x['name'].startswith('MPI_'), squash=True, num_procs=1)",
                        tmp_path, gf=gf)
    ours = gf.filter(lambda x: x["name"].startswith("MPI_"), squash=True)
    metrics = ["time", "time (inc)"]
    assert_tables_close(hatchet_by_callpath(theirs, metrics, ["rank"]),
                        golden_check.by_callpath(ours, metrics, ["rank"]))


# -- Strong and weak scaling (divide two GraphFrames) -------------------------------------------------------------
@pytest.fixture(scope="module")
def tau_1_and_4(tmp_path_factory):
    """The same generated TAU application (same call tree) at 1 rank and at 4 ranks."""
    root = tmp_path_factory.mktemp("scaling")
    one = read_tau(write_tau_runs(root / "1", nodes=40, ranks=1, seed=7)[0])
    four = read_tau(write_tau_runs(root / "4", nodes=40, ranks=4, seed=7)[0])
    return one, four


def test_strong_scaling_division(tau_1_and_4):
    """gf_64cores["time"] *= 64; gf_strong_scale = gf_1core / gf_64cores (here 1 and 4 ranks, mean over ranks)."""
    gf_1, gf_4 = tau_1_and_4
    per_rank = gf_4.dataframe["time"].groupby(node_ids(gf_4.dataframe)).mean()  # by hand, with pandas
    single = pd.Series(gf_1.dataframe["time"].to_numpy(), index=node_ids(gf_1.dataframe)).sort_index()
    gf_4 = drop_index_levels(gf_4)
    gf_4.dataframe["time"] *= 4
    gf_strong_scale = gf_1 / gf_4
    got = by_node_id(gf_strong_scale, "time")
    assert got.index.equals(single.index) and len(got) == 41
    np.testing.assert_allclose(got.to_numpy(), (single / (4 * per_rank.sort_index())).to_numpy(), rtol=1e-12)


def test_weak_scaling_division(tau_1_and_4):
    """gf_weak_scale = gf_1core / gf_27cores (ranks reduced with the mean first, as the tutorial does)."""
    gf_1, gf_4 = tau_1_and_4
    gf_weak_scale = gf_1 / drop_index_levels(gf_4)
    for metric in ("time", "time (inc)"):
        want = by_node_id(gf_1, metric) / gf_4.dataframe[metric].groupby(node_ids(gf_4.dataframe)).mean().sort_index()
        np.testing.assert_allclose(by_node_id(gf_weak_scale, metric).to_numpy(), want.to_numpy(), rtol=1e-12)


def test_problem_size_scaling_division(shared_data, golden):
    """RAJAPerf at problem size 2M over 1M, kernel by kernel, against the goldens' ratio."""
    ratio = raja(shared_data, size=2097152) / raja(shared_data, size=1048576)
    got = golden_check.by_callpath(ratio, [AVG], [])
    want = gold_table(raja_gold(golden, size=2097152), [AVG]) / gold_table(raja_gold(golden, size=1048576), [AVG])
    assert_tables_close(got, want, rtol=1e-12)
    assert 1.5 < dict(got[AVG].items())[("RAJAPerf",)] < 2.5  # twice the work, about twice the time


def test_scaling_division_as_hatchet(tau_1_and_4, tmp_path):
    gf_1, gf_4 = tau_1_and_4
    theirs = as_hatchet("gf_4.drop_index_levels()\n"
                        "gf_4.dataframe['time'] *= 4\n"
                        "result = gf_1 / gf_4", tmp_path, gf_1=gf_1, gf_4=gf_4)
    ours_4 = drop_index_levels(gf_4)
    ours_4.dataframe["time"] *= 4
    ours = gf_1 / ours_4
    assert_tables_close(hatchet_by_callpath(theirs, ["time"], []), golden_check.by_callpath(ours, ["time"], []))
