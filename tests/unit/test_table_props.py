"""The table writer properties a rewrite reads, parsed strictly (``tms.jobs.table_props``):
what a hostile table owner can put in them, and what the job says about it."""

from __future__ import annotations

import pytest

from tms import failures as errors
from tms.jobs import iceberg_maintenance, table_props
from tms.jobs.arrow_rewrite import writer_format
from tms.jobs.table_props import JAVA_INT_MAX, JAVA_LONG_MAX, PropertyRefused, check, parse_int

PAGE = "write.parquet.page-size-bytes"
TARGET = "write.target-file-size-bytes"
LEVEL = "write.parquet.compression-level"


@pytest.mark.parametrize("raw", ["1", "7", "1048576", str(JAVA_INT_MAX)])
def test_ascii_integers_in_range_are_taken(raw: str) -> None:
    assert check({PAGE: raw}, "zstd") == {PAGE: int(raw)}


@pytest.mark.parametrize("raw", [
    "99999999999999999999",  # past Long.MAX_VALUE: pyarrow's OverflowError, Java's NFE
    str(JAVA_INT_MAX + 1),  # an int property one past Integer.MAX_VALUE
    "0", "-1", "+5", "-0",  # signs, and sizes must be positive
    " 5", "5 ", "\t5", "5\n", "5 0", "",  # whitespace, empty
    "05", "007", "00",  # leading zeros (Java would read 5; a typo as often as not)
    "１２３", "٣", "১২", "²", "5²",  # Unicode digits: str.isdigit() says yes to all
    "5_000", "1e6", "0x10", "1.0", "5k", "NaN",  # other spellings
    "9" * 400,  # long input: refused before int() parses it
])
def test_anything_else_is_refused_naming_the_property_and_range(raw: str) -> None:
    with pytest.raises(PropertyRefused) as e:
        check({PAGE: raw}, "zstd")
    assert PAGE in str(e.value) and f"1 to {JAVA_INT_MAX}" in str(e.value)
    assert len(str(e.value)) < 300  # the value is quoted, cut short


def test_each_property_has_its_javas_type_range() -> None:
    assert check({TARGET: str(JAVA_LONG_MAX)}, None) == {TARGET: JAVA_LONG_MAX}  # a long
    with pytest.raises(PropertyRefused, match=f"1 to {JAVA_LONG_MAX}"):
        check({TARGET: str(JAVA_LONG_MAX + 1)}, None)
    for key in ("write.parquet.row-group-size-bytes", "write.parquet.page-row-limit",
                "write.parquet.dict-size-bytes", "write.parquet.bloom-filter-max-bytes",
                "write.parquet.row-group-check-min-record-count"):
        with pytest.raises(PropertyRefused, match=key):
            check({key: str(JAVA_INT_MAX + 1)}, "snappy")


def test_delete_writer_properties_only_for_a_delete_rewrite() -> None:
    props = {"write.delete.parquet.page-size-bytes": "-1",
             "write.delete.target-file-size-bytes": "x"}
    assert check(props, "zstd") == {}  # a data rewrite does not read them
    with pytest.raises(PropertyRefused, match="write.delete"):
        check(props, "zstd", deletes=True)


@pytest.mark.parametrize(("codec", "raw", "ok"), [
    ("zstd", "3", True), ("zstd", "22", True), ("zstd", "0", True), ("zstd", "23", False),
    ("zstd", "-1", False), ("gzip", "9", True), ("gzip", "10", False), ("gzip", "0", False),
    ("ZSTD", "٣", False), ("snappy", "99999999999999999999", True),  # snappy reads no level
    (None, "junk", True)])
def test_the_compression_level_within_its_codecs_range(codec: str | None, raw: str,
                                                       ok: bool) -> None:
    if ok:
        check({LEVEL: raw}, codec)
    else:
        with pytest.raises(PropertyRefused, match=LEVEL):
            check({LEVEL: raw}, codec)


def test_unrelated_properties_are_not_read() -> None:
    assert check({"owner": "٣", "write.parquet.page-size": "x", "write.metadata.x": "-1"},
                 "zstd") == {}


def test_parse_int_bounds_are_inclusive() -> None:
    assert parse_int("k", "3", 3, 3) == 3
    with pytest.raises(PropertyRefused, match="k='4'"):
        parse_int("k", "4", 3, 3)


def test_the_arrow_writer_format_uses_the_strict_values() -> None:
    fmt = writer_format({PAGE: "65536", "write.parquet.page-row-limit": "100"}, "zstd", None)
    assert fmt["page_size_bytes"] == 65536 and fmt["page_row_limit"] == 100
    assert fmt["row_group_bytes"] == 128 * 1024 ** 2  # Iceberg's default when unset
    with pytest.raises(PropertyRefused):
        writer_format({PAGE: "99999999999999999999"}, "zstd", None)


def test_the_job_reports_it_as_not_retryable_with_a_hint() -> None:
    try:
        check({PAGE: "１２３"}, "zstd")
    except PropertyRefused as e:
        payload = iceberg_maintenance.failure_payload(e)
    assert payload["ok"] is False and payload["retryable"] is False
    assert payload["error_class"] == errors.INVALID_TABLE_PROPERTY
    assert PAGE in payload["error"] and "fix or unset" in payload["hint"]


@pytest.mark.parametrize("codec,level,ok", [
    ("gzip", "9", True), ("gzip", "10", False), ("gzip", "0", False), ("GZIP", "15", False),
    ("zstd", "22", True), ("zstd", "23", False), ("brotli", "11", True), ("brotli", "12", False),
    ("snappy", "15", True),  # no level read for snappy
    ("gzip", None, True), (None, "15", True), ("gzip", "９", False), ("gzip", "09", False)])
def test_the_policys_level_must_fit_the_codec_the_rewrite_writes(codec: str | None,
                                                                 level: str | None,
                                                                 ok: bool) -> None:
    if ok:
        table_props.check_level(codec, level)
    else:
        with pytest.raises(table_props.PropertyRefused, match="compaction.compression-level"):
            table_props.check_level(codec, level)
