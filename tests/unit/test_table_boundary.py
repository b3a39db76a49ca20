"""The table boundary's rule (``tms.boundary``) on real local directories: what a
table's location may not equal or contain, the scan's markers and its bounds."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tms import boundary
from tms.boundary import BoundaryRefused, Own, check_roots, local_lister, own_dirs, scan
from tms.locations import LocationError, parse, resolve


def _loc(raw: str) -> boundary.Location:
    return resolve(parse(raw))


def _scan(root: Path, hudi: bool = False, **kw: int) -> int:
    where = _loc(str(root))
    return scan(where.path, local_lister, own_dirs(where, where.path, hudi=hudi), **kw)


def _iceberg(where: Path, version: int = 1) -> Path:
    (where / "metadata").mkdir(parents=True, exist_ok=True)
    (where / "data").mkdir(exist_ok=True)
    (where / "metadata" / f"{version:05d}-abc.metadata.json").write_text("{}")
    (where / "data" / "f.parquet").write_bytes(b"PAR1")
    return where


# roots ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("root", [
    "/lake", "/lake/", "file:///lake", "file:///lake/", "file://localhost/lake",
    "/la%6be",  # percent-encoded once: decoded, then compared
])
def test_a_location_equal_to_a_root_in_any_spelling_is_refused(root: str) -> None:
    with pytest.raises(BoundaryRefused, match="is the catalog's warehouse"):
        check_roots(_loc("/lake"), [("the catalog's warehouse", root)])


def test_a_location_containing_a_root_is_refused_and_one_inside_is_not() -> None:
    roots = [("namespace 'ns''s location", "/lake/ns")]
    with pytest.raises(BoundaryRefused, match="contains namespace"):
        check_roots(_loc("/lake"), roots)
    check_roots(_loc("/lake/ns/t"), roots)
    check_roots(_loc("/lake/ns2"), roots)  # a sibling sharing a prefix, not a segment


def test_object_store_roots_compare_bucket_case_and_scheme_aliases() -> None:
    roots = [("catalogs/b's allowed location", "s3a://Lake-Bucket/wh/")]
    with pytest.raises(BoundaryRefused, match="is catalogs/b"):
        check_roots(_loc("s3://lake-bucket/wh"), roots)
    with pytest.raises(BoundaryRefused, match="contains catalogs/b"):
        check_roots(_loc("s3://lake-bucket/"), roots)
    check_roots(_loc("s3://lake-bucket/WH"), roots)  # keys are case-sensitive: another prefix
    check_roots(_loc("gs://lake-bucket/wh"), roots)  # another store


def test_a_root_that_is_no_location_is_no_root() -> None:
    check_roots(_loc("/lake"), [("the catalog's warehouse", "my-rest-warehouse")])


def test_a_double_encoded_climb_never_reaches_a_check() -> None:
    with pytest.raises(LocationError, match="more than once"):
        parse("/lake/ns/%252e%252e")
    with pytest.raises(LocationError, match="'..'"):
        parse("/lake/ns/%2e%2e")


def test_a_symlink_to_the_warehouse_is_the_warehouse(tmp_path: Path) -> None:
    (tmp_path / "wh").mkdir()
    (tmp_path / "mine").symlink_to(tmp_path / "wh")
    with pytest.raises(BoundaryRefused, match="is the catalog's warehouse"):
        check_roots(_loc(str(tmp_path / "mine")),
                    [("the catalog's warehouse", (tmp_path / "wh").as_uri())])


# the scan --------------------------------------------------------------------------------------
def test_a_table_of_its_own_passes(tmp_path: Path) -> None:
    t = _iceberg(tmp_path / "t")
    (t / "data" / "p=1").mkdir()
    (t / "data" / "p=1" / "g.parquet").write_bytes(b"PAR1")
    assert _scan(t) == 6


def test_another_iceberg_tables_metadata_anywhere_below_is_found(tmp_path: Path) -> None:
    wh = _iceberg(tmp_path / "wh")
    _iceberg(wh / "ns_b" / "events")
    with pytest.raises(BoundaryRefused, match=r"ns_b/events holds another Iceberg table"):
        _scan(wh)


def test_a_metadata_file_outside_a_metadata_directory_is_another_tables(tmp_path: Path) -> None:
    wh = _iceberg(tmp_path / "wh")
    (wh / "data" / "x").mkdir()
    (wh / "data" / "x" / "00003-abc.metadata.json").write_text("{}")
    with pytest.raises(BoundaryRefused, match="another Iceberg table"):
        _scan(wh)


def test_a_hadoop_tables_version_hint_is_a_table(tmp_path: Path) -> None:
    wh = _iceberg(tmp_path / "wh")
    (wh / "other" / "meta").mkdir(parents=True)
    (wh / "other" / "meta" / "version-hint.text").write_text("1")
    with pytest.raises(BoundaryRefused, match="another Iceberg table"):
        _scan(wh)


def test_the_tables_own_metadata_path_is_its_own(tmp_path: Path) -> None:
    t = _iceberg(tmp_path / "t")
    (t / "meta2").mkdir()
    (t / "meta2" / "00009-x.metadata.json").write_text("{}")
    where = _loc(str(t))
    own = own_dirs(where, where.path, [(t / "meta2").as_uri()])
    assert scan(where.path, local_lister, own) == 6
    # a metadata path outside the location owns nothing inside it
    assert own_dirs(where, where.path, ["/elsewhere/meta"]).metadata_dirs == {f"{t}/metadata"}


def test_a_hudi_table_below_an_iceberg_table_is_found(tmp_path: Path) -> None:
    t = _iceberg(tmp_path / "t")
    (t / "data" / "h" / ".hoodie").mkdir(parents=True)
    with pytest.raises(BoundaryRefused, match="holds a Hudi table"):
        _scan(t)


def test_an_iceberg_table_below_a_hudi_base_path_is_found(tmp_path: Path) -> None:
    base = tmp_path / "hudi"
    (base / ".hoodie" / "metadata" / ".hoodie").mkdir(parents=True)  # its metadata table
    (base / "2024" / "01").mkdir(parents=True)
    (base / "2024" / "01" / ".hoodie_partition_metadata").write_text("")
    assert _scan(base, hudi=True) == 4  # its own .hoodie is not descended
    _iceberg(base / "2024" / "ice")
    with pytest.raises(BoundaryRefused, match="another Iceberg table"):
        _scan(base, hudi=True)


def test_a_nested_hudi_table_under_a_hudi_base_path_is_found(tmp_path: Path) -> None:
    base = tmp_path / "hudi"
    (base / ".hoodie").mkdir(parents=True)
    (base / "sub" / ".hoodie").mkdir(parents=True)
    with pytest.raises(BoundaryRefused, match=r"sub holds a Hudi table"):
        _scan(base, hudi=True)


def test_a_delta_table_is_found(tmp_path: Path) -> None:
    t = _iceberg(tmp_path / "t")
    (t / "d" / "_delta_log").mkdir(parents=True)
    with pytest.raises(BoundaryRefused, match="holds a Delta table"):
        _scan(t)


def test_a_symlink_below_the_location_is_refused_not_followed(tmp_path: Path) -> None:
    t = _iceberg(tmp_path / "t")
    other = _iceberg(tmp_path / "other")
    os.symlink(other, t / "data" / "link")
    with pytest.raises(BoundaryRefused, match="symbolic link"):
        _scan(t)


def test_the_scan_is_bounded_and_says_so(tmp_path: Path) -> None:
    t = _iceberg(tmp_path / "t")
    for i in range(20):
        (t / "data" / f"f{i}.parquet").write_bytes(b"")
    with pytest.raises(BoundaryRefused, match="more than 10 files and directories"):
        _scan(t, max_entries=10)
    deep = t / "data"
    for i in range(5):
        deep = deep / f"d{i}"
    deep.mkdir(parents=True)
    with pytest.raises(BoundaryRefused, match="more than 3 directories deep"):
        _scan(t, max_depth=3)


def test_the_scan_stops_at_the_first_foreign_marker(tmp_path: Path) -> None:
    """Breadth first: a shallow foreign table is found before the deep tree is read."""
    wh = tmp_path / "wh"
    _iceberg(wh / "a_shallow")
    deep = wh / "b_big" / "d0" / "d1" / "d2"
    deep.mkdir(parents=True)
    for i in range(50):
        (deep / f"f{i}").write_bytes(b"")
    listed: list[str] = []

    def counting(directory: str) -> list[tuple[str, str]]:
        listed.append(directory)
        return local_lister(directory)

    with pytest.raises(BoundaryRefused, match="a_shallow"):
        scan(str(wh), counting, Own(frozenset({f"{wh}/metadata"})))
    assert f"{wh}/b_big/d0" not in listed and f"{wh}/b_big/d0/d1/d2" not in listed


def test_a_missing_location_has_nothing_to_scan(tmp_path: Path) -> None:
    assert _scan(tmp_path / "absent") == 0
