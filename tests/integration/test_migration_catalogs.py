"""Migration 0010 on real PostgreSQL: registrations with inline catalog properties become
catalogs (secrets as references only), tables point at them, and duplicates stop it."""

from __future__ import annotations

import json

import psycopg
import pytest
from psycopg.rows import dict_row

from tests.conftest import PgHandle
from tms.storage.migrate import migrate

pytestmark = pytest.mark.integration

PASSWORD = "Sup3r-s3cret-pw"
KEY_SECRET = "AKIA-very-secret-key-value"
BEFORE_CATALOGS = 9


def _old_table(conn: psycopg.Connection, table_id: str, props: dict[str, str],
               catalog: str = "lake", namespace: str = "ns", table_name: str = "",
               base_path: str = "", fmt: str = "iceberg") -> None:
    conn.execute(
        "INSERT INTO tms_tables (table_id, format, catalog, namespace, table_name, base_path, "
        "catalog_properties) VALUES (%s, %s, %s, %s, %s, %s, %s)",
        (table_id, fmt, catalog, namespace, table_name or table_id, base_path,
         json.dumps(props)))


def _everything(conn: psycopg.Connection) -> str:
    """Every row of every table and view of the database, as text."""
    cur = conn.cursor(row_factory=psycopg.rows.tuple_row)
    names = [r[0] for r in cur.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'")]
    return "\n".join(str(cur.execute(f'SELECT * FROM "{n}"').fetchall()) for n in names)


def test_registrations_become_catalogs_without_secrets(pg: PgHandle) -> None:
    migrate(pg.dsn, up_to=BEFORE_CATALOGS)
    pg_uri = f"postgresql+psycopg://iceberg:{PASSWORD}@db.internal:5432/cat"
    with psycopg.connect(pg.dsn, autocommit=True) as conn:
        sql_props = {"type": "sql", "uri": pg_uri, "warehouse": "s3://lake/wh",
                     "s3.secret-access-key": KEY_SECRET, "s3.endpoint": "http://minio:9000"}
        _old_table(conn, "a", sql_props, table_name="a")
        _old_table(conn, "b", {**sql_props, "uri": pg_uri.replace(PASSWORD, "other-pw")},
                   table_name="b")  # same catalog once secrets are set aside
        _old_table(conn, "c", {"type": "sql", "uri": "postgresql+psycopg://h/other",
                               "warehouse": "file:///data/wh2"}, table_name="c")  # same name
        _old_table(conn, "d", {"uri": "https://rest.example/api?token=abc&x=1"},
                   catalog="Rest-Cat", table_name="d")
        _old_table(conn, "h", {}, catalog="", namespace="", table_name="",
                   base_path="/data/hudi/h", fmt="hudi")
        assert PASSWORD in _everything(conn)
    assert [m.version for m in migrate(pg.dsn)][0] == BEFORE_CATALOGS + 1
    with psycopg.connect(pg.dsn, autocommit=True, row_factory=dict_row) as conn:
        cats = {r["catalog_id"]: r for r in conn.execute("SELECT * FROM tms_catalogs")}
        tables = {r["table_id"]: r["catalog"] for r in conn.execute(
            "SELECT table_id, catalog FROM tms_tables")}
        dump = _everything(conn)
    assert set(cats) == {"lake", "lake_2", "rest_cat", "hadoop"}
    assert tables == {"a": "lake", "b": "lake", "c": "lake_2", "d": "rest_cat", "h": "hadoop"}
    lake = cats["lake"]
    assert lake["type"] == "sql"
    assert lake["properties"] == {"uri": "postgresql+psycopg://iceberg@db.internal:5432/cat",
                                  "warehouse": "s3://lake/wh"}
    assert lake["storage_options"] == {"s3.endpoint": "http://minio:9000"}
    assert lake["secrets"] == {"jdbc.password": "env:TMS_SECRET_LAKE_JDBC_PASSWORD",
                               "s3.secret-access-key": "env:TMS_SECRET_LAKE_S3_SECRET_ACCESS_KEY"}
    assert lake["allowed_locations"] == ["s3://lake/wh"]
    assert cats["lake_2"]["allowed_locations"] == ["file:///data/wh2"]
    assert cats["rest_cat"]["type"] == "rest"
    assert cats["rest_cat"]["properties"] == {"uri": "https://rest.example/api?x=1"}
    assert cats["rest_cat"]["secrets"] == {"jdbc.password": "env:TMS_SECRET_REST_CAT_JDBC_PASSWORD"}
    assert cats["hadoop"]["type"] == "hadoop"
    assert cats["hadoop"]["allowed_locations"] == ["/data/hudi/h"]
    for secret in (PASSWORD, "other-pw", KEY_SECRET, "token=abc"):
        assert secret not in dump, f"{secret!r} survived the migration"
    with psycopg.connect(pg.dsn, autocommit=True) as conn:
        with pytest.raises(psycopg.errors.ForeignKeyViolation):
            conn.execute("DELETE FROM tms_catalogs WHERE catalog_id = 'lake'")
        with pytest.raises(psycopg.errors.UniqueViolation):  # one identifier, one table
            conn.execute("INSERT INTO tms_tables (table_id, format, catalog, namespace, "
                         "table_name) VALUES ('a2', 'iceberg', 'lake', 'ns', 'a')")


def test_duplicates_stop_the_migration_naming_them(pg: PgHandle) -> None:
    migrate(pg.dsn, up_to=BEFORE_CATALOGS)
    props = {"type": "sql", "uri": "postgresql+psycopg://h/db", "warehouse": "/wh"}
    with psycopg.connect(pg.dsn, autocommit=True) as conn:
        _old_table(conn, "first", props, table_name="events")
        _old_table(conn, "second", {**props, "jdbc.password": "x"}, table_name="events")
    with pytest.raises(psycopg.errors.RaiseException) as info:
        migrate(pg.dsn)
    assert "tables/first, tables/second" in str(info.value)
    with psycopg.connect(pg.dsn, autocommit=True) as conn:  # nothing half done
        assert conn.execute("SELECT count(*) FROM tms_catalogs").fetchone() == (0,)
        conn.execute("DELETE FROM tms_tables WHERE table_id = 'second'")
    migrate(pg.dsn)
