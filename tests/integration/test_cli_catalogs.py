"""`tms catalogs` against a real API server and PostgreSQL: create, get, list, update with
read-modify-write of maps and lists, delete with its confirmation, both output forms and the
exit codes scripts rely on."""

from __future__ import annotations

import io
import sys

import pytest

from tests.integration.test_cli import (  # noqa: F401 (fixtures)
    Cli,
    _clean_env,
    _quiet_server_logs,
    row,
)
from tms.domain import TableSpec

pytestmark = pytest.mark.integration

PG = "postgresql+psycopg://tms@db:5432/lake"
CREATE = ["catalogs", "create", "lake", "--type", "sql", "--property", f"uri={PG}",
          "--property", "warehouse=s3://lake/wh", "--secret",
          "jdbc.password=env:TMS_SECRET_LAKE_PG", "--storage-option", "s3.region=eu-west-1",
          "--allowed-location", "s3://lake/wh", "--allowed-location", "s3://lake/more",
          "--allowed-owner", "team-a", "--allowed-token", "ingest", "--default-policy",
          "execution.max-attempts=2"]


@pytest.fixture
def cli(api, capsys) -> Cli:
    return Cli(capsys, api.address)


def test_create_get_list_delete(cli: Cli, api, monkeypatch: pytest.MonkeyPatch) -> None:
    assert cli.ok("catalogs", "delete", api.catalog.catalog_id, "--yes")  # the fixture's own
    out = cli.ok(*CREATE, "--discover", "--include", "sales.*", "--exclude", "sales.tmp_*",
                 "--discovery-queue", "disc", "--discovery-owner", "team-a",
                 "--discovery-priority", "7", "--discovery-interval-s", "60")
    assert out.strip() == "created catalogs/lake (sql, 2 allowed location(s), discovery on)"
    out = cli.ok("catalogs", "get", "lake")
    assert row(out, "name:")[1] == "catalogs/lake" and row(out, "type:")[1] == "sql"
    assert row(out, "secrets:")[1] == "jdbc.password=env:TMS_SECRET_LAKE_PG"
    assert row(out, "allowed_locations:")[1] == "s3://lake/wh, s3://lake/more"
    assert row(out, "discovery:")[1].startswith("on, every 60s, include sales.*, exclude "
                                                "sales.tmp_*, queue disc, owner team-a")
    assert row(out, "last_discovery:")[1] == "-" and row(out, "table_count:")[1] == "0"
    doc = cli.json("catalogs", "show", "catalogs/lake")
    assert doc["name"] == "catalogs/lake" and doc["table_count"] == "0"
    assert doc["discovery"]["interval_s"] == 60 and doc["default_policy"] == {
        "execution.max-attempts": "2"}
    cli.ok("catalogs", "create", "files", "--type", "HADOOP", "--allowed-location",
           "file://localhost/srv/lake")
    out = cli.ok("catalogs", "list")
    assert row(out, "files")[1:4] == ["hadoop", "0", "off"]
    assert row(out, "lake")[1:5] == ["sql", "0", "on", "s3://lake/wh, s3://lake/more"]
    doc = cli.json("catalogs", "list", "--limit", "1")
    assert [c["name"] for c in doc["catalogs"]] == ["catalogs/files"] and doc["next_page_token"]
    assert len(cli.json("catalogs", "list", "--all")["catalogs"]) == 2

    api.store.table_register(TableSpec("t", "iceberg", catalog="lake", namespace="ns",
                                       table_name="t"))
    code, _, err = cli("catalogs", "delete", "lake", "--yes")
    assert code == 4 and "FAILED_PRECONDITION" in err and "1 table" in err
    api.store.table_delete("t", force=True)
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))  # not a terminal
    code, _, err = cli("catalogs", "delete", "lake")
    assert code == 2 and "--yes" in err
    assert cli.ok("catalogs", "delete", "lake", "--yes").strip() == "deleted catalogs/lake"
    assert cli.json("catalogs", "delete", "files", "--yes") == {"name": "catalogs/files",
                                                                "deleted": True}
    assert cli.ok("catalogs", "list").strip() == "no catalogs"
    code, _, err = cli("catalogs", "get", "lake")
    assert code == 3 and "NOT_FOUND" in err


def test_update_changes_only_the_flags_given(cli: Cli) -> None:
    cli.ok(*CREATE)
    doc = cli.json("catalogs", "update", "lake", "--property", "extra=1", "--unset-property",
                   "warehouse", "--secret", "s3.secret-access-key=file:lake-s3",
                   "--unset-storage-option", "s3.region", "--storage-option",
                   "s3.endpoint=http://minio:9000", "--allowed-location", "s3://lake/x",
                   "--remove-allowed-location", "s3://lake/more", "--remove-allowed-owner",
                   "team-a", "--allowed-owner", "team-b", "--default-policy",
                   "execution.max-attempts=3")
    assert doc["properties"] == {"uri": PG, "extra": "1"}
    assert doc["secrets"] == {"jdbc.password": "env:TMS_SECRET_LAKE_PG",
                              "s3.secret-access-key": "file:lake-s3"}
    assert doc["storage_options"] == {"s3.endpoint": "http://minio:9000"}
    assert doc["allowed_locations"] == ["s3://lake/wh", "s3://lake/x"]
    assert doc["allowed_owners"] == ["team-b"] and doc["allowed_tokens"] == ["ingest"]
    assert doc["default_policy"] == {"execution.max-attempts": "3"}
    assert doc["discovery"]["enabled"] is False
    doc = cli.json("catalogs", "update", "catalogs/lake", "--discover", "--include", "a.*",
                   "--include", "b.*", "--discovery-priority", "-5")
    d = doc["discovery"]
    assert (d["enabled"], d["include"], d["priority"], d["interval_s"]) == \
        (True, ["a.*", "b.*"], -5, 300)
    assert doc["properties"] == {"uri": PG, "extra": "1"}  # untouched
    d = cli.json("catalogs", "update", "lake", "--remove-include", "a.*", "--exclude", "b.x",
                 "--no-discover")["discovery"]
    assert (d["enabled"], d["include"], d["exclude"], d["priority"]) == \
        (False, ["b.*"], ["b.x"], -5)
    out = cli.ok("catalogs", "update", "lake", "--unset-secret", "s3.secret-access-key")
    assert row(out, "secrets:")[1] == "jdbc.password=env:TMS_SECRET_LAKE_PG"
    code, _, err = cli("catalogs", "update", "lake")
    assert code == 2 and "at least one field" in err


def test_refusals_and_exit_codes(cli: Cli) -> None:
    cli.ok(*CREATE)
    code, _, err = cli(*CREATE)
    assert code == 4 and "ALREADY_EXISTS" in err
    code, _, err = cli("catalogs", "create", "x", "--type", "nessie", "--allowed-location", "/a")
    assert code == 2 and "invalid choice" in err
    code, _, err = cli("catalogs", "create", "x", "--allowed-location", "/a")
    assert code == 2 and "--type" in err
    code, _, err = cli("catalogs", "create", "Bad-Id", "--type", "hadoop", "--property",
                       "password=x", "--allowed-location", "s3://a/%252e%252e/b")
    assert code == 2 and "INVALID_ARGUMENT" in err
    for field in ("catalog_id", "catalog.properties[password]",
                  "catalog.allowed_locations[0]"):
        assert field in err
    code, out, err = cli("catalogs", "update", "lake", "--secret", "jdbc.password=hunter2",
                         "--json")
    assert code == 2 and "hunter2" not in out + err
    code, _, err = cli("catalogs", "update", "nope", "--property", "a=b")
    assert code == 3 and "NOT_FOUND" in err
    code, _, err = cli("catalogs", "update", "lake", "--property", "novalue")
    assert code == 2 and "KEY=VALUE" in err
