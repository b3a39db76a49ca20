"""CatalogStore on real PostgreSQL: create, read, field-mask update, delete."""

from tms.domain import (
    CatalogDeleteResult,
    CatalogDiscovery,
    CatalogSpec,
    CatalogType,
    CatalogUpdate,
)
from tms.storage.postgres import PostgresStore


def test_catalog_roundtrip(store: PostgresStore) -> None:
    spec = CatalogSpec(
        "lake", CatalogType.SQL, {"uri": "postgresql+psycopg://h/db"},
        {"jdbc.password": "env:TMS_SECRET_PG"}, {}, ("/data/lake",), ("team-a",), (),
        {"compaction.min-small-files": "5"},
        CatalogDiscovery(True, ("a.*",), (), "q", "team-a", 3, 60))
    created = store.catalog_create(spec)
    assert created is not None and created.spec == spec and created.table_count == 0
    assert store.catalog_create(spec) is None  # the id is taken
    updated = store.catalog_update("lake", CatalogUpdate(allowed_locations=("/x",),
                                                         discovery=CatalogDiscovery()))
    assert updated is not None
    assert updated.spec.allowed_locations == ("/x",)
    assert updated.spec.discovery == CatalogDiscovery()
    assert updated.spec.secrets == spec.secrets  # untouched by the mask
    assert [c.catalog_id for c in store.catalog_list("", 10)] == ["lake"]
    assert store.catalog_update("nope", CatalogUpdate(properties={})) is None
    assert store.catalog_delete("lake") is CatalogDeleteResult.DELETED
    assert store.catalog_delete("lake") is CatalogDeleteResult.NOT_FOUND
