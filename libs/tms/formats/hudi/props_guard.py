"""Before a Hudi utility runs: what ``hoodie.properties`` tells Hudi about where to read, write
and delete, and which classes to load, is Hudi's own and stays in the table.

Every Hudi utility builds a ``HoodieTableMetaClient``, which reads ``.hoodie/hoodie.properties``
(``ConfigUtils.fetchConfigs``: with ``java.util.Properties.load``; when that file is missing,
unreadable or its ``hoodie.table.checksum`` does not match, ``hoodie.properties.backup``
instead; the checksum covers the database and table names only). The writers write both, so
for the table and its metadata table TMS reads each one present as Java does
(:mod:`tms.formats.hudi.props`, at most ``MAX_PROPERTIES_BYTES``, a regular file) and requires:

- the paths Hudi joins under the table (``new StoragePath(parent, value)``: an absolute or
  ``scheme:`` value wins): ``hoodie.archivelog.folder`` (table version 6's archive, under
  ``.hoodie``; the archiver writes and merges archive files there), ``hoodie.timeline.path``
  (under ``.hoodie``), ``hoodie.timeline.history.path`` (version 8+'s LSM history, under the
  timeline directory; the archiver writes, compacts and deletes history files there) and
  ``hoodie.table.index.defs.path`` (under the base path; read at every load, written when an
  index is defined) are relative paths of whole segments (no ``.`` / ``..`` / empty segment,
  printable ASCII without a backslash, no ``:`` before the first ``/``, at most
  ``MAX_PATH_CHARS``) which, joined as Hudi joins them and with every symlink followed, stay
  in the table; their defaults (``archived``, ``history``, ``.hoodie/.index_defs/index.json``)
  are checked the same way, so a history directory that is a symlink out is refused;
- ``hoodie.table.metadata.partitions`` (and ``.inflight``) name plain directories;
- ``hoodie.bootstrap.base.path`` (the source data a bootstrap table's compaction and
  clustering read) lies inside the catalog's allowed locations; without them it is refused;
  and no bootstrap index exists (``.hoodie/.aux/.bootstrap``: its HFiles name the source
  files by full path, and TMS does not read HFiles), so bootstrap tables are not maintained;
- the classes Hudi loads by reflection from this file are ones Hudi ships (``CLASS_KEYS``: the
  classes behind ``KeyGeneratorType``, ``RecordPayloadType`` and ``BootstrapIndexType`` as the
  apache/hudi sources define them, Hudi 0.14 - 1.1; a class of the writers' would be their code
  loaded into a job TMS runs), and any other key
  named like a class, provider or implementation is refused;
- the enum values (table type, file formats, key generator type, merge mode, bootstrap index
  type, table format, versions, time zone) are Hudi's own names, merge strategy ids UUIDs;
- the keys TMS itself reads with its quick reader (version, type, timeline path, time zone,
  base file format) read the same to Java, so the timeline the other guards check is Hudi's.

Any refusal is final (PlanRefused): the table's owner must repair the file.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from tms import locations
from tms.formats.hudi.plan_guard import PROPERTIES_FILES
from tms.formats.hudi.plan_paths import path_problem, relative_shape_problem, shown
from tms.formats.hudi.plans import PlanRefused
from tms.formats.hudi.props import MalformedProperties, java_properties
from tms.formats.hudi.timeline import MAX_PROPERTIES_BYTES, open_table, parse_properties
from tms.formats.storage import Store, SymlinkRefused
from tms.locations import Location, LocationError

_KEYGEN = "org.apache.hudi.keygen."
_SQL = "org.apache.spark.sql.hudi.command."
KEYGEN_CLASSES = frozenset({  # KeyGeneratorType's classes (Hudi 0.14 - 1.1), tests' aside
    *(_KEYGEN + n for n in (
        "SimpleKeyGenerator", "SimpleAvroKeyGenerator", "ComplexKeyGenerator",
        "ComplexAvroKeyGenerator", "TimestampBasedKeyGenerator", "TimestampBasedAvroKeyGenerator",
        "CustomKeyGenerator", "CustomAvroKeyGenerator", "NonpartitionedKeyGenerator",
        "NonpartitionedAvroKeyGenerator", "GlobalDeleteKeyGenerator",
        "GlobalAvroDeleteKeyGenerator", "AutoRecordGenWrapperKeyGenerator",
        "AutoRecordGenWrapperAvroKeyGenerator")),
    "org.apache.hudi.metadata.HoodieTableMetadataKeyGenerator",
    _SQL + "SqlKeyGenerator", _SQL + "UuidKeyGenerator", _SQL + "MergeIntoKeyGenerator"})
_MODEL = "org.apache.hudi.common.model."
PAYLOAD_CLASSES = frozenset({  # RecordPayloadType's classes
    *(_MODEL + n for n in (
        "AWSDmsAvroPayload", "HoodieAvroPayload", "DefaultHoodieRecordPayload",
        "EventTimeAvroPayload", "OverwriteNonDefaultsWithLatestAvroPayload",
        "OverwriteWithLatestAvroPayload", "PartialUpdateAvroPayload",
        "debezium.MySqlDebeziumAvroPayload", "debezium.PostgresDebeziumAvroPayload")),
    "org.apache.hudi.metadata.HoodieMetadataPayload",
    _SQL + "ValidateDuplicateKeyPayload", _SQL + "payload.ExpressionPayload"})
_BOOTSTRAP = "org.apache.hudi.common.bootstrap.index."
BOOTSTRAP_INDEX_CLASSES = frozenset({_BOOTSTRAP + "HFileBootstrapIndex",
                                     _BOOTSTRAP + "hfile.HFileBootstrapIndex",
                                     _BOOTSTRAP + "NoOpBootstrapIndex"})
CLASS_KEYS = {"hoodie.table.keygenerator.class": KEYGEN_CLASSES,
              "hoodie.compaction.payload.class": PAYLOAD_CLASSES,
              "hoodie.datasource.write.payload.class": PAYLOAD_CLASSES,
              "hoodie.bootstrap.index.class": BOOTSTRAP_INDEX_CLASSES}
_FILE_FORMATS = frozenset({"PARQUET", "HOODIE_LOG", "HFILE", "ORC", "LANCE"})
_KEYGEN_TYPES = frozenset({"SIMPLE", "SIMPLE_AVRO", "COMPLEX", "COMPLEX_AVRO", "TIMESTAMP",
                           "TIMESTAMP_AVRO", "CUSTOM", "CUSTOM_AVRO", "NON_PARTITION",
                           "NON_PARTITION_AVRO", "GLOBAL_DELETE", "GLOBAL_DELETE_AVRO",
                           "AUTO_RECORD", "AUTO_RECORD_AVRO", "HOODIE_TABLE_METADATA",
                           "SPARK_SQL", "SPARK_SQL_UUID", "SPARK_SQL_MERGE_INTO"})
_PAYLOAD_TYPES = frozenset({"AWS_DMS_AVRO", "HOODIE_AVRO", "HOODIE_AVRO_DEFAULT",
                            "EVENT_TIME_AVRO", "OVERWRITE_NON_DEF_LATEST_AVRO",
                            "OVERWRITE_LATEST_AVRO", "PARTIAL_UPDATE_AVRO",
                            "MYSQL_DEBEZIUM_AVRO", "POSTGRES_DEBEZIUM_AVRO", "HOODIE_METADATA",
                            "VALIDATE_DUPLICATE_AVRO", "EXPRESSION_AVRO"})
ENUM_KEYS: Mapping[str, frozenset[str]] = {
    "hoodie.table.type": frozenset({"COPY_ON_WRITE", "MERGE_ON_READ"}),
    "hoodie.table.version": frozenset(str(v) for v in range(10)),
    "hoodie.table.initial.version": frozenset(str(v) for v in range(10)),
    "hoodie.timeline.layout.version": frozenset({"0", "1", "2"}),
    "hoodie.table.timeline.timezone": frozenset({"LOCAL", "UTC"}),
    **{k: _FILE_FORMATS for k in ("hoodie.table.base.file.format", "hoodie.table.ro.file.format",
                                  "hoodie.table.log.file.format", "hoodie.table.rt.file.format")},
    "hoodie.table.keygenerator.type": _KEYGEN_TYPES,
    "hoodie.compaction.payload.type": _PAYLOAD_TYPES,
    "hoodie.record.merge.mode": frozenset({"COMMIT_TIME_ORDERING", "EVENT_TIME_ORDERING",
                                           "CUSTOM"}),
    "hoodie.bootstrap.index.type": frozenset({"HFILE", "NONE"}),
    "hoodie.table.format": frozenset({"native"}),
}
UUID_KEYS = ("hoodie.record.merge.strategy.id", "hoodie.compaction.record.merger.strategy")

MAX_PATH_CHARS = 1024  # a path-valued property longer than this is refused
META, TIMELINE, BASE = ".hoodie", "timeline", "base"  # what a path value is joined to
# path keys: (Hudi's default, the directory Hudi joins the value to)
PATH_KEYS = {
    "hoodie.archivelog.folder": ("archived", META),
    "hoodie.timeline.path": ("timeline", META),
    "hoodie.timeline.history.path": ("history", TIMELINE),
    "hoodie.table.index.defs.path": (".hoodie/.index_defs/index.json", BASE),
}
MDT_PARTITION_KEYS = ("hoodie.table.metadata.partitions",
                      "hoodie.table.metadata.partitions.inflight")
BOOTSTRAP_BASE_PATH = "hoodie.bootstrap.base.path"
BOOTSTRAP_INDEX_DIR = ".aux/.bootstrap"  # below .hoodie: HFileBootstrapIndex's files
# the keys TMS's quick reader takes (timeline, releases): Java must read them the same
TMS_READ_KEYS = ("hoodie.table.version", "hoodie.table.type", "hoodie.timeline.path",
                 "hoodie.table.timeline.timezone", "hoodie.table.base.file.format")
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_CLASS_LIKE = re.compile(r".*(class|classes|classname|impl|implementation|provider|factory)",
                         re.IGNORECASE)
_MDT_PARTITION = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]{0,127}")
_PRINTABLE = re.compile(r"[\x21-\x5b\x5d-\x7e]+")  # ASCII, no blank, no backslash


def check_table(base: str, storage_options: Mapping[str, str] | None = None,
                allowed: Sequence[str] | None = None) -> int:
    """Check both properties files of the table at the checked base path ``base`` and of its
    metadata table (see the module doc); ``allowed``: the catalog's allowed locations, for a
    bootstrap table's source. Returns how many files were checked. PlanRefused (final) names
    the file and its first offending keys; StorageError / TimelineError when unreadable now."""
    try:  # before the timeline is located: that reads these files with the quick reader
        store, root = open_table(base, storage_options)
        where = locations.resolve(locations.parse(base, literal=True))
        mdt_base = f"{base.rstrip('/')}/{META}/metadata"
        mdt = locations.resolve(locations.parse(mdt_base, literal=True))
        if not mdt.is_under(where):  # a symlink to another table's metadata table
            raise PlanRefused(f"the metadata table {mdt_base[:300]!r} resolves to "
                              f"{str(mdt)[:300]!r}, outside the table")
        checked = 0
        for table, meta in ((where, store.join(root, META)),
                            (mdt, store.join(root, META, "metadata", META))):
            index = bootstrap_index(store, meta)
            if index:
                raise PlanRefused(f"{str(table)[:300]}/{META}/{index[:200]} is a bootstrap "
                                  "index: its HFiles name the source files compaction and "
                                  "clustering read, which TMS cannot check (bootstrap tables "
                                  "are not maintained)")
            for entry in store.list_dir(meta):
                if entry.name not in PROPERTIES_FILES:
                    continue
                label = f"{str(table)[:300]}/{META}/{entry.name}"
                if not entry.is_file:
                    raise PlanRefused(f"{label} is not a regular file (Hudi would follow it)")
                if entry.size > MAX_PROPERTIES_BYTES:
                    raise PlanRefused(f"{label} is {entry.size} bytes, above the "
                                      f"{MAX_PROPERTIES_BYTES} table properties may have")
                data = store.read(store.join(meta, entry.name), MAX_PROPERTIES_BYTES)
                found = file_problems(data, table, allowed)
                if found:
                    raise PlanRefused(f"Hudi table properties refused, {label}: {shown(found)}; "
                                      "no Hudi utility runs on this table until its owner "
                                      "repairs the file")
                checked += 1
        return checked
    except SymlinkRefused as e:  # Hudi would follow the link: refused, not retried
        raise PlanRefused(f"the table's metadata is reached through a symlink: {e}") from None


def bootstrap_index(store: Store, meta: str) -> str | None:
    """The first file of a bootstrap index (``.aux/.bootstrap/.partitions`` and ``.fileids``,
    where Hudi's ``HFileBootstrapIndex`` looks) below the metadata directory ``meta``, or any
    entry there that is not a directory; None when there is none (Hudi then reads no
    bootstrap source, whatever the properties say)."""
    top = store.join(meta, BOOTSTRAP_INDEX_DIR)
    for entry in store.list_dir(top):
        if not entry.is_dir:
            return f"{BOOTSTRAP_INDEX_DIR}/{entry.name}"
        inner = store.list_dir(store.join(top, entry.name))
        if inner:
            return f"{BOOTSTRAP_INDEX_DIR}/{entry.name}/{inner[0].name}"
    return None


def file_problems(data: bytes, table: Location, allowed: Sequence[str] | None) -> list[str]:
    """What in one properties file's bytes ``data`` is refused, for the table whose resolved
    base is ``table`` (empty when nothing is)."""
    try:
        pairs = java_properties(data)
    except MalformedProperties as e:
        return [str(e)]
    found: list[str] = []
    last = dict(pairs)  # what Java keeps
    quick = parse_properties(data.decode("utf-8", errors="replace"))
    for key in TMS_READ_KEYS:
        if last.get(key) != quick.get(key):
            found.append(f"{key} reads {str(last.get(key))[:80]!r} to Java but "
                         f"{str(quick.get(key))[:80]!r} to a plain key=value reader")
    timeline = last.get("hoodie.timeline.path", PATH_KEYS["hoodie.timeline.path"][0])
    anchors = {META: f"{table}/{META}", BASE: str(table),
               TIMELINE: f"{table}/{META}/{timeline}"}
    for key, (default, under) in PATH_KEYS.items():  # defaults too: a symlink may stand there
        for value in [v for k, v in pairs if k == key] or [default]:
            why = relative_path_problem(value) or path_problem(value, anchors[under], None, table)
            if why:
                found.append(f"{key} {value[:200]!r} {why}")
    for key, value in pairs:
        found += [f"{key} {value[:200]!r} {why}" for why in _value_problems(key, value, table,
                                                                           allowed)]
    return found


def _value_problems(key: str, value: str, table: Location, allowed: Sequence[str] | None
                    ) -> list[str]:
    if key in CLASS_KEYS:
        # Hudi maps the payload classes of its incubator days (com.uber.hoodie) onto its own
        named = value.replace("com.uber.hoodie", "org.apache.hudi")
        return [] if named in CLASS_KEYS[key] else ["is not one of the classes Hudi ships"]
    if _CLASS_LIKE.fullmatch(key):
        return ["names a class, provider or implementation Hudi's table config does not define"]
    if key in ENUM_KEYS and value not in ENUM_KEYS[key]:
        return [f"is not one of {', '.join(sorted(ENUM_KEYS[key]))}"]
    if key in UUID_KEYS and not _UUID.fullmatch(value):
        return ["is not a merge strategy id (a lower-case UUID)"]
    if key in MDT_PARTITION_KEYS:
        names = [] if not value else value.split(",")
        bad = [n for n in names if not _MDT_PARTITION.fullmatch(n)]
        if bad:
            return [f"names {bad[0][:100]!r}, not a plain metadata table partition name"]
        return [w for n in names if (w := path_problem(n, f"{table}/{META}/metadata", None,
                                                       table))]
    if key == BOOTSTRAP_BASE_PATH:
        return bootstrap_problems(value, allowed)
    return []


def relative_path_problem(value: str) -> str | None:
    """Why ``value`` is no relative path of safe segments (None when it is one)."""
    if not value or len(value) > MAX_PATH_CHARS:
        return f"is empty or longer than {MAX_PATH_CHARS} characters"
    if not _PRINTABLE.fullmatch(value):
        return "holds a blank, a backslash, a control or a non-ASCII character"
    return relative_shape_problem(value)


def bootstrap_problems(value: str, allowed: Sequence[str] | None) -> list[str]:
    """Why a bootstrap table's source ``value`` is refused: outside the catalog's allowed
    locations (resolved as a base path is, symlinks followed), or no locations to check."""
    if allowed is None:
        return ["(a bootstrap table's source) cannot be checked without the catalog's allowed "
                "locations: refused"]
    try:
        literal = locations.parse(value, literal=True).scheme != locations.LOCAL_SCHEME
        if not literal and "%" in value:
            return ["has '%' in a local path"]
        locations.check(value, allowed, literal=literal)
    except LocationError as e:
        return [f"(a bootstrap table's source, which compaction and clustering read) is "
                f"refused: {e}"]
    return []


__all__ = ["BOOTSTRAP_INDEX_CLASSES", "CLASS_KEYS", "ENUM_KEYS", "KEYGEN_CLASSES",
           "PAYLOAD_CLASSES", "UUID_KEYS", "check_table", "file_problems", "relative_path_problem"]
