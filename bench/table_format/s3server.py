"""A real S3-compatible server on the loopback interface for the measurements: moto's server (``moto[server]``),
bound to 127.0.0.1 on a free port, in a process of its own.  Nothing else is ever addressed."""

from __future__ import annotations

import socket
import subprocess
import sys
import time


class Server:
    def __init__(self, proc: subprocess.Popen, port: int):
        self.proc, self.port = proc, port
        self.endpoint = f"http://127.0.0.1:{port}"

    def options(self, bucket: str, prefix: str) -> dict:
        """Storage options for delta-rs (and, translated, pyiceberg/pyarrow); creates the bucket."""
        import boto3

        s3 = boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id="bench", aws_secret_access_key="bench",
                          region_name="us-east-1")
        try:
            s3.create_bucket(Bucket=bucket)
        except s3.exceptions.BucketAlreadyOwnedByYou:
            pass
        return {"AWS_ENDPOINT_URL": self.endpoint, "AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench",
                "AWS_REGION": "us-east-1", "AWS_ALLOW_HTTP": "true", "root": f"s3://{bucket}/{prefix}"}

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start() -> Server:
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return Server(proc, port)
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError("moto server did not start on 127.0.0.1")
