"""grpcurl, the admin's tool, against a real server: list, describe, and calls with a token."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tms.api.auth import Authenticator

pytestmark = pytest.mark.integration
GRPCURL = shutil.which("grpcurl", path=str(Path(sys.executable).parent)) or "grpcurl"
SERVICE = "tms.v1.TableManagementService"


def grpcurl(address: str, *words: str, data: object = None,
            token: str | None = None) -> subprocess.CompletedProcess:
    """``grpcurl -plaintext [-H auth] [-d json] ADDRESS WORDS...``"""
    flags = ["-plaintext"]
    if token:
        flags += ["-H", f"authorization: Bearer {token}"]
    if data is not None:
        flags += ["-d", json.dumps(data)]
    return subprocess.run([GRPCURL, *flags, address, *words], capture_output=True, text=True,
                          timeout=60)


def test_grpcurl_admin_session(make_api) -> None:
    api = make_api(auth=Authenticator.from_config(
        {"tokens": [{"name": "ops", "token": "s3cret", "roles": ["admin"]}]}))
    listed = grpcurl(api.address, "list")
    assert listed.returncode == 0, listed.stderr
    assert SERVICE in listed.stdout.split() and "grpc.health.v1.Health" in listed.stdout
    described = grpcurl(api.address, "describe", SERVICE)
    assert "rpc NotifyCommits" in described.stdout and "rpc ExplainTable" in described.stdout

    api.catalog.table("sales", "orders")
    body = {"table_id": "sales.orders", "table": {
        "format": "iceberg", "catalog": "cat", "namespace": "sales", "table_name": "orders"}}
    reg = grpcurl(api.address, f"{SERVICE}/RegisterTable", data=body, token="s3cret")
    assert reg.returncode == 0, reg.stderr
    assert json.loads(reg.stdout)["name"] == "tables/sales.orders"

    denied = grpcurl(api.address, f"{SERVICE}/RegisterTable", data=body)
    assert denied.returncode != 0 and "Unauthenticated" in denied.stderr

    trig = grpcurl(api.address, f"{SERVICE}/TriggerOperation", token="s3cret", data={
        "parent": "tables/sales.orders", "action": "compaction", "reason": "by hand"})
    assert json.loads(trig.stdout)["state"] == "QUEUED"
    ops = grpcurl(api.address, f"{SERVICE}/ListOperations", data={"parent": "tables/-"},
                  token="s3cret")
    assert [o["trigger"] for o in json.loads(ops.stdout)["operations"]] == ["manual"]
