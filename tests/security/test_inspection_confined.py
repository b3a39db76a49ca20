"""A hostile table owner against the scheduler's inspection: the table's metadata names files
of another tenant's table in the same warehouse (inside the catalog's allowed locations), so
that TMS would read them and show their counts, sizes and partition values as this table's.

Real parts: a pyiceberg SQL catalog on the test PostgreSQL, two tables written by pyiceberg,
the Iceberg plugin as the scheduler runs it. The owner does what any writer can: sets
``write.metadata.path`` to the other table's metadata directory (pyiceberg then writes this
table's metadata files, manifest lists and manifests there).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.security.job_harness import Lake
from tests.unit.fakes import make_table
from tms.catalogs import CatalogAccess
from tms.domain import CatalogType
from tms.formats.iceberg.confined import OutsideTable
from tms.formats.iceberg.plugin import IcebergFormat
from tms.local import iceberg_data

pytestmark = pytest.mark.integration


def _local(uri: str) -> Path:
    return Path(uri.removeprefix("file:").removeprefix("//"))


def _inspect(lake: Lake, name: str) -> dict[str, Any]:
    loaded = lake.catalog.load_table(f"{lake.namespace}.{name}")
    table = make_table(table_id=name, format="iceberg", namespace=lake.namespace,
                       table_name=name, location=str(_local(loaded.location()).resolve()))
    access = CatalogAccess("tms_sec", CatalogType.SQL, dict(lake.props), {},
                           (lake.allowed.as_uri(),))
    return IcebergFormat().inspect(table, access)


def test_inspection_never_reads_another_tables_metadata(pg: Any, tmp_path: Path) -> None:
    lake = Lake(pg.dsn, tmp_path / "lake")
    victim = lake.table("tenant_b", commits=3)
    victim_metadata = _local(victim.location()) / "metadata"
    lake.catalog.create_namespace_if_not_exists(lake.namespace)
    owner = lake.catalog.create_table(
        f"{lake.namespace}.owner", schema=iceberg_data.SCHEMA,
        properties={"write.metadata.path": victim_metadata.as_uri()})
    owner.append(iceberg_data.batch(0, 5))
    owner.append(iceberg_data.batch(5, 5))
    assert _local(lake.catalog.load_table(f"{lake.namespace}.owner").metadata_location
                  ).parent == victim_metadata  # its metadata now lives in the other table

    with pytest.raises(OutsideTable, match="outside its own location"):
        _inspect(lake, "owner")

    # the other tenant's own table is inspected as before, and a clean one too
    assert _inspect(lake, "tenant_b")["data_files"] == 3
    lake.table("clean", commits=2)
    assert _inspect(lake, "clean")["data_files"] == 2
