"""A lake on S3 (issue 17 item 3, without the table-format change): a real S3-compatible server on loopback.

The fixture starts moto's server (``moto[server]``, the test extra) in a thread on 127.0.0.1 at a free port, makes a
bucket with boto3 and points botocore at it through the environment (``AWS_ENDPOINT_URL`` and test credentials):
perflake talks HTTP to it through s3fs exactly as to AWS; nothing inside perflake is mocked.  The ``perflake``
commands run as subprocesses.  Without the ``s3`` extra (s3fs) these tests skip and say so; ``make test`` installs
it.  The tests that need no server (s3fs missing, the local path importing no S3 code) always run.

Several writers at once on S3 are tested in tests/test_lake_concurrent_writers.py (the tables are Delta Lake tables:
a commit is a conditional PUT, which moto honours).
"""

from __future__ import annotations

import importlib.util
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import urllib.request
import uuid
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from perflake import Lake
from perflake.errors import LakeError, StorageError
from perflake.generators import write_tau_runs
from perflake.generators.caliper import write_caliper_json_runs

PERFLAKE = [sys.executable, "-m", "perflake.cli.app"]
NO_S3FS = "import sys; sys.modules['s3fs'] = None; "  # `import s3fs` raises ImportError, as when it is not installed
CLI_WITHOUT_S3FS = [sys.executable, "-c", NO_S3FS + "from perflake.cli.app import main; sys.exit(main())"]


def need_s3_extra() -> None:
    missing = [m for m in ("s3fs", "moto", "boto3") if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed: the S3 tests need the s3 extra and moto[server] "
                    "(pip install -e '.[test,s3]', as `make test` does)")


def cli(*args, env=None, prefix=PERFLAKE, timeout=300) -> subprocess.CompletedProcess:
    return subprocess.run([*prefix, *map(str, args)], capture_output=True, text=True, env=env, timeout=timeout)


def one_line(proc: subprocess.CompletedProcess) -> str:
    """The stderr of a run that could not run: exit 2, one line, no traceback, nothing on stdout."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert proc.stdout == ""
    return proc.stderr


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- the server and a bucket ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def s3_server():
    need_s3_extra()
    import logging

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one log line per request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


class Bucket:
    """A fresh bucket on the loopback server; ``url(path)`` is ``s3://<bucket>/<path>``."""

    def __init__(self, endpoint: str, name: str):
        import boto3

        self.endpoint, self.name = endpoint, name
        self.client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                                   aws_access_key_id="perflake-test", aws_secret_access_key="perflake-test-secret")
        self.client.create_bucket(Bucket=name)

    def url(self, path: str = "lake") -> str:
        return f"s3://{self.name}/{path}"

    def objects(self, prefix: str = "lake/") -> dict[str, bytes]:
        """Every object below ``prefix`` with its bytes."""
        pages = self.client.get_paginator("list_objects_v2").paginate(Bucket=self.name, Prefix=prefix)
        keys = [o["Key"] for page in pages for o in page.get("Contents", [])]
        return {k: self.client.get_object(Bucket=self.name, Key=k)["Body"].read() for k in sorted(keys)}

    def exists(self, name: str) -> bool:
        from botocore.exceptions import ClientError

        try:
            self.client.head_bucket(Bucket=name)
            return True
        except ClientError:
            return False


@pytest.fixture
def s3(s3_server, monkeypatch, tmp_path):
    """A bucket, and the environment (of this process and so of the subprocesses) pointing botocore at the server
    with test credentials -- and at nothing else: no profile, no credentials file, no instance metadata."""
    yield from bucket_on(s3_server, monkeypatch, tmp_path)


def isolate_aws_env(monkeypatch, tmp_path) -> None:
    """This process's environment (and so its subprocesses') gives botocore test credentials and nothing else: no
    profile, no credentials or config file, no instance metadata; s3fs's cached filesystems are dropped."""
    import s3fs

    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_S3", "AWS_REGION", "PERFLAKE_LAKE"):
        monkeypatch.delenv(name, raising=False)
    for name in [n for n in os.environ if n.startswith("FSSPEC_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "perflake-test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "perflake-test-secret")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    s3fs.S3FileSystem.clear_instance_cache()


def bucket_on(endpoint: str, monkeypatch, tmp_path):
    """(A generator for fixtures) a new bucket on ``endpoint``, with this process's environment pointing botocore
    at it with test credentials and at nothing else."""
    isolate_aws_env(monkeypatch, tmp_path)
    monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
    yield Bucket(endpoint, f"perflake-{uuid.uuid4().hex[:12]}")
    import s3fs

    s3fs.S3FileSystem.clear_instance_cache()


@pytest.fixture(scope="module")
def profiles(tmp_path_factory) -> Path:
    """3 TAU runs (directories) and 2 Caliper json-split runs, 4 ranks each."""
    out = tmp_path_factory.mktemp("profiles")
    write_tau_runs(out / "tau", nodes=25, ranks=4, runs=3, seed=3)
    write_caliper_json_runs(out / "caliper", nodes=25, ranks=4, runs=2, seed=5)
    return out


QUERIES = [
    "select * exclude (batch, ingested_at) from runs order by run_id",
    "select * from nodes order by all",
    "select * from edges order by all",
    "select * from metrics order by all",
    "select format, count(*) as runs, sum(ranks)::integer as ranks from runs group by format order by format",
]


def answers(lake: str, run_ids: list[str]) -> dict[str, str]:
    """What `perflake runs`, `sql`, `tree` and `imbalance` print for ``lake`` (each must succeed)."""
    out = {"runs": cli("runs", "--lake", lake, "--format", "csv")}
    for i, query in enumerate(QUERIES):
        out[f"sql {i}"] = cli("sql", query, "--lake", lake, "--format", "csv")
    for run in run_ids:
        out[f"tree {run}"] = cli("tree", run, "--lake", lake, "--no-color")
    out["imbalance"] = cli("imbalance", "--lake", lake, "--min-share", "0", "--format", "csv")
    for name, proc in out.items():
        assert proc.returncode == 0, (name, proc.stderr[-2000:])
    return {name: proc.stdout for name, proc in out.items()}


# -- the same lake on S3 as on a local disk ---------------------------------------------------------------------
def test_an_s3_lake_answers_as_the_same_local_lake(s3, profiles, tmp_path):
    local, remote = tmp_path / "lake", s3.url("team/lake")
    for lake in (local, remote):
        proc = cli("ingest", profiles, "--lake", lake, "--quiet")
        assert (proc.returncode, proc.stdout) == (0, "ingested 5 runs, skipped 0 already present, 0 failed\n"), \
            proc.stderr[-2000:]
    runs = Lake(local).runs()
    assert sorted(runs["format"]) == ["caliper_json", "caliper_json", "tau", "tau", "tau"] and set(runs["ranks"]) == {4}
    pairs = [runs.loc[runs["format"] == f, "run_id"].iloc[0] for f in ("tau", "caliper_json")]
    mine, theirs = answers(str(local), pairs), answers(remote, pairs)
    assert mine == theirs
    assert mine["sql 4"] == "format,runs,ranks\ncaliper_json,2,8\ntau,3,12\n"
    assert mine["imbalance"].count("\n") > 10 and "(no rows)" not in mine["imbalance"]
    # the Python API on the S3 lake: the same catalog, the same query results
    remote_lake = Lake(remote)
    assert remote_lake.runs().drop(columns=["batch", "ingested_at"]).equals(
        runs.drop(columns=["batch", "ingested_at"]))
    assert remote_lake.sql(QUERIES[3]).equals(Lake(local).sql(QUERIES[3]))
    # user SQL stays confined to the lake's prefix, as on a disk (DuckDB's allowed directories over s3fs)
    s3.client.put_object(Bucket=s3.name, Key="team/lake-other/x.csv", Body=b"secret\n42\n")
    outside = cli("sql", f"select * from read_csv('s3://{s3.name}/team/lake-other/x.csv')", "--lake", remote)
    assert one_line(outside).startswith("perflake: SQL error: Permission Error: Cannot access file")
    keys = s3.objects("team/lake/")
    tables = {k.split("/")[2] for k in keys}
    assert tables == {"perflake.json", "README.md", "runs", "nodes", "edges", "metrics", "rank_summary", "ingest_log"}
    assert not [k for k in keys if k.endswith(".tmp") or k.endswith(".commit.lock")]


def test_reingest_into_s3_changes_nothing(s3, profiles, tmp_path):
    lake = s3.url()
    assert cli("ingest", profiles, "--lake", lake, "--quiet").returncode == 0
    before = s3.objects()
    again = cli("ingest", profiles, "--lake", lake, "--quiet")
    assert (again.returncode, again.stderr) == (0, "")
    assert again.stdout.startswith("ingested 0 runs, skipped ")
    assert s3.objects() == before
    copy = tmp_path / "copy"  # the same bytes at another path: still the same runs
    shutil.copytree(profiles, copy)
    third = cli("ingest", copy, "--lake", lake, "--quiet", "--json")
    report = json.loads(third.stdout)
    assert third.returncode == 0 and report["counts"]["ingested"] == 0 and report["counts"]["skipped"] == 5
    after = s3.objects()
    assert {k: v for k, v in after.items() if "/ingest_log/" not in k} == {
        k: v for k, v in before.items() if "/ingest_log/" not in k}
    # the endpoint through fsspec's configuration instead of botocore's variable
    env = {k: v for k, v in os.environ.items() if k != "AWS_ENDPOINT_URL"}
    env["FSSPEC_S3_ENDPOINT_URL"] = s3.endpoint
    assert cli("sql", "select count(*) as n from runs", "--lake", lake, "--format", "csv", env=env).stdout == "n\n5\n"


def test_bad_input_leaves_the_s3_lake_as_it_was(s3, profiles, tmp_path):
    lake = s3.url()
    assert cli("ingest", profiles / "tau" / "run-000", "--lake", lake, "--quiet").returncode == 0
    before = s3.objects()
    listed = cli("runs", "--lake", lake, "--format", "csv").stdout
    bad = tmp_path / "bad"
    shutil.copytree(profiles / "tau" / "run-001", bad)
    victim = sorted(bad.glob("profile.*"))[1]
    victim.write_bytes(victim.read_bytes()[:2000])  # truncated mid-file
    proc = cli("ingest", bad, "--lake", lake, "--quiet")
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith(f"perflake: {victim}: truncated")
    after = s3.objects()
    new = sorted(set(after) - set(before))
    # everything that was there is byte for byte the same; the new objects are the ingest log's commit of the
    # failure's row (its Delta log entry and its Parquet file)
    assert {k: after[k] for k in before} == before
    assert all(k.startswith("lake/ingest_log/") for k in new) and len(new) == 2
    part = [k for k in new if k.endswith(".parquet")]
    assert len(part) == 1 and [k for k in new if k.startswith("lake/ingest_log/_delta_log/")]
    log = pq.read_table(io.BytesIO(after[part[0]])).to_pylist()
    assert [(r["source"], r["status"]) for r in log] == [(str(bad), "failed")]
    assert cli("runs", "--lake", lake, "--format", "csv").stdout == listed


# -- one line, exit 2, for each way an S3 lake cannot be reached ------------------------------------------------
def commands(lake: str, profiles: Path) -> dict[str, list]:
    return {"ingest": ["ingest", profiles, "--lake", lake], "runs": ["runs", "--lake", lake],
            "sql": ["sql", "select count(*) from runs", "--lake", lake]}


def test_a_missing_bucket_is_one_line_and_is_not_created(s3, profiles):
    missing = f"{s3.name}-missing"
    lake = f"s3://{missing}/lake"
    for args in commands(lake, profiles).values():
        assert one_line(cli(*args)) == (f"perflake: {lake}: no bucket '{missing}' at {s3.endpoint} "
                                        "(perflake does not create buckets: create it first)\n")
    assert not s3.exists(missing)


def test_missing_credentials_are_one_line(s3, profiles):
    env = {k: v for k, v in os.environ.items() if k not in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")}
    for args in commands(s3.url(), profiles).values():
        assert one_line(cli(*args, env=env)).startswith(f"perflake: {s3.url()}: no S3 credentials found (set ")
    partial = {**env, "AWS_ACCESS_KEY_ID": "perflake-test"}
    assert one_line(cli("runs", "--lake", s3.url(), env=partial)).startswith(
        f"perflake: {s3.url()}: incomplete S3 credentials (")
    assert s3.objects() == {}


def _moto_auth(endpoint: str, count: str) -> None:
    """moto's server checks credentials after ``count`` more requests ("inf": never, its default)."""
    request = urllib.request.Request(f"{endpoint}/moto-api/reset-auth", data=count.encode(), method="POST",
                                     headers={"Content-Type": "text/plain"})
    with urllib.request.urlopen(request, timeout=300) as response:
        assert json.load(response)["status"] == "ok"


def test_wrong_credentials_are_one_line(s3, profiles):
    import boto3

    iam = boto3.client("iam", endpoint_url=s3.endpoint, region_name="us-east-1",
                       aws_access_key_id="perflake-test", aws_secret_access_key="perflake-test-secret")
    user = f"u{uuid.uuid4().hex[:8]}"
    iam.create_user(UserName=user)
    key = iam.create_access_key(UserName=user)["AccessKey"]
    allowed = f"u{uuid.uuid4().hex[:8]}"
    iam.create_user(UserName=allowed)
    iam.put_user_policy(UserName=allowed, PolicyName="s3", PolicyDocument=json.dumps({
        "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}))
    good = iam.create_access_key(UserName=allowed)["AccessKey"]
    denied = (f"perflake: {s3.url()}: access to bucket '{s3.name}' at {s3.endpoint} denied: wrong credentials, or "
              "ones that may not list this bucket\n")
    _moto_auth(s3.endpoint, "0")
    try:
        wrong = [("AKIAPERFLAKEUNKNOWN0", "x" * 40), (key["AccessKeyId"], "not-" + key["SecretAccessKey"]),
                 (key["AccessKeyId"], key["SecretAccessKey"])]  # an unknown key, a wrong secret, no permission
        for key_id, secret in wrong:
            env = {**os.environ, "AWS_ACCESS_KEY_ID": key_id, "AWS_SECRET_ACCESS_KEY": secret}
            for args in commands(s3.url(), profiles).values():
                assert one_line(cli(*args, env=env)) == denied
        # the same server with credentials that may use the bucket: the probe passes (and there is no lake yet)
        env = {**os.environ, "AWS_ACCESS_KEY_ID": good["AccessKeyId"], "AWS_SECRET_ACCESS_KEY": good["SecretAccessKey"]}
        assert one_line(cli("runs", "--lake", s3.url(), env=env)) == (
            f"perflake: {s3.url()}: not a perflake lake (create one with: perflake ingest PATH --lake {s3.url()})\n")
    finally:
        _moto_auth(s3.endpoint, "inf")
    assert s3.objects() == {}


def test_an_unreachable_endpoint_is_one_line(s3, profiles):
    """One line per command (the time limits the client is configured with are tested by reading them back:
    tests/test_connect_timeouts.py; tests assert no wall-clock time)."""
    port = closed_port()
    env = {**os.environ, "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}"}
    for args in commands(s3.url(), profiles).values():
        proc = cli(*args, env=env)
        expected = f"perflake: {s3.url()}: cannot reach the S3 endpoint http://127.0.0.1:{port} ("
        assert one_line(proc).startswith(expected)


def test_an_endpoint_that_never_answers_is_one_line(s3):
    with socket.socket() as silent:  # accepts connections (the kernel's backlog) and never says a word
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        endpoint = f"http://127.0.0.1:{silent.getsockname()[1]}"
        proc = cli("runs", "--lake", s3.url(), env={**os.environ, "AWS_ENDPOINT_URL": endpoint})
    assert one_line(proc).startswith(f"perflake: {s3.url()}: cannot reach the S3 endpoint {endpoint} (")


def test_the_python_api_raises_storage_errors(s3, profiles, monkeypatch):
    missing = f"{s3.name}-missing"
    cases = {f"s3://{missing}/lake": f"no bucket '{missing}' at {s3.endpoint} "
                                     "(perflake does not create buckets: create it first)"}
    for url, problem in cases.items():
        for call in (lambda lake: lake.runs(), lambda lake: lake.ingest([profiles]), lambda lake: lake.sql("select 1")):
            with pytest.raises(StorageError) as caught:
                call(Lake(url))
            assert str(caught.value) == f"{url}: {problem}" and isinstance(caught.value, LakeError)
            assert caught.value.__cause__ is None and caught.value.__context__ is None  # no botocore inside
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{closed_port()}")
    with pytest.raises(StorageError, match=r"^s3://.*: cannot reach the S3 endpoint http://127\.0\.0\.1:"):
        Lake(s3.url()).ingest([profiles])
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3.endpoint)
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    with pytest.raises(StorageError, match=r"^s3://.*: no S3 credentials found"):
        Lake(s3.url()).sql("select count(*) from runs")
    assert not s3.exists(missing) and s3.objects() == {}
    # storage_options reach the probe and the lake alike: an endpoint given only there
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "perflake-test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "perflake-test-secret")
    monkeypatch.delenv("AWS_ENDPOINT_URL")
    port = closed_port()
    with pytest.raises(StorageError, match=rf"cannot reach the S3 endpoint http://127\.0\.0\.1:{port} "):
        Lake(s3.url(), storage_options={"endpoint_url": f"http://127.0.0.1:{port}"}).runs()
    lake = Lake(s3.url(), storage_options={"endpoint_url": s3.endpoint})
    assert len(lake.ingest([profiles / "tau" / "run-000"]).ingested) == 1 and len(lake.runs()) == 1


# -- without the s3 extra, and the local path -------------------------------------------------------------------
def test_without_s3fs_an_s3_lake_is_one_line(tmp_path):
    lake = "s3://some-bucket/lake"
    expected = f"perflake: {lake}: a lake on S3 needs s3fs, which is not installed: pip install 'perflake[s3]'\n"
    (tmp_path / "in").mkdir()
    for args in commands(lake, tmp_path / "in").values():
        assert one_line(cli(*args, prefix=CLI_WITHOUT_S3FS)) == expected
    api = (NO_S3FS + "from perflake import Lake\nfrom perflake.errors import StorageError\n"
           "try:\n    Lake(sys.argv[1]).runs()\nexcept StorageError as e:\n    print(e)")
    proc = subprocess.run([sys.executable, "-c", api, lake], capture_output=True, text=True, timeout=120)
    assert (proc.returncode, proc.stdout) == (0, expected[len("perflake: "):])


def test_an_unknown_protocol_is_a_storage_error(tmp_path):
    with pytest.raises(StorageError, match=r"^nosuchproto://x/lake: cannot open this URL \(.*nosuchproto"):
        Lake("nosuchproto://x/lake").runs()


OBJECT_STORE_MODULES = ("s3fs", "botocore", "boto3", "aiobotocore", "aiohttp")


def test_a_local_lake_imports_no_object_store_code(tmp_path):
    code = (
        "import sys\nimport perflake\n"
        f"first = sorted(m for m in sys.modules if m.split('.')[0] in {OBJECT_STORE_MODULES!r})\n"
        "from perflake.generators import write_tau_runs\n"
        "lake = perflake.Lake(sys.argv[1] + '/lake')\n"
        "lake.ingest(write_tau_runs(sys.argv[1] + '/in', nodes=10, ranks=2, runs=1))\n"
        "assert len(lake.sql('select * from metrics')) > 0 and len(lake.runs()) == 1\n"
        f"print(first, sorted(m for m in sys.modules if m.split('.')[0] in {OBJECT_STORE_MODULES!r}))\n")
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert (proc.returncode, proc.stdout) == (0, "[] []\n"), proc.stderr[-2000:]
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c", "import perflake.readers.tau"],
                          capture_output=True, text=True, timeout=120)
    imported = {line.rsplit("|", 1)[-1].strip().split(".")[0] for line in proc.stderr.splitlines() if "|" in line}
    assert proc.returncode == 0 and "perflake" in imported
    assert not imported & {"duckdb", "pandas", *OBJECT_STORE_MODULES}
