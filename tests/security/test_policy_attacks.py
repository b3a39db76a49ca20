"""A hostile table owner against the real tms-api process: every policy key with malformed and
out-of-range values, Spark conf carrying JVM options / class names / paths / environment /
scripts, trigger parameters out of range, commit times outside the window. Each must get
INVALID_ARGUMENT naming the field (``table.policy[<key>]``, ``params[<key>]``,
``commit_time``), never be accepted."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import grpc
import pytest
from google.protobuf import field_mask_pb2
from google.protobuf.timestamp_pb2 import Timestamp

from tests.integration.test_api import error_of
from tests.security.conftest import (
    HUDI_CATALOG,
    OWNER,
    OWNER_TOKEN,
    WRITER_TOKEN,
    ApiProcess,
    bearer,
)
from tms import strict
from tms.formats.hudi.plugin import HudiFormat
from tms.formats.iceberg.plugin import IcebergFormat
from tms.policy.common import COMMON_KEYS
from tms.policy.schema import Kind, PolicyKey
from tms.v1 import tms_pb2

pytestmark = pytest.mark.integration
OWNER_CREDS = bearer(OWNER_TOKEN)
BAD_NUMBERS = [" 5", "5 ", "\u0665", "+5", "1_0", "0x10", "1e3", "", "99999999999999999999",
               "5\n", "\uff15", "05", "5.0", "-"]
BAD_BOOLEANS = ["yes", "no", "1", "0", "TRUE", "True", " true", "false ", "on", "off", ""]


def register(api: ApiProcess, table_id: str, fmt: str = "iceberg",
             policy: dict[str, str] | None = None, create: bool = False) -> tms_pb2.Table:
    """Register ``table_id`` in the process's catalogs: an Iceberg table ``ns.<id>`` of
    catalogs/cat or a Hudi base path in catalogs/files (made first when ``create``; the
    refused values never get as far as the catalog)."""
    name = table_id.replace(".", "_")
    if fmt == "iceberg":
        table = api.catalog.pb("ns", name, create=create, owner=OWNER, policy=policy or {})
    else:
        base = api.hudi_root / name
        if create:
            (base / ".hoodie").mkdir(parents=True, exist_ok=True)
            (base / ".hoodie" / "hoodie.properties").write_text(f"hoodie.table.name={name}\n")
        table = tms_pb2.Table(format="hudi", catalog=HUDI_CATALOG, base_path=str(base),
                              owner=OWNER, policy=policy or {})
    return api.stub.RegisterTable(tms_pb2.RegisterTableRequest(table_id=table_id, table=table),
                                  metadata=OWNER_CREDS, timeout=10)


def bad_values(k: PolicyKey) -> list[str]:
    """Malformed and out-of-range values for a key of any kind."""
    if k.kind is Kind.INT:
        lo, hi = int(k.minimum or 0), int(k.maximum or 0)
        return [*BAD_NUMBERS, str(lo - 1), str(hi + 1), str(hi * 10 + 7)]
    if k.kind is Kind.DECIMAL:
        return [" 0.5", "0,5", ".5", "5e-1", "\u0660.5", "", "nan", "-0.1",
                str(float(k.maximum or 0) + 0.05), "99999999999999999999"]
    if k.kind is Kind.MEMORY:
        lo, hi = int(k.minimum or 0), int(k.maximum or 0)
        return ["4", " 4g", "4 g", "4gb", "+4g", "\u0664g", "", "99999999999999999999g",
                "4g -XX:+UnlockDiagnosticVMOptions", strict.memory_text(hi * 2),
                strict.memory_text(max(lo // 2, 1024))]
    if k.kind is Kind.BOOL:
        return BAD_BOOLEANS
    if k.kind is Kind.CHOICE:
        return [*{c.lower() for c in k.choices} - set(k.choices), f" {k.choices[0]}",
                f"{k.choices[0]}\n", "", "x" * 300]
    if k.kind is Kind.ZONE:
        return ["../../../../etc/passwd", "Mars/Olympus", " UTC", "UTC\n", "", "\u0661"]
    if k.kind is Kind.TEXT:
        return ["id; DROP TABLE x", "id\nDESC", "`id`", "id) --", "id\u0000", "a" * 2000,
                "id DESC NULLS", "a,,b"]
    return ["0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "2024-05-01", " 2024-05-01T00:00:00Z",
            "2024-05-01T00:00:00+02:00", "now", ""]


def _refused(call, field: str) -> None:
    code, fields = error_of(call)
    assert code == grpc.StatusCode.INVALID_ARGUMENT, field
    assert field in fields, (field, fields)


ICEBERG_KEYS = sorted({**COMMON_KEYS, **IcebergFormat.policy_keys}.items())
HUDI_KEYS = sorted(HudiFormat.policy_keys.items())


@pytest.mark.parametrize(("key", "spec"), ICEBERG_KEYS, ids=[k for k, _ in ICEBERG_KEYS])
def test_every_iceberg_policy_key_refuses_bad_values(api_process: ApiProcess, key: str,
                                                     spec: PolicyKey) -> None:
    stub = api_process.stub
    for i, raw in enumerate(bad_values(spec)):
        _refused(lambda r=raw, i=i: register(api_process, f"t{i}", policy={key: r}),
                 f"table.policy[{key}]")
    got = stub.ListTables(tms_pb2.ListTablesRequest(), metadata=OWNER_CREDS).tables
    assert not [t for t in got if t.name.startswith("tables/t") and t.name[8:].isdigit()]


@pytest.mark.parametrize(("key", "spec"), HUDI_KEYS, ids=[k for k, _ in HUDI_KEYS])
def test_every_hudi_policy_key_refuses_bad_values(api_process: ApiProcess, key: str,
                                                  spec: PolicyKey) -> None:
    for i, raw in enumerate(bad_values(spec)):
        _refused(lambda r=raw, i=i: register(api_process, f"h{i}", "hudi", {key: r}),
                 f"table.policy[{key}]")


def test_unknown_keys_are_refused(api_process: ApiProcess) -> None:
    for key in ("compaction.min-small-file", "Compaction.enabled", "scheduler.pull-interval",
                "spark.master", "spark.deploy-mode", "execution.engine", "x" * 100):
        _refused(lambda k=key: register(api_process, "t", policy={k: "1"}),
                 f"table.policy[{key[:128]}]")


JVM_AND_CLASS_KEYS = [
    "spark.executor.defaultJavaOptions", "spark.driver.defaultJavaOptions",
    "spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions",
    "spark.driver.extraClassPath", "spark.executor.extraClassPath",
    "spark.driver.extraLibraryPath", "spark.executor.extraLibraryPath", "spark.jars",
    "spark.jars.packages", "spark.jars.repositories", "spark.jars.ivySettings", "spark.files",
    "spark.archives", "spark.pyspark.python", "spark.pyspark.driver.python",
    "spark.executorEnv.LD_PRELOAD", "spark.yarn.appMasterEnv.PYTHONPATH",
    "spark.kubernetes.driverEnv.JAVA_TOOL_OPTIONS",
    "spark.executor.resource.gpu.discoveryScript", "spark.driver.resource.gpu.discoveryScript",
    "spark.shuffle.manager", "spark.shuffle.sort.io.plugin.class",
    "spark.sql.sources.commitProtocolClass", "spark.sql.parquet.output.committer.class",
    "spark.sql.catalog.evil", "spark.sql.catalog.cat.catalog-impl", "spark.sql.extensions",
    "spark.plugins", "spark.executor.plugins", "spark.sql.queryExecutionListeners",
    "spark.extraListeners", "spark.master", "spark.submit.deployMode", "spark.sql.warehouse.dir",
    "spark.hadoop.fs.s3a.aws.credentials.provider", "spark.sql.hive.metastore.jars",
    # the deletion fence: its file systems, roots and the submit-only mark are the operator's
    "spark.hadoop.fs.file.impl", "spark.hadoop.fs.gs.impl", "spark.hadoop.tms.fence.roots",
    "spark.hadoop.tms.fence.extra-roots", "spark.hadoop.tms.fence.inner.hdfs.impl",
    "spark.tms.fence.required",
    "spark.serializer", "spark.kryo.registrator", "spark.redaction.regex",
    "spark.driver.log.dfsDir", "spark.eventLog.dir", "spark.local.dir",
    "spark.sql.streaming.checkpointLocation", "spark.executor.memory",
    "spark.dynamicAllocation.maxExecutors", "spark.sql.shuffle.partitions.x",
]


@pytest.mark.parametrize("conf_key", JVM_AND_CLASS_KEYS)
def test_spark_conf_cannot_carry_jvm_options_classes_paths_or_scripts(
        api_process: ApiProcess, conf_key: str) -> None:
    key = f"spark.conf.{conf_key}"
    _refused(lambda: register(api_process, "t", policy={key: "-javaagent:/tmp/evil.jar"}),
             f"table.policy[{key}]")


def test_allowed_spark_keys_refuse_smuggled_values(api_process: ApiProcess) -> None:
    for key, raw in (("spark.conf.spark.sql.shuffle.partitions", "4 --conf spark.jars=x"),
                     ("spark.conf.spark.sql.adaptive.enabled", "true\n--jars x"),
                     ("spark.conf.spark.sql.parquet.compression.codec", "org.Evil"),
                     ("spark.executor-memory", "4g --driver-java-options=-Dx"),
                     ("spark.driver-cores", "2 --class Evil")):
        _refused(lambda k=key, r=raw: register(api_process, "t", policy={k: r}),
                 f"table.policy[{key}]")


def test_a_level_its_codec_refuses_is_refused_when_set(api_process: ApiProcess) -> None:
    """The schema takes 0-22 (zstd's range); set together with gzip, a level its
    writer refuses is INVALID_ARGUMENT at once, in a policy or a trigger's parameters."""
    for codec, level in (("gzip", "10"), ("gzip", "0"), ("gzip", "22")):
        _refused(lambda c=codec, lv=level: register(api_process, "lvl", policy={
            "compaction.compression-codec": c, "compaction.compression-level": lv}),
            "table.policy[compaction.compression-level]")
    register(api_process, "lvl_ok", policy={"compaction.compression-codec": "gzip",
                                            "compaction.compression-level": "9"}, create=True)
    _refused(lambda: _trigger(api_process.stub, "lvl_ok", "compaction", {
        "compression-codec": "gzip", "compression-level": "15"}), "params[compression-level]")


def test_update_refuses_what_registration_refuses(api_process: ApiProcess) -> None:
    stub = api_process.stub
    register(api_process, "upd", policy={"spark.conf.spark.sql.shuffle.partitions": "64",
                                         "spark.executor-memory": "4g"}, create=True)
    for key, raw in (("scheduler.pull-interval-s", "99999999999999999999"),
                     ("spark.conf.spark.executor.defaultJavaOptions", "-Dx"),
                     ("compaction.enabled", "yes")):
        _refused(lambda k=key, r=raw: stub.UpdateTable(tms_pb2.UpdateTableRequest(
            table=tms_pb2.Table(name="tables/upd", policy={k: r}),
            update_mask=field_mask_pb2.FieldMask(paths=["policy"])), metadata=OWNER_CREDS),
            f"table.policy[{key}]")
    got = stub.GetTable(tms_pb2.GetTableRequest(name="tables/upd"), metadata=OWNER_CREDS)
    assert dict(got.policy) == {"spark.conf.spark.sql.shuffle.partitions": "64",
                                "spark.executor-memory": "4g"}


def _trigger(stub, table: str, action: str, params: dict[str, str]) -> tms_pb2.Operation:
    return stub.TriggerOperation(tms_pb2.TriggerOperationRequest(
        parent=f"tables/{table}", action=action, params=params), metadata=OWNER_CREDS,
        timeout=10)


ICEBERG_PARAMS = [(a, k, s) for a, keys in sorted(IcebergFormat.action_params.items())
                  for k, s in sorted(keys.items())]


def test_trigger_parameters_go_through_the_schema(api_process: ApiProcess) -> None:
    stub = api_process.stub
    register(api_process, "trig", create=True)
    register(api_process, "h", "hudi", create=True)
    _refused(lambda: _trigger(stub, "trig", "compaction", {"target-file-size-bytes": "-1"}),
             "params[target-file-size-bytes]")
    for action, key, spec in ICEBERG_PARAMS:
        for raw in bad_values(spec):
            _refused(lambda a=action, k=key, r=raw: _trigger(stub, "trig", a, {k: r}),
                     f"params[{key}]")
    for action in IcebergFormat.actions:
        for key in ("io-impl", "spark.executor.extraJavaOptions", "catalog-impl", "options"):
            _refused(lambda a=action, k=key: _trigger(stub, "trig", a, {k: "x"}),
                     f"params[{key}]")
    for action, keys in HudiFormat.action_params.items():
        for key, spec in keys.items():
            for raw in bad_values(spec):
                _refused(lambda a=action, k=key, r=raw: _trigger(stub, "h", a, {k: r}),
                         f"params[{key}]")
    _refused(lambda: _trigger(stub, "h", "clean", {"mode": "execute"}), "params[mode]")
    ops = stub.ListOperations(tms_pb2.ListOperationsRequest(parent="tables/trig"),
                              metadata=OWNER_CREDS)
    assert list(ops.operations) == []


def _ts(when: datetime) -> Timestamp:
    ts = Timestamp()
    ts.FromDatetime(when)
    return ts


def test_commit_times_outside_the_window_are_refused(api_process: ApiProcess) -> None:
    stub = api_process.stub
    register(api_process, "commits", create=True)
    writer = bearer(WRITER_TOKEN)
    now = datetime.now(UTC)
    bad = [datetime(1, 1, 1, tzinfo=UTC), datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC),
           datetime(1999, 12, 31, 23, 59, 59, tzinfo=UTC), now + timedelta(hours=2)]
    for when in bad:
        _refused(lambda w=when: stub.NotifyCommit(tms_pb2.NotifyCommitRequest(
            table="tables/commits", commit_id="1", commit_time=_ts(w)), metadata=writer),
            "commit_time")
        _refused(lambda w=when: stub.NotifyCommits(tms_pb2.NotifyCommitsRequest(commits=[
            tms_pb2.NotifyCommitRequest(table="tables/commits", commit_id="2"),
            tms_pb2.NotifyCommitRequest(table="tables/commits", commit_id="3",
                                        commit_time=_ts(w))]),
            metadata=writer), "commits[1].commit_time")
    ok = stub.NotifyCommit(tms_pb2.NotifyCommitRequest(
        table="tables/commits", commit_id="4", commit_time=_ts(now - timedelta(days=1))),
        metadata=writer)
    assert not ok.duplicate
    got = stub.GetTable(tms_pb2.GetTableRequest(name="tables/commits"), metadata=OWNER_CREDS)
    assert got.commit_count == 1
