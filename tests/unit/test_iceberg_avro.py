"""Manifest lists and manifests read with reader trees kept per schema give exactly what
pyiceberg's own reads give: real tables written by pyiceberg (SQL catalog in SQLite), format
versions 1 and 2, unpartitioned and partitioned, with deleted entries, and both codecs."""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from tms.formats.iceberg import avro as iceberg_avro

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("kind", pa.string()),
                    pa.field("d", pa.date32())])


def _rows(start: int, n: int) -> pa.Table:
    base = date(2026, 1, 1)
    return pa.table({"id": list(range(start, start + n)),
                     "kind": [("a", "b", "c")[i % 3] for i in range(start, start + n)],
                     "d": [base + timedelta(days=i % 4) for i in range(start, start + n)]},
                    schema=SCHEMA)


@pytest.fixture
def catalog(tmp_path: Path) -> Any:
    pytest.importorskip("sqlalchemy")
    from pyiceberg.catalog import load_catalog

    (tmp_path / "wh").mkdir()
    cat = load_catalog("c", type="sql", uri=f"sqlite:///{tmp_path}/cat.db",
                       warehouse=f"file://{tmp_path / 'wh'}")
    cat.create_namespace("ns")
    return cat


def _tables(cat: Any) -> list[Any]:
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import IdentityTransform
    from pyiceberg.types import DateType, LongType, NestedField, StringType

    iceberg_schema = Schema(NestedField(1, "id", LongType(), required=True),
                            NestedField(2, "kind", StringType(), required=False),
                            NestedField(3, "d", DateType(), required=False))
    spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "kind"),
                         PartitionField(3, 1001, IdentityTransform(), "d"))

    out = []
    for version, codec in (("1", "deflate"), ("2", "null")):
        props = {"format-version": version, "write.avro.compression-codec": codec}
        plain = cat.create_table(f"ns.plain_v{version}", schema=SCHEMA, properties=props)
        parted = cat.create_table(f"ns.parted_v{version}", schema=iceberg_schema,
                                  partition_spec=spec, properties=props)
        for tbl in (plain, parted):
            for c in range(3):
                tbl.append(_rows(c * 12, 12))
            tbl.delete("kind = 'a'")  # whole files dropped: DELETED entries in a manifest
            tbl.append(_rows(100, 12))
            out.append(cat.load_table(tbl.name()))
    return out


def _entry(e: Any) -> tuple[Any, ...]:
    f = e.data_file
    return (e.status, e.snapshot_id, e.sequence_number, e.file_sequence_number, f.file_path,
            f.content, f.spec_id, tuple(f.partition), f.file_size_in_bytes, f.record_count)


def test_same_manifests_and_entries_as_pyiceberg(catalog: Any) -> None:
    for tbl in _tables(catalog):
        for snap in tbl.metadata.snapshots:  # every snapshot, not only the current one
            theirs = snap.manifests(tbl.io)
            ours = iceberg_avro.manifests(snap, tbl.io)
            assert ours == theirs  # by path
            assert [(m.partition_spec_id, m.sequence_number, m.manifest_length, m.content,
                     m.added_snapshot_id) for m in ours] == \
                [(m.partition_spec_id, m.sequence_number, m.manifest_length, m.content,
                  m.added_snapshot_id) for m in theirs]
            for mine, their in zip(ours, theirs, strict=True):
                assert [_entry(e) for e in iceberg_avro.live_entries(mine, tbl.io)] == \
                    [_entry(e) for e in their.fetch_manifest_entry(tbl.io, True)]


def test_deleted_entries_are_left_out(catalog: Any) -> None:
    from pyiceberg.manifest import ManifestEntryStatus

    deleted = 0
    for tbl in _tables(catalog):
        for m in {m for snap in tbl.metadata.snapshots for m in snap.manifests(tbl.io)}:
            every = m.fetch_manifest_entry(tbl.io, discard_deleted=False)
            deleted += sum(e.status == ManifestEntryStatus.DELETED for e in every)
            live = iceberg_avro.live_entries(m, tbl.io)
            assert len(live) == sum(e.status != ManifestEntryStatus.DELETED for e in every)
    assert deleted > 0  # the scenario has some to leave out


def test_a_file_that_is_not_avro_is_refused(tmp_path: Path) -> None:
    from pyiceberg.io.pyarrow import PyArrowFileIO

    bad = tmp_path / "m.avro"
    bad.write_bytes(b"Obj\x01" + b"\x00" * 8)  # an empty header map: no schema in it
    with pytest.raises((ValueError, EOFError)):
        iceberg_avro._records(PyArrowFileIO(), str(bad), "manifest-list")
