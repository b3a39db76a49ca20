"""``read_guard.check_current_files`` with fakes of the Iceberg table and the Spark session: a
hostile owner's table whose current snapshot references files outside the allowed locations
(another tenant's file, a symlinked directory or file, an S3 bucket or prefix next door, a
path that climbs out) is refused before a rewrite reads it, and a clean one passes. The same
check on real Spark: tests/security/test_rewrite_reads.py."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tms.jobs import arrow_rewrite, read_guard, table_guard
from tms.jobs import iceberg_maintenance as job

SNAPSHOT_ID = 42


class Manifest:
    def __init__(self, path: str) -> None:
        self._path = path

    def path(self) -> str:
        return self._path


class Snapshot:
    def __init__(self, manifest_list: str | None, manifests: list[str]) -> None:
        self.manifest_list, self.manifests = manifest_list, manifests
        self.manifests_read = 0

    def manifestListLocation(self) -> str | None:  # noqa: N802 (Iceberg's)
        return self.manifest_list

    def allManifests(self, io: Any) -> list[Manifest]:  # noqa: N802
        self.manifests_read += 1
        return [Manifest(p) for p in self.manifests]

    def snapshotId(self) -> int:  # noqa: N802
        return SNAPSHOT_ID


class Handle:
    def __init__(self, snapshot: Snapshot | None) -> None:
        self.snapshot = snapshot

    def currentSnapshot(self) -> Snapshot | None:  # noqa: N802
        return self.snapshot

    def io(self) -> None:
        return None


class Frame:
    """A metadata table: ``select(column).distinct().toLocalIterator()`` yields its rows,
    counting how many were taken."""

    def __init__(self, spark: Spark, paths: list[str | None]) -> None:
        self.spark, self.paths = spark, paths

    def select(self, column: str) -> Frame:
        assert column == "file_path"
        return self

    def distinct(self) -> Frame:
        return self

    def toLocalIterator(self) -> Iterator[tuple[str | None]]:  # noqa: N802 (pyspark's)
        for p in self.paths:
            self.spark.rows_taken += 1
            yield (p,)


class Spark:
    """``spark.read.option(k, v).table(name)``: the metadata tables by their suffix."""

    def __init__(self, tables: dict[str, list[str | None]]) -> None:
        self.tables = tables
        self.read = self
        self.options: dict[str, str] = {}
        self.scanned: list[str] = []
        self.rows_taken = 0

    def option(self, key: str, value: str) -> Spark:
        self.options[key] = value
        return self

    def table(self, name: str) -> Frame:
        self.scanned.append(name)
        return Frame(self, self.tables[name.rsplit(".", 1)[1]])


def lake(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(allowed root, the table's location in it, another tenant's directory outside)."""
    allowed, outside = tmp_path / "allowed", tmp_path / "outside"
    table = allowed / "ns" / "t"
    (table / "data").mkdir(parents=True)
    (table / "metadata").mkdir()
    outside.mkdir()
    return allowed, table, outside


def check(files: list[str | None], allowed: list[str], manifest_list: str | None = None,
          manifests: list[str] | None = None, table: Path | None = None,
          tables: tuple[tuple[str, str], ...] = read_guard.CURRENT_FILES
          ) -> tuple[Spark, Snapshot, str | None]:
    meta = f"file:{table}/metadata" if table is not None else "s3://lake/wh/ns/t/metadata"
    snap = Snapshot(manifest_list or f"{meta}/snap-1.avro",
                    manifests if manifests is not None else [f"{meta}/m0.avro"])
    spark = Spark({"files": files, "delete_files": files})
    checked = read_guard.check_current_files(spark, "c.ns.t", Handle(snap), allowed,
                                              "clustering", tables)
    return spark, snap, checked


def test_a_clean_local_table_passes_at_the_snapshot_it_checked(tmp_path: Path) -> None:
    allowed, table, _ = lake(tmp_path)
    files: list[str | None] = [f"file:{table}/data/a.parquet", f"{table}/data/b.parquet",
                               f"file://{table}/data/c-deletes.parquet", None]

    spark, snap, checked = check(files, [allowed.as_uri()], table=table)

    assert checked == str(SNAPSHOT_ID) and spark.options == {"snapshot-id": str(SNAPSHOT_ID)}
    assert spark.scanned == ["c.ns.t.files"] and spark.rows_taken == 4
    assert snap.manifests_read == 1


def test_s3_uris_are_compared_on_bucket_and_whole_segments() -> None:
    ok: list[str | None] = ["s3a://lake/wh/ns/t/data/a.parquet", "s3://lake/wh/ns/t/data/b"]
    check(ok, ["s3://lake/wh"])
    for bad in ("s3://other/wh/ns/t/data/a.parquet", "s3a://lake/wh2/a.parquet",
                "s3://lake/lak%65/wh/a.parquet", "gs://lake/wh/a.parquet"):
        with pytest.raises(table_guard.LocationRefused) as refused:
            check([*ok, bad], ["s3://lake/wh"])
        assert bad in str(refused.value)


def test_another_tenants_file_is_refused_and_named(tmp_path: Path) -> None:
    allowed, table, outside = lake(tmp_path)
    stolen = f"file:{outside}/tenant-b/secret.parquet"

    with pytest.raises(table_guard.LocationRefused) as refused:
        check([f"file:{table}/data/a.parquet", stolen], [str(allowed)], table=table)

    message = str(refused.value)
    assert message.startswith("clustering refused, nothing written") and stolen in message
    assert f"{table}/data/a.parquet" not in message


def test_a_symlinked_directory_or_file_inside_the_table_is_outside(tmp_path: Path) -> None:
    allowed, table, outside = lake(tmp_path)
    (outside / "secret.parquet").write_bytes(b"tenant b")
    (table / "data" / "spill").symlink_to(outside)
    (table / "data" / "planted.parquet").symlink_to(outside / "secret.parquet")
    (table / "data" / "alias").symlink_to(table / "data")  # a link that stays inside: fine
    check([f"file:{table}/data/alias/a.parquet"], [str(allowed)], table=table)

    for bad in (f"file:{table}/data/spill/secret.parquet", f"{table}/data/planted.parquet"):
        with pytest.raises(table_guard.LocationRefused) as refused:
            check([bad], [str(allowed)], table=table)
        assert bad in str(refused.value)


def test_paths_that_climb_out_are_refused(tmp_path: Path) -> None:
    allowed, table, _ = lake(tmp_path)
    for bad in (f"file:{table}/../../../outside/x.parquet", "relative/x.parquet",
                f"file://evil.example{table}/data/x.parquet", "ftp://lake/wh/x.parquet"):
        with pytest.raises(table_guard.LocationRefused):
            check([bad], [str(allowed)], table=table)


def test_a_manifest_list_outside_is_not_even_read(tmp_path: Path) -> None:
    allowed, table, outside = lake(tmp_path)
    foreign = f"file:{outside}/tenant-b/metadata/snap-9.avro"
    spark = Spark({"files": [f"file:{table}/data/a.parquet"]})
    snap = Snapshot(foreign, [f"file:{outside}/tenant-b/metadata/m0.avro"])

    with pytest.raises(table_guard.LocationRefused, match="snap-9.avro"):
        read_guard.check_current_files(spark, "c.ns.t", Handle(snap), [str(allowed)],
                                        "rewrite_manifests")
    assert snap.manifests_read == 0


def test_a_manifest_outside_refuses_before_any_scan_is_needed(tmp_path: Path) -> None:
    allowed, table, outside = lake(tmp_path)
    foreign = f"file:{outside}/tenant-b/metadata/m7.avro"

    with pytest.raises(table_guard.LocationRefused, match="m7.avro"):
        check([], [str(allowed)], manifests=[f"file:{table}/metadata/m0.avro", foreign],
              table=table, tables=())


def test_the_scan_stops_once_enough_are_refused(tmp_path: Path) -> None:
    allowed, table, outside = lake(tmp_path)
    many: list[str | None] = [f"file:{outside}/f{i}.parquet" for i in range(1000)]
    spark = Spark({"files": many})
    snap = Snapshot(f"file:{table}/metadata/snap-1.avro", [])

    with pytest.raises(table_guard.LocationRefused) as refused:
        read_guard.check_current_files(spark, "c.ns.t", Handle(snap), [str(allowed)],
                                        "clustering")

    assert spark.rows_taken == table_guard.MAX_SHOWN_REFUSALS
    assert str(refused.value).count(".parquet") == table_guard.MAX_SHOWN_REFUSALS


def test_each_directory_is_resolved_and_listed_once(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    allowed, table, _ = lake(tmp_path)
    files: list[str | None] = [f"file:{table}/data/f{i}.parquet" for i in range(500)]
    resolved: list[str] = []
    listed: list[str] = []
    realpath, scandir = os.path.realpath, os.scandir

    def counting_realpath(path: Any, **kwargs: Any) -> str:
        resolved.append(str(path))
        return realpath(path, **kwargs)

    def counting_scandir(path: Any) -> Any:
        listed.append(str(path))
        return scandir(path)

    monkeypatch.setattr(table_guard.os.path, "realpath", counting_realpath)
    monkeypatch.setattr(table_guard.os, "scandir", counting_scandir)
    check(files, [str(allowed)], table=table)

    # the allowed prefix, the metadata and the data directory: not one per file
    assert len(resolved) == 3 and listed.count(str(table / "data")) == 1


def test_a_table_without_a_snapshot_reads_nothing() -> None:
    spark = Spark({})
    assert read_guard.check_current_files(spark, "c.ns.t", Handle(None), ["/lake"],
                                           "clustering") is None
    assert spark.scanned == []


def test_what_each_action_has_checked() -> None:
    """Every rewrite that reads the snapshot is checked before it runs; compaction's Spark
    path checks the delete files it applies, and its data files when the arrow attempt
    stopped before checking them."""
    assert set(job.READS) == {"compaction", "clustering", "rewrite_position_deletes",
                              "rewrite_manifests"}
    assert all(job.READS[a] == read_guard.CURRENT_FILES for a in
               ("clustering", "rewrite_position_deletes", "rewrite_manifests"))
    checked = arrow_rewrite.Attempt(None, "delete files apply", inputs_checked=True)
    assert job.spark_path_reads(checked) == read_guard.CURRENT_DELETE_FILES
    unplanned = arrow_rewrite.Attempt(None, "the where filter was not converted")
    assert job.spark_path_reads(unplanned) == read_guard.CURRENT_FILES
