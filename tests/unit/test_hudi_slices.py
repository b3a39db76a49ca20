"""The file-slice reader TMS needs beyond hudi-rs (every version of every file group), checked
against hudi-rs's own file-system view on every fixture table."""

from __future__ import annotations

from pathlib import Path

import pytest
from hudi import HudiTable

from tests.unit.test_hudi_fixture_decisions import ZIPS, tables  # noqa: F401 (a fixture)
from tms.formats.hudi.slices import (
    LOG_RE,
    all_file_groups,
    hudi_rs_options,
    latest_slices,
    partitions,
)
from tms.formats.hudi.timeline import read_timeline
from tms.formats.storage import LocalStore


@pytest.mark.parametrize("fixture", ZIPS, ids=[z[:-4] for z in ZIPS])
def test_newest_listed_slice_is_hudi_rs_latest(tables: dict[str, Path],  # noqa: F811
                                               fixture: str) -> None:
    """The newest slice of every live file group, from TMS's own listing, is the one hudi-rs
    reads: same base file and size, same log files in order (table version 8 and 9 assign log
    files by completion time), and a replaced file group is the only one hudi-rs leaves out."""
    base = tables[fixture]
    s = read_timeline(str(base))
    groups = all_file_groups(LocalStore(), str(base), s.instants, s.table_version)
    theirs = {(x.partition_path, x.file_id): x for x in HudiTable(str(base)).get_file_slices()}
    _, replaced = latest_slices(str(base))
    assert set(groups) - set(replaced) == set(theirs)
    for key, slices in groups.items():
        assert [x.base_instant for x in slices] == sorted(
            (x.base_instant for x in slices), reverse=True)
        if key in replaced:
            continue
        mine, rs = slices[0], theirs[key]
        assert (mine.base_instant, mine.base_file or "", mine.base_size) == (
            rs.creation_instant_time, rs.base_file_name, rs.base_file_size)
        assert [n for n, _ in mine.logs] == list(rs.log_file_names)
        assert [n for _, n in mine.logs] == list(rs.log_file_sizes)


def test_partitions_are_found_at_any_depth(tmp_path: Path) -> None:
    for rel in ("a=1/b=2", "a=1/b=3", "c", "deep/x/y/z"):
        (tmp_path / rel).mkdir(parents=True)
        (tmp_path / rel / ".hoodie_partition_metadata").write_bytes(b"")
    (tmp_path / ".hoodie" / "metadata" / "files").mkdir(parents=True)
    (tmp_path / ".hoodie" / "metadata" / "files" / ".hoodie_partition_metadata").write_bytes(
        b"")  # the metadata table is not a data partition
    (tmp_path / "no_marker").mkdir()
    assert partitions(LocalStore(), str(tmp_path)) == ["a=1/b=2", "a=1/b=3", "c",
                                                       "deep/x/y/z"]


def test_log_file_names() -> None:
    assert LOG_RE.fullmatch(".abc-0_20251220210130911.log.1_0-1139-3316")
    assert LOG_RE.fullmatch(".abc-0_20250126040823628.log.12")
    assert LOG_RE.fullmatch(".abc-0_20250126040823628.log.2_1-0-1.cdc")
    assert not LOG_RE.fullmatch("abc-0_20250126040823628.log.1_0-1-1")
    assert not LOG_RE.fullmatch(".abc-0_2025.log.1_0-1-1")


def test_storage_options_for_hudi_rs() -> None:
    got = hudi_rs_options({"s3.endpoint": "http://127.0.0.1:9000", "s3.region": "eu",
                           "s3.path-style-access": "true", "s3.access-key-id": "k",
                           "s3.secret-access-key": "s", "fs.s3a.impl": "x",
                           "py-io-impl": "evil"})
    assert got == {"aws_endpoint_url": "http://127.0.0.1:9000", "aws_region": "eu",
                   "aws_access_key_id": "k", "aws_secret_access_key": "s",
                   "aws_allow_http": "true", "aws_virtual_hosted_style_request": "false"}
