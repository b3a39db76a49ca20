"""Hudi's own names for what ``hoodie.properties`` makes Hudi load or look up, as the
apache/hudi sources define them (Hudi 0.14 - 1.1): the classes behind ``KeyGeneratorType``,
``RecordPayloadType`` and ``BootstrapIndexType``, and the enum values Hudi's table config
takes. :mod:`tms.formats.hudi_props_guard` allows these and nothing else: a class of the
writers' would be their code loaded into a job TMS runs."""

from __future__ import annotations

from collections.abc import Mapping

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

__all__ = ["BOOTSTRAP_INDEX_CLASSES", "CLASS_KEYS", "ENUM_KEYS", "KEYGEN_CLASSES",
           "PAYLOAD_CLASSES", "UUID_KEYS"]
