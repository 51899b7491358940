"""Bad input (issue 7, item 2), by fuzzing: mutated copies of the real profiles in ../shared/data, of every
format, end in a clean perflake error or a correct read -- never another exception, a hang (10 s of CPU), a crash
or more than 1.5 GB of address space -- and `perflake ingest` over a folder of them shows no traceback and
leaves no partial run in the lake.

tests/fuzz.py builds and runs the cases (and reproduces one: ``python tests/fuzz.py one CASE``).
PERFLAKE_FUZZ_CASES (default 1000) and PERFLAKE_FUZZ_SEED (default 0) set the amount and the seed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

import fuzz
from conftest import _need, lake_files
from perflake import Lake
from perflake.ingest.normalize import normalize
from perflake.readers import REGISTRY, get_reader

N_CASES = int(os.environ.get("PERFLAKE_FUZZ_CASES", "1000"))
SEED = int(os.environ.get("PERFLAKE_FUZZ_SEED", "0"))
TABLES = ("runs", "nodes", "edges", "metrics")


def _need_sources() -> None:
    for datasets in fuzz.SOURCES.values():
        for ds in datasets:
            _need(fuzz.source(ds))


@pytest.fixture(scope="module")
def fuzz_run(tmp_path_factory):
    _need_sources()
    cases = fuzz.plan(N_CASES, SEED)
    t0 = time.monotonic()
    results = fuzz.run_cases(cases, tmp_path_factory.mktemp("fuzz"), workers=2)
    return cases, results, time.monotonic() - t0


def test_the_plan_covers_every_format_and_mutation():
    cases = fuzz.plan(N_CASES, SEED)
    assert len(cases) >= N_CASES and len({c.id for c in cases}) == len(cases)
    per_kind = Counter(c.kind for c in cases)
    fuzzed = set(REGISTRY) - set(fuzz.GENERATED_ONLY)
    assert set(per_kind) == fuzzed and set(fuzz.SOURCES) == fuzzed
    assert min(per_kind.values()) >= 0.05 * N_CASES, per_kind
    used = {c.mutation for c in cases}
    assert set(fuzz.BYTE_MUTATIONS) | set(fuzz.TEXT_MUTATIONS) | set(fuzz.BINARY_MUTATIONS) <= used
    for kind, structural in fuzz.STRUCTURAL.items():
        assert set(structural) <= {c.mutation for c in cases if c.kind == kind}
    assert {c.dataset for c in cases} == {ds for dss in fuzz.SOURCES.values() for ds in dss}
    assert fuzz.plan(N_CASES, SEED) == cases and fuzz.plan(N_CASES, SEED + 1) != cases


def test_a_case_id_reproduces_the_same_bytes(tmp_path):
    _need_sources()
    for case in fuzz.plan(60, SEED)[:60:7]:
        a, _ = fuzz.materialize(case, tmp_path / "a")
        b, _ = fuzz.materialize(fuzz.Case.parse(case.id), tmp_path / "b")
        assert lake_files(a.parent) == lake_files(b.parent), case.id
    one = fuzz.Case("tau", "tau-cpi-mpi", "flip", 1)
    x, _ = fuzz.materialize(one, tmp_path / "x")
    y, _ = fuzz.materialize(fuzz.Case("tau", "tau-cpi-mpi", "flip", 2), tmp_path / "y")
    assert lake_files(x) != lake_files(y)


def test_the_watchdog_reports_hangs_crashes_and_memory(tmp_path):
    """The harness itself: a hang is cut at the time limit, a crash and the memory limit are reported, and
    the cases after them still run (in a fresh worker)."""
    names = ("ok", "hang", "ok", "crash", "memory", "stall", "ok")
    cases = [fuzz.Case("selftest", name, "none", i) for i, name in enumerate(names)]
    results = fuzz.run_cases(cases, tmp_path, workers=1, timeout=2.0, stall=5.0)
    assert [r["outcome"] for r in results] == ["ok", "hang", "ok", "crash", "bug", "hang", "ok"]
    assert "CPU" in results[1]["detail"] and "within 5 s" in results[5]["detail"]
    assert "selftest:hang:none:1" in fuzz.summary(results)


def test_mutated_inputs_end_in_a_clean_error_or_a_correct_read(fuzz_run):
    cases, results, seconds = fuzz_run
    report = fuzz.summary(results) + f"\n{len(results)} cases in {seconds:.1f} s"
    print(report)
    assert len(results) == len(cases) >= N_CASES
    assert not fuzz.failures(results), "\n" + report + "\nreproduce one: .venv/bin/python tests/fuzz.py one CASE"
    # the mutations reach the readers' inner code: every format has reads that succeed and reads that fail
    outcomes = Counter((r["id"].split(":", 1)[0], r["outcome"]) for r in results)
    for kind in set(REGISTRY) - set(fuzz.GENERATED_ONLY):
        assert outcomes[kind, "ok"] >= 5 and outcomes[kind, "error"] >= 5, (kind, outcomes)


def test_error_messages_are_one_line_and_name_the_input(fuzz_run):
    _, results, _ = fuzz_run
    errors = [r["detail"] for r in results if r["outcome"] == "error"]
    assert errors and all(m.startswith("<case>/") and "\n" not in m and ": " in m for m in errors)
    assert all(len(m) < 500 for m in errors), max(errors, key=len)


# -- perflake ingest (the command) on a folder of mutated inputs ---------------------------------------------


def lake_data(root: Path) -> dict[str, bytes]:
    """The lake's catalog and tables (what a failed ingest must not change; its log of attempts may grow)."""
    return {k: v for k, v in lake_files(root).items() if k == "perflake.json" or k.split("/")[0] in TABLES}


def _ingest(paths, lake: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "perflake.cli.app", "ingest", *map(str, paths), "--lake", str(lake),
                           "--json", "--quiet"], capture_output=True, text=True, timeout=300)


def _row_counts(lake: Path, table: str) -> dict[str, int]:
    """run_id -> rows of ``table``'s latest Delta version (committed or not: an uncommitted batch's rows count)."""
    import deltalake

    rows = deltalake.DeltaTable(str(lake / table)).to_pyarrow_table(columns=["run_id"]).column("run_id").to_pylist()
    counts: dict[str, int] = {}
    for r in rows:
        counts[r] = counts.get(r, 0) + 1
    return counts


def test_ingest_of_mutated_inputs_is_clean_and_leaves_no_partial_run(tmp_path):
    _need_sources()
    cases = [c for c in fuzz.plan(400, SEED + 1) if c.mutation != "huge_line"][:48]
    cases.append(next(c for c in fuzz.plan(400, SEED + 1) if c.mutation == "huge_line" and c.kind == "tau"))
    folder = tmp_path / "inputs"
    fuzz.build_folder(cases, folder)
    for kind in ("tau", "caliper", "caliper_json"):  # unmutated inputs too: some runs must get in
        fuzz.copy_input(kind, fuzz.DATA / fuzz.SOURCES[kind][0], folder / f"clean-{kind}")
    lake = tmp_path / "lake"
    proc = _ingest([folder], lake)
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    stray = [line for line in proc.stderr.splitlines() if not line.startswith("perflake: ")]
    assert not stray, "\n".join(stray[:20])
    summary = json.loads(proc.stdout)
    assert len(summary["ingested"]) >= 3 and summary["failed"], summary
    assert all(f["reason"].startswith(f["path"]) or f["reason"].startswith(str(folder)) for f in summary["failed"])

    runs = Lake(lake).runs()
    assert sorted(runs["run_id"]) == sorted(summary["ingested"])  # exactly the runs reported
    nodes, metrics = _row_counts(lake, "nodes"), _row_counts(lake, "metrics")
    assert set(nodes) == set(metrics) == set(runs["run_id"]), "rows of a run the catalog does not know"
    for row in runs.itertuples():
        expected = normalize(get_reader(row.format).read(row.source))
        assert nodes[row.run_id] == row.n_nodes == expected.nodes.num_rows, row.source
        assert metrics[row.run_id] == expected.metrics.num_rows, row.source


def test_failed_inputs_leave_the_lake_unchanged(tmp_path):
    _need_sources()
    lake = tmp_path / "lake"
    clean = fuzz.copy_input("tau", fuzz.DATA / "tau-cpi-mpi", tmp_path / "clean")
    assert _ingest([clean], lake).returncode == 0
    before = lake_data(lake)
    bad = [c for c in fuzz.plan(300, SEED + 2) if c.kind != "hpctoolkit_v4" and c.mutation != "huge_line"]
    results = {}
    for case, path, _ in fuzz.build_folder(bad[:40], tmp_path / "bad"):
        try:
            get_reader(case.kind).read(str(path))
        except Exception:  # noqa: BLE001 - only inputs that fail to read are kept
            results[case.id] = path
    assert len(results) >= 10
    proc = _ingest(results.values(), lake)
    assert proc.returncode == 1 and not json.loads(proc.stdout)["ingested"]
    assert all(line.startswith("perflake: ") for line in proc.stderr.splitlines())
    assert lake_data(lake) == before
