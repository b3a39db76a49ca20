"""Catalogs: operator-owned connections to the catalogs tables live in.

A catalog is the platform's, not a table owner's: its connection properties, its secrets (held
as references and resolved only by the process that uses them), its storage options, the
locations its tables may live in and who may register tables in it. Field names match the
Postgres columns of ``tms_catalogs``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import datetime

DEFAULT_DISCOVERY_INTERVAL_S = 300
MIN_DISCOVERY_INTERVAL_S = 10
MAX_DISCOVERY_INTERVAL_S = 86_400


class CatalogType(enum.StrEnum):
    SQL = "sql"  # pyiceberg's SqlCatalog; Iceberg's JdbcCatalog on the Spark side
    JDBC = "jdbc"
    REST = "rest"
    HIVE = "hive"
    GLUE = "glue"
    HADOOP = "hadoop"  # file-system tables: Hudi base paths, path-based Iceberg


@dataclass(frozen=True)
class CatalogDiscovery:
    """How the scheduler leader finds the catalog's tables (glob patterns over
    ``namespace.table``; an empty include means every table)."""

    enabled: bool = False
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    queue: str = "default"
    owner: str = ""
    priority: int = 0
    interval_s: int = DEFAULT_DISCOVERY_INTERVAL_S


@dataclass(frozen=True)
class DiscoveryStatus:
    """What the last listing found (output only)."""

    next_at: datetime | None = None
    last_at: datetime | None = None
    last_error: str | None = None
    last_registered: int | None = None
    last_missing: int | None = None


@dataclass(frozen=True)
class CatalogSpec:
    """What an operator creates: everything about a catalog except bookkeeping."""

    catalog_id: str
    type: CatalogType
    properties: dict[str, str] = field(default_factory=dict)
    secrets: dict[str, str] = field(default_factory=dict)  # property -> reference, never a value
    storage_options: dict[str, str] = field(default_factory=dict)
    allowed_locations: tuple[str, ...] = ()
    allowed_owners: tuple[str, ...] = ()
    allowed_tokens: tuple[str, ...] = ()
    default_policy: dict[str, str] = field(default_factory=dict)
    discovery: CatalogDiscovery = CatalogDiscovery()


@dataclass(frozen=True)
class Catalog:
    """A stored catalog. ``pk`` is the row key, never shown to users."""

    pk: int
    spec: CatalogSpec
    status: DiscoveryStatus
    created_at: datetime
    updated_at: datetime
    table_count: int = 0

    @property
    def catalog_id(self) -> str:
        return self.spec.catalog_id

    @property
    def name(self) -> str:
        return f"catalogs/{self.spec.catalog_id}"


@dataclass(frozen=True)
class CatalogUpdate:
    """A field-mask update: None means "leave as is"."""

    properties: dict[str, str] | None = None
    secrets: dict[str, str] | None = None
    storage_options: dict[str, str] | None = None
    allowed_locations: tuple[str, ...] | None = None
    allowed_owners: tuple[str, ...] | None = None
    allowed_tokens: tuple[str, ...] | None = None
    default_policy: dict[str, str] | None = None
    discovery: CatalogDiscovery | None = None


class CatalogDeleteResult(enum.StrEnum):
    DELETED = "DELETED"
    NOT_FOUND = "NOT_FOUND"
    IN_USE = "IN_USE"  # tables are registered in it
