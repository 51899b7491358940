"""Several writers at once (issue 17 items 1 and 3): 4 ``perflake ingest`` processes feed one lake -- on the
loopback S3 server (no lock: the runs table's compare-and-swap alone decides; 80 inputs) and on a local disk
(200 inputs) -- with the same inputs in shuffled chunks, while a reader in this process queries the lake.  Exactly
one run per input, each once with all its rows; the reader only ever sees whole runs, and its queries of
``ingest_log`` never fail, while the writers compact the tables (a low threshold) between their commits."""

from __future__ import annotations

import os
import random
import socket
import subprocess
import sys
import threading
import time

import pytest

from perflake import Lake
from perflake.generators.caliper import write_caliper_json_runs
from test_lake_s3 import bucket_on, need_s3_extra

WRITERS, INPUTS, CHUNK = 4, 200, 25
# On the loopback S3 server (moto: Python, each request ~10 ms) the same race with fewer inputs: 4 writers x 4
# ingests of 20 still commit concurrently and compact past 4 files while the reader reads
S3_INPUTS, S3_CHUNK = 80, 20


@pytest.fixture(scope="module")
def s3_process():
    """moto's S3 server in a process of its own on 127.0.0.1 (the threaded one of test_lake_s3.py shares this
    process's interpreter with the reader loop, and stalled requests under 4 writers)."""
    need_s3_extra()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(3000):  # until it listens (or dies); a hang guard, no speed asked of it
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            break
        except OSError:
            assert proc.poll() is None, "moto server did not start"
            time.sleep(0.2)
    else:
        pytest.fail("moto server did not listen")
    yield f"http://127.0.0.1:{port}"
    proc.terminate()
    proc.wait(timeout=300)


@pytest.fixture
def s3(s3_process, monkeypatch, tmp_path):
    """A bucket, and the environment (this process's and so the writers') pointing at the server only."""
    yield from bucket_on(s3_process, monkeypatch, tmp_path)


def _writer(lake: str, chunks: list[list[str]]) -> list[subprocess.CompletedProcess]:
    """One writer's ingests, one after the other.  PERFLAKE_COMPACT_FILES=4: an ingest compacts a table past 4
    small files, so that the tables (ingest_log too) are merged while other writers commit and the reader reads."""
    env = {**os.environ, "PERFLAKE_COMPACT_FILES": "4"}
    out = []
    for chunk in chunks:
        out.append(subprocess.run([sys.executable, "-m", "perflake.cli.app", "ingest", *chunk, "--lake", lake,
                                   "--quiet"], capture_output=True, text=True, timeout=600, env=env))
    return out


def _feed_and_watch(lake: str, files: list[str], chunk: int = CHUNK) -> dict:
    rng = random.Random(17)
    plans = []
    for _ in range(WRITERS):
        order = files[:]
        rng.shuffle(order)
        plans.append([order[i:i + chunk] for i in range(0, len(order), chunk)])
    results: list = [None] * WRITERS
    threads = [threading.Thread(target=lambda i=i: results.__setitem__(i, _writer(lake, plans[i])))
               for i in range(WRITERS)]
    for t in threads:
        t.start()
    seen = {"reads": 0, "log_reads": 0, "max_runs": 0, "errors": [], "rows": {}}
    while any(t.is_alive() for t in threads):
        try:
            reader = Lake(lake)
            got = reader.sql("select r.run_id, (select count(*) from nodes n where n.run_id = r.run_id) as n, "
                             "(select count(*) from metrics m where m.run_id = r.run_id) as m from runs r")
            assert got["run_id"].is_unique
            for run, n, m in got.itertuples(index=False):  # compared with the final lake's rows below
                seen["rows"].setdefault(run, set()).add((n, m))
            seen["max_runs"] = max(seen["max_runs"], len(got))
            seen["reads"] += 1
            reader.sql("select status, count(*) from ingest_log group by status")
            seen["log_reads"] += 1
        except Exception as exc:  # a reader must never fail nor see a partial run
            if "not a perflake lake" not in str(exc):  # (before the first writer created it)
                seen["errors"].append(repr(exc)[:500])
        time.sleep(0.05)
    for t in threads:
        t.join()
    for procs in results:
        for p in procs:
            assert p.returncode == 0 and p.stderr == "", (p.returncode, p.stderr[-2000:].splitlines()[-12:])
    return seen


def _check(lake_url: str, files: list[str], seen: dict) -> None:
    lake = Lake(lake_url)
    final = lake.sql("select r.run_id, (select count(*) from nodes n where n.run_id = r.run_id) as n, "
                     "(select count(*) from metrics m where m.run_id = r.run_id) as m from runs r")
    final = {run: (n, m) for run, n, m in final.itertuples(index=False)}
    for run, counts in seen["rows"].items():  # every run the reader saw, it saw whole
        assert counts == {final[run]}, (run, counts, final[run])
    runs = lake.sql("select run_id, count(*) as n from runs group by run_id")
    assert len(set(files)) == len(files) == len(runs) and (runs["n"] == 1).all()
    dup = lake.sql("select count(*) - count(distinct (run_id, node_id, rank, thread)) as d from metrics")["d"][0]
    assert dup == 0
    assert lake.sql("select count(*) as n from nodes")["n"][0] == lake.runs()["n_nodes"].sum() > len(files) * 10
    log = lake.sql("select status, count(*) as n, count(distinct run_id) as runs from ingest_log "
                   "group by status").set_index("status")
    assert log.loc["ingested", "runs"] == len(files) and "failed" not in log.index
    assert log.loc["ingested", "n"] == len(files)  # one writer ingested each input; the others skipped it
    replaced = {t: [h for h in lake.catalog().tables.table(t).history() if h.get("operation") == "WRITE"
                    and "overwrite" in str(h.get("operationParameters", {}).get("mode")).lower()]
                for t in ("metrics", "ingest_log", "runs")}
    assert all(replaced.values()), "a table was not compacted while the writers ran"  # (replace commits)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    out = tmp_path_factory.mktemp("inputs")
    return [str(p) for p in write_caliper_json_runs(out, nodes=20, ranks=2, runs=INPUTS, seed=11)]


def test_four_writers_on_s3_give_exactly_one_run_per_input(s3, inputs):
    url = s3.url("lake")
    inputs = inputs[:S3_INPUTS]
    seen = _feed_and_watch(url, inputs, S3_CHUNK)
    assert not seen["errors"], seen["errors"][:5]
    assert seen["reads"] > 0 and seen["log_reads"] == seen["reads"]
    _check(url, inputs, seen)


def test_four_writers_on_a_local_disk(tmp_path, inputs):
    lake = str(tmp_path / "lake")
    seen = _feed_and_watch(lake, inputs)
    assert not seen["errors"], seen["errors"][:5]
    assert seen["reads"] > 5 and seen["log_reads"] == seen["reads"]
    _check(lake, inputs, seen)
