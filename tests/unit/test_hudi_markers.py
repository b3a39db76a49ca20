"""Failed Hudi writes as an attacker leaves them, and as the real fixtures' writers did.

Hudi rolls back a failed write before any utility runs, deleting what the write's markers or
its inflight commit metadata name. Each attack copies a real fixture table into a temporary
lake next to another tenant's table, leaves a write pending with markers (direct, or
timeline-server ``MARKERS`` files) or commit metadata (version 6 JSON, 8/9 Avro in the schema of
the fixture's own file) naming the other tenant's file, and checks the refusal, that
spark-submit never starts and that the file is untouched. The fixtures ship no markers: the
genuine test makes them by Hudi's layout from the data files each write left, and all pass.
"""

from __future__ import annotations

import io
import json
import os
import re
import zipfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import fastavro
import pytest

from tests.unit.fakes import make_op, make_table
from tests.unit.hudi_submit import run_with_fake_submit
from tests.unit.test_hudi_jobs import WRITER
from tests.unit.test_hudi_plans import FIXTURES, ORIGINAL, ZIPS, lake, table_of, timelines, unzip
from tms.domain import OperationState
from tms.formats.hudi import markers as hudi_markers
from tms.formats.hudi.markers import MAX_MARKER_BYTES, check_writes
from tms.formats.hudi.plan_guard import check_table
from tms.formats.hudi.plans import PlanRefused
from tms.formats.hudi.plugin import HudiFormat
from tms.formats.storage import LocalStore, StorageError, SymlinkRefused
from tms.locations import parse, resolve

__all__ = ["lake"]  # the fixture, used by name

LATER = "20990101000000000"
V6_COW = "sample_table__cow__v6_simplekeygen_nonhivestyle.zip"
V8_MOR = "quickstart_trips_table__mor__avro__v8_trips_8i3u1d.zip"
V9_COW = "sample_table__cow__v9_timebasedkeygen_nonhivestyle.zip"
WRITES = ("commit", "deltacommit", "replacecommit")
_PENDING = re.compile(r"(\d{14,})\.(?:([a-z]+)\.)?(requested|inflight)")
_DONE = re.compile(r"(\d{14,})(?:_\d{14,})?\.([a-z]+)")


def temp(base: Path, instant: str = LATER) -> Path:
    return base / ".hoodie" / ".temp" / instant


def pending_write(base: Path, action: str = "commit", metadata: bytes = b"") -> Path:
    """A write left inflight at LATER (as a writer that died leaves it); its inflight file."""
    (tl, _), *_ = timelines(base)
    (tl / f"{LATER}.{action}.requested").write_bytes(b"")
    inflight = tl / (f"{LATER}.inflight" if action == "commit" else f"{LATER}.{action}.inflight")
    inflight.write_bytes(metadata)
    return inflight


def ts_markers(base: Path, *lines: str, instant: str = LATER) -> None:
    """Timeline-server-based markers, as the timeline server writes them."""
    d = temp(base, instant)
    d.mkdir(parents=True, exist_ok=True)
    (d / "MARKERS.type").write_text("TIMELINE_SERVER_BASED")
    (d / "MARKERS0").write_text("".join(f"{line}\n" for line in lines))


def direct_marker(base: Path, rel: str, instant: str = LATER) -> None:
    path = temp(base, instant) / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"")


def refused(base: Path, *words: str) -> str:
    with pytest.raises(PlanRefused) as e:
        check_table(str(base))
    for w in words:
        assert w in str(e.value), str(e.value)
    return str(e.value)


def real_inflight(zip_name: str, pattern: str) -> bytes:
    """The fixture's first non-empty timeline file whose name matches ``pattern``."""
    with zipfile.ZipFile(FIXTURES / zip_name) as zf:
        for m in sorted(zf.namelist()):
            if (re.fullmatch(pattern, m.rsplit("/", 1)[-1]) and "/metadata/" not in m
                    and not m.startswith("__MACOSX") and zf.read(m).strip()):
                return zf.read(m)
    raise AssertionError(f"no {pattern} in {zip_name}")


# the genuine writes ------------------------------------------------------------------------------
def make_genuine_markers(table: Path, tl: Path) -> int:
    """Every write of the table made pending again (its completed file removed), with the
    markers Hudi wrote for it: one per data file named by its instant, direct markers for
    every other write and timeline-server ones for the rest. Returns the markers made."""
    names = os.listdir(tl)
    writes = sorted({m[1] for n in names if (m := _PENDING.fullmatch(n))
                     and (m[2] or "commit") in WRITES})
    for n in names:
        if (m := _DONE.fullmatch(n)) and m[1] in writes and m[2] in WRITES:
            (tl / n).unlink()
    files = [p.relative_to(table) for p in table.rglob("*") if p.is_file()
             and ".hoodie" not in p.relative_to(table).parts[:1]
             and not p.name.startswith(".hoodie_partition_metadata")]
    made = 0
    for i, t in enumerate(writes):
        mine = [f for f in files if t in f.name]
        markers = [f"{f.as_posix()}.marker.{'APPEND' if '.log.' in f.name else 'CREATE'}"
                   for f in mine]
        if not markers:
            continue
        if i % 2:
            ts_markers(table, *markers, instant=t)
        else:
            for m in markers:
                direct_marker(table, m, instant=t)
        made += len(markers)
    return made


@pytest.mark.parametrize("name", ZIPS)
def test_the_fixtures_genuine_writes_all_pass(tmp_path: Path, name: str) -> None:
    base = unzip(name, tmp_path / "lake")
    for tl, table in timelines(base):
        made = make_genuine_markers(table, tl)
        where = resolve(parse(str(table)))
        assert check_writes(LocalStore(), str(table), str(tl), where) == made
    if name not in ORIGINAL:  # those name where they were made in their clustering plans
        check_table(str(base))


def test_there_are_genuine_markers_of_both_kinds(tmp_path: Path) -> None:
    kinds = {"direct": 0, "MARKERS0": 0}
    for name in ZIPS:
        base = unzip(name, tmp_path / name)
        for tl, table in timelines(base):
            make_genuine_markers(table, tl)
            for d in (table / ".hoodie" / ".temp").iterdir():
                for source, _ in hudi_markers.read_markers(LocalStore(), str(d),
                                                           hudi_markers.Budget()):
                    kinds[source] += 1
    assert kinds["direct"] > 100 and kinds["MARKERS0"] > 100, kinds


# the attacks -------------------------------------------------------------------------------------
def plant_ts_dotdot(lake: dict[str, Path], base: Path) -> str:
    pending_write(base)
    ts_markers(base, "city=chennai/mine.parquet.marker.CREATE",
               "../../b/other_table/part/secret.parquet.marker.CREATE")
    return "'.' or '..' segment"


def plant_ts_absolute(lake: dict[str, Path], base: Path) -> str:
    pending_write(base)
    ts_markers(base, f"{lake['secret']}.marker.MERGE")
    return str(lake["secret"])


def plant_ts_file_uri(lake: dict[str, Path], base: Path) -> str:
    pending_write(base, "deltacommit")
    ts_markers(base, f"file://{lake['secret']}.marker.APPEND")
    return str(lake["secret"])


def plant_ts_other_bucket(lake: dict[str, Path], base: Path) -> str:
    pending_write(base)
    ts_markers(base, "s3a://other-bucket/t/p/secret.parquet.marker.CREATE")
    return "s3://other-bucket"


def plant_direct_through_partition_link(lake: dict[str, Path], base: Path) -> str:
    pending_write(base)
    (base / "city=elsewhere").symlink_to(lake["secret"].parent, target_is_directory=True)
    direct_marker(base, "city=elsewhere/secret.parquet.marker.CREATE")
    return "'city=elsewhere'"  # the tree's link is found first; the marker resolves out too


def plant_direct_link_in_markers(lake: dict[str, Path], base: Path) -> str:
    pending_write(base)
    temp(base).mkdir(parents=True)
    (temp(base) / "city=chennai").symlink_to(lake["secret"].parent, target_is_directory=True)
    return "not a regular file or directory"


def plant_linked_temp(lake: dict[str, Path], base: Path) -> str:
    pending_write(base)
    elsewhere = lake["secret"].parent.parent / "temp"
    (elsewhere / LATER / "part").mkdir(parents=True)
    (elsewhere / LATER / "part" / "secret.parquet.marker.CREATE").write_bytes(b"")
    shutil_rmtree(base / ".hoodie" / ".temp")
    (base / ".hoodie" / ".temp").symlink_to(elsewhere, target_is_directory=True)
    return ".temp is not a directory"


def plant_linked_instant_dir(lake: dict[str, Path], base: Path) -> str:
    pending_write(base)
    temp(base).parent.mkdir(parents=True, exist_ok=True)
    temp(base).symlink_to(lake["secret"].parent, target_is_directory=True)
    return f".temp entry '{LATER}' is not a regular file or directory"


def plant_v6_json(lake: dict[str, Path], base: Path) -> str:
    meta = json.loads(real_inflight(V6_COW, r"\d+\.inflight"))
    (partition, stats), *_ = meta["partitionToWriteStats"].items()
    stats[0]["path"] = "../../b/other_table/part/secret.parquet"
    pending_write(base, metadata=json.dumps(meta).encode())
    return "path '../../b/other_table/part/secret.parquet'"


def plant_v6_json_key(lake: dict[str, Path], base: Path) -> str:
    meta = json.loads(real_inflight(V6_COW, r"\d+\.inflight"))
    meta["partitionToWriteStats"] = {"../../b/other_table/part": []}
    pending_write(base, metadata=json.dumps(meta).encode())
    return "partitionToWriteStats key"


def _avro_metadata(zip_name: str, pattern: str, path: str) -> bytes:
    rd = fastavro.reader(io.BytesIO(real_inflight(zip_name, pattern)))
    schema = json.loads(rd.metadata["avro.schema"])
    record: Any = next(iter(rd))
    (partition, stats), *_ = record["partitionToWriteStats"].items()
    stats[0]["path"] = path
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(schema), [record])
    return out.getvalue()


def plant_v8_avro(lake: dict[str, Path], base: Path) -> str:
    pending_write(base, "deltacommit", _avro_metadata(V8_MOR, r"\d+\.deltacommit\.inflight",
                                                      str(lake["secret"])))
    return str(lake["secret"])


def plant_v9_avro(lake: dict[str, Path], base: Path) -> str:
    pending_write(base, metadata=_avro_metadata(V9_COW, r"\d+\.inflight",
                                                "s3://other-bucket/p/secret.parquet"))
    return "s3://other-bucket"


def plant_garbage_markers(lake: dict[str, Path], base: Path) -> str:
    pending_write(base)
    ts_markers(base, "city=chennai/mine.parquet.marker.CREATE")
    (temp(base) / "MARKERS1").write_bytes(b"\xff\xfe not UTF-8\n")
    return "not UTF-8"


def plant_oversized_markers(lake: dict[str, Path], base: Path) -> str:
    pending_write(base)
    ts_markers(base, "city=chennai/mine.parquet.marker.CREATE")
    with (temp(base) / "MARKERS1").open("wb") as f:
        f.truncate(MAX_MARKER_BYTES + 1)  # sparse: refused from its size, never read
    return f"more than {MAX_MARKER_BYTES} bytes"


def plant_linked_partition_no_markers(lake: dict[str, Path], base: Path) -> str:
    pending_write(base)
    (base / "part=elsewhere").symlink_to(lake["secret"].parent, target_is_directory=True)
    return "'part=elsewhere'"


def shutil_rmtree(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


ATTACKS: dict[str, tuple[str, Callable[[dict[str, Path], Path], str]]] = {
    "ts_dotdot": (V8_MOR, plant_ts_dotdot),
    "ts_absolute": (V6_COW, plant_ts_absolute),
    "ts_file_uri": (V8_MOR, plant_ts_file_uri),
    "ts_other_bucket": (V9_COW, plant_ts_other_bucket),
    "direct_through_partition_link": (V8_MOR, plant_direct_through_partition_link),
    "direct_link_in_markers": (V9_COW, plant_direct_link_in_markers),
    "linked_temp": (V6_COW, plant_linked_temp),
    "linked_instant_dir": (V8_MOR, plant_linked_instant_dir),
    "v6_json": (V6_COW, plant_v6_json),
    "v6_json_key": (V6_COW, plant_v6_json_key),
    "v8_avro": (V8_MOR, plant_v8_avro),
    "v9_avro": (V9_COW, plant_v9_avro),
    "garbage_markers": (V8_MOR, plant_garbage_markers),
    "oversized_markers": (V9_COW, plant_oversized_markers),
    "linked_partition_no_markers": (V6_COW, plant_linked_partition_no_markers),
}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_a_failed_write_reaching_out_is_refused(lake: dict[str, Path], attack: str) -> None:
    zip_name, plant = ATTACKS[attack]
    base = table_of(lake, zip_name)
    check_table(str(base))  # the copy as shipped passes
    words = plant(lake, base)
    if attack in ("linked_temp", "linked_instant_dir"):  # refused for the table as a whole
        refused(base, words)
    else:
        refused(base, "failed Hudi write refused", LATER, words)
    assert lake["secret"].read_bytes() == b"the other tenant's data"


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_a_failed_write_reaching_out_never_reaches_spark_submit(
        lake: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        attack: str) -> None:
    """Through the executor with the spark-submit engine: FAILED, not retried, naming the
    instant, before spark-submit (a script that would delete the file) starts."""
    zip_name, plant = ATTACKS[attack]
    base = table_of(lake, zip_name)
    words = plant(lake, base)
    outcome, started = run_with_fake_submit(lake, base, tmp_path, monkeypatch)
    assert outcome.state is OperationState.FAILED and not outcome.retryable, outcome
    assert words in (outcome.error or ""), outcome.error
    assert not started and lake["secret"].read_bytes() == b"the other tenant's data"


def test_the_scheduler_shows_the_refusal(lake: dict[str, Path]) -> None:
    from datetime import UTC, datetime

    from tests.unit.fakes import make_access

    base = table_of(lake, V8_MOR)
    plugin = HudiFormat()
    table = make_table(format="hudi", base_path=str(base), table_name="t")
    access = replace(make_access(str(lake["lake"])), properties={
        f"hudi.writer.{k}": v for k, v in WRITER.items()})
    assert "pending_plans_refused" not in plugin.inspect(table, access)
    plant_ts_dotdot(lake, base)
    metrics = plugin.inspect(table, access)
    assert LATER in metrics["pending_plans_refused"]
    for d in plugin.evaluate(table, metrics, {}, datetime.now(UTC)):
        assert not d.should_run and f"{LATER} commit" in d.reason, d.reason


def test_the_metadata_tables_failed_writes_are_checked(lake: dict[str, Path]) -> None:
    base = table_of(lake, V8_MOR)
    mdt = base / ".hoodie" / "metadata"
    (tl, _), = [t for t in timelines(base) if t[1] == mdt]
    (tl / f"{LATER}.deltacommit.requested").write_bytes(b"")
    (tl / f"{LATER}.deltacommit.inflight").write_bytes(b"")
    ts_markers(mdt, "files/files-0000-0_0-1-1_20990101000000000.hfile.marker.CREATE")
    check_table(str(base))
    ts_markers(mdt, "../../../b/other_table/part/secret.parquet.marker.CREATE")
    refused(base, f"{LATER} deltacommit", "'.' or '..' segment")
    ts_markers(mdt, f"{base}/city=chennai/x.parquet.marker.CREATE")  # the data table: not its own
    refused(base, "outside the table")


@pytest.mark.parametrize("content,words", [
    (b"city=chennai/mine.parquet\n", "is not a <file>.marker"),
    (b"city=chennai/mine.parquet.marker.DELETE\n", "is not a <file>.marker"),
    (b".marker.CREATE\n", "is not a <file>.marker"),
    (b"city=chennai/a\0b.marker.CREATE\n", "NUL"),
    # Hudi cuts at the first ".marker": the file it deletes is ../.., not the part after
    (b"../x.marker/city=chennai/ok.parquet.marker.CREATE\n", "'.' or '..' segment"),
])
def test_markers_hudi_would_not_read_as_written(lake: dict[str, Path], content: bytes,
                                                words: str) -> None:
    base = table_of(lake, V9_COW)
    pending_write(base)
    ts_markers(base)
    (temp(base) / "MARKERS0").write_bytes(content)
    refused(base, LATER, words)


@pytest.mark.parametrize("content,words", [
    (b"p/a.parquet.marker.CREATE\np/b.parq", None),  # cut mid-write: not a marker yet
    ("p/a.parquet.marker.CREATE\np/\u00e9".encode()[:-1], None),  # cut mid-character
    (b"p/a.parquet.marker.CREATE\n../../b/other_table/x.parquet.marker.CREATE", "'..'"),
    (b"p/a.parquet.marker.CREATE\n/abs/x\xff.parquet.marker.MERGE", "outside the table"),
])
def test_a_markers_file_being_written(lake: dict[str, Path], content: bytes,
                                      words: str | None) -> None:
    """A last line without its newline may be mid-write: kept when it reads as a marker
    (checked), dropped when it does not (Hudi would fail on it, deleting nothing)."""
    base = table_of(lake, V9_COW)
    pending_write(base)
    ts_markers(base)
    (temp(base) / "MARKERS0").write_bytes(content)
    (temp(base) / "MARKERS.type").write_text("TIMELINE_SERV")  # being written too
    if words is None:
        check_table(str(base))
    else:
        refused(base, LATER, words)


def test_a_marker_type_file_of_garbage_and_too_many_markers(
        lake: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    base = table_of(lake, V9_COW)
    pending_write(base)
    ts_markers(base, "p/a.parquet.marker.CREATE", "p/b.parquet.marker.CREATE")
    check_table(str(base))
    monkeypatch.setattr(hudi_markers, "MAX_MARKER_ENTRIES", 3)
    refused(base, "more than 3 marker entries")
    monkeypatch.undo()
    (temp(base) / "MARKERS.type").write_text("SOMETHING_ELSE")
    refused(base, "not a marker type")


def test_a_symlinked_timeline_is_refused_not_retried(lake: dict[str, Path]) -> None:
    """A ``.hoodie/timeline`` linked into another table: final (Hudi would follow it), in the
    guard and in the job's build."""
    from tests.unit.fakes import make_access

    base = table_of(lake, V8_MOR)
    other = table_of(lake, V9_COW)
    tl = base / ".hoodie" / "timeline"
    shutil_rmtree(tl)
    tl.symlink_to(other / ".hoodie" / "timeline", target_is_directory=True)
    refused(base, "symlink")
    table = make_table(format="hudi", base_path=str(base), table_name="t")
    access = replace(make_access(str(lake["lake"])), properties={
        f"hudi.writer.{k}": v for k, v in WRITER.items()})
    with pytest.raises(ValueError, match="symlink"):
        HudiFormat().build_job(table, access, make_op(action="clean"))


def test_a_marker_file_named_as_a_data_file_is_read_both_ways(lake: dict[str, Path]) -> None:
    """A top-level ``MARKERS...`` file is read for its lines and, when named like a marker,
    as the direct marker Hudi's direct listing takes it for."""
    base = table_of(lake, V9_COW)
    direct_marker(base, "MARKERSx.parquet.marker.APPEND")
    (temp(base) / "MARKERSx.parquet.marker.APPEND").write_text("p/a.parquet.marker.CREATE\n")
    read = hudi_markers.read_markers(LocalStore(), str(temp(base)), hudi_markers.Budget())
    assert sorted(read) == [("MARKERSx.parquet.marker.APPEND", "p/a.parquet.marker.CREATE"),
                            ("direct", "MARKERSx.parquet.marker.APPEND")]


def test_an_instant_file_that_is_a_symlink_is_refused(lake: dict[str, Path]) -> None:
    """TMS's timeline reader counts regular files only; Hudi would take a linked instant file
    as a pending write and roll it back with the markers planted for it."""
    base = table_of(lake, V9_COW)
    (tl, _), *_ = timelines(base)
    elsewhere = lake["secret"].parent / "empty"
    elsewhere.write_bytes(b"")
    (tl / f"{LATER}.commit.requested").symlink_to(elsewhere)
    ts_markers(base, f"{lake['secret']}.marker.CREATE")
    refused(base, f"timeline entry '{LATER}.commit.requested'", "symlink")
    assert lake["secret"].read_bytes() == b"the other tenant's data"


def test_a_write_stat_path_is_relative_to_the_base_path(lake: dict[str, Path]) -> None:
    """Hudi joins a write stat's ``path`` to the base path (it holds the partition): a file
    linked out is found there, not under the partition twice."""
    from tms.formats.hudi.plan_paths import problems
    from tms.formats.hudi.plans import PendingPlan

    base = table_of(lake, V6_COW)
    meta = json.loads(real_inflight(V6_COW, r"\d+\.inflight"))
    (partition, stats), *_ = meta["partitionToWriteStats"].items()
    (base / partition / "evil.parquet").symlink_to(lake["secret"])
    stats[0]["partitionPath"] = partition

    def found(path: str) -> list[str]:
        stats[0]["path"] = path
        return problems(PendingPlan(LATER, "commit", "inflight", f"{LATER}.inflight",
                                    "HoodieCommitMetadata", meta), resolve(parse(str(base))))

    assert found(f"{partition}/mine.parquet") == []
    (why,) = found(f"{partition}/evil.parquet")
    assert "evil.parquet" in why and str(lake["secret"]) in why


def test_a_marker_through_a_linked_directory_resolves_out(lake: dict[str, Path]) -> None:
    base = table_of(lake, V8_MOR)
    (base / "city=elsewhere").symlink_to(lake["secret"].parent, target_is_directory=True)
    where = resolve(parse(str(base)))
    assert hudi_markers.marker_problems("direct", "city=chennai/a.parquet.marker.CREATE",
                                        where) == []
    (why,) = hudi_markers.marker_problems(
        "MARKERS0", "city=elsewhere/secret.parquet.marker.CREATE", where)
    assert "marker in MARKERS0" in why and str(lake["secret"]) in why


def test_markers_and_metadata_of_writes_the_reader_does_not_count(lake: dict[str, Path]) -> None:
    """Hudi 0.x takes any instant time: a write named ``1`` (TMS's reader wants 14 digits)
    and a marker directory of no instant at all are checked too."""
    base = table_of(lake, V6_COW)
    (tl, _), *_ = timelines(base)
    ts_markers(base, f"{lake['secret']}.marker.CREATE", instant="1")
    refused(base, "1 (a write's markers or metadata)", str(lake["secret"]))
    shutil_rmtree(temp(base, "1"))
    meta = json.loads(real_inflight(V6_COW, r"\d+\.inflight"))
    meta["partitionToWriteStats"] = {"../../b/other_table/part": []}
    (tl / "1.inflight").write_text(json.dumps(meta))
    refused(base, "1.inflight", "partitionToWriteStats key")


def test_a_failed_write_without_markers_and_a_linked_partition(lake: dict[str, Path]) -> None:
    """No markers: Hudi lists the partitions (following links) and deletes the files named by
    the failed instant's time, which the writer chose to be the other tenant's."""
    base = table_of(lake, V8_MOR)
    victim = lake["secret"].parent / f"f1-0_0-1-1_{LATER}.parquet"
    victim.write_bytes(b"the other tenant's data")
    (victim.parent / ".hoodie_partition_metadata").write_bytes(b"")
    pending_write(base, "deltacommit")
    check_table(str(base))  # nothing linked: the listing stays in the table
    (base / "city=elsewhere").symlink_to(lake["secret"].parent, target_is_directory=True)
    refused(base, f"{LATER} deltacommit", "'city=elsewhere'", "listing-based rollback")
    (base / "city=elsewhere").unlink()
    (base / "city=chennai" / f".f1-0_{LATER}.log.1_0-1-1").symlink_to(victim)  # a log file
    refused(base, f"city=chennai/.f1-0_{LATER}.log.1_0-1-1")
    (base / "city=chennai" / f".f1-0_{LATER}.log.1_0-1-1").unlink()
    (base / "a" / "b").mkdir(parents=True)  # deeper than partitions, as Hudi's walk goes
    (base / "a" / "b" / "c").symlink_to(lake["secret"].parent, target_is_directory=True)
    refused(base, "'a/b/c'")
    assert victim.read_bytes() == lake["secret"].read_bytes() == b"the other tenant's data"


def test_the_tree_walk_is_bounded(tmp_path: Path) -> None:
    from tms.formats.hudi import tree as hudi_tree

    (tmp_path / ".hoodie" / "x").mkdir(parents=True)
    (tmp_path / ".hoodie" / "link").symlink_to(tmp_path)  # Hudi's walk skips .hoodie
    for i in range(5):
        (tmp_path / f"f{i}").write_bytes(b"")
    assert hudi_tree.links(LocalStore(), str(tmp_path)) == []
    with pytest.raises(PlanRefused, match="more than 3 files"):
        hudi_tree.links(LocalStore(), str(tmp_path), max_entries=3)
    deep = tmp_path / "/".join(["d"] * (hudi_tree.MAX_TREE_DEPTH + 1))
    deep.mkdir(parents=True)
    with pytest.raises(PlanRefused, match="nested deeper"):
        hudi_tree.links(LocalStore(), str(tmp_path))


# the local store: never through a symlink --------------------------------------------------------
def test_local_listing_and_reading_never_follow_a_symlink(tmp_path: Path) -> None:
    real = tmp_path / "real"
    (real / "sub").mkdir(parents=True)
    (real / "sub" / "f").write_bytes(b"data")
    (tmp_path / "link").symlink_to(real, target_is_directory=True)
    (real / "flink").symlink_to(real / "sub" / "f")
    fifo = real / "fifo"
    os.mkfifo(fifo)
    store = LocalStore()
    assert {e.name for e in store.list_dir(str(real))} == {"sub", "flink", "fifo"}
    assert store.read(str(real / "sub" / "f")) == b"data"
    for path in (tmp_path / "link", tmp_path / "link" / "sub"):
        with pytest.raises(SymlinkRefused, match=f"{tmp_path / 'link'} is a symlink"):
            store.list_dir(str(path))
    for path in (tmp_path / "link" / "sub" / "f", real / "flink"):  # through a link, a link
        with pytest.raises(SymlinkRefused):
            store.read(str(path))
    with pytest.raises(StorageError, match="not a regular file"):
        store.read(str(fifo))  # a FIFO would block a plain open
    assert store.list_dir(str(tmp_path / "absent")) == []
    assert store.list_dir(str(real / "sub" / "f")) == []  # a file is no directory
    with pytest.raises(StorageError, match="larger than 3 bytes"):
        store.read(str(real / "sub" / "f"), 3)
