"""The Hudi writers' own configuration, as TMS must know it to act beside them.

Retention, cleaner policy, lock provider, concurrency mode, strategies and timezone are *writer*
settings: they are not in ``hoodie.properties``, yet a table service run with other values can
delete files readers rely on or collide with a live writer. So the writer's configuration is part
of what TMS knows about a table, under the operator's control (never a table owner's value: an
owner could otherwise lower the retention other teams' readers rely on, or point a lock at
nothing). It comes from the table's catalog, which only admins create:

- ``hudi.writer.<hoodie key>`` properties: settings for every Hudi table of the catalog;
- ``hudi.writer.properties-file``: a file, relative to the operator's directory
  ``TMS_HUDI_WRITER_DIR`` (set on scheduler and executor), of ``key=value`` lines; the name may
  hold ``{table_id}`` so each table has its own file. Its settings override the catalog's.
  The file must lie inside the directory with no symlink on the way, be a regular file of at
  most 64 KiB, and be writable by its owner only (a file others may write would let them
  change the retention);
- ``hudi.writer.<hoodie key>`` in the catalog's *secrets* (a reference): the value is resolved
  only when the job's private properties file is written and is never returned here (Hudi's
  ZooKeeper lock provider has no credential keys: ZooKeeper SASL is the JVM's JAAS login,
  which the operator configures in the queue's Spark conf).

Every key and value is parsed against :mod:`tms.formats.hudi_writer_keys` (an allowlist); a bad
one refuses the whole configuration with an error naming the key, since a half-read
configuration could mean a lower retention than the writers keep.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tms.formats.hudi_writer_file import (
    ENV_WRITER_DIR,
    WriterConfigError,
    check_value,
    parse_properties,
    read_file,
    relative_path,
)
from tms.formats.hudi_writer_keys import (
    HUDI_VERSION_KEY,
    WRITER_KEYS,
    WRITER_ZONE_KEY,
    refusal,
)

if TYPE_CHECKING:
    from tms.catalogs import CatalogAccess
    from tms.domain import Table

PREFIX = "hudi.writer."
# the catalog's own Hudi jars, over the queue's (see tms.engines.hudi_submit)
JAR_PROPERTIES = ("hudi.utilities-jar", "hudi.spark-bundle")
FILE_PROPERTY = "hudi.writer.properties-file"
TABLE_PLACEHOLDER = "{table_id}"


@dataclass(frozen=True)
class WriterConfig:
    """A table's writer configuration: Hudi keys to values (secrets excluded), the keys whose
    values are secret references (resolved only into the job's private file), and the Hudi
    release the writers run and the zone of their clocks (None: not stated)."""

    properties: dict[str, str]
    secret_refs: dict[str, str] = field(default_factory=dict)
    hudi_version: str | None = None
    writer_zone: str | None = None
    sources: tuple[str, ...] = ()  # where it came from, for reasons and docs


def property_problems(properties: Mapping[str, str], secrets: Mapping[str, str],
                      field_name: str) -> list[tuple[str, str]]:
    """(field, problem) for a catalog's ``hudi.writer.*`` properties and secrets, checked when
    the catalog is created or updated (the file itself is read when used: it may change)."""
    problems: list[tuple[str, str]] = []
    for source, values in (("properties", properties), ("secrets", secrets)):
        for key, value in values.items():
            where = f"{field_name}.{source}[{key[:160]}]"
            if key in JAR_PROPERTIES:
                why = jar_problem(value) if source == "properties" else "a jar is not a secret"
                if why:
                    problems.append((where, why))
                continue
            if key.startswith("hudi.") and not key.startswith(PREFIX):
                problems.append((where, "unknown Hudi catalog property; known: "
                                 + ", ".join((*JAR_PROPERTIES, PREFIX + "<hoodie key>",
                                              FILE_PROPERTY))))
                continue
            if not key.startswith(PREFIX):
                continue
            if key == FILE_PROPERTY:
                if source == "secrets":
                    problems.append((where, "a file reference is not a secret"))
                    continue
                try:
                    relative_path(value.replace(TABLE_PLACEHOLDER, "t"))
                except WriterConfigError as e:
                    problems.append((where, str(e)))
                continue
            hoodie_key = key[len(PREFIX):]
            if hoodie_key not in WRITER_KEYS:
                problems.append((where, refusal(hoodie_key)))
            elif source == "properties":
                try:
                    check_value(hoodie_key, value, "value")
                except WriterConfigError as e:
                    problems.append((where, str(e)))
    return problems


def jar_problem(value: str) -> str | None:
    """Why a catalog's Hudi jar setting is refused: an absolute path or URL of one ``.jar``
    (spark-submit takes ``--jars`` as a comma-separated list)."""
    if ("," in value or not value.endswith(".jar") or any(c.isspace() for c in value)
            or not (value.startswith("/") or re.match(r"[a-z][a-z0-9+.-]*://[^/]", value))
            or "/../" in value or value.endswith("/..")):
        return "an absolute path or URL of one .jar (no commas or blanks)"
    return None


def is_writer_key(key: str) -> bool:
    """A catalog property naming a known writer setting: its name may look secret to the
    generic rule (``...lock_key``) while its value is checked against the schema."""
    return key == FILE_PROPERTY or (key.startswith(PREFIX) and key[len(PREFIX):] in WRITER_KEYS)


def writer_config(table: Table, catalog: CatalogAccess,
                  environ: Mapping[str, str] | None = None) -> WriterConfig | None:
    """The writer configuration of ``table``, or None when its catalog states none.
    WriterConfigError when one is stated but bad (or its file is missing): an action that
    depends on it must then refuse, naming the reason."""
    env = os.environ if environ is None else environ
    props: dict[str, str] = {}
    refs: dict[str, str] = {}
    sources: list[str] = []
    for key, value in sorted(catalog.properties.items()):
        if not key.startswith(PREFIX) or key == FILE_PROPERTY:
            continue
        hoodie_key = key[len(PREFIX):]
        kind = "secret" if key in catalog.secret_refs else "property"
        where = f"catalogs/{catalog.catalog_id} {kind} {key}"
        if key in catalog.secret_refs:
            if hoodie_key not in WRITER_KEYS:
                raise WriterConfigError(f"{where}: {refusal(hoodie_key)}")
            try:  # the resolved value, checked here and never echoed
                check_value(hoodie_key, value, where)
            except WriterConfigError:
                raise WriterConfigError(f"{where}: the secret's value does not fit "
                                        f"{hoodie_key} ({WRITER_KEYS[hoodie_key].describe()})"
                                        ) from None
            refs[hoodie_key] = catalog.secret_refs[key]
            continue
        check_value(hoodie_key, value, where)
        props[hoodie_key] = value
    if props or refs:
        sources.append(f"catalogs/{catalog.catalog_id} properties")
    file_ref = catalog.properties.get(FILE_PROPERTY)
    if file_ref is not None:
        name = file_ref.replace(TABLE_PLACEHOLDER, table.table_id)
        directory = env.get(ENV_WRITER_DIR, "")
        if not directory:
            raise WriterConfigError(f"catalogs/{catalog.catalog_id} names the writer "
                                    f"properties file {name[:120]!r} but {ENV_WRITER_DIR} is "
                                    "not set on this process")
        from_file = parse_properties(read_file(directory, name), name)
        clash = sorted(set(from_file) & set(refs))
        if clash:
            raise WriterConfigError(f"{name}: {clash[0]} is also a secret of the catalog")
        props.update(from_file)
        sources.append(f"{ENV_WRITER_DIR}/{name}")
    if not sources:
        return None
    version, zone = props.pop(HUDI_VERSION_KEY, None), props.pop(WRITER_ZONE_KEY, None)
    refs.pop(HUDI_VERSION_KEY, None)
    refs.pop(WRITER_ZONE_KEY, None)
    problem = consistency_problem(props, refs)
    if problem:
        raise WriterConfigError(f"{' + '.join(sources)}: {problem}")
    return WriterConfig(props, refs, version, zone, tuple(sources))


def consistency_problem(props: Mapping[str, str], secret_keys: Mapping[str, str]
                        ) -> str | None:
    """Settings that are each valid but wrong together: several writers (optimistic or
    non-blocking concurrency) need the ZooKeeper lock fully stated, and failed writes rolled
    back lazily (an eager rollback would undo a live writer's commit)."""
    mode = props.get("hoodie.write.concurrency.mode", "SINGLE_WRITER")
    if mode == "SINGLE_WRITER":
        return None
    stated = set(props) | set(secret_keys)
    missing = [k for k in ("hoodie.write.lock.provider", "hoodie.write.lock.zookeeper.url",
                           "hoodie.write.lock.zookeeper.base_path",
                           "hoodie.write.lock.zookeeper.lock_key") if k not in stated]
    if missing:
        return f"concurrency mode {mode} needs {', '.join(missing)}"
    if props.get("hoodie.cleaner.policy.failed.writes", "LAZY") != "LAZY":
        return (f"concurrency mode {mode} needs hoodie.cleaner.policy.failed.writes=LAZY "
                "(an eager rollback undoes live writers' commits)")
    return None


def unknown_reason(table: Table, catalog: CatalogAccess) -> str:
    """What to set (or fix) when :func:`writer_properties` returns None, for a decision's
    reason: the precise error of a bad configuration, else where to state one."""
    try:
        if writer_config(table, catalog) is not None:
            return ""
    except WriterConfigError as e:
        return f"the writer configuration is refused: {e}"
    return (f"no writer configuration for this table: set catalog properties "
            f"{PREFIX}<hoodie key> (e.g. {PREFIX}hoodie.cleaner.commits.retained) or "
            f"{FILE_PROPERTY} (a file under {ENV_WRITER_DIR}) in catalogs/{catalog.catalog_id}")


def writer_zone(table: Table, catalog: CatalogAccess) -> str | None:
    """The zone of the writers' clocks as the operator stated it (``tms.hudi.writer-timezone``),
    or None: then the table's policy (``timeline.timezone``) says how instant times are read."""
    try:
        found = writer_config(table, catalog)
    except WriterConfigError:
        return None
    return None if found is None else found.writer_zone


def writer_properties(table: Table, catalog: CatalogAccess) -> Mapping[str, str] | None:
    """The writer configuration of ``table`` as Hudi keys to values, or None when unknown
    (none stated, or the stated one is bad: a caller that needs it refuses, and the job
    builder raises the precise error). Secret values are never in it."""
    try:
        found = writer_config(table, catalog)
    except WriterConfigError:
        return None
    return None if found is None else dict(found.properties)
