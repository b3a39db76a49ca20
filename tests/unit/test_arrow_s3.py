"""The catalog's S3 storage mapped onto pyarrow: faithful, or refused with the reason named."""

from __future__ import annotations

import pickle

import pytest

from tms.jobs import arrow_s3
from tms.jobs.arrow_s3 import S3Unsupported

KEYS = {"s3.access-key-id": "AKIAEXAMPLE", "s3.secret-access-key": "s3cr3t-value"}


def test_static_keys_endpoint_region_and_path_style_map_onto_pyarrow() -> None:
    opts = arrow_s3.options({**KEYS, "s3.endpoint": "http://127.0.0.1:9000",
                             "s3.region": "eu-west-1", "s3.path-style-access": "TRUE"})
    assert opts.endpoint_override == "127.0.0.1:9000"
    assert opts.scheme == "http"
    assert opts.region == "eu-west-1"
    assert opts.force_virtual_addressing is False
    assert (opts.access_key, opts.secret_key) == ("AKIAEXAMPLE", "s3cr3t-value")
    assert opts.session_token is None


def test_virtual_host_addressing_unless_path_style_is_asked_for() -> None:
    # S3A's default: a bucket is addressed as a host name, also against an endpoint
    assert arrow_s3.options({**KEYS, "s3.endpoint": "https://s3.example.com"}
                            ).force_virtual_addressing is True
    assert arrow_s3.options(KEYS).force_virtual_addressing is True
    with pytest.raises(S3Unsupported, match="without s3.endpoint"):
        arrow_s3.options({**KEYS, "s3.path-style-access": "true"})


def test_the_secrets_are_never_shown_and_survive_pickling_for_tasks() -> None:
    opts = arrow_s3.options({**KEYS, "s3.session-token": "tok-123"})
    shown = repr(opts) + str(opts)
    for secret in ("AKIAEXAMPLE", "s3cr3t-value", "tok-123"):
        assert secret not in shown
    assert pickle.loads(pickle.dumps(opts)) == opts


@pytest.mark.parametrize("props, named", [
    ({}, "no static S3 keys"),
    ({"s3.access-key-id": "a"}, "no static S3 keys"),
    ({**KEYS, "fs.s3a.aws.credentials.provider": "x"}, "fs.s3a.aws.credentials.provider"),
    ({**KEYS, "s3.sse.type": "kms"}, "s3.sse.type"),
    ({**KEYS, "s3.signer.uri": "http://x"}, "s3.signer.uri"),
    ({**KEYS, "s3.path-style-access": "yes", "s3.endpoint": "http://h:1"}, "true or false"),
    ({**KEYS, "s3.region": "us-east-1; rm -rf /"}, "not a region"),
    ({**KEYS, "s3.region": "EU-WEST-1"}, "not a region"),
    ({"s3.access-key-id": "a\nb", "s3.secret-access-key": "c"}, "control characters"),
])
def test_what_pyarrow_cannot_reproduce_is_refused_by_name(props: dict[str, str],
                                                          named: str) -> None:
    with pytest.raises(S3Unsupported, match=named.replace(".", r"\.").replace(";", ";")):
        arrow_s3.options(props)


def test_a_refusal_never_shows_a_secret_value() -> None:
    with pytest.raises(S3Unsupported) as info:
        arrow_s3.options({"s3.access-key-id": "AKIA\x00HIDDEN", "s3.secret-access-key": "x"})
    assert "HIDDEN" not in str(info.value)


@pytest.mark.parametrize("endpoint", [
    "ftp://127.0.0.1:21",                 # scheme
    "127.0.0.1:9000",                     # no scheme
    "http://user:pw@127.0.0.1:9000",      # user info
    "http://127.0.0.1:9000/bucket",       # a path
    "http://127.0.0.1:9000?x=1",          # a query
    "http://127.0.0.1:9000#f",            # a fragment
    "http://127.0.0.1:99999",             # port out of range
    "http://exa mple.com",                # a space in the host
    "http://example.com\r\nX-Injected: 1",  # header injection
    " http://127.0.0.1:9000",             # surrounding spaces
    "http://",                            # no host
    "http://h%2fost",                     # percent-encoded slash
])
def test_hostile_endpoints_are_refused(endpoint: str) -> None:
    with pytest.raises(S3Unsupported, match="s3.endpoint"):
        arrow_s3.options({**KEYS, "s3.endpoint": endpoint})


def test_an_ipv6_endpoint_keeps_its_brackets() -> None:
    opts = arrow_s3.options({**KEYS, "s3.endpoint": "http://[::1]:9000",
                             "s3.path-style-access": "true"})
    assert opts.endpoint_override == "[::1]:9000"


@pytest.mark.parametrize("uri, path", [
    ("s3://bucket/warehouse/t/data/0.parquet", "bucket/warehouse/t/data/0.parquet"),
    ("s3a://bucket/a/b.parquet", "bucket/a/b.parquet"),
    ("S3N://bucket/a%20b.parquet", "bucket/a%20b.parquet"),  # literal, as Iceberg's FileIO
])
def test_object_paths_are_taken_literally(uri: str, path: str) -> None:
    assert arrow_s3.is_s3(uri)
    assert arrow_s3.object_path(uri) == path


@pytest.mark.parametrize("uri", [
    "file:/tmp/x.parquet", "/tmp/x.parquet", "gs://bucket/x", "s3:/bucket/x",
    "s3://bucket", "s3://bucket/", "s3://bucket/dir/", "s3://B_ucket/x",
    "s3://bucket/a/../b", "s3://bucket/a/./b", "s3://bucket//a", "s3://bucket/a\\b",
    "s3://bucket/a\nb", "s3://bucket/" + "k" * 1025, "s3://../x", "s3://bu..cket/x",
])
def test_what_is_not_one_object_is_refused(uri: str) -> None:
    with pytest.raises(S3Unsupported):
        arrow_s3.object_path(uri)
