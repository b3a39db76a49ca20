"""moto in server mode: an S3 and Glue endpoint on 127.0.0.1, in its own process.

moto's server answers any access key; the keys the tests use are still passed by reference
(``env:TMS_SECRET_*``) so that the credential path TMS runs in production is the one tested.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tms.engines.children import kill_group
from tms.local.ports import free_port

MOTO_START_TIMEOUT_S = 60.0
MOTO_POLL_S = 0.2
MOTO_REGION = "us-east-1"
MOTO_ACCESS_KEY = "tms-test-access-key"
MOTO_SECRET_KEY = "tms-test-secret-key"


@dataclass(frozen=True)
class MotoServer:
    """A running moto server; ``endpoint`` is its http://127.0.0.1:PORT URL."""

    endpoint: str
    region: str = MOTO_REGION
    access_key: str = MOTO_ACCESS_KEY
    secret_key: str = MOTO_SECRET_KEY

    def boto3_client(self, service: str) -> object:
        import boto3

        return boto3.client(service, endpoint_url=self.endpoint, region_name=self.region,
                            aws_access_key_id=self.access_key,
                            aws_secret_access_key=self.secret_key)

    def create_bucket(self, name: str) -> str:
        """Create bucket ``name``; its ``s3://name`` URL."""
        self.boto3_client("s3").create_bucket(Bucket=name)  # type: ignore[attr-defined]
        return f"s3://{name}"

    def count_objects(self, bucket: str, prefix: str = "") -> int:
        pages = self.boto3_client("s3").get_paginator(  # type: ignore[attr-defined]
            "list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        return sum(len(p.get("Contents", [])) for p in pages)


def _wait_ready(endpoint: str, proc: subprocess.Popen[bytes], log_path: Path) -> None:
    deadline = time.monotonic() + MOTO_START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"moto server exited early; see {log_path}")
        try:
            with urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=2):
                return
        except OSError:
            time.sleep(MOTO_POLL_S)
    raise RuntimeError(f"moto server did not answer within {MOTO_START_TIMEOUT_S}s")


@contextmanager
def moto_server(root: Path) -> Iterator[MotoServer]:
    """Start ``python -m moto.server`` on a free loopback port; stop it on exit."""
    root.mkdir(parents=True, exist_ok=True)
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    log_path = root / "moto.log"
    env = {**os.environ, "AWS_DEFAULT_REGION": MOTO_REGION}
    with log_path.open("ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
            start_new_session=True)
    try:
        _wait_ready(endpoint, proc, log_path)
        yield MotoServer(endpoint)
    finally:
        if proc.poll() is None:
            kill_group(proc)
