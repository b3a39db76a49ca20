"""Pending Hudi plans as an attacker writes them, and as Hudi wrote the real fixtures' plans.

Each attack copies a real fixture table into a temporary lake next to another tenant's table,
plants a pending plan written with fastavro in the schema of that fixture's own real plan (read
from the plan file's header; the record changed), and checks that the plan is refused with a
reason naming the instant and the offending value, that spark-submit never starts and that the
other tenant's files are untouched. The genuine plans of all the fixtures must pass.
"""

from __future__ import annotations

import io
import json
import os
import re
import zipfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import fastavro
import pytest

from tests.unit.fakes import make_op, make_table
from tests.unit.hudi_submit import run_with_fake_submit
from tests.unit.test_hudi_jobs import WRITER
from tms.domain import OperationState
from tms.formats.hudi.plan_guard import check_table
from tms.formats.hudi.plan_paths import problems
from tms.formats.hudi.plans import MAX_PLAN_BYTES, PLAN_ACTIONS, PlanRefused, read_pending
from tms.formats.hudi.plugin import HudiFormat
from tms.formats.storage import LocalStore
from tms.locations import parse, resolve

REPO_ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").is_file())
FIXTURES = REPO_ROOT / "tests" / "fixtures" / "hudi"
ZIPS = sorted(p.name for p in FIXTURES.glob("*.zip")) if FIXTURES.is_dir() else []
# where the writers had the tables whose plans name absolute paths (as their plans say)
_GEN = "/tmp/v9-gen/warehouse/v9_txns_"
ORIGINAL = {
    **{f"sample_table__{kind}__{'avro__' if kind == 'mor' else ''}v9_txns_{t}.zip":
       f"{_GEN}{kind}_{t}" for kind in ("cow", "mor")
       for t in ("complex_meta", "complex_nometa", "nonpart_meta", "nonpart_nometa",
                 "simple_meta", "simple_nometa")},
    "sample_table__mor__avro__v9_nonpartitioned_rollback.zip":
        "/opt/data/warehouse/v9_nonpartitioned_rollback_mor",
    "sample_table__mor__parquet__v6_nonpartitioned_rollback.zip":
        "/opt/data/external_tables/v6_nonpartitioned_rollback",
}
_PLAN_FILE = re.compile(r"(\d{14,})\.([a-z]+)\.(requested|inflight)")
_DONE_FILE = re.compile(r"(\d{14,})(?:_\d{14,})?\.([a-z]+)")
LATER = "20990101000000000"  # a planted instant, after everything on the fixtures' timelines
COMPACTION_ZIP = "quickstart_trips_table__mor__avro__v8_trips_8i3u1d.zip"
CLUSTERING_ZIP = "sample_table__mor__avro__v9_txns_simple_meta.zip"
ROLLBACK_ZIP = "sample_table__mor__avro__v9_nonpartitioned_rollback.zip"
# Hudi's HoodieCleanerPlan model (hudi-common/src/main/avro/HoodieCleanerPlan.avsc): no
# fixture holds a clean plan
CLEANER_PLAN: dict[str, Any] = {
    "type": "record", "name": "HoodieCleanerPlan", "namespace": "org.apache.hudi.avro.model",
    "fields": [
        {"name": "earliestInstantToRetain", "default": None, "type": ["null", {
            "type": "record", "name": "HoodieActionInstant", "fields": [
                {"name": n, "type": "string"} for n in ("timestamp", "action", "state")]}]},
        {"name": "policy", "type": "string"},
        {"name": "filesToBeDeletedPerPartition", "default": None, "type": [
            "null", {"type": "map", "values": {"type": "array", "items": "string"}}]},
        {"name": "version", "type": ["int", "null"], "default": 1},
        {"name": "filePathsToBeDeletedPerPartition", "default": None, "type": [
            "null", {"type": "map", "values": {"type": "array", "items": {
                "type": "record", "name": "HoodieCleanFileInfo", "fields": [
                    {"name": "filePath", "type": ["null", "string"], "default": None},
                    {"name": "isBootstrapBaseFile", "type": ["null", "boolean"],
                     "default": None}]}}}]},
        {"name": "partitionsToBeDeleted", "default": None,
         "type": ["null", {"type": "array", "items": "string"}]}]}

pytestmark = pytest.mark.skipif(not ZIPS, reason=f"Hudi fixtures not found at {FIXTURES}")


def unzip(name: str, dest: Path) -> Path:
    """The fixture's table, extracted under ``dest``: its base path, symlinks resolved."""
    with zipfile.ZipFile(FIXTURES / name) as zf:
        members = [m for m in zf.namelist() if not m.startswith("__MACOSX")]
        zf.extractall(dest, members)
    top = {m.split("/")[0] for m in members}.pop()
    return (dest / top).resolve()


def timelines(base: Path) -> list[tuple[Path, Path]]:
    """(timeline directory, table base) of the table and of its metadata table."""
    out = []
    for table in (base, base / ".hoodie" / "metadata"):
        props = table / ".hoodie" / "hoodie.properties"
        if props.is_file():
            version = int(re.search(r"hoodie\.table\.version=(\d+)", props.read_text())[1])
            out.append((table / ".hoodie" / ("timeline" if version >= 8 else ""), table))
    return out


def uncomplete(timeline: Path) -> int:
    """Make every instant with a plan file pending again (its completed file removed), as a
    writer that died after planning leaves it; the plan files that are Avro, counted."""
    names = os.listdir(timeline)
    planned = {m[1] for n in names if (m := _PLAN_FILE.fullmatch(n)) and m[2] in PLAN_ACTIONS}
    for n in names:
        if (m := _DONE_FILE.fullmatch(n)) and m[1] in planned:
            (timeline / n).unlink()
    return sum(1 for n in names if (m := _PLAN_FILE.fullmatch(n)) and m[2] in PLAN_ACTIONS
               and (timeline / n).read_bytes()[:4] == b"Obj\x01")


def real_plan(zip_name: str, suffix: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(writer schema, record) of the fixture's first plan file ending in ``suffix``."""
    with zipfile.ZipFile(FIXTURES / zip_name) as zf:
        member = next(m for m in sorted(zf.namelist()) if m.endswith(suffix)
                      and "/metadata/" not in m and not m.startswith("__MACOSX"))
        rd = fastavro.reader(io.BytesIO(zf.read(member)))
        return json.loads(rd.metadata["avro.schema"]), next(iter(rd))  # type: ignore[return-value]


def clustering_plan_in(base: Path) -> bytes:
    """The v9 fixture's real clustering plan with its files moved into the table at ``base``
    (as written it names where its own table was generated: any other table refuses it)."""
    schema, record = real_plan(CLUSTERING_ZIP, ".clustering.requested")
    for group in record["clusteringPlan"]["inputGroups"]:
        for s in group["slices"]:
            name = s["dataFilePath"].rsplit("/", 1)[1]
            s["dataFilePath"] = f"file:{base}/{s['partitionPath']}/{name}"
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(schema), [record])
    return out.getvalue()


def plant(base: Path, name: str, schema: dict[str, Any], record: dict[str, Any]) -> Path:
    (tl, _), *_ = timelines(base)
    path = tl / name
    with path.open("wb") as f:
        fastavro.writer(f, fastavro.parse_schema(schema), [record])
    return path


@pytest.fixture
def lake(tmp_path: Path) -> dict[str, Path]:
    """A lake with another tenant's table holding a secret file."""
    other = tmp_path / "lake" / "b" / "other_table" / "part"
    other.mkdir(parents=True)
    (other / "secret.parquet").write_bytes(b"the other tenant's data")
    return {"lake": (tmp_path / "lake").resolve(), "secret": (other / "secret.parquet").resolve()}


def table_of(lake: dict[str, Path], zip_name: str) -> Path:
    return unzip(zip_name, lake["lake"] / "a")


def refused(base: Path, *words: str, check: Any = None) -> str:
    """The refusal of ``base`` by ``check`` (the plan guard's ``check_table`` by default),
    which must name every one of ``words``."""
    with pytest.raises(PlanRefused) as e:
        (check or check_table)(str(base))
    for w in words:
        assert w in str(e.value), str(e.value)
    return str(e.value)


# the genuine plans -------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ZIPS)
def test_the_fixtures_genuine_plans_all_pass(tmp_path: Path, name: str) -> None:
    base = unzip(name, tmp_path / "lake")
    assert check_table(str(base)) == 0  # shipped with every plan completed
    total = 0
    for tl, table in timelines(base):
        avro = uncomplete(tl)
        plans = read_pending(LocalStore(), str(tl))
        assert len(plans) == avro  # every plan file decoded, none skipped
        total += avro
        where = (resolve(parse(ORIGINAL[name] + str(table)[len(str(base)):]))
                 if name in ORIGINAL else resolve(parse(str(table))))
        for plan in plans:
            assert problems(plan, where) == [], plan.label
    if name in ORIGINAL:  # moved since: the plans name the old place, where Hudi would act
        refused(base, "outside the table")
    else:
        assert check_table(str(base)) == total


def test_there_are_genuine_plans_of_each_kind(tmp_path: Path) -> None:
    kinds = set()
    for name in ZIPS:
        base = unzip(name, tmp_path / name)
        for tl, _ in timelines(base):
            uncomplete(tl)
            kinds |= {p.schema_name.rsplit(".", 1)[-1] for p in read_pending(LocalStore(),
                                                                              str(tl))}
    assert {"HoodieCompactionPlan", "HoodieRequestedReplaceMetadata", "HoodieRollbackPlan",
            "HoodieIndexPlan"} <= kinds


# the attacks -------------------------------------------------------------------------------------
def test_a_clean_plan_deleting_another_tenants_file(lake: dict[str, Path]) -> None:
    base = table_of(lake, COMPACTION_ZIP)
    plan = {"earliestInstantToRetain": None, "policy": "KEEP_LATEST_COMMITS",
            "filesToBeDeletedPerPartition": None, "version": 2, "partitionsToBeDeleted": None,
            "filePathsToBeDeletedPerPartition": {"city=chennai": [
                {"filePath": f"file:{base}/city=chennai/old.parquet",
                 "isBootstrapBaseFile": False}]}}
    plant(base, f"{LATER}.clean.requested", CLEANER_PLAN, plan)
    assert check_table(str(base)) == 1  # a plan of the table's own files passes
    plan["filePathsToBeDeletedPerPartition"]["city=chennai"].append(
        {"filePath": str(lake["secret"]), "isBootstrapBaseFile": False})
    plant(base, f"{LATER}.clean.requested", CLEANER_PLAN, plan)
    refused(base, f"{LATER} clean", str(lake["secret"]), "outside the table")
    plan["filePathsToBeDeletedPerPartition"] = None
    plan["filesToBeDeletedPerPartition"] = {"../../../b/other_table/part": ["secret.parquet"]}
    plant(base, f"{LATER}.clean.requested", CLEANER_PLAN, plan)
    refused(base, "'.' or '..' segment")
    assert lake["secret"].read_bytes() == b"the other tenant's data"


def test_a_rollback_plan_deleting_another_tenants_file(lake: dict[str, Path]) -> None:
    base = table_of(lake, ROLLBACK_ZIP)
    schema, record = real_plan(ROLLBACK_ZIP, ".rollback.requested")
    record["instantToRollback"]["commitTime"] = "20990101000000001"
    record["RollbackRequests"][0]["filesToBeDeleted"] = [str(base / "mine.parquet")]
    plant(base, f"{LATER}.rollback.requested", schema, record)
    assert check_table(str(base)) == 1
    record["RollbackRequests"][0]["filesToBeDeleted"] = [str(lake["secret"])]
    plant(base, f"{LATER}.rollback.requested", schema, record)
    refused(base, f"{LATER} rollback", "filesToBeDeleted", str(lake["secret"]))
    record["RollbackRequests"][0]["filesToBeDeleted"] = []
    record["RollbackRequests"][0]["logBlocksToBeDeleted"] = {
        f"s3://other-bucket/t/{LATER}.log.1": 10}
    plant(base, f"{LATER}.rollback.requested", schema, record)
    refused(base, "logBlocksToBeDeleted key", "s3://other-bucket")


@pytest.mark.parametrize("change,words", [
    ({"partitionPath": "../../b/other_table/part"}, ("partitionPath", "'..'")),
    ({"dataFilePath": "{secret}"}, ("dataFilePath", "outside the table")),
    ({"deltaFilePaths": ["file://{secret}"]}, ("deltaFilePaths", "outside the table")),
    ({"bootstrapFilePath": "hdfs://namenode/other/x.parquet"}, ("bootstrapFilePath",)),
    ({"dataFilePath": "x.parquet", "partitionPath": "%2e%2e/%2e%2e/b"}, ()),  # literal: inside
])
def test_a_compaction_plan_reaching_out(lake: dict[str, Path], change: dict[str, Any],
                                        words: tuple[str, ...]) -> None:
    base = table_of(lake, COMPACTION_ZIP)
    schema, record = real_plan(COMPACTION_ZIP, ".compaction.requested")
    plant(base, f"{LATER}.compaction.requested", schema, record)
    assert check_table(str(base)) == 1  # the genuine plan, pending again, passes
    op = record["operations"][0]
    for key, value in change.items():
        op[key] = ([v.format(secret=lake["secret"]) for v in value] if isinstance(value, list)
                   else value.format(secret=lake["secret"]))
    plant(base, f"{LATER}.compaction.requested", schema, record)
    if not words:
        assert check_table(str(base)) == 1
        return
    refused(base, f"{LATER} compaction", *words)


def test_a_compaction_plan_naming_a_class_of_its_own(lake: dict[str, Path]) -> None:
    base = table_of(lake, COMPACTION_ZIP)
    schema, record = real_plan(COMPACTION_ZIP, ".compaction.requested")
    for name in ("org.apache.hudi.table.action.compact.LogCompactionExecutionHelper", ""):
        record["strategy"] = {"compactorClassName": name, "strategyParams": {}}
        plant(base, f"{LATER}.compaction.requested", schema, record)
        assert check_table(str(base)) == 1
    record["strategy"] = {"compactorClassName": "com.evil.Compactor", "strategyParams": {}}
    plant(base, f"{LATER}.compaction.requested", schema, record)
    refused(base, "compactorClassName", "com.evil.Compactor")


def _clustering(base: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The fixture's clustering plan, its paths moved to where the copy is."""
    rd = fastavro.reader(io.BytesIO(clustering_plan_in(base)))
    return json.loads(rd.metadata["avro.schema"]), next(iter(rd))  # type: ignore[return-value]


def test_a_clustering_plan_with_a_foreign_file_or_class(lake: dict[str, Path]) -> None:
    base = table_of(lake, CLUSTERING_ZIP)
    schema, record = _clustering(base)
    plant(base, f"{LATER}.clustering.requested", schema, record)
    assert check_table(str(base)) == 1
    record["clusteringPlan"]["inputGroups"][0]["slices"][0]["dataFilePath"] = \
        f"file:{lake['secret']}"
    plant(base, f"{LATER}.clustering.requested", schema, record)
    refused(base, f"{LATER} clustering", "dataFilePath", str(lake["secret"]))
    schema, record = _clustering(base)
    record["clusteringPlan"]["strategy"]["strategyClassName"] = "org.apache.hudi.Evil"
    plant(base, f"{LATER}.clustering.requested", schema, record)
    refused(base, "strategyClassName", "org.apache.hudi.Evil")
    schema, record = _clustering(base)
    record["clusteringPlan"]["strategy"]["strategyParams"] = {
        "hoodie.layout.optimize.class": "com.evil.Layout"}
    plant(base, f"{LATER}.clustering.requested", schema, record)
    refused(base, "com.evil.Layout")


def test_a_symlinked_partition_pointing_outside(lake: dict[str, Path]) -> None:
    base = table_of(lake, COMPACTION_ZIP)
    schema, record = real_plan(COMPACTION_ZIP, ".compaction.requested")
    (base / "city=elsewhere").symlink_to(lake["secret"].parent, target_is_directory=True)
    record["operations"][0]["partitionPath"] = "city=elsewhere"
    record["operations"][0]["dataFilePath"] = "secret.parquet"
    plant(base, f"{LATER}.compaction.requested", schema, record)
    refused(base, "partitionPath 'city=elsewhere'", str(lake["secret"].parent))
    (base / "city=chennai" / "evil.parquet").symlink_to(lake["secret"])  # a file linked out
    for partition in ("city=chennai", f"file:{base}/city=chennai", f"{base}/city=chennai"):
        record["operations"][0]["partitionPath"] = partition
        record["operations"][0]["dataFilePath"] = "evil.parquet"
        plant(base, f"{LATER}.compaction.requested", schema, record)
        refused(base, "dataFilePath 'evil.parquet'", str(lake["secret"]))


def test_a_metadata_table_or_properties_through_a_symlink(lake: dict[str, Path]) -> None:
    base = table_of(lake, COMPACTION_ZIP)
    other = table_of(lake, ROLLBACK_ZIP)
    mdt = base / ".hoodie" / "metadata"
    os.rename(mdt, base / "mdt-away")
    mdt.symlink_to(other / ".hoodie" / "metadata")
    refused(base, "metadata table", "outside the table")
    mdt.unlink()
    os.rename(base / "mdt-away", mdt)  # the metadata table's own properties linked elsewhere
    mdt_props = mdt / ".hoodie" / "hoodie.properties"
    mdt_props.unlink()
    mdt_props.symlink_to(other / ".hoodie" / "metadata" / ".hoodie" / "hoodie.properties")
    refused(base, "metadata/.hoodie/hoodie.properties is not a regular file")
    props = other / ".hoodie" / "hoodie.properties"
    props.rename(other / "props-away")
    (other / ".hoodie" / "hoodie.properties.backup").unlink(missing_ok=True)
    props.symlink_to(base / ".hoodie" / "hoodie.properties")
    refused(other, "not a regular file")


@pytest.mark.parametrize("content,words", [
    (b"garbage, not Avro", "not an Avro container"),
    (b"Obj\x01\x02\x14avro.codec", "cannot be decoded"),  # a header cut short
    (b"Obj\x01" + b"\xff" * 64, "cannot be decoded"),
])
def test_a_plan_that_is_not_one(lake: dict[str, Path], content: bytes, words: str) -> None:
    base = table_of(lake, COMPACTION_ZIP)
    (tl, _), *_ = timelines(base)
    (tl / f"{LATER}.compaction.requested").write_bytes(content)
    refused(base, f"{LATER}", words)


def test_a_truncated_a_compressed_and_a_bomb_plan(lake: dict[str, Path]) -> None:
    base = table_of(lake, COMPACTION_ZIP)
    schema, record = real_plan(COMPACTION_ZIP, ".compaction.requested")
    path = plant(base, f"{LATER}.compaction.requested", schema, record)
    path.write_bytes(path.read_bytes()[:-40])
    refused(base, "cannot be decoded")
    with path.open("wb") as f:
        fastavro.writer(f, fastavro.parse_schema(schema), [record], codec="deflate")
    refused(base, "codec 'deflate'")
    bomb = {"type": "record", "name": "HoodieCompactionPlan",
            "fields": [{"name": "operations", "type": {"type": "array", "items": "null"}}]}
    with path.open("wb") as f:
        fastavro.writer(f, fastavro.parse_schema(bomb), [{"operations": [None] * 3}])
    refused(base, "take no bytes")


def test_an_oversized_plan_is_refused_unread(lake: dict[str, Path]) -> None:
    base = table_of(lake, COMPACTION_ZIP)
    (tl, _), *_ = timelines(base)
    with (tl / f"{LATER}.clean.requested").open("wb") as f:
        f.truncate(MAX_PLAN_BYTES + 1)  # sparse: its size is all that is looked at
    refused(base, f"{MAX_PLAN_BYTES + 1} bytes")
    (tl / f"{LATER}.clean.requested").unlink()
    (tl / f"{LATER}.rollback.requested").symlink_to(lake["secret"])
    refused(base, "not a regular file")


def test_a_planted_plan_never_reaches_spark_submit(lake: dict[str, Path], tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Through the executor with the spark-submit engine: the operation fails, not retried,
    naming the plan, before spark-submit (a script that would delete the file) starts."""
    base = table_of(lake, ROLLBACK_ZIP)
    schema, record = real_plan(ROLLBACK_ZIP, ".rollback.requested")
    record["RollbackRequests"][0]["filesToBeDeleted"] = [str(lake["secret"])]
    plant(base, f"{LATER}.rollback.requested", schema, record)
    outcome, started = run_with_fake_submit(lake, base, tmp_path, monkeypatch)
    assert outcome.state is OperationState.FAILED and not outcome.retryable
    assert f"{LATER} rollback" in (outcome.error or "")
    assert str(lake["secret"]) in (outcome.error or "")
    assert not started and lake["secret"].read_bytes() == b"the other tenant's data"
    # the same run reaches spark-submit once the plan is gone
    (timelines(base)[0][0] / f"{LATER}.rollback.requested").unlink()
    assert run_with_fake_submit(lake, base, tmp_path / "after", monkeypatch)[1]


def test_a_path_written_as_bytes_is_read_as_hudi_would(lake: dict[str, Path]) -> None:
    """Avro lets a writer's ``bytes`` fill a reader's ``string``: Hudi reads such a path, so
    the guard does too (and refuses bytes that are no UTF-8)."""
    base = table_of(lake, COMPACTION_ZIP)
    schema, record = real_plan(COMPACTION_ZIP, ".compaction.requested")
    op_schema = schema["fields"][0]["type"][1]["items"]
    for field in op_schema["fields"]:
        if field["name"] == "partitionPath":
            field["type"] = ["null", "bytes"]
    for op in record["operations"]:
        op["partitionPath"] = op["partitionPath"].encode()
    plant(base, f"{LATER}.compaction.requested", schema, record)
    assert check_table(str(base)) == 1
    record["operations"][0]["partitionPath"] = b"../../b/other_table/part"
    plant(base, f"{LATER}.compaction.requested", schema, record)
    refused(base, "partitionPath '../../b/other_table/part'")
    record["operations"][0]["partitionPath"] = b"\xff\xfe"
    plant(base, f"{LATER}.compaction.requested", schema, record)
    refused(base, f"{LATER} compaction", "not UTF-8")


def test_the_scheduler_shows_the_refusal_and_runs_nothing(lake: dict[str, Path]) -> None:
    """Inspection reads the plans too: no decision runs, each says why (ExplainTable shows
    the decisions' reasons), and the executor's re-check leaves the refusal to the build."""
    from datetime import UTC, datetime

    from tests.unit.fakes import make_access

    base = table_of(lake, COMPACTION_ZIP)
    plugin = HudiFormat()
    table = make_table(format="hudi", base_path=str(base), table_name="t")
    access = replace(make_access(str(lake["lake"])), properties={
        f"hudi.writer.{k}": v for k, v in WRITER.items()})
    now = datetime.now(UTC)
    assert "pending_plans_refused" not in plugin.inspect(table, access)
    schema, record = real_plan(COMPACTION_ZIP, ".compaction.requested")
    record["operations"][0]["partitionPath"] = "../../b/other_table/part"
    plant(base, f"{LATER}.compaction.requested", schema, record)
    metrics = plugin.inspect(table, access)
    decisions = plugin.evaluate(table, metrics, {}, now)
    assert {d.action for d in decisions} == {"compaction", "clustering", "clean"}
    for d in decisions:
        assert not d.should_run and f"{LATER} compaction" in d.reason, d.reason
        assert "../../b/other_table/part" in d.reason
    op = make_op(action="compaction", params={"mode": "execute", "instant": LATER})
    assert plugin.recheck(table, access, op) is None
    with pytest.raises(ValueError, match=f"{LATER} compaction"):
        plugin.build_job(table, access, op)


@pytest.mark.parametrize("zip_name,suffix", [(COMPACTION_ZIP, ".compaction.requested"),
                                             (CLUSTERING_ZIP, ".clustering.requested"),
                                             (ROLLBACK_ZIP, ".rollback.requested")])
def test_every_cut_and_flipped_byte_is_a_refusal_or_a_plan(zip_name: str, suffix: str) -> None:
    """Each real plan cut at every length and with each byte flipped in turn: decoding and
    checking either works or refuses (PlanRefused), never raises anything else."""
    from tms.formats.hudi.plans import PendingPlan, decode

    schema, record = real_plan(zip_name, suffix)
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(schema), [record])
    data = out.getvalue()
    variants = [data[:n] for n in range(len(data))]
    variants += [data[:i] + bytes([data[i] ^ 0xFF]) + data[i + 1:] for i in range(len(data))]
    where = resolve(parse("/lake/t"))
    outcomes = {"refused": 0, "decoded": 0}
    for v in variants:
        try:
            name, rec = decode(v, "plan")
            problems(PendingPlan("1" * 17, "compaction", "requested", "p", name, rec), where)
            outcomes["decoded"] += 1
        except PlanRefused:
            outcomes["refused"] += 1
    assert outcomes["refused"] > len(data) // 2 and outcomes["decoded"] > 0


def test_a_schema_of_empty_records_in_an_array_is_refused() -> None:
    from tms.formats.hudi.plans import decode

    schema = {"type": "record", "name": "P", "fields": [{"name": "ops", "type": {
        "type": "array", "items": {"type": "record", "name": "Empty", "fields": []}}}]}
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(schema), [{"ops": [{}, {}]}])
    with pytest.raises(PlanRefused, match="take no bytes"):
        decode(out.getvalue(), "plan")
