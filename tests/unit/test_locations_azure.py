"""Azure's stores name ``container@account.host``: the "@" is part of the place, not a user,
on abfs, abfss and wasbs only; two containers of one account, or one container name on two
accounts, are different places."""

from __future__ import annotations

import pytest

from tms.locations import LocationError, parse


def test_a_container_and_its_account_are_the_authority() -> None:
    loc = parse("abfss://Lake@Acct01.dfs.core.windows.net/wh/t")
    assert (loc.scheme, loc.authority, loc.path) == (
        "abfss", "lake@acct01.dfs.core.windows.net", "/wh/t")
    assert str(loc) == "abfss://lake@acct01.dfs.core.windows.net/wh/t"
    assert parse("wasbs://lake-2@acct01.blob.core.chinacloudapi.cn/x").authority == \
        "lake-2@acct01.blob.core.chinacloudapi.cn"


def test_other_containers_and_accounts_are_other_places() -> None:
    table = parse("abfss://lake@acct01.dfs.core.windows.net/wh/t")
    for other in ("abfss://lake2@acct01.dfs.core.windows.net/wh/t",
                  "abfss://lake@acct02.dfs.core.windows.net/wh/t",
                  "abfs://lake@acct01.dfs.core.windows.net/wh/t"):
        assert not table.overlaps(parse(other)), other
    assert parse("abfss://lake@acct01.dfs.core.windows.net/wh/t/data").is_under(table)


@pytest.mark.parametrize("raw", [
    "abfss://user:pw@acct01.dfs.core.windows.net/wh",  # a password is never a container
    "s3://lake@acct01.dfs.core.windows.net/wh",  # "@" only on Azure's schemes
    "hdfs://hdfs@nn:8020/wh",
    "abfss://lake@acct01.dfs.core.windows.net@evil.example/wh",
    "abfss://lake@acct01.dfs.core.windows.net:443/wh",
    "abfss://@acct01.dfs.core.windows.net/wh",
    "abfss://la@acct01.dfs.core.windows.net/wh",  # containers are 3-63 characters
    "abfss://lake-@acct01.dfs.core.windows.net/wh",
    "abfss://lake@ac.dfs.core.windows.net/wh",  # accounts are 3-24
    "abfss://lake@acct01/wh",  # an account host, not a bare name
    "abfss://lake@acct01..windows.net/wh",
])
def test_anything_else_with_an_at_sign_is_refused(raw: str) -> None:
    with pytest.raises(LocationError):
        parse(raw)
