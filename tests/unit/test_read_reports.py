"""The report intake's parser and profile arithmetic: real Iceberg report JSON, hostile
batches, the table-name readings and the decayed profile's summary."""

from __future__ import annotations

import json

import pytest

from tms.api.report_intake import identifier_candidates
from tms.reads.profile import PROJECTED, ColumnUse, ReadProfile, increments
from tms.reads.reports import (
    MAX_BATCH_BYTES,
    MAX_BATCH_REPORTS,
    MAX_FILTER_DEPTH,
    CommitObservation,
    ReportError,
    ScanObservation,
    parse_batch,
    parse_report,
)

# As Iceberg 1.10's ReportMetricsRequestParser wrote them from a Spark 3.5 session (trimmed).
SCAN = {
    "report-type": "scan-report", "table-name": "lake.db.t", "snapshot-id": 6674382636344609412,
    "filter": {"type": "and",
               "left": {"type": "and",
                        "left": {"type": "and",
                                 "left": {"type": "not-null", "term": "id"},
                                 "right": {"type": "not-null", "term": "ts"}},
                        "right": {"type": "eq", "term": "id", "value": "(1-digit-int)"}},
               "right": {"type": "in", "term": "kind",
                         "values": ["(hash-3c2569b2)", "(hash-15de7e03)"]}},
    "schema-id": 0, "projected-field-ids": [1, 2, 3], "projected-field-names": ["id", "kind", "ts"],
    "metrics": {"result-data-files": {"unit": "count", "value": 3},
                "skipped-data-files": {"unit": "count", "value": 9},
                "total-file-size-in-bytes": {"unit": "bytes", "value": 2859},
                "total-data-manifests": {"unit": "count", "value": 2},
                "skipped-data-manifests": {"unit": "count", "value": 1},
                "total-planning-duration": {"count": 1, "time-unit": "nanoseconds",
                                            "total-duration": 161209845}},
    "metadata": {"engine-name": "spark"},
}
COMMIT = {
    "report-type": "commit-report", "table-name": "lake.db.t", "snapshot-id": 42,
    "sequence-number": 1, "operation": "append",
    "metrics": {"added-data-files": {"unit": "count", "value": 1},
                "added-files-size-bytes": {"unit": "bytes", "value": 953}},
}


def batch(*reports: object, catalog: str = "lakecat") -> bytes:
    return json.dumps({"catalog": catalog, "reports": list(reports)}).encode()


def test_real_scan_and_commit_reports_parse() -> None:
    b = parse_batch(batch(SCAN, COMMIT))
    assert b.catalog == "lakecat" and not b.refused
    (scan,) = b.scans
    assert scan == ScanObservation(
        "lake.db.t", 6674382636344609412,
        (("id", "eq"), ("id", "null"), ("kind", "in"), ("ts", "null")),
        ("id", "kind", "ts"), ("id", "kind", "ts"), 3, 9, 2859, 2, 1)
    assert b.commits == (CommitObservation("lake.db.t", 42, 1, "append", 1, 953),)


def test_transforms_or_not_and_constants() -> None:
    scan = parse_report({**SCAN, "filter": {
        "type": "or",
        "left": {"type": "not", "child": {"type": "lt-eq", "term": {
            "type": "transform", "transform": "day", "term": "ts"}, "value": "(date)"}},
        "right": {"type": "starts-with", "term": "name", "value": "(hash-1)"}}})
    assert isinstance(scan, ScanObservation)
    assert scan.predicates == (("name", "range"), ("ts", "range"))
    assert parse_report({**SCAN, "filter": True}).predicates == ()  # type: ignore[union-attr]
    assert parse_report({**SCAN, "filter": {"type": "true"}}).predicates == ()  # type: ignore[union-attr]


@pytest.mark.parametrize("body, match", [
    (b"not json", "not JSON"),
    (b"[]", "JSON object"),
    (json.dumps({"catalog": "Bad-Id", "reports": [SCAN]}).encode(), "catalog id"),
    (json.dumps({"catalog": "c", "reports": []}).encode(), "1 to"),
    (json.dumps({"catalog": "c", "reports": [SCAN] * (MAX_BATCH_REPORTS + 1)}).encode(), "1 to"),
    (b'{"catalog": "c", "reports": [NaN]}', "not JSON"),
    (b"x" * (MAX_BATCH_BYTES + 1), "exceeds"),
    (b"[" * 100_000 + b"]" * 100_000, "not JSON"),
])
def test_unusable_batches_are_refused(body: bytes, match: str) -> None:
    with pytest.raises(ReportError, match=match):
        parse_batch(body)


def _deep(n: int) -> dict[str, object]:
    node: dict[str, object] = {"type": "eq", "term": "a", "value": "(1-digit-int)"}
    for _ in range(n):
        node = {"type": "not", "child": node}
    return node


@pytest.mark.parametrize("report, match", [
    ({**SCAN, "report-type": "delete-report"}, "report-type"),
    ({**SCAN, "table-name": ""}, "table-name"),
    ({**SCAN, "table-name": "a\x00b"}, "table-name"),
    ({**SCAN, "table-name": "x" * 5000}, "table-name"),
    ({**SCAN, "snapshot-id": "1"}, "snapshot-id"),
    ({**SCAN, "snapshot-id": 1 << 64}, "snapshot-id"),
    ({**SCAN, "snapshot-id": True}, "snapshot-id"),
    ({**SCAN, "filter": {"type": "drop-table", "term": "a"}}, "unknown filter operation"),
    ({**SCAN, "filter": {"type": "eq", "term": "a\nb"}}, "column name"),
    ({**SCAN, "filter": {"type": "eq", "term": "c" * 300}}, "column name"),
    ({**SCAN, "filter": {"type": "eq", "term": {"type": "transform"}}}, "transform term"),
    ({**SCAN, "filter": _deep(MAX_FILTER_DEPTH + 1)}, "nested deeper"),
    ({**SCAN, "filter": {"type": "and", "left": "x", "right": True}}, "filter node"),
    ({**SCAN, "projected-field-names": ["a"] * 1001}, "projected-field-names"),
    ({**SCAN, "metrics": {"result-data-files": {"value": -1}}}, "non-negative"),
    ({**SCAN, "metrics": {"result-data-files": {"value": 1.5}}}, "non-negative"),
    ({**SCAN, "metrics": []}, "metrics"),
    ({**COMMIT, "snapshot-id": None}, "snapshot-id"),
    ({**COMMIT, "operation": "<script>"}, "operation"),
])
def test_bad_reports_are_refused_one_by_one(report: dict[str, object], match: str) -> None:
    with pytest.raises(ReportError, match=match):
        parse_report(report)
    b = parse_batch(batch(report, SCAN))
    assert len(b.scans) == 1 and len(b.refused) == 1 and b.refused[0].startswith("reports[0]")


def test_wide_filters_are_bounded() -> None:
    wide: object = {"type": "eq", "term": "c0", "value": "x"}
    for i in range(1, 600):
        wide = {"type": "or", "left": wide, "right": {"type": "eq", "term": f"c{i}"}}
    with pytest.raises(ReportError):  # too deep or too many nodes, whichever comes first
        parse_report({**SCAN, "filter": wide})
    flat = {"type": "and", "left": {"type": "eq", "term": "a"}, "right": {"type": "and", "left": {
        "type": "eq", "term": "b"}, "right": {"type": "and", "left": {"type": "eq", "term": "c"},
        "right": {"type": "and", "left": {"type": "eq", "term": "d"},
                  "right": {"type": "eq", "term": "e"}}}}}
    scan = parse_report({**SCAN, "filter": flat})
    assert isinstance(scan, ScanObservation) and scan.filter_columns == ("a", "b", "c", "d")


def test_identifier_readings() -> None:
    assert identifier_candidates("lake.db.t") == [("db", "t"), ("lake.db", "t")]
    assert identifier_candidates("lake.a.b.t") == [("a.b", "t"), ("lake.a.b", "t")]
    assert identifier_candidates("db.t") == [("db", "t")]
    assert identifier_candidates("t") == []
    assert identifier_candidates("thrift://hms:9083/db.t") == [("db", "t")]


def test_increments_and_profile_summary() -> None:
    scan = parse_report(SCAN)
    other = parse_report({**SCAN, "filter": {"type": "gt", "term": "ts", "value": "(timestamp)"},
                          "projected-field-names": ["ts"]})
    assert isinstance(scan, ScanObservation) and isinstance(other, ScanObservation)
    inc = increments([(7, scan), (7, other), (8, other)])
    assert set(inc) == {7, 8}
    seven = inc[7]
    assert seven.scans == 2 and seven.filtered_scans == 2
    assert seven.predicates[("ts", "range")] == 1 and seven.predicates[("ts", PROJECTED)] == 2
    assert seven.column_sets == {("id", "kind", "ts"): 1, ("ts",): 1}
    assert seven.result_files == 6 and seven.skipped_files == 18
    profile = ReadProfile(10.0, 8.0, 30.0, 70.0, 1e6, 12,
                          (ColumnUse("ts", "range", 7.8), ColumnUse("user_id", "eq", 3.1),
                           ColumnUse("ts", PROJECTED, 10.0)), ((("ts",), 7.0),))
    assert profile.kept_share == pytest.approx(0.3)
    assert profile.filter_share("ts") == pytest.approx(0.78)
    assert profile.summary() == ("12 scans reported (10 recent); 78% filter on ts (range), "
                                 "31% filter on user_id (eq); scans keep 30% of the files planned")
