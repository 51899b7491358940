"""perflake under an address-space limit (issue 23, item 4): ``ulimit -v 2000000``, a common batch-system limit.

Every command runs as a real ``perflake`` process whose RLIMIT_AS is set before it starts (preexec_fn, as
``ulimit -v`` does).  Before perflake.engine.resources, ingesting even a 3.6 KB file aborted (exit 134 after
~1,800 lines of allocator errors) or hung.  Now: ingest (local threads, processes, synchronous), runs, tree and
sql work and write or show exactly what an unlimited process does; a limit below what perflake needs gives one
line on stderr and exit 2.  The subprocess timeouts only guard against a hang; no duration is asserted.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys

import pytest

from perflake.engine import resources
from perflake.generators import write_caliper_json_runs, write_tau_runs

PERFLAKE = [sys.executable, "-m", "perflake.cli.app"]
BATCH_LIMIT_KIB = 2_000_000  # `ulimit -v 2000000`
TOO_SMALL_KIB = 500_000  # Python starts (about 15 MB), perflake's libraries do not fit (measured: 650 MB fails)
HANG_GUARD = 300  # seconds: a hung process fails the test instead of blocking the suite
SHARED = ("json", "tau-cpi-mpi", "rajaperf-quartz", "caliper-cpi-json")
RUNS_SQL = "select run_id, format, ranks, threads, n_nodes, n_files, input_bytes from runs order by run_id"
METRICS_SQL = ("select run_id, count(*) as n, count(distinct node_id) as nodes, min(rank) as r0, max(rank) as r1 "
               "from metrics group by run_id order by run_id")
# what perflake sets under a limit, and its overrides: kept out of the children's environment
_SETTINGS = ("MALLOC_ARENA_MAX", "ARROW_DEFAULT_MEMORY_POOL", "MIMALLOC_ARENA_RESERVE", "JE_ARROW_MALLOC_CONF",
             "_RJEM_MALLOC_CONF", "TOKIO_WORKER_THREADS", "OMP_NUM_THREADS", "ARROW_IO_THREADS",
             "OPENBLAS_NUM_THREADS", "PERFLAKE_THREADS", "PERFLAKE_DUCKDB_MEMORY")


def _limited(kib: int | None):
    if kib is None:
        return None

    def set_limit():
        resource.setrlimit(resource.RLIMIT_AS, (kib * 1024, kib * 1024))

    return set_limit


def perflake(*args, limit_kib: int | None = BATCH_LIMIT_KIB, env: dict | None = None):
    """``perflake ARGS`` in a process of its own with RLIMIT_AS = ``limit_kib`` KiB (None: unlimited)."""
    environ = {k: v for k, v in os.environ.items() if k not in _SETTINGS}  # this process's settings stay out
    return subprocess.run([*PERFLAKE, *map(str, args)], capture_output=True, text=True, timeout=HANG_GUARD,
                          preexec_fn=_limited(limit_kib), env={**environ, **(env or {})})


def sql(lake, query, *, limit_kib=None):
    done = perflake("sql", "--lake", lake, "--format", "json", query, limit_kib=limit_kib)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """Real shared datasets and generated ones (several ranks and threads, several runs)."""
    from conftest import DATA, _need

    shared = [_need(DATA / name) for name in SHARED]  # missing: skipped, or failed under CI
    root = tmp_path_factory.mktemp("inputs")
    write_tau_runs(root / "tau", nodes=150, ranks=8, threads=2, runs=2, seed=5)
    write_caliper_json_runs(root / "cali", nodes=80, ranks=6, runs=2, seed=6)
    return shared + [root / "tau", root / "cali"]


@pytest.fixture(scope="module")
def lakes(inputs, tmp_path_factory):
    """The same inputs ingested without a limit and under ``ulimit -v 2000000``."""
    root = tmp_path_factory.mktemp("lakes")
    free = perflake("ingest", *inputs, "--lake", root / "free", "--quiet", limit_kib=None)
    assert free.returncode == 0, free.stderr
    bounded = perflake("ingest", *inputs, "--lake", root / "bounded", "--quiet")
    return root / "free", root / "bounded", bounded


def test_ingest_under_the_batch_limit_writes_what_an_unlimited_ingest_writes(lakes):
    free, bounded, done = lakes
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stderr == ""
    assert done.stdout.strip() == "ingested 12 runs, skipped 0 already present, 0 failed"
    runs = sql(bounded, RUNS_SQL)
    assert runs == sql(free, RUNS_SQL)
    assert len(runs) == 12
    literal = [r for r in runs if r["format"] == "hatchet_json"]
    assert [(r["n_nodes"], r["ranks"]) for r in literal] == [(24, 1)]  # the 3.6 KB file of the issue
    metrics = sql(bounded, METRICS_SQL)
    assert metrics == sql(free, METRICS_SQL)
    by_run = {r["run_id"]: r for r in runs}
    generated = [(m, by_run[m["run_id"]]) for m in metrics if by_run[m["run_id"]]["ranks"] == 8]
    assert len(generated) == 2  # the generated TAU runs: 8 ranks x 2 threads, every node in every location
    for m, r in generated:
        assert (m["r0"], m["r1"], r["threads"]) == (0, 7, 2)
        assert m["nodes"] == r["n_nodes"] and m["n"] == r["n_nodes"] * 8 * 2


def test_runs_tree_and_sql_under_the_limit_show_what_unlimited_ones_show(lakes):
    free, bounded, _ = lakes
    listed = perflake("runs", "--lake", bounded, "--format", "csv")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout == perflake("runs", "--lake", bounded, "--format", "csv", limit_kib=None).stdout
    tau = sql(free, "select run_id from runs where source like '%tau-cpi-mpi'")[0]["run_id"]
    tree = perflake("tree", tau, "--lake", bounded)
    assert tree.returncode == 0, tree.stderr
    assert tree.stdout == perflake("tree", tau, "--lake", free, limit_kib=None).stdout
    assert "51781.000 .TAU application\n" in tree.stdout and "17983.000 MPI_Init()" in tree.stdout
    query = "select count(*) as n, sum(n_nodes) as nodes from runs"
    assert sql(bounded, query, limit_kib=BATCH_LIMIT_KIB) == sql(free, query) == [{"n": 12, "nodes": sum(
        r["n_nodes"] for r in sql(free, RUNS_SQL))}]


@pytest.mark.parametrize("scheduler", ["processes", "synchronous"])
def test_other_schedulers_under_the_limit(inputs, lakes, tmp_path, scheduler):
    free, _, _ = lakes
    done = perflake("ingest", *inputs, "--lake", tmp_path / "lake", "--quiet", "--scheduler", scheduler)
    assert done.returncode == 0, done.stderr[-2000:]
    assert sql(tmp_path / "lake", RUNS_SQL) == sql(free, RUNS_SQL)
    assert sql(tmp_path / "lake", METRICS_SQL) == sql(free, METRICS_SQL)


@pytest.mark.parametrize("command", [["ingest", "{data}/json", "--lake", "{tmp}/lake"], ["runs", "--lake", "{tmp}/l"],
                                     ["--version"]])
def test_a_limit_too_small_is_one_line_and_exit_2(command, tmp_path):
    from conftest import DATA

    done = perflake(*(a.format(data=DATA, tmp=tmp_path) for a in command), limit_kib=TOO_SMALL_KIB)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        f"perflake: the address-space limit (ulimit -v {TOO_SMALL_KIB} KiB) is below the "
        f"{resources.MIN_ADDRESS_SPACE_KIB} KiB perflake needs; raise it (ulimit -v "
        f"{resources.MIN_ADDRESS_SPACE_KIB} or more, or ulimit -v unlimited)"]
    assert not (tmp_path / "lake").exists()


def test_the_minimum_itself_is_enough_for_a_small_input(tmp_path):
    from conftest import DATA, _need

    done = perflake("ingest", _need(DATA / "json"), "--lake", tmp_path / "lake", "--quiet",
                    limit_kib=resources.MIN_ADDRESS_SPACE_KIB)
    assert done.returncode == 0, done.stderr[-2000:]
    assert sql(tmp_path / "lake", "select n_nodes from runs") == [{"n_nodes": 24}]


SETTINGS_SCRIPT = """
import json, duckdb, pyarrow as pa
from perflake.engine import duck, resources
got = resources.configure()
q = "select current_setting('threads'), current_setting('async_threads'), current_setting('memory_limit')"
print(json.dumps({"limits": [got.address_space, got.threads, got.duckdb_memory],
                  "shared": duck.connection().execute(q).fetchone(), "own": duck.offline().execute(q).fetchone(),
                  "plain": duckdb.connect().execute(q).fetchone(),
                  "pool": pa.default_memory_pool().backend_name, "cpu": pa.cpu_count(), "io": pa.io_thread_count()}))
"""


def settings(limit_kib, env=None):
    environ = {k: v for k, v in os.environ.items() if k not in _SETTINGS}
    done = subprocess.run([sys.executable, "-c", SETTINGS_SCRIPT], capture_output=True, text=True,
                          timeout=HANG_GUARD, preexec_fn=_limited(limit_kib), env={**environ, **(env or {})})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_settings_under_a_limit_and_unlimited():
    cpus = resources.cores()
    got = settings(BATCH_LIMIT_KIB)
    limit = BATCH_LIMIT_KIB * 1024
    expect = resources.plan(limit, cpus=cpus, stack=resources.thread_stack())
    assert got["limits"] == [limit, expect.threads, expect.duckdb_memory]
    n, mib = expect.threads, expect.duckdb_memory // 2**20  # under 1 GiB for this limit: DuckDB shows MiB
    assert got["shared"] == [n, n, f"{mib}.0 MiB"]
    assert got["own"] == [n, n, f"{mib // 2}.0 MiB"]  # a database of its own: half (duck.OWN_SHARE)
    assert got["plain"] != got["shared"]
    assert (got["pool"], got["cpu"], got["io"]) == ("system", n, n)

    free = settings(None)  # unlimited: nothing changes
    assert free["limits"] == [None, None, None]
    assert free["shared"] == free["own"] == free["plain"]
    assert free["plain"][1] == 8  # DuckDB's async threads
    assert free["pool"] in ("mimalloc", "jemalloc")
    assert (free["cpu"], free["io"]) == (os.cpu_count(), 8)


def test_overrides_from_the_environment():
    got = settings(BATCH_LIMIT_KIB, env={"PERFLAKE_THREADS": "1", "PERFLAKE_DUCKDB_MEMORY": "300MiB",
                                         "ARROW_DEFAULT_MEMORY_POOL": "jemalloc"})
    assert got["limits"] == [BATCH_LIMIT_KIB * 1024, 1, 300 * 2**20]
    assert got["shared"] == [1, 1, "300.0 MiB"]
    assert got["own"] == [1, 1, "150.0 MiB"]
    assert (got["pool"], got["cpu"], got["io"]) == ("jemalloc", 1, 1)


def test_plan_sizes_threads_and_duckdb_memory_from_the_limit():
    mib = 2**20
    assert resources.plan(None, cpus=128, stack=8 * mib) == resources.Limits()
    # 2,000,000 KiB: (2,048,000,000 - 700 MiB) = 1,313,996,800 spare; a quarter in stacks of 5 pools x 8 MiB
    got = resources.plan(2_048_000_000, cpus=128, stack=8 * mib)
    assert (got.threads, got.duckdb_memory) == (7, 525_598_720)
    assert resources.plan(2_048_000_000, cpus=2, stack=8 * mib).threads == 2  # never more than the cores
    assert resources.plan(2_048_000_000, cpus=128, stack=2 * mib).threads == 31
    small = resources.plan(resources.MIN_ADDRESS_SPACE_KIB * 1024, cpus=128, stack=8 * mib)
    assert (small.threads, small.duckdb_memory) == (1, 115_998_720)  # at least one thread, DuckDB 40 % of the rest
    assert resources.plan(600 * mib, cpus=4, stack=8 * mib).duckdb_memory == resources.MIN_DUCKDB_MEMORY


def test_bad_overrides_are_one_line_errors(tmp_path):
    done = perflake("runs", "--lake", tmp_path / "l", env={"PERFLAKE_THREADS": "many"})
    assert done.returncode == 2
    assert done.stderr.splitlines() == ["perflake: PERFLAKE_THREADS='many': expected a whole number of threads >= 1"]
    done = perflake("runs", "--lake", tmp_path / "l", env={"PERFLAKE_DUCKDB_MEMORY": "12"})
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "perflake: PERFLAKE_DUCKDB_MEMORY='12': expected a size of at least 64MiB, such as 500MB or 1GiB"]
