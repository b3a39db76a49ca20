"""Which Hudi release a job needs: the table's version and base file format (as
``hoodie.properties`` says now) and the writers' own release set the oldest bundle that may
run it (the engine compares it with the configured jars, :mod:`tms.engines.hudi_submit`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from tms.formats.hudi.timeline import TimelineError, open_table, parse_properties
from tms.formats.hudi.writer import WriterConfig
from tms.formats.storage import StorageError

if TYPE_CHECKING:
    from tms.catalogs import CatalogAccess

# the oldest Hudi release that reads and writes each table version / base file format
TABLE_VERSION_MIN_RELEASE = {5: "0.12.0", 6: "0.14.0", 8: "1.0.0", 9: "1.1.0"}
BASE_FORMAT_MIN_RELEASE = {"LANCE": "1.2.0"}
# settings a job passes that older releases reject (an unknown enum name fails the job)
SETTING_MIN_RELEASE = {("hoodie.compact.inline.trigger.strategy",
                        "NUM_COMMITS_AFTER_LAST_REQUEST"): "1.0.0"}


def release(text: str) -> tuple[int, int, int]:
    """``1.0.2`` as (1, 0, 2); ValueError otherwise."""
    m = re.fullmatch(r"([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})", text)
    if not m:
        raise ValueError(f"not a Hudi release: {text[:40]!r}")
    return int(m[1]), int(m[2]), int(m[3])


def table_facts(base: str, catalog: CatalogAccess, metrics: Mapping[str, Any]
                ) -> dict[str, str]:
    """hoodie.properties as it is now (table version, base file format), else what the
    inspection saw: a job must not start on a table its bundle cannot read."""
    try:
        store, root = open_table(base, catalog.storage_options)
        props = parse_properties(store.read(store.join(root, ".hoodie", "hoodie.properties"))
                                 .decode("utf-8"))
    except (OSError, ValueError, StorageError, TimelineError):  # unreadable from here
        props = {}
    version = props.get("hoodie.table.version") or str(metrics.get("table_version") or "")
    return {"table_version": version,
            "base_file_format": (props.get("hoodie.table.base.file.format")
                                 or str(metrics.get("base_file_format") or "")).upper()}


def minimum_release(facts: Mapping[str, str], writer: WriterConfig | None,
                    conf: Mapping[str, str] | None = None) -> tuple[str | None, str]:
    """(the oldest Hudi release that may run this job, why): the table's version and base
    file format, the writers' release, and the settings the job passes (``conf``)."""
    needs: list[tuple[str, str]] = []
    for (key, value), oldest in SETTING_MIN_RELEASE.items():
        if (conf or {}).get(key) == value:
            needs.append((oldest, f"{key}={value}"))
    if facts.get("table_version", "").isdigit():
        v = int(facts["table_version"])
        if v in TABLE_VERSION_MIN_RELEASE:
            needs.append((TABLE_VERSION_MIN_RELEASE[v], f"table version {v}"))
    base_format = facts.get("base_file_format") or (
        writer.properties.get("hoodie.table.base.file.format", "") if writer else "")
    if base_format in BASE_FORMAT_MIN_RELEASE:
        needs.append((BASE_FORMAT_MIN_RELEASE[base_format], f"{base_format} base files "
                      "(also needs the Lance Spark bundle on the classpath)"
                      if base_format == "LANCE" else f"{base_format} base files"))
    if writer is not None and writer.hudi_version:
        needs.append((writer.hudi_version, "the writers' Hudi release (tms.hudi.version)"))
    if not needs:
        return None, ""
    best = max(needs, key=lambda n: release(n[0]))
    return best[0], best[1]
