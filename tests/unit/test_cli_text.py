"""The `tms` CLI's input parsing and text without a server: unknown keys with "did you mean",
relative times, `--api` as a URL, hints on authentication failures, log tails, the policy
line of `explain`, a catalog's failed discovery in its list row, and values a person reads.
The same paths against a real tms-api are in tests/integration/test_cli_commands.py."""

from __future__ import annotations

import argparse
import datetime as dt
import os
import subprocess
import sys

import grpc
import pytest

from tms.api.errors import MAX_VIOLATION_CHARS, clip, invalid
from tms.formats.registry import load_formats
from tms.v1 import tms_pb2
from tms_client import PermissionDeniedError, TmsError, UnauthenticatedError
from tms_services.cli.catalogs import last_discovery_cell
from tms_services.cli.client import api_target, span_s, time_arg
from tms_services.cli.errors import (
    BAD_TOKEN_HINT,
    NO_TOKEN_HINT,
    TLS_HINT,
    from_tms_error,
)
from tms_services.cli.explain import explain_text
from tms_services.cli.format import readable
from tms_services.cli.operations import FAILED_LOG_LINES, operation_text

NOW = dt.datetime(2026, 11, 28, 12, 0, tzinfo=dt.UTC)
OP = tms_pb2.Operation


def test_an_unknown_policy_key_is_named_whole_with_the_nearest_keys() -> None:
    iceberg = load_formats()["iceberg"]
    [(field, text)] = iceberg.check_policy({"compaction.min-smal-files": "3"})
    assert field == "table.policy[compaction.min-smal-files]"
    assert text.startswith("unknown policy key; did you mean compaction.min-small-files")
    assert text.endswith("more: tms tables policy-keys or docs/policy.md)")
    assert len(text) <= MAX_VIOLATION_CHARS  # the API does not have to cut it
    listed = text.split("; known: ", 1)[1].split(", ... (")[0].split(", ")
    assert listed and all(k in iceberg.policy_keys or k.startswith(("execution.", "spark."))
                          for k in listed)  # whole names, none cut mid-word
    [(_, far)] = iceberg.check_policy({"zzz": "1"})
    assert "did you mean" not in far and far.startswith("unknown policy key; known: ")


def test_an_unknown_parameter_suggests_the_parameter() -> None:
    [(field, text)] = load_formats()["iceberg"].check_params(
        "compaction", {"target-file-size": "1"})
    assert field == "params[target-file-size]"
    assert "did you mean target-file-size-bytes" in text
    assert text.endswith("tms tables policy-keys --format iceberg)")


def test_violations_are_cut_after_a_word_not_inside_one() -> None:
    long = "known: " + ", ".join(f"compaction.key-number-{i}" for i in range(40))
    err = invalid([("table.policy[x]", long)])
    kept = err.violations[0][1]
    assert len(kept) <= MAX_VIOLATION_CHARS and kept.endswith("...")
    assert kept.removesuffix("...").rsplit(" ", 1)[1].startswith("compaction.key-number-")
    assert kept.removesuffix("...").endswith(tuple(f"-{i}" for i in range(40)))
    assert clip("short", 10) == "short"


@pytest.mark.parametrize("text,seconds", [
    ("12 hours ago", 12 * 3600), ("2d", 2 * 86400), ("90m", 90 * 60), ("1h30m", 5400),
    ("1 day ago", 86400), ("3 weeks", 3 * 604800), ("10 mins", 600), ("45s", 45),
    ("  2   Hours  ago ", 7200),
])
def test_relative_times(text: str, seconds: int) -> None:
    assert span_s(text) == seconds
    assert time_arg(text, now=lambda: NOW) == NOW - dt.timedelta(seconds=seconds)


@pytest.mark.parametrize("text", ["10 months", "12", "hours ago", "soon", "2x", ""])
def test_what_is_no_time_is_refused_with_the_forms_taken(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="12 hours ago"):
        time_arg(text, now=lambda: NOW)


def test_iso_times_still_parse_in_utc_unless_zoned() -> None:
    assert time_arg("2026-11-28T09:00") == dt.datetime(2026, 11, 28, 9, tzinfo=dt.UTC)
    zoned = time_arg("2026-11-28T09:00+02:00")
    assert zoned.utcoffset() == dt.timedelta(hours=2)


@pytest.mark.parametrize("text,target,tls", [
    ("127.0.0.1:50051", "127.0.0.1:50051", False),
    ("http://127.0.0.1:50051", "127.0.0.1:50051", False),
    ("HTTP://tms-api:7000/", "tms-api:7000", False),
    ("https://tms.example.org", "tms.example.org:443", True),
    ("https://tms.example.org:8443", "tms.example.org:8443", True),
    ("http://[::1]:50051", "[::1]:50051", False),
    ("http://tms-api", "tms-api:80", False),
])
def test_api_as_host_port_or_url(text: str, target: str, tls: bool) -> None:
    assert api_target(text) == (target, tls)


def test_api_url_with_a_path_is_refused() -> None:
    with pytest.raises(Exception, match="without a path"):
        api_target("http://host:1/v1")


def test_unauthenticated_names_tms_token() -> None:
    err = UnauthenticatedError(grpc.StatusCode.UNAUTHENTICATED, "missing bearer token")
    line = from_tms_error(err, "h:1", token_given=False).line()
    assert line == f"tms: UNAUTHENTICATED: missing bearer token ({NO_TOKEN_HINT})"
    assert "TMS_TOKEN" in NO_TOKEN_HINT and "TMS_TOKEN" in BAD_TOKEN_HINT
    assert from_tms_error(err, "h:1", token_given=True).hint == BAD_TOKEN_HINT
    denied = PermissionDeniedError(grpc.StatusCode.PERMISSION_DENIED, "reader may not")
    assert "TMS_TOKEN" in from_tms_error(denied).hint
    tls = TmsError(grpc.StatusCode.UNAVAILABLE, "ipv4:127.0.0.1:1: Tls handshake failed "
                   "(TSI_PROTOCOL_FAILURE): SSL_ERROR_SSL: WRONG_VERSION_NUMBER")
    assert from_tms_error(tls, "h:1").hint == TLS_HINT
    plain = TmsError(grpc.StatusCode.UNAVAILABLE, "failed to connect to all addresses")
    assert from_tms_error(plain, "h:1").hint == ""
    tcp = TmsError(grpc.StatusCode.UNAVAILABLE, "ipv4:127.0.0.1:1: tcp handshaker shutdown")
    assert from_tms_error(tcp, "h:1").hint == ""  # a connect that gave up is not TLS


def test_grpc_core_logs_are_off_unless_asked_for() -> None:
    env = {k: v for k, v in os.environ.items() if k != "GRPC_VERBOSITY"}
    code = ("import tms_services.cli, os; print(os.environ['GRPC_VERBOSITY'])")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=60, check=True).stdout
    assert out.strip() == "NONE"
    env["GRPC_VERBOSITY"] = "DEBUG"  # an operator's own choice is kept
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=60, check=True).stdout
    assert out.strip() == "DEBUG"


def _op(state: int, lines: int) -> tms_pb2.Operation:
    return OP(name="tables/t/operations/1", table="tables/t", action="compaction", state=state,
              log_tail="\n".join(f"INFO line {i}" for i in range(lines)))


def test_a_successful_operation_prints_its_log_only_when_asked() -> None:
    done = _op(OP.SUCCEEDED, 100)
    text = operation_text(done, NOW, logs=False)
    assert "INFO line" not in text and "log tail: 100 lines (--logs prints them)" in text
    assert text.count("INFO line") == 0
    assert operation_text(done, NOW, logs=True).count("INFO line") == 100


def test_a_failed_operation_always_prints_the_end_of_its_log() -> None:
    failed = _op(OP.FAILED, 100)
    text = operation_text(failed, NOW, logs=False)
    assert text.count("INFO line") == FAILED_LOG_LINES and "INFO line 99" in text
    assert f"last {FAILED_LOG_LINES} of 100 lines; --logs prints all" in text
    skipped = _op(OP.SKIPPED, 3)
    skipped.error = "no longer needed at snapshot 7: already done"
    text = operation_text(skipped, NOW, logs=False)
    assert text.count("INFO line") == 3
    assert "skipped:" in text and "error:" not in text  # SKIPPED is not a failure


def _explained() -> tms_pb2.ExplainTableResponse:
    r = tms_pb2.ExplainTableResponse(table="tables/t", state=tms_pb2.Table.ACTIVE)
    r.policy.add(key="compaction.min-small-files", value="50", source="table", default="10")
    r.policy.add(key="execution.max-attempts", value="2", source="catalog", default="3")
    r.policy.add(key="manifests.enabled", value="true", source="default", default="true")
    a = r.actions.add(action="compaction", decided=True, should_run=False, reason="few files")
    a.decide_time.FromDatetime(NOW)
    a.metrics.update({"last_commit_ms": 1764331200000, "total_bytes": 134217728,
                      "data_files": 1234567, "oldest_snapshot_ms": None})
    return r


def test_explain_prints_the_policy_table_only_with_policy() -> None:
    r = _explained()
    short = explain_text(r, {}, show_policy=False)
    assert "DOC" not in short and "manifests.enabled" not in short
    assert ("policy: 3 keys, 2 set (catalog: execution.max-attempts; table: "
            "compaction.min-small-files); --policy prints") in short
    full = explain_text(r, {}, show_policy=True)
    assert "manifests.enabled" in full and "SOURCE" in full


def test_metrics_read_as_numbers_and_times() -> None:
    text = explain_text(_explained(), {}, show_policy=False)
    metrics = next(line for line in text.splitlines() if line.startswith("metrics: "))
    assert "data_files=1,234,567" in metrics
    assert "total_bytes=134,217,728 (128.0 MiB)" in metrics
    assert "last_commit_ms=2025-11-28 12:00:00 UTC" in metrics
    assert "oldest_snapshot_ms=-" in metrics and "None" not in metrics
    assert readable("age_ms", 65_000) == "1m 05s"
    assert readable("ratio", 1 / 3) == "0.333"
    assert readable("interval_s", 3600) == "3,600s (1h 00m 00s)"
    assert readable("snapshot_id", 5724060641785706985) == "5724060641785706985"


def test_a_failed_discovery_shows_in_the_catalog_row() -> None:
    d = tms_pb2.CatalogDiscovery(enabled=True, last_error="catalog unreachable: timed out")
    assert last_discovery_cell(d) == "-"  # never ran: nothing to say yet
    d.last_run_time.FromDatetime(NOW)
    assert last_discovery_cell(d) == (
        "FAILED 2026-11-28 12:00:00: catalog unreachable: timed out")
    ok = tms_pb2.CatalogDiscovery(enabled=True, last_registered=1200, last_missing=2)
    ok.last_run_time.FromDatetime(NOW)
    assert last_discovery_cell(ok) == "2026-11-28 12:00:00: +1,200 registered, 2 missing"


def test_explain_prints_the_read_profile_when_engines_report() -> None:
    r = _explained()
    assert "reads:" not in explain_text(r, {}, show_policy=False)
    r.read_profile.reports = 12
    r.read_profile.summary = "12 scans reported (10 recent); 78% filter on ts (range)"
    assert ("reads: 12 scans reported (10 recent); 78% filter on ts (range)"
            in explain_text(r, {}, show_policy=False))
