"""TAU reader features on small hand-written profiles (formats.md section 5)."""

from __future__ import annotations

from pathlib import Path

import pytest

import perflake
from perflake.errors import ReaderError
from perflake.readers.tau import Reader, parse_frame

META = ('# Name Calls Subrs Excl Incl ProfileCalls # <metadata><attribute><name>Metric Name</name>'
        '<value>{metric}</value></attribute><attribute><name>Executable</name><value>/bin/app</value></attribute>'
        '<attribute><name>CPU Cores</name><value>8</value></attribute></metadata>')


def write_profile(path: Path, entries: list[str], metric: str = "TIME") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"{len(entries)} templated_functions_MULTI_{metric}", META.format(metric=metric), *entries,
             "0 aggregates", ""]
    path.write_text("\n".join(lines))


CALLPATH = [
    '".TAU application" 1 2 10 100 0 GROUP="TAU_DEFAULT" ',
    '"solve() C [{solver.c} {10,1}-{40,1}]" 1 0 60 60 0 GROUP="TAU_USER" ',
    '".TAU application => solve() C [{solver.c} {10,1}-{40,1}]" 1 0 60 60 0 GROUP="TAU_CALLPATH|TAU_USER" ',
    '"MPI_Send()  " 1 0 30.5 30.5 0 GROUP="MPI" ',
    '".TAU application => MPI_Send()  " 1 0 30.5 30.5 0 GROUP="TAU_CALLPATH|MPI" ',
]


def test_parse_frame_forms():
    assert parse_frame("int main(int, char **) C [{cpi.c} {19,1}-{60,1}]") == (
        "int main(int, char **)", "cpi.c", 19, 60, None)
    assert parse_frame("loop [{a.f90} {7,3}]") == ("loop", "a.f90", 7, None, None)  # {l,c}: column is not a line (B.24)
    assert parse_frame("f [{x.c} {12}]") == ("f", "x.c", 12, None, None)
    assert parse_frame("MPI_Init()  ") == ("MPI_Init()", None, None, None, None)
    assert parse_frame("[UNWIND] /lib/libm.so [@] sin [{s_sin.c} {30}]") == (
        "[UNWIND] sin", "s_sin.c", 30, None, "/lib/libm.so")


def test_callpath_profile_with_annotations_and_floats(tmp_path):
    write_profile(tmp_path / "p" / "profile.0.0.0", CALLPATH)
    write_profile(tmp_path / "p" / "profile.1.0.0", CALLPATH)
    gf = perflake.read_tau(tmp_path / "p")
    df = gf.dataframe.reset_index()
    assert len(gf.graph) == 3 and len(df) == 6
    solve = df[df["name"] == "solve()"].iloc[0]
    assert (solve["file"], solve["line"], solve["end_line"]) == ("solver.c", 10, 40)
    assert df[df["name"] == "MPI_Send()"]["time"].tolist() == [30.5, 30.5]
    root = df[df["name"] == ".TAU application"].iloc[0]
    assert root["time (inc)"] == 100 and root["Subrs"] == 2


def test_flat_only_profile_yields_functions_under_the_root(tmp_path):
    flat = [CALLPATH[0], CALLPATH[1], CALLPATH[3]]
    write_profile(tmp_path / "p" / "profile.0.0.0", flat)
    gf = perflake.read_tau(tmp_path / "p")
    assert len(gf.graph) == 3  # Hatchet returns a lone root here (formats.md B.23)
    root = gf.graph.roots[0]
    assert root.frame["name"] == ".TAU application"
    assert sorted(c.frame["name"] for c in root.children) == ["MPI_Send()", "solve()"]


def test_multi_metric_folders(tmp_path):
    for metric, scale in (("TIME", 1), ("PAPI_TOT_CYC", 1000)):
        entries = [e.replace(" 10 100 ", f" {10 * scale} {100 * scale} ") for e in CALLPATH]
        write_profile(tmp_path / "p" / f"MULTI__{metric}" / "profile.0.0.0", entries, metric)
    gf = perflake.read_tau(tmp_path / "p")
    assert gf.exc_metrics == ["time", "PAPI_TOT_CYC"]
    assert gf.inc_metrics == ["time (inc)", "PAPI_TOT_CYC (inc)"]
    root = gf.dataframe[gf.dataframe["name"] == ".TAU application"].iloc[0]
    assert root["PAPI_TOT_CYC (inc)"] == 100_000 and root["time (inc)"] == 100


def test_threads_and_contexts(tmp_path):
    for n, c, t in ((0, 0, 0), (0, 0, 1), (1, 0, 0), (1, 0, 1)):
        write_profile(tmp_path / "p" / f"profile.{n}.{c}.{t}", CALLPATH)
    gf = perflake.read_tau(tmp_path / "p")
    assert list(gf.dataframe.index.names) == ["node", "rank", "thread"] and len(gf.dataframe) == 12


def test_truncated_file_names_the_file(tmp_path):
    write_profile(tmp_path / "p" / "profile.0.0.0", CALLPATH)
    bad = tmp_path / "p" / "profile.1.0.0"
    bad.write_text("5 templated_functions_MULTI_TIME\n" + META.format(metric="TIME") + "\n" + CALLPATH[0] + "\n")
    with pytest.raises(ReaderError, match=r"profile\.1\.0\.0: truncated: line 1 announces 5 function entries, found 1"):
        perflake.read_tau(tmp_path / "p")


def test_non_number_value_names_the_file(tmp_path):
    write_profile(tmp_path / "p" / "profile.0.0.0", [CALLPATH[0], CALLPATH[2].replace(" 60 60 ", " 60 sixty ")])
    with pytest.raises(ReaderError, match=r"profile\.0\.0\.0: Incl value 'sixty' is not a number"):
        perflake.read_tau(tmp_path / "p")


def test_not_a_profile(tmp_path):
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "profile.0.0.0").write_text("hello\n")
    assert not Reader.sniff(str(tmp_path / "p"))
    with pytest.raises(ReaderError, match="not a TAU profile"):
        Reader().read(str(tmp_path / "p"))


def test_metadata_is_typed(shared_data):
    rows = Reader().read(str(shared_data("tau-cpi-mpi")))
    assert rows.metadata["CPU Cores"] == 16 and rows.metadata["CPU MHz"] == 2301.0
    assert rows.metadata["Starting Timestamp"] == 1614611761048525
    assert rows.metadata["Hostname"] == "nid01045"
