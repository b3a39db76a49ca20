"""What Hudi's cleaner reads to pick partitions, as an attacker writes it, and as the real
fixtures' writers did.

Each attack copies a real fixture table into a temporary lake next to another tenant's table
and, with no write pending, either links a partition directory to the other tenant's partition
or adds a completed commit (version 6 JSON, 8/9 Avro in the schema of the fixture's own
completed file) whose partition key leads there. The cleaner would list that partition and
delete its older file slices: the attack is refused by name, spark-submit never starts, and
the other tenant's file is untouched. Every genuine table passes.
"""

from __future__ import annotations

import io
import json
import os
import re
import zipfile
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import fastavro
import pytest

from tests.unit.fakes import make_access, make_table
from tests.unit.hudi_submit import assert_refused_before_submit, run_with_fake_submit
from tests.unit.test_hudi_jobs import WRITER
from tests.unit.test_hudi_plans import FIXTURES, ZIPS, lake, table_of, timelines, unzip
from tests.unit.test_hudi_plans import refused as plan_refused
from tms.formats.hudi import clean_guard as hudi_clean_guard
from tms.formats.hudi import plan_guard as hudi_plan_guard
from tms.formats.hudi.clean_guard import check_table, partition_problem
from tms.formats.hudi.plans import MAX_PLAN_BYTES
from tms.formats.hudi.plugin import HudiFormat
from tms.locations import parse, resolve

__all__ = ["lake"]  # the fixture, used by name

LATER = "20990101000000000"
V6_COW = "sample_table__cow__v6_simplekeygen_nonhivestyle.zip"
V6_OVERWRITE = "sample_table__cow__v6_simplekeygen_nonhivestyle_overwritetable.zip"
V8_MOR = "quickstart_trips_table__mor__avro__v8_trips_8i3u1d.zip"
V9_OVERWRITE = "sample_table__cow__v9_txns_simple_overwrite.zip"
SECRET = b"the other tenant's data"
OUT = "../../b/other_table/part"  # from a/<table>: the other tenant's partition
_DONE = re.compile(r"([^.]+)\.(commit|deltacommit|replacecommit|savepoint)")


def real_completed(zip_name: str, action: str) -> bytes:
    """The fixture's first non-empty completed ``action`` file of the table itself."""
    with zipfile.ZipFile(FIXTURES / zip_name) as zf:
        for m in sorted(zf.namelist()):
            name = m.rsplit("/", 1)[-1]
            if ((d := _DONE.fullmatch(name)) and d[2] == action and "/metadata/" not in m
                    and not m.startswith("__MACOSX") and zf.read(m).strip()):
                return zf.read(m)
    raise AssertionError(f"no completed {action} in {zip_name}")


def completed(base: Path, name: str, data: bytes) -> Path:
    (tl, _), *_ = timelines(base)
    (tl / name).write_bytes(data)
    return tl / name


def json_commit(base: Path, *keys: str, action: str = "commit", zip_name: str = V6_COW,
                field: str = "partitionToWriteStats") -> None:
    meta = json.loads(real_completed(zip_name, action))
    meta[field] = {k: [] for k in keys}
    completed(base, f"{LATER}.{action}", json.dumps(meta).encode())


def avro_commit(base: Path, zip_name: str, action: str, field: str, key: str) -> None:
    """The fixture's completed ``action`` rewritten in its own schema with ``field`` keyed by
    ``key`` (as the writer of a table version 8/9 writes it)."""
    rd = fastavro.reader(io.BytesIO(real_completed(zip_name, action)))
    schema, record = json.loads(rd.metadata["avro.schema"]), next(iter(rd))
    assert isinstance(record, dict) and record[field]
    record[field] = {key: next(iter(record[field].values()))}
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(schema), [record])
    completed(base, f"{LATER}_{LATER[:-1]}1.{action}", out.getvalue())


def refused(base: Path, *words: str) -> str:
    return plan_refused(base, *words, check=check_table)


# the genuine tables ------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ZIPS)
def test_the_fixtures_genuine_tables_all_pass(tmp_path: Path, name: str) -> None:
    base = unzip(name, tmp_path / "lake")
    files = sum(1 for tl, _ in timelines(base) for n in os.listdir(tl) if _DONE.fullmatch(n))
    assert check_table(str(base)) == files


# the attacks -------------------------------------------------------------------------------------
def plant_linked_partition(lake: dict[str, Path], base: Path) -> str:
    (base / "20").rename(base / "20-moved")
    (base / "20").symlink_to(lake["secret"].parent, target_is_directory=True)
    hudi_plan_guard.check_table(str(base))  # no write pending: the plan guard lets it by
    return "/20 is not a regular file or directory"


def plant_linked_mdt_partition(lake: dict[str, Path], base: Path) -> str:
    (base / ".hoodie" / "metadata" / "files2").symlink_to(lake["secret"].parent)
    return "metadata/files2"


def plant(*keys: str) -> Callable[[dict[str, Path], Path], str]:
    def planted(lake: dict[str, Path], base: Path) -> str:
        json_commit(base, "10", *keys)
        return f"{LATER} commit"
    return planted


def plant_absolute(lake: dict[str, Path], base: Path) -> str:
    json_commit(base, str(lake["secret"].parent))
    return "is an absolute path"


def plant_file_uri(lake: dict[str, Path], base: Path) -> str:
    json_commit(base, f"file:{lake['secret'].parent}")
    return "':' before its first '/'"


def plant_escaped_dots(lake: dict[str, Path], base: Path) -> str:
    meta = json.loads(real_completed(V6_COW, "commit"))
    text = json.dumps(meta).replace('"partitionToWriteStats": {',
                                    '"partitionToWriteStats": {"\\u002e\\u002e/\\u002e\\u002e/b'
                                    '/other_table/part": [], ', 1)
    completed(base, f"{LATER}.commit", text.encode())
    return "'.' or '..' segment"


def plant_duplicate_field(lake: dict[str, Path], base: Path) -> str:
    """Jackson keeps the last of two equal fields (so does Python's json): both are read."""
    completed(base, f"{LATER}.commit", ('{"partitionToWriteStats": {"' + OUT + '": []}, '
                                        '"partitionToWriteStats": {"10": []}}').encode())
    return f"{OUT!r} has an empty, '.' or '..' segment"


def plant_v6_replaced(lake: dict[str, Path], base: Path) -> str:
    json_commit(base, OUT, action="replacecommit", zip_name=V6_OVERWRITE,
                field="partitionToReplaceFileIds")
    return "partitionToReplaceFileIds key"


def plant_v8_avro(lake: dict[str, Path], base: Path) -> str:
    avro_commit(base, V8_MOR, "deltacommit", "partitionToWriteStats", OUT)
    return f"partitionToWriteStats key {OUT!r}"


def plant_v9_replaced(lake: dict[str, Path], base: Path) -> str:
    avro_commit(base, V9_OVERWRITE, "replacecommit", "partitionToReplaceFileIds",
                f"/{lake['secret'].parent}")
    return "partitionToReplaceFileIds key"


def plant_oversized(lake: dict[str, Path], base: Path) -> str:
    with completed(base, f"{LATER}.commit", b"").open("wb") as f:
        f.truncate(MAX_PLAN_BYTES + 1)  # sparse: its listed size is all that is looked at
    return f"{MAX_PLAN_BYTES + 1} bytes"


def plant_garbage(lake: dict[str, Path], base: Path) -> str:
    completed(base, f"{LATER}.deltacommit", b"\xff\xfe garbage")
    return "neither Avro nor JSON"


def plant_linked_commit(lake: dict[str, Path], base: Path) -> str:
    (tl, _), *_ = timelines(base)
    (tl / f"{LATER}.commit").symlink_to(lake["secret"])
    return "not a regular file"


ATTACKS: dict[str, tuple[str, Callable[[dict[str, Path], Path], str]]] = {
    "linked_partition": (V6_COW, plant_linked_partition),
    "linked_mdt_partition": (V8_MOR, plant_linked_mdt_partition),
    "dotdot": (V6_COW, plant(OUT)),
    "dotdot_inside_first": (V6_COW, plant(f"10/{OUT}/../..")),
    "absolute": (V6_COW, plant_absolute),
    "file_uri": (V6_COW, plant_file_uri),
    "other_bucket": (V6_COW, plant("s3://other-bucket/p")),
    "empty_segment": (V6_COW, plant("10//20")),
    "control": (V6_COW, plant("10\n/../../b")),
    "backslash": (V6_COW, plant("..\\..\\b")),
    "metadata_dir": (V6_COW, plant(".hoodie/metadata/files")),
    "too_long": (V6_COW, plant("p/" * 600)),
    "escaped_dots": (V6_COW, plant_escaped_dots),
    "duplicate_field": (V6_COW, plant_duplicate_field),
    "v6_replaced": (V6_OVERWRITE, plant_v6_replaced),
    "v8_avro": (V8_MOR, plant_v8_avro),
    "v9_replaced": (V9_OVERWRITE, plant_v9_replaced),
    "oversized": (V6_COW, plant_oversized),
    "garbage": (V8_MOR, plant_garbage),
    "linked_commit": (V6_COW, plant_linked_commit),
}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_a_partition_reaching_out_is_refused(lake: dict[str, Path], attack: str) -> None:
    zip_name, planter = ATTACKS[attack]
    base = table_of(lake, zip_name)
    check_table(str(base))  # the copy as shipped passes
    refused(base, planter(lake, base))
    assert lake["secret"].read_bytes() == SECRET


@pytest.mark.parametrize("attack", ["linked_partition", "dotdot", "v8_avro", "v9_replaced"])
@pytest.mark.parametrize("action", ["clean", "compaction", "clustering"])
def test_a_job_that_cleans_never_reaches_spark_submit(
        lake: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, attack: str,
        action: str) -> None:
    """Through the executor: the clean, and a compaction or clustering that cleans after it
    commits (the writers' retention known), fail, not retried, naming what was refused,
    before spark-submit (a script that would delete the file) starts."""
    zip_name, planter = ATTACKS[attack]
    base = table_of(lake, zip_name)
    words = planter(lake, base)
    assert_refused_before_submit(lake, base, tmp_path, monkeypatch, action, words, SECRET)


def test_a_compaction_that_does_not_clean_is_not_refused(
        lake: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With ``hoodie.clean.automatic=false`` in the writer configuration the compaction never
    runs the cleaner: the partition check is not its business (spark-submit is reached)."""
    base = table_of(lake, V8_MOR)
    plant_v8_avro(lake, base)
    writer = {**WRITER, "hoodie.clean.automatic": "false"}
    outcome, started = run_with_fake_submit(lake, base, tmp_path, monkeypatch, "compaction",
                                            writer)
    assert started, outcome
    assert "completed Hudi instant refused" not in (outcome.error or "")


def test_the_scheduler_shows_the_refusal(lake: dict[str, Path]) -> None:
    base = table_of(lake, V8_MOR)
    plugin = HudiFormat()
    table = make_table(format="hudi", base_path=str(base), table_name="t")
    metrics = plugin.inspect(table, make_access(str(lake["lake"])))
    assert "clean_refused" not in metrics and metrics["auto_clean"] is False
    plant_v8_avro(lake, base)
    for writer, auto in (({}, False), (WRITER, True),
                         ({**WRITER, "hoodie.clean.automatic": "false"}, False)):
        access = replace(make_access(str(lake["lake"])), properties={
            f"hudi.writer.{k}": v for k, v in writer.items()})
        metrics = plugin.inspect(table, access)
        assert LATER in metrics["clean_refused"] and metrics["auto_clean"] is auto
        verdicts = {d.action: d for d in plugin.evaluate(table, metrics, {},
                                                        datetime.now(UTC))}
        assert not verdicts["clean"].should_run and LATER in verdicts["clean"].reason
        for action in ("compaction", "clustering"):
            assert (LATER in verdicts[action].reason) is auto, verdicts[action].reason


def test_the_reading_is_bounded_per_table(lake: dict[str, Path],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    base = table_of(lake, V8_MOR)
    monkeypatch.setattr(hudi_clean_guard, "MAX_COMPLETED_BYTES", 10_000)
    refused(base, "bytes of their metadata")
    monkeypatch.setattr(hudi_clean_guard, "MAX_COMPLETED_BYTES", 1 << 30)
    monkeypatch.setattr(hudi_clean_guard, "MAX_COMPLETED_FILES", 3)
    refused(base, "more than 3 completed instants")


# what Hudi takes literally -----------------------------------------------------------------------
@pytest.mark.parametrize("key", ["%2e%2e/%2e%2e/b/other_table/part", "%2E%2E",
                                 "\uff0e\uff0e/\uff0e\uff0e/b", "dt=2024-01-01%3A00",
                                 "d=1/h=10:00", "\u2025/b", "city=s\u00e3o_paulo"])
def test_percent_and_unicode_name_directories_inside(lake: dict[str, Path], key: str) -> None:
    """Hadoop's ``Path`` (and Hudi 1.x's ``StoragePath``) build the child with java.net.URI's
    multi-argument constructors, which quote ``%`` (so ``%2e%2e`` stays a directory of that
    name), and normalise no Unicode (``．．`` FULLWIDTH FULL STOPs and ``‥`` are names too):
    the key stays in the table and is accepted, as the directory it names is inside."""
    base = table_of(lake, V6_COW)
    json_commit(base, "10", key)
    assert check_table(str(base)) >= 1
    where = resolve(parse(str(base)))
    assert partition_problem(key, where) is None
    assert resolve(parse(f"{base}/{key}", literal=True)).is_under(where)


def test_a_lone_surrogate_is_refused(lake: dict[str, Path]) -> None:
    base = table_of(lake, V6_COW)
    completed(base, f"{LATER}.commit", b'{"partitionToWriteStats": {"\\ud800": []}}')
    refused(base, "not UTF-8 text")


def test_an_empty_or_null_metadata_names_no_partition(lake: dict[str, Path]) -> None:
    base = table_of(lake, V6_COW)
    completed(base, f"{LATER}.commit", b"")
    completed(base, f"{LATER[:-1]}1.commit", b'{"partitionToWriteStats": null}')
    assert check_table(str(base)) >= 2
    completed(base, f"{LATER[:-1]}2.commit", b'{"partitionToWriteStats": ["../x"]}')
    refused(base, "partitionToWriteStats is not a map")
