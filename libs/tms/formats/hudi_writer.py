"""The Hudi writers' own configuration, as TMS must know it to act beside them.

Retention, cleaner policy, lock provider, concurrency mode, strategies and timezone are *writer*
settings: they are not in ``hoodie.properties``, yet a table service run with other values can
delete files readers rely on or collide with a live writer. So the writer's configuration is part
of what TMS knows about a table, under the operator's control (never a table owner's value).

This module is the one place that answers "what are this table's writer settings", as a mapping
of Hudi's own configuration keys (``hoodie.cleaner.policy``, ``hoodie.cleaner.commits.retained``,
``hoodie.write.lock.provider`` ...) to values; ``None`` means TMS does not know them, and actions
that depend on them (clean) must refuse with a reason that says what to set.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tms.catalogs import CatalogAccess
    from tms.domain import Table


def writer_properties(table: Table, catalog: CatalogAccess) -> Mapping[str, str] | None:
    """The writer configuration of ``table`` as Hudi keys to values, or None when unknown.

    Not yet wired to a source: always unknown until the writer-configuration reference lands."""
    del table, catalog
    return None
