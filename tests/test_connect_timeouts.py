"""Addresses that do not answer (issue 23, item 5): a dask.distributed scheduler and an S3 endpoint each give up
within 5 s with one line naming the address.

No test here times anything: the limits are read back from what the code hands to the libraries (the dask
config, the botocore Config of the S3 client that sends the request) and added up; the peers are real sockets
(nothing listening, or a socket that accepts connections and never says a word); the subprocess timeouts are
only guards against a hang (before the fix, a silent scheduler kept ``distributed.Client`` waiting for ever).
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys

import pytest

from perflake.engine import parallel
from perflake.errors import StorageError, UsageError

BUDGET = 5.0  # seconds: the most a user waits on an address that does not answer
PERFLAKE = [sys.executable, "-m", "perflake.cli.app"]
HANG_GUARD = 300  # seconds: far above any limit here, only so that a regression fails instead of hanging


@pytest.fixture
def silent():
    """An address that accepts TCP connections (the kernel's backlog) and never answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        yield sock.getsockname()[1]


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def one_line(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert proc.stdout == ""
    return proc.stderr.strip()


# -- dask.distributed ------------------------------------------------------------------------------------------
def test_the_scheduler_connection_limits_fit_the_budget():
    import dask
    import distributed  # noqa: F401 -- loads distributed's config defaults
    from dask.utils import parse_timedelta

    assert 0 < parallel.CONNECT_SECONDS and parallel.CONNECT_SECONDS + parallel.HANDSHAKE_GRACE <= BUDGET
    with dask.config.set(parallel.connect_settings()):  # what connect_client connects under
        assert parse_timedelta(dask.config.get("distributed.comm.timeouts.connect")) == parallel.CONNECT_SECONDS
    assert parse_timedelta(dask.config.get("distributed.comm.timeouts.connect")) == 30  # dask's, untouched outside


def test_a_silent_or_absent_scheduler_is_one_line(silent):
    for address, reason in ((f"tcp://127.0.0.1:{silent}", "no answer"),
                            (f"tcp://127.0.0.1:{closed_port()}", "Timed out trying to connect to")):
        with pytest.raises(UsageError) as caught:
            parallel.connect_client(address)
        assert str(caught.value).startswith(f"scheduler {address}: cannot connect within 3 s ({reason}")
        assert "\n" not in str(caught.value) and caught.value.__cause__ is None


def test_a_real_scheduler_still_connects_and_computes():
    from distributed import LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0") as cluster:
        client = parallel.connect_client(cluster.scheduler_address)
        with client:
            assert client.status == "running"
        got = parallel.fan_out(pow, [{"base": b, "exp": 2} for b in range(5)], scheduler=cluster.scheduler_address)
    assert got == [0, 1, 4, 9, 16]


def test_the_commands_give_up_on_a_silent_scheduler_in_one_line(silent, tmp_path):
    from perflake import Lake
    from perflake.generators import write_tau_runs

    lake = Lake(tmp_path / "lake")
    ids = lake.ingest(write_tau_runs(tmp_path / "in", nodes=15, ranks=2, runs=2, seed=2)).ingested
    address = f"tcp://127.0.0.1:{silent}"
    for args in (("compare", *ids, "--metric", "time"), ("ensemble", "--metric", "time (inc)"),
                 ("imbalance",)):
        proc = subprocess.run([*PERFLAKE, *args, "--lake", str(lake.root), "--scheduler", address],
                              capture_output=True, text=True, timeout=HANG_GUARD)
        assert one_line(proc) == f"perflake: scheduler {address}: cannot connect within 3 s (no answer)", args


# -- S3 --------------------------------------------------------------------------------------------------------
@pytest.fixture
def s3_env(monkeypatch, tmp_path):
    """botocore pointed at nothing but the test's endpoint, with test credentials."""
    if importlib.util.find_spec("s3fs") is None:
        pytest.skip("s3fs not installed (pip install -e '.[s3]')")
    from test_lake_s3 import isolate_aws_env

    isolate_aws_env(monkeypatch, tmp_path)
    yield monkeypatch
    import s3fs

    s3fs.S3FileSystem.clear_instance_cache()


def test_the_s3_probe_limits_fit_the_budget(s3_env, silent):
    import fsspec

    from perflake.catalogs import remote

    endpoint = f"http://127.0.0.1:{silent}"
    fs, _ = fsspec.core.url_to_fs("s3://bucket/lake", endpoint_url=endpoint)
    quick = remote.probe_filesystem(fs)
    quick.connect()  # the botocore client the probe sends its request with (no request is sent here)
    config = quick.s3.meta.config
    assert quick.s3.meta.endpoint_url == endpoint
    attempts = config.retries["total_max_attempts"] * quick.retries  # botocore's attempts x s3fs' loop
    worst = (config.connect_timeout + config.read_timeout) * attempts
    assert (config.connect_timeout, config.read_timeout, attempts) == (2, 2, 1)
    assert worst == remote.PROBE_SECONDS <= BUDGET
    # the lake's own filesystem keeps s3fs' defaults for the real work
    assert "connect_timeout" not in fs.config_kwargs and fs.retries == 5


def test_an_s3_endpoint_that_never_answers_is_one_line(s3_env, silent):
    from perflake import Lake

    endpoint = f"http://127.0.0.1:{silent}"
    with pytest.raises(StorageError) as caught:
        Lake("s3://bucket/lake", storage_options={"endpoint_url": endpoint}).runs()
    assert str(caught.value).startswith(f"s3://bucket/lake: cannot reach the S3 endpoint {endpoint} (")
    assert "\n" not in str(caught.value)
    proc = subprocess.run([*PERFLAKE, "runs", "--lake", "s3://bucket/lake"], capture_output=True, text=True,
                          env={**os.environ, "AWS_ENDPOINT_URL": endpoint}, timeout=HANG_GUARD)
    assert one_line(proc).startswith(f"perflake: s3://bucket/lake: cannot reach the S3 endpoint {endpoint} (")
