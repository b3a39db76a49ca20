"""``hoodie.properties`` as an attacker writes it, and as the real fixtures' writers did.

Each attack copies a real fixture table into a temporary lake next to another tenant's table
and rewrites its table properties (the main file or the backup Hudi falls back to, of the
table or of its metadata table), or links a directory Hudi archives into out of the table.
Hudi would archive into, delete history files of, read index definitions or bootstrap data
from the other tenant's files, or load a class of the writer's choosing: the attack is refused
by name, spark-submit never starts, the other tenant's file is untouched. Every genuine table
passes.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.unit.fakes import make_access, make_op, make_table
from tests.unit.hudi_submit import assert_refused_before_submit, run_with_fake_submit
from tests.unit.test_hudi_plans import ZIPS, lake, table_of, unzip
from tests.unit.test_hudi_plans import refused as plan_refused
from tms.formats.hudi.plugin import PROPS_REFUSED, HudiFormat
from tms.formats.hudi.props import java_properties
from tms.formats.hudi.props_guard import check_table
from tms.formats.hudi.timeline import MAX_PROPERTIES_BYTES

__all__ = ["lake"]  # the fixture, used by name

V6_COW = "sample_table__cow__v6_simplekeygen_nonhivestyle.zip"
V8_MOR = "quickstart_trips_table__mor__avro__v8_trips_8i3u1d.zip"
V9_MDT = "sample_table__cow__v9_txns_simple_meta.zip"  # with a metadata table and index defs
SECRET = b"the other tenant's data"
OTHER = "../../../../b/other_table/part"  # from <table>/.hoodie/timeline: the other tenant
Planter = Callable[[dict[str, Path], Path], str]


def props(base: Path, name: str = "hoodie.properties") -> Path:
    return base / ".hoodie" / name


def append(base: Path, text: str, name: str = "hoodie.properties") -> None:
    """``text`` added after the writer's lines (Java keeps the last of a key; the checksum
    covers only the table's name, so it still holds)."""
    with props(base, name).open("ab") as f:
        f.write(b"\n" + text.encode("utf-8") + b"\n")


def setting(key: str, value: str, words: str, name: str = "hoodie.properties") -> Planter:
    def planted(lake: dict[str, Path], base: Path) -> str:
        append(base, f"{key}={value.replace('{secret}', str(lake['secret'].parent))}", name)
        return words
    return planted


def line(text: str, words: str) -> Planter:
    def planted(lake: dict[str, Path], base: Path) -> str:
        append(base, text)
        return words
    return planted


def link_out(lake: dict[str, Path], where: Path) -> None:
    """``where`` (moved aside when the writer had it) made a symlink to the other tenant."""
    if where.exists():
        where.rename(where.with_name(where.name + "-moved"))
    where.symlink_to(lake["secret"].parent, target_is_directory=True)


def plant_linked_history(lake: dict[str, Path], base: Path) -> str:
    link_out(lake, base / ".hoodie" / "timeline" / "history")
    return "hoodie.timeline.history.path 'history' resolves to"


def plant_linked_archive(lake: dict[str, Path], base: Path) -> str:
    link_out(lake, base / ".hoodie" / "archived")
    return "hoodie.archivelog.folder 'archived' resolves to"


def plant_backup(lake: dict[str, Path], base: Path) -> str:
    """A backup beside a sound main file: Hudi reads it once the main file's checksum is
    broken, or the main file is gone."""
    data = props(base).read_bytes() + b"\nhoodie.timeline.history.path=" + OTHER.encode() + b"\n"
    props(base, "hoodie.properties.backup").write_bytes(data)
    return "hoodie.properties.backup: hoodie.timeline.history.path"


def plant_backup_only(lake: dict[str, Path], base: Path) -> str:
    plant_backup(lake, base)
    props(base).unlink()
    return "hoodie.properties.backup: hoodie.timeline.history.path"


def plant_linked_backup(lake: dict[str, Path], base: Path) -> str:
    props(base, "hoodie.properties.backup").symlink_to(lake["secret"])
    return "hoodie.properties.backup is not a regular file"


def plant_oversized(lake: dict[str, Path], base: Path) -> str:
    with props(base).open("ab") as f:
        f.truncate(MAX_PROPERTIES_BYTES + 1)
    return f"{MAX_PROPERTIES_BYTES + 1} bytes"


def plant_mdt(lake: dict[str, Path], base: Path) -> str:
    append(base / ".hoodie" / "metadata", "hoodie.compaction.payload.class=com.evil.X")
    return "metadata/.hoodie/hoodie.properties: hoodie.compaction.payload.class"


def plant_bootstrap_outside(lake: dict[str, Path], base: Path) -> str:
    outside = lake["lake"].parent / "outside"
    outside.mkdir(exist_ok=True)
    append(base, f"hoodie.bootstrap.base.path={outside}")
    return "outside the allowed locations"


def plant_linked_bootstrap(lake: dict[str, Path], base: Path) -> str:
    """A source inside the lake by name, a symlink out of it."""
    outside = lake["lake"].parent / "outside"
    outside.mkdir(exist_ok=True)
    (lake["lake"] / "src").symlink_to(outside)
    append(base, f"hoodie.bootstrap.base.path={lake['lake']}/src")
    return "outside the allowed locations"


def plant_bootstrap_index(lake: dict[str, Path], base: Path) -> str:
    """An index mapping a file group to the other tenant's file (its content aside: TMS does
    not read HFiles, so any index file is refused)."""
    index = base / ".hoodie" / ".aux" / ".bootstrap" / ".fileids"
    index.mkdir(parents=True, exist_ok=True)
    (index / "00000000-0000-0000-0000-000000000000-0_1-0-1_00000000000001.hfile").write_bytes(
        str(lake["secret"]).encode())
    return ".aux/.bootstrap/.fileids/00000000-0000-0000-0000-000000000000-0_1-0-1_"


def plant_linked_bootstrap_index(lake: dict[str, Path], base: Path) -> str:
    link_out(lake, base / ".hoodie" / ".aux" / ".bootstrap")
    return "symlink"


ATTACKS: dict[str, tuple[str, Planter]] = {
    "history_dotdot": (V9_MDT, setting("hoodie.timeline.history.path", OTHER, "'..' segment")),
    "history_other_tenant": (V9_MDT, setting("hoodie.timeline.history.path",
                                             "../../other_tenant", "'..' segment")),
    "history_absolute": (V9_MDT, setting("hoodie.timeline.history.path", "{secret}",
                                         "is an absolute path")),
    "history_other_bucket": (V9_MDT, setting("hoodie.timeline.history.path",
                                             "s3://other-bucket/x", "':' before its first")),
    "history_file_uri": (V9_MDT, setting("hoodie.timeline.history.path", "file:{secret}",
                                         "':' before its first")),
    "history_linked": (V9_MDT, plant_linked_history),
    "archive_dotdot": (V6_COW, setting("hoodie.archivelog.folder", "../../b/other_table/part",
                                       "hoodie.archivelog.folder")),
    "archive_linked": (V6_COW, plant_linked_archive),
    "archive_empty_segment": (V6_COW, setting("hoodie.archivelog.folder", "a//b",
                                              "empty, '.' or '..' segment")),
    "timeline_path": (V8_MOR, setting("hoodie.timeline.path", "../..", "hoodie.timeline.path")),
    "index_defs_out": (V9_MDT, setting("hoodie.table.index.defs.path",
                                       "../b/other_table/part/secret.parquet", "'..' segment")),
    "index_defs_absolute": (V9_MDT, setting("hoodie.table.index.defs.path",
                                            "{secret}/secret.parquet", "absolute")),
    "mdt_partition": (V9_MDT, setting("hoodie.table.metadata.partitions", "files,../../x",
                                      "not a plain metadata table partition name")),
    "keygen_class": (V6_COW, setting("hoodie.table.keygenerator.class", "com.evil.X",
                                     "not one of the classes Hudi ships")),
    "payload_class": (V8_MOR, setting("hoodie.compaction.payload.class", "com.evil.X",
                                      "not one of the classes Hudi ships")),
    "payload_lookalike": (V8_MOR, setting("hoodie.compaction.payload.class",
                                          "org.apache.hudi.common.model.Evil",
                                          "not one of the classes Hudi ships")),
    "write_payload_class": (V6_COW, setting("hoodie.datasource.write.payload.class",
                                            "com.evil.X", "not one of the classes Hudi ships")),
    "bootstrap_index_class": (V6_COW, setting("hoodie.bootstrap.index.class", "com.evil.X",
                                              "not one of the classes Hudi ships")),
    "other_class_key": (V6_COW, setting("hoodie.write.lock.provider", "com.evil.X",
                                        "names a class, provider or implementation")),
    "table_type": (V6_COW, line("hoodie.table.type=EVIL", "hoodie.table.type")),
    "base_format": (V9_MDT, setting("hoodie.table.base.file.format", "EVIL", "is not one of")),
    "table_format": (V9_MDT, setting("hoodie.table.format", "evil", "is not one of native")),
    "merge_strategy": (V9_MDT, setting("hoodie.record.merge.strategy.id", "com.evil.X",
                                       "not a merge strategy id")),
    "bootstrap_outside": (V6_COW, plant_bootstrap_outside),
    "bootstrap_linked_out": (V6_COW, plant_linked_bootstrap),
    "bootstrap_other_bucket": (V6_COW, setting("hoodie.bootstrap.base.path",
                                               "s3://other-bucket/src", "outside the allowed")),
    "bootstrap_index": (V6_COW, plant_bootstrap_index),
    "bootstrap_index_linked": (V9_MDT, plant_linked_bootstrap_index),
    "backup": (V9_MDT, plant_backup),
    "backup_only": (V9_MDT, plant_backup_only),
    "backup_linked": (V9_MDT, plant_linked_backup),
    "oversized": (V6_COW, plant_oversized),
    "metadata_table": (V9_MDT, plant_mdt),
    # what Java reads that a key=value reader does not
    "colon_separator": (V9_MDT, line(f"hoodie.timeline.history.path:{OTHER}", "'..' segment")),
    "blank_separator": (V9_MDT, line(f"  hoodie.timeline.history.path   {OTHER}",
                                     "'..' segment")),
    "unicode_escape": (V9_MDT, line("hoodie.timeline.history.path=\\u002e\\u002e/\\u002e\\u002e"
                                    "/\\u002e\\u002e/\\u002e\\u002e/b", "'..' segment")),
    "continued_line": (V9_MDT, line("hoodie.timeline.history.path=../\\\n   ../../../b",
                                    "'..' segment")),
    "timeline_read_apart": (V9_MDT, line("hoodie.timeline.path:elsewhere",
                                         "reads 'elsewhere' to Java but 'timeline'")),
    "bad_escape": (V9_MDT, line("hoodie.table.name=\\u12", "malformed \\uxxxx")),
    "fullwidth_dots": (V9_MDT, line("hoodie.timeline.history.path=\\uff0e\\uff0e/x",
                                    "non-ASCII")),
    "raw_utf8": (V9_MDT, setting("hoodie.timeline.history.path", "\u2025/x", "non-ASCII")),
    "control_char": (V9_MDT, line("hoodie.timeline.history.path=a\\u0000b", "control")),
    "backslash": (V9_MDT, line("hoodie.timeline.history.path=..\\\\..\\\\b", "backslash")),
    "too_long": (V9_MDT, setting("hoodie.timeline.history.path", "h/" * 600, "longer than")),
    "second_value": (V9_MDT, line(f"hoodie.timeline.history.path={OTHER}\n"
                                  "hoodie.timeline.history.path=history", "'..' segment")),
}


def refused(base: Path, *words: str, allowed: list[str] | None = None) -> str:
    return plan_refused(base, *words, check=lambda b: check_table(
        b, None, allowed if allowed is not None else [str(base.parent.parent)]))


# the genuine tables ------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ZIPS)
def test_the_fixtures_genuine_tables_all_pass(tmp_path: Path, name: str) -> None:
    base = unzip(name, tmp_path / "lake")
    files = sum(1 for t in (base, base / ".hoodie" / "metadata") for n in (
        "hoodie.properties", "hoodie.properties.backup") if props(t, n).is_file())
    assert files >= 1
    assert check_table(str(base), None, [str(tmp_path / "lake")]) == files


def test_the_fixtures_read_the_same_to_java(tmp_path: Path) -> None:
    """Hudi's writers write plain ``key=value`` lines: both readers agree on every file."""
    from tms.formats.hudi.timeline import parse_properties
    seen = 0
    for name in ZIPS:
        base = unzip(name, tmp_path / name)
        for f in base.glob("**/.hoodie/hoodie.properties*"):
            assert dict(java_properties(f.read_bytes())) == parse_properties(f.read_text())
            seen += 1
    assert seen >= len(ZIPS)


# the attacks -------------------------------------------------------------------------------------
@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_a_hostile_table_property_is_refused(lake: dict[str, Path], attack: str) -> None:
    zip_name, planter = ATTACKS[attack]
    base = table_of(lake, zip_name)
    check_table(str(base), None, [str(lake["lake"])])  # the copy as shipped passes
    refused(base, planter(lake, base), allowed=[str(lake["lake"])])
    assert lake["secret"].read_bytes() == SECRET


@pytest.mark.parametrize("attack", ["history_other_tenant", "history_linked", "keygen_class",
                                    "bootstrap_outside", "bootstrap_index", "backup",
                                    "colon_separator"])
@pytest.mark.parametrize("action", ["clean", "compaction", "clustering"])
def test_a_hostile_table_never_reaches_spark_submit(
        lake: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, attack: str,
        action: str) -> None:
    """Through the executor: the job fails, not retried, naming what was refused, before
    spark-submit (a script that would delete the other tenant's file) starts."""
    zip_name, planter = ATTACKS[attack]
    base = table_of(lake, zip_name)
    words = planter(lake, base)
    assert_refused_before_submit(lake, base, tmp_path, monkeypatch, action, words, SECRET)


def test_a_genuine_table_reaches_spark_submit(
        lake: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base = table_of(lake, V9_MDT)
    outcome, started = run_with_fake_submit(lake, base, tmp_path, monkeypatch, "clean")
    assert started, outcome


@pytest.mark.parametrize("attack", ["payload_class", "timeline_path", "oversized", "backup",
                                    "history_linked"])
def test_the_scheduler_holds_back_every_action(lake: dict[str, Path], attack: str) -> None:
    """Inspection checks the properties first (the timeline is found through them): a refusal
    is its one metric, every action is held back with it as the reason, and a queued
    operation is not skipped as stale (its build fails, naming the refusal)."""
    zip_name, planter = ATTACKS[attack]
    base = table_of(lake, zip_name)
    plugin = HudiFormat()
    table = make_table(format="hudi", base_path=str(base), table_name="t")
    access = make_access(str(lake["lake"]))
    assert PROPS_REFUSED not in plugin.inspect(table, access)
    words = planter(lake, base)
    metrics = plugin.inspect(table, access)
    assert words in metrics[PROPS_REFUSED], metrics
    verdicts = plugin.evaluate(table, metrics, {}, datetime.now(UTC))
    assert {d.action for d in verdicts} == {"compaction", "clustering", "clean"}
    for d in verdicts:
        assert not d.should_run and words in d.reason, d.reason
    assert plugin.recheck(table, access, make_op(action="clean")) is None


def test_a_linked_metadata_table_is_refused(lake: dict[str, Path]) -> None:
    """``.hoodie/metadata`` linked to another tenant's metadata table: Hudi would load (and
    compact) that one."""
    base = table_of(lake, V9_MDT)
    other = unzip(V9_MDT, lake["lake"] / "b")
    (base / ".hoodie" / "metadata").rename(base / ".hoodie" / "metadata-moved")
    (base / ".hoodie" / "metadata").symlink_to(other / ".hoodie" / "metadata")
    refused(base, "outside the table")


# what stays allowed ------------------------------------------------------------------------------
@pytest.mark.parametrize("value", ["%2e%2e/%2e%2e/b", "%2E%2E", "history2", "a/b/c", ".hist"])
def test_names_hudi_takes_literally_stay_inside(lake: dict[str, Path], value: str) -> None:
    """Hadoop's ``Path`` quotes ``%`` (``%2e%2e`` is a directory of that name)."""
    base = table_of(lake, V9_MDT)
    append(base, f"hoodie.timeline.history.path={value}")
    assert check_table(str(base), None, [str(lake["lake"])]) == 2


def test_a_bootstrap_source_inside_the_allowed_locations_passes(lake: dict[str, Path]) -> None:
    base = table_of(lake, V6_COW)
    (lake["lake"] / "src").mkdir()
    append(base, f"hoodie.bootstrap.base.path={lake['lake']}/src")
    assert check_table(str(base), None, [str(lake["lake"])]) == 1
    with pytest.raises(ValueError, match="without the catalog's allowed locations"):
        check_table(str(base))
    append(base, f"hoodie.bootstrap.base.path={lake['lake']}/%2e%2e")
    refused(base, "'%' in a local path", allowed=[str(lake["lake"])])


def test_incubator_payload_names_map_onto_hudis(lake: dict[str, Path]) -> None:
    """Hudi replaces ``com.uber.hoodie`` with ``org.apache.hudi`` before loading a payload."""
    base = table_of(lake, V8_MOR)
    append(base, "hoodie.compaction.payload.class="
                 "com.uber.hoodie.common.model.OverwriteWithLatestAvroPayload")
    assert check_table(str(base), None, [str(lake["lake"])]) >= 1


@pytest.mark.parametrize("text, pairs", [
    ("a=b", [("a", "b")]), ("a:b", [("a", "b")]), ("a b", [("a", "b")]),
    ("  a =  b ", [("a", "b ")]), ("a\\:b=c", [("a:b", "c")]), ("a=b\\\n  c", [("a", "bc")]),
    ("# a=b\\\nc=d", [("c", "d")]), ("a=\\u0041\\t", [("a", "A\t")]), ("a\\ b=c", [("a b", "c")]),
    ("a==b", [("a", "=b")]), ("a", [("a", "")]), ("a=b\\\\\nc=d", [("a", "b\\"), ("c", "d")]),
    ("a=b\rc=d\r\ne=f", [("a", "b"), ("c", "d"), ("e", "f")])])
def test_the_reader_reads_as_java(text: str, pairs: list[tuple[str, str]]) -> None:
    assert java_properties(text.encode("latin-1")) == pairs
