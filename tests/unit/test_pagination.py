from __future__ import annotations

import pytest

from tms.api import pagination


def test_round_trip() -> None:
    tok = pagination.encode({"m": "tables", "format": ""}, "abc")
    assert pagination.decode(tok, {"m": "tables", "format": ""}, str) == "abc"


@pytest.mark.parametrize("token", ["", "!!!", "AAAA", "eyJ2IjogMX0", "e30", "bnVsbA"])
def test_malformed(token: str) -> None:
    with pytest.raises(pagination.BadPageToken):
        pagination.decode(token, {"m": "x"}, int)


def test_wrong_key_type_and_other_query() -> None:
    tok = pagination.encode({"m": "ops"}, 5)
    with pytest.raises(pagination.BadPageToken, match="malformed"):
        pagination.decode(tok, {"m": "ops"}, str)
    with pytest.raises(pagination.BadPageToken, match="different query"):
        pagination.decode(tok, {"m": "ops", "state": 1}, int)
