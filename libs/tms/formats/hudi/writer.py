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

The operator's files are found only inside ``TMS_HUDI_WRITER_DIR`` and read without following a
symlink. Every key and value is parsed against :mod:`tms.formats.hudi.writer_keys` (an
allowlist); a bad one refuses the whole configuration with an error naming the key, since a
half-read configuration could mean a lower retention than the writers keep.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from tms.formats.hudi.writer_keys import (
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
ENV_WRITER_DIR = "TMS_HUDI_WRITER_DIR"
MAX_FILE_BYTES = 64 * 1024
MAX_LINE_CHARS = 4096


class WriterConfigError(ValueError):
    """The writer configuration is there but bad: names the source and the key, never a
    secret's value."""


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


LOCK_KEY = "hoodie.write.lock.zookeeper.lock_key"


def lock_key_warning(props: Mapping[str, str] | None, table_name: str) -> str:
    """A warning when the writer configuration names a ZooKeeper lock key other than the one
    the table's writers take: Hudi's writers lock under the table's name
    (``hoodie.table.name``) unless they set a key of their own, so a table service locking
    under another key excludes nobody. '' when the key is not set, agrees, or the table's
    name is unknown."""
    key = (props or {}).get(LOCK_KEY, "")
    if not key or not table_name or key == table_name:
        return ""
    return (f"the writer configuration's {LOCK_KEY} is {key[:100]!r}, but the table is "
            f"{table_name[:100]!r} (hoodie.table.name), the key Hudi's writers lock under "
            "unless they set their own: if they do not set this one, a table service would "
            "lock a different znode and run beside a live writer; make the writers and the "
            "configuration name the same key")


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


# the operator's writer properties files

def check_value(key: str, value: str, where: str) -> None:
    """``key=value`` against the schema; WriterConfigError says why it is refused. The
    value is never echoed for a key the schema does not know (it may be anything)."""
    spec = WRITER_KEYS.get(key)
    if spec is None:
        raise WriterConfigError(f"{where}: {key[:128]!r}: {refusal(key)}")
    try:
        spec.parse(value)
    except ValueError as e:
        raise WriterConfigError(f"{where}: {key} {e}") from None


def relative_path(name: str) -> Path:
    """``name`` as a plain relative path (no absolute path, no ``..``, no empty or hidden
    parts, printable ASCII letters, digits, ``_ . - /`` only)."""
    if not name or len(name) > 255 or name.startswith("/"):
        raise WriterConfigError("the properties file must be a relative path under "
                                f"{ENV_WRITER_DIR}")
    parts = name.split("/")
    for part in parts:
        if part in ("", ".", "..") or part.startswith(".") or not all(
                c.isascii() and (c.isalnum() or c in "_.-") for c in part):
            raise WriterConfigError(f"the properties file {name[:120]!r}: each part of the "
                                    "path must be letters, digits, _ . - (no '..', no "
                                    "hidden or empty parts)")
    return Path(*parts)


def read_file(directory: str, name: str) -> str:
    """The text of ``directory/name``: inside the directory with every part a real directory
    or file (no symlink anywhere below it), regular, at most MAX_FILE_BYTES, and not writable
    by group or others. Opened with O_NOFOLLOW and checked on the open descriptor, so a file
    swapped in between the checks is not read."""
    rel = relative_path(name)
    root = Path(directory)
    if not root.is_absolute():
        raise WriterConfigError(f"{ENV_WRITER_DIR} must be an absolute path")
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:  # walked part by part from the directory: no symlink is followed on the way
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as e:
        raise WriterConfigError(f"{ENV_WRITER_DIR} cannot be opened: {e.strerror}") from None
    try:
        for part in rel.parts[:-1]:
            inner = os.open(part, flags | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = inner
        inner = os.open(rel.parts[-1], flags | os.O_NONBLOCK, dir_fd=fd)
    except FileNotFoundError:
        raise WriterConfigError(f"{name}: no such file in {ENV_WRITER_DIR}") from None
    except OSError as e:  # ELOOP / ENOTDIR: a symlink on the way
        raise WriterConfigError(f"{name}: cannot be opened ({e.strerror}; symlinks are "
                                "refused)") from None
    finally:
        os.close(fd)
    fd = inner
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise WriterConfigError(f"{name}: not a regular file")
    with os.fdopen(fd, "rb") as f:
        if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            raise WriterConfigError(f"{name}: writable by group or others; the writer "
                                    "configuration must be the operator's alone (chmod 644)")
        if st.st_size > MAX_FILE_BYTES:
            raise WriterConfigError(f"{name}: larger than {MAX_FILE_BYTES} bytes")
        data = f.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise WriterConfigError(f"{name}: larger than {MAX_FILE_BYTES} bytes")
    try:
        return data.decode("ascii")
    except UnicodeDecodeError:
        raise WriterConfigError(f"{name}: not ASCII text") from None


def parse_properties(text: str, where: str) -> dict[str, str]:
    """``key=value`` lines (``#`` comments and blank lines skipped) checked against the
    schema. Stricter than Hudi's reader on purpose: no ``include``, no ``:`` or blank
    separator, no key twice, no leading or trailing blanks in a value."""
    out: dict[str, str] = {}
    for number, line in enumerate(text.split("\n"), 1):
        line = line.removesuffix("\r")
        at = f"{where} line {number}"
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if len(line) > MAX_LINE_CHARS or any(ord(c) < 32 or ord(c) == 127 for c in line):
            raise WriterConfigError(f"{at}: control characters or a line over "
                                    f"{MAX_LINE_CHARS} characters")
        key, sep, value = line.partition("=")
        if not sep or key != key.strip() or value != value.strip() or not key:
            raise WriterConfigError(f"{at}: expected key=value without blanks around them")
        if key in out:
            raise WriterConfigError(f"{at}: {key} is set twice")
        check_value(key, value, at)
        out[key] = value
    return out
