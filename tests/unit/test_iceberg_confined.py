"""The inspection's FileIO reads only inside the table's own location: a path elsewhere in the
warehouse, one climbing out with ``..``, one through a symlink leading out, and another
scheme are refused before the wrapped FileIO is asked; the table's own paths pass."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tms.formats.iceberg.confined import OutsideTable, confined


class RecordingIO:
    def __init__(self) -> None:
        self.opened: list[str] = []

    def new_input(self, location: str) -> Any:
        self.opened.append(location)
        return location


def _tbl(location: Path, metadata: str) -> Any:
    return SimpleNamespace(io=RecordingIO(), metadata_location=metadata,
                           metadata=SimpleNamespace(location=location.as_uri()))


def test_only_the_tables_own_files_are_opened(tmp_path: Path) -> None:
    table, other = tmp_path / "wh" / "a", tmp_path / "wh" / "b"
    (table / "metadata").mkdir(parents=True)
    (other / "metadata").mkdir(parents=True)
    (table / "metadata" / "link").symlink_to(other / "metadata", target_is_directory=True)
    tbl = _tbl(table, f"{table.as_uri()}/metadata/v1.metadata.json")
    io = confined(tbl, str(table))
    assert io.new_input(f"{table}/metadata/snap-1.avro") == f"{table}/metadata/snap-1.avro"
    for bad in (f"{other}/metadata/snap-1.avro", f"file://{table}/../b/metadata/m.avro",
                f"{table}/metadata/link/m.avro", "s3://bucket/wh/a/metadata/m.avro",
                f"{tmp_path}/wh/a2/metadata/m.avro"):
        with pytest.raises(OutsideTable, match="outside its own location"):
            io.new_input(bad)
    assert tbl.io.opened == [f"{table}/metadata/snap-1.avro"]


def test_a_metadata_file_elsewhere_is_refused_before_anything_is_read(tmp_path: Path) -> None:
    table = tmp_path / "wh" / "a"
    table.mkdir(parents=True)
    tbl = _tbl(table, f"{tmp_path}/wh/b/metadata/v3.metadata.json")
    with pytest.raises(OutsideTable, match="metadata file"):
        confined(tbl, str(table))
    assert tbl.io.opened == []
