"""Before a Hudi utility runs: every pending plan on the table's timeline must stay in the table.

A writer of one table could plant a clean or rollback plan naming another tenant's files
(Hudi deletes them), or a compaction or clustering plan reading them or writing outside the
table (``partitionPath = ../other``), or naming a class for Hudi to load. The utility TMS
starts executes such plans first (:mod:`tms.formats.hudi.plans`), so each pending plan of the
table and of its metadata table (``.hoodie/metadata``) is checked right before the job is
built, reading the timeline again (never trusting the scheduler's earlier look):

- every path field (by its Avro field name, wherever it is nested), and any other value that
  is an absolute path or URI, must resolve inside the table's base path: a relative value is
  joined to the base path (file names to their record's ``partitionPath``, as Hudi does) and
  may hold no ``.`` / ``..`` segment; an absolute one is taken as it is (Hadoop's
  ``Path(parent, child)`` does the same); both are normalised by the one location normaliser,
  local paths with every symlink followed (a partition directory that is a symlink out is
  caught), object-store paths on scheme + bucket + whole segments;
- every class name (a field ending in ``ClassName``, a strategy parameter ending in
  ``.class``) must be one of Hudi's own strategy classes (``ALLOWED_CLASSES``) or empty.

A table moved or copied with a plan pending refers to its old location in the plan's absolute
paths (clustering plans hold them): such a plan is refused as well, since Hudi would act on the
old location. Any refusal is final for the operation (not retried): the table's owner must
roll back or remove the plan.
"""

from __future__ import annotations

from collections.abc import Mapping

from tms import locations
from tms.formats.hudi import markers as hudi_markers
from tms.formats.hudi.plan_paths import problems, shown
from tms.formats.hudi.plans import PlanRefused, read_pending
from tms.formats.hudi.timeline import TimelineError, locate_timeline, open_table
from tms.formats.storage import StorageError, Store, SymlinkRefused
from tms.locations import Location

PROPERTIES_FILES = ("hoodie.properties", "hoodie.properties.backup")


def check_table(base: str, storage_options: Mapping[str, str] | None = None) -> int:
    """Check every pending plan of the table at the checked base path ``base`` and of its
    metadata table, and what Hudi's rollback of their failed writes would touch
    (:mod:`tms.formats.hudi.markers`); returns how many plans were checked. PlanRefused (a
    ValueError, final) names the first refused plan or write and its first offending values,
    also when a directory read is reached through a symlink; StorageError and TimelineError
    when the timeline cannot be read."""
    try:
        return _check_table(base, storage_options)
    except SymlinkRefused as e:  # Hudi would follow the link: refused, not retried
        raise PlanRefused(f"the table's metadata is reached through a symlink: {e}") from None


def _check_table(base: str, storage_options: Mapping[str, str] | None) -> int:
    checked = 0
    store, dirs = table_dirs(base, storage_options)
    for directory, table, table_root in dirs:
        for plan in read_pending(store, directory):
            found = problems(plan, table)
            if found:
                raise PlanRefused(f"pending Hudi plan refused, {plan.label}: {shown(found)}; "
                                  "no Hudi utility runs on this table until its owner rolls "
                                  "the plan back or removes it")
            checked += 1
        hudi_markers.check_writes(store, table_root, directory, table)
    return checked


def table_dirs(base: str, storage_options: Mapping[str, str] | None
               ) -> tuple[Store, list[tuple[str, Location, str]]]:
    """(the store, [(timeline directory, resolved base, root in the store)]) of the table at
    the checked base path ``base`` and of its metadata table, when Hudi would load them (none
    when there is no ``hoodie.properties``: Hudi's utility fails before it acts). PlanRefused
    when the metadata table resolves outside the table."""
    where = locations.resolve(locations.parse(base, literal=True))
    store, root = open_table(base, storage_options)
    if not _is_table(store, root, base):
        return store, []
    dirs = [(locate_timeline(base, storage_options)[2], where, root)]
    mdt_base = f"{base.rstrip('/')}/.hoodie/metadata"
    mdt_root = store.join(root, ".hoodie", "metadata")
    mdt = locations.resolve(locations.parse(mdt_base, literal=True))
    if not mdt.is_under(where):  # a symlink to another table's metadata table
        raise PlanRefused(f"the metadata table {mdt_base[:300]!r} resolves to "
                          f"{str(mdt)[:300]!r}, outside the table")
    if _is_table(store, mdt_root, mdt_base):
        dirs.append((locate_timeline(mdt_base, storage_options)[2], mdt, mdt_root))
    return store, dirs


def _is_table(store: Store, root: str, base: str) -> bool:
    """Whether Hudi would load a table at ``root``: a ``hoodie.properties`` (or its backup)
    there; one that is not a regular file (Hudi would follow a symlink) is refused."""
    props = [e for e in store.list_dir(store.join(root, ".hoodie"))
             if e.name in PROPERTIES_FILES]
    if props and not any(e.is_file for e in props):
        raise PlanRefused(f"{base[:300]}/.hoodie/hoodie.properties is not a regular file")
    return bool(props)


__all__ = ["PlanRefused", "StorageError", "TimelineError", "check_table", "table_dirs"]
