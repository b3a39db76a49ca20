"""A batch's Iceberg pointers from a pyiceberg SQL catalog on PostgreSQL: the names go as two
array parameters (one statement text whatever the batch); the answer is pyiceberg's own,
hostile names stay parameters, tables not held are absent."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import PgHandle
from tms.catalogs import CatalogAccess
from tms.domain import CatalogType
from tms.formats.iceberg import pointers as iceberg_pointers
from tms.local.iceberg_data import (
    append_batches,
    create_table,
    load_catalog,
    sql_catalog_properties,
)

pytestmark = pytest.mark.integration


def test_pointers_by_array_parameters_match_pyiceberg(pg: PgHandle, tmp_path: Path) -> None:
    warehouse = tmp_path / "wh"
    warehouse.mkdir()
    props = sql_catalog_properties(pg.dsn, warehouse.as_uri())
    cat = load_catalog("c", props)
    for ns, name in (("ns", "a"), ("ns", "b"), ("other", "a")):
        append_batches(create_table(cat, ns, name), 1)
    assert cat.engine.dialect.name == "postgresql"
    access = CatalogAccess("c", CatalogType.SQL, {k: v for k, v in props.items()
                                                  if k != "type"}, {})
    asked = [("ns", "a"), ("other", "a"), ("ns", "gone"), ("ns", "b"),
             ("ns", "a' OR '1'='1"), ("ns') OR 1=1 --", "a")]
    for _ in range(2):  # the same statement again (the driver may prepare it)
        found = iceberg_pointers.lookup(cat, access, asked)
        assert found == {i: cat.load_table(i).metadata_location
                         for i in (("ns", "a"), ("other", "a"), ("ns", "b"))}
    assert iceberg_pointers.lookup(cat, access, [("ns", "b")]) == {
        ("ns", "b"): cat.load_table(("ns", "b")).metadata_location}
    assert iceberg_pointers._batch_stmt.cache_info().currsize >= 1
