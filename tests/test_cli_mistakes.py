"""User mistakes on the command line (issue 23, item 5): each is one line on stderr, exit 2, nothing on stdout, no
traceback -- and, where the mistake is in an option, before any work is done or any file written.

- ``generate``: every size option 0, negative or absurd, for every format;
- every command that writes a file: a missing directory, a path that is a directory, a directory that is a file;
- ``changes`` / ``plot timeline`` on a lake where some runs lack the order key: those runs are left out with one
  warning that counts them (and nothing left is one line);
- a misspelt ``meta:KEY`` in every option that takes one: exit 2 with the close keys, as the API's Ensemble;
- numeric options out of range, and a --scheduler that is neither a name nor an address.

The commands run in this process (``perflake.cli.app.main``: the same code as the installed command, faster on
a loaded machine); tests/test_connect_timeouts.py runs the ones that talk to a network in subprocesses.
"""

from __future__ import annotations

import re
import warnings

import pytest

from perflake import Lake
from perflake.cli.app import main
from perflake.errors import LakeError, MetadataKeyWarning, UsageError
from perflake.generators import write_hpctoolkit_runs, write_tau_runs

TAU_RUNS, HPC_RUNS = 6, 2  # TAU runs have a launch time, these HPCToolkit ones none


@pytest.fixture(scope="module")
def lake(tmp_path_factory):
    root = tmp_path_factory.mktemp("mistakes")
    write_tau_runs(root / "in" / "tau", nodes=20, ranks=2, runs=TAU_RUNS, seed=4)
    write_hpctoolkit_runs(root / "in" / "hpc", nodes=20, ranks=2, runs=HPC_RUNS, seed=5)
    lake = Lake(root / "lake")
    assert len(lake.ingest([root / "in"]).ingested) == TAU_RUNS + HPC_RUNS
    return lake


@pytest.fixture(scope="module")
def tau_run(lake) -> str:
    runs = lake.runs()
    return runs.loc[runs["format"] == "tau", "run_id"].iloc[0]


def perflake(capsys, *args) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def one_line(capsys, *args) -> str:
    """The message of a command that must refuse: exit 2, one stderr line, no stdout, no traceback."""
    code, out, err = perflake(capsys, *args)
    assert code == 2, (code, err[-2000:])
    assert err.count("\n") == 1 and err.startswith("perflake: ") and "Traceback" not in err, err[-2000:]
    assert out == ""
    return err.strip()


# -- generate: sizes ---------------------------------------------------------------------------------------------
FORMATS = [["tau"], ["caliper"], ["hpctoolkit"], ["hpctoolkit", "--v4"], ["hpctoolkit", "--no-metric-db"]]
BAD_SIZES = [
    ("--nodes", 0, "--nodes must be between 1 and 1,000,000, not 0"),
    ("--nodes", -5, "--nodes must be between 1 and 1,000,000, not -5"),
    ("--ranks", -1, "--ranks must be between 1 and 1,000,000, not -1"),
    ("--ranks", 10**9, "--ranks must be between 1 and 1,000,000, not 1,000,000,000"),
    ("--runs", 0, "--runs must be between 1 and 10,000, not 0"),
    ("--runs", -2, "--runs must be between 1 and 10,000, not -2"),
    ("--runs", 10**6, "--runs must be between 1 and 10,000, not 1,000,000"),
    ("--seed", -1, "--seed must be between 0 and 4,294,967,295, not -1"),
    ("--seed", 2**40, "--seed must be between 0 and 4,294,967,295, not 1,099,511,627,776"),
]


@pytest.mark.parametrize("fmt", FORMATS, ids=" ".join)
@pytest.mark.parametrize("option,value,message", BAD_SIZES, ids=[f"{o}={v}" for o, v, _ in BAD_SIZES])
def test_generate_refuses_bad_sizes_in_one_line(capsys, tmp_path, fmt, option, value, message):
    out = tmp_path / "gen"
    assert one_line(capsys, "generate", fmt[0], out, *fmt[1:], option, value) == f"perflake: {message}"
    assert not out.exists()


@pytest.mark.parametrize("fmt", [f for f in FORMATS if f != ["caliper"]], ids=" ".join)
def test_generate_threads_and_run_size(capsys, tmp_path, fmt):
    out = tmp_path / "gen"
    for threads in (0, -3, 5000):
        assert one_line(capsys, "generate", fmt[0], out, *fmt[1:], "--threads", threads) == (
            f"perflake: --threads must be between 1 and 4,096, not {threads:,}")
    assert one_line(capsys, "generate", fmt[0], out, *fmt[1:], "--nodes", 100_000, "--ranks", 100_000) == (
        "perflake: --nodes x --ranks x --threads: 100,000 nodes x 100,000 ranks is 10,000,000,000 values per run; "
        "at most 20,000,000")
    assert one_line(capsys, "generate", fmt[0], out, *fmt[1:], "--nodes", 1000, "--ranks", 10_000,
                    "--threads", 4) == ("perflake: --nodes x --ranks x --threads: 1,000 nodes x 10,000 ranks x 4 "
                                        "threads is 40,000,000 values per run; at most 20,000,000")
    assert not out.exists()


def test_generate_caliper_has_no_threads_and_outputs_that_cannot_be_written(capsys, tmp_path):
    assert one_line(capsys, "generate", "caliper", tmp_path / "gen", "--threads", 2) == (
        "perflake: --threads is for tau and hpctoolkit (Caliper's json-split rows carry mpi.rank only)")
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    assert one_line(capsys, "generate", "tau", a_file, "--nodes", 5) == (
        f"perflake: {a_file}: cannot write: it exists and is not a directory")
    assert one_line(capsys, "generate", "tau", a_file / "sub", "--nodes", 5) == (
        f"perflake: {a_file / 'sub'}: cannot write: {str(a_file)!r} is not a directory")
    assert not (tmp_path / "gen").exists() and a_file.read_text() == "x"
    # the smallest sizes are fine, and a missing parent directory is made (OUT is a directory to make)
    code, out, err = perflake(capsys, "generate", "tau", tmp_path / "new" / "gen", "--nodes", 1, "--ranks", 1)
    assert (code, err) == (0, "") and sorted(p.name for p in (tmp_path / "new" / "gen").iterdir()) == ["run-000"]


def test_generator_api_names_the_size(tmp_path):
    with pytest.raises(ValueError, match=r"^nodes must be between 1 and 1,000,000, not 0$"):
        write_tau_runs(tmp_path, nodes=0, ranks=1)
    with pytest.raises(ValueError, match=r"^ranks must be between 1 and 1,000,000, not -1$"):
        write_hpctoolkit_runs(tmp_path, nodes=3, ranks=-1)
    with pytest.raises(ValueError, match=r"values per run; at most 20,000,000$"):
        write_tau_runs(tmp_path, nodes=10_000, ranks=10_000)
    assert write_tau_runs(tmp_path / "none", nodes=3, ranks=1, runs=0) == []  # the API takes 0 runs
    assert list(tmp_path.iterdir()) == []


# -- output paths ------------------------------------------------------------------------------------------------
def writers(lake, run: str) -> dict[str, tuple]:
    """Every command that writes a file, as (arguments before the output path, the option, the suffix)."""
    L = ("--lake", lake.root)
    return {
        "flamegraph svg": (("flamegraph", run, *L), "-o", ".svg"),
        "flamegraph folded": (("flamegraph", run, *L), "-o", ".folded"),
        "plot imbalance": (("plot", "imbalance", *L), "-o", ".png"),
        "plot scaling": (("plot", "scaling", *L), "-o", ".svg"),
        "plot heatmap": (("plot", "heatmap", run, *L), "-o", ".png"),
        "plot timeline": (("plot", "timeline", *L, "--min-size", 2), "-o", ".svg"),
        "model": (("model", *L, "--by", "nprocs"), "-o", ".png"),
        "export hatchet-json": (("export", run, *L), "-o", ".json"),
        "export thicket-json": (("export", run, *L, "--to", "thicket-json"), "-o", ".json"),
        "regress json": (("regress", *L, "--baseline", "true", "--candidate", "true"), "--json", ".json"),
        "regress markdown": (("regress", *L, "--baseline", "true", "--candidate", "true"), "--markdown", ".md"),
    }


def test_every_output_that_cannot_be_written_is_one_line_naming_it(capsys, tmp_path, lake, tau_run):
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    for name, (args, option, suffix) in writers(lake, tau_run).items():
        missing = tmp_path / "no-such-dir" / f"out{suffix}"
        assert one_line(capsys, *args, option, missing) == (
            f"perflake: {missing}: cannot write: no directory {str(missing.parent)!r}"), name
        under_file = a_file / f"out{suffix}"
        assert one_line(capsys, *args, option, under_file) == (
            f"perflake: {under_file}: cannot write: {str(a_file)!r} is not a directory"), name
        if name == "export hatchet-json":  # one run into a directory is <dir>/<run id>.json: tested below
            continue
        directory = tmp_path / f"a-dir{suffix}"
        directory.mkdir(exist_ok=True)
        assert one_line(capsys, *args, option, directory) == (
            f"perflake: {directory}: cannot write: it is a directory (give a file name)"), name
        assert list(directory.iterdir()) == []
    assert not (tmp_path / "no-such-dir").exists() and a_file.read_text() == "x"


def test_export_into_a_directory_still_works(capsys, tmp_path, lake, tau_run):
    code, out, err = perflake(capsys, "export", tau_run, "--lake", lake.root, "-o", tmp_path)
    assert code == 0 and (tmp_path / f"{tau_run}.json").is_file(), err


# -- changes and plot timeline: runs without the order key -------------------------------------------------------
LEFT_OUT = (f"perflake: warning: order by 'launch_time': {HPC_RUNS} of {TAU_RUNS + HPC_RUNS} selected runs have no "
            "value and are left out")


def test_runs_without_the_order_key_are_left_out_with_one_warning(capsys, tmp_path, lake):
    code, out, err = perflake(capsys, "changes", "--lake", lake.root, "--min-size", 2, "--format", "csv")
    assert code == 0 and err.splitlines() == [LEFT_OUT]
    code, out, err = perflake(capsys, "changes", "--lake", lake.root, "--min-size", 2)
    assert code == 0 and err.splitlines() == [LEFT_OUT]
    assert f"over {TAU_RUNS} runs ordered by launch_time" in out.splitlines()[-1]
    png = tmp_path / "timeline.png"
    code, out, err = perflake(capsys, "plot", "timeline", "--lake", lake.root, "--min-size", 2, "-o", png)
    assert (code, out, err.splitlines()) == (0, f"wrote {png}\n", [LEFT_OUT])
    assert png.read_bytes()[:4] == b"\x89PNG"
    for args in (("changes",), ("plot", "timeline", "-o", tmp_path / "none.svg")):  # none left: one line
        assert one_line(capsys, *args, "--lake", lake.root, "--min-size", 2, "--where", "format = 'hpctoolkit'") \
            == "perflake: order by 'launch_time': no selected run has a value"
    assert not (tmp_path / "none.svg").exists()


def test_the_api_leaves_them_out_too(lake):
    from perflake.analytics.changes import changes

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = changes(lake, min_size=2)
    assert [str(w.message) for w in caught] == [LEFT_OUT.removeprefix("perflake: warning: ")]
    assert issubclass(caught[0].category, MetadataKeyWarning)
    runs = lake.runs().set_index("run_id")
    assert len(result.runs) == TAU_RUNS and set(runs.loc[result.runs["run_id"], "format"]) == {"tau"}
    assert result.runs["launch_time"].is_monotonic_increasing and result.values.shape[1] == TAU_RUNS  # not a timing


# -- meta: keys that no run has ----------------------------------------------------------------------------------
TYPO = re.escape("(did you mean 'CPU Cores'?)")


def test_a_misspelt_metadata_key_is_exit_2_with_the_close_keys(capsys, tmp_path, lake):
    L = ("--lake", lake.root)
    no_key = "no selected run has metadata key 'CPU_Cores' (did you mean 'CPU Cores'?)"
    cases = {
        ("ensemble", *L, "--group-by", "format,meta:CPU_Cores"): f"perflake: {no_key}",
        ("scaling", *L, "--by", "meta:CPU_Cores"): f"perflake: {no_key}",
        ("model", *L, "--by", "meta:CPU_Cores"): f"perflake: {no_key}",
        ("plot", "scaling", *L, "--by", "meta:CPU_Cores", "-o", tmp_path / "s.svg"): f"perflake: {no_key}",
        ("changes", *L, "--order-by", "meta:CPU_Cores"): f"perflake: order by 'meta:CPU_Cores': {no_key}",
        ("plot", "timeline", *L, "--order-by", "meta:CPU_Cores", "-o", tmp_path / "t.svg"):
            f"perflake: order by 'meta:CPU_Cores': {no_key}",
        ("changes", *L, "--min-size", 2, "--show", "meta:CPU_Cores"): f"perflake: show 'meta:CPU_Cores': {no_key}",
    }
    for args, message in cases.items():
        err = one_line(capsys, *args, "--metric", "time (inc)") if args[0] in ("ensemble", "scaling") else \
            one_line(capsys, *args)
        assert err == message, args
    assert one_line(capsys, "scaling", *L, "--by", "nprocss", "--metric", "time (inc)") == (
        "perflake: 'nprocss': not a catalog column (did you mean 'nprocs'?) nor meta:KEY for a metadata key")
    assert list(tmp_path.iterdir()) == []
    # a key some runs have is no mistake: the others form the group where it is missing (one warning)
    code, out, err = perflake(capsys, "ensemble", *L, "--group-by", "meta:CPU Cores", "--metric", "time (inc)",
                              "--format", "csv")
    assert code == 0 and err.splitlines() == [
        f"perflake: warning: {HPC_RUNS} of {TAU_RUNS + HPC_RUNS} selected runs have no metadata key 'CPU Cores': "
        "they form the group where it is missing"]


def test_the_api_warns_by_default_and_raises_when_asked(lake):
    with pytest.warns(MetadataKeyWarning, match=f"no selected run has metadata key 'CPU_Cores' {TYPO}"):
        df = lake.ensemble(group_by="meta:CPU_Cores", metric="time (inc)", stats=("count",))
    assert len(df) and df["meta:CPU_Cores"].isna().all()  # one group: where the key is missing
    for call in (lambda: lake.ensemble(group_by="meta:CPU_Cores", unknown_keys="error"),
                 lambda: lake.scaling_table("time (inc)", "meta:CPU_Cores", unknown_keys="error"),
                 lambda: lake.model("meta:CPU_Cores", "time (inc)", unknown_keys="error"),
                 lambda: lake.changes(min_size=2, show=["meta:CPU_Cores"], unknown_keys="error")):
        with pytest.raises(UsageError, match=f"no selected run has metadata key 'CPU_Cores' {TYPO}$"), \
                warnings.catch_warnings():
            warnings.simplefilter("ignore", MetadataKeyWarning)  # changes: the runs without a launch time
            call()
    with pytest.raises(LakeError, match=f"^order by 'meta:CPU_Cores': no selected run has metadata key 'CPU_Cores' "
                                        f"{TYPO}$"):
        lake.changes("meta:CPU_Cores")
    with pytest.raises(UsageError, match="unknown_keys must be 'warn' or 'error'"):
        lake.ensemble(group_by="format", unknown_keys="ignore")


# -- numbers out of range, a scheduler that is no scheduler ------------------------------------------------------
def test_numeric_options_out_of_range_are_one_line(capsys, tmp_path, lake, tau_run):
    L = ("--lake", lake.root)
    cases = {
        ("flamegraph", tau_run, *L, "-o", tmp_path / "f.svg", "--width", 0): "--width must be a finite number at "
                                                                              "least 100 and at most 100000, not 0",
        ("flamegraph", tau_run, *L, "-o", tmp_path / "f.svg", "--width", "nan"): "--width must be a finite number "
                                                                                  "at least 100 and at most 100000, "
                                                                                  "not nan",
        ("plot", "imbalance", *L, "-o", tmp_path / "p.png", "--dpi", 0): "--dpi must be between 1 and 2,400, not 0",
        ("plot", "heatmap", tau_run, *L, "-o", tmp_path / "p.png", "--dpi", -10): "--dpi must be between 1 and "
                                                                                  "2,400, not -10",
        ("plot", "scaling", *L, "-o", tmp_path / "p.png", "--top", 0): "--top must be at least 1, not 0",
        ("ensemble", *L, "--ddof", -1): "--ddof must be at least 0, not -1",
        ("ensemble", *L, "--max-rows", -1): "--max-rows must be at least 0, not -1",
        ("scaling", *L, "--max-rows", -3): "--max-rows must be at least 0, not -3",
        ("compare", tau_run, tau_run, *L, "--top", -1): "--top must be at least 0, not -1",
        ("changes", *L, "--top", -1): "--top must be at least 0, not -1",
        ("changes", *L, "--penalty", -1): "--penalty must be a finite number at least 0, not -1",
        ("changes", *L, "--penalty", "nan"): "--penalty must be a finite number at least 0, not nan",
        ("changes", *L, "--min-share", 2): "--min-share must be a finite number at least 0 and at most 1, not 2",
        ("changes", *L, "--min-size", 0): "--min-size must be at least 1, not 0",
        ("model", *L, "--min-points", 0): "--min-points must be at least 3, not 0",
        ("model", *L, "--top", -1): "--top must be at least 0, not -1",
        ("regress", *L, "--baseline", "true", "--candidate", "true", "--top", -1): "--top must be at least 0, not -1",
    }
    for args, message in cases.items():
        assert one_line(capsys, *args) == f"perflake: {message}", args
    assert list(tmp_path.iterdir()) == []


def test_a_scheduler_that_is_neither_a_name_nor_an_address(capsys, lake, tau_run, tmp_path):
    message = ("perflake: --scheduler 'gpu': expected one of multiprocessing, processes, single-threaded, sync, "
               "synchronous, threading, threads or an address such as tcp://host:8786")
    for args in (("ensemble", "--lake", lake.root), ("compare", tau_run, tau_run, "--lake", lake.root),
                 ("plot", "imbalance", "--lake", lake.root, "-o", tmp_path / "i.png")):
        assert one_line(capsys, *args, "--scheduler", "gpu") == message
    code, out, err = perflake(capsys, "compare", tau_run, tau_run, "--lake", lake.root, "--scheduler", "sync",
                              "--format", "csv", "--top", 0)
    assert code == 0 and len(out.splitlines()) > 15  # --top 0: every call path
