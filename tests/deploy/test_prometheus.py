"""deploy/prometheus/alerts.yml: promtool accepts it and its unit tests pass, every alert is
complete (for, severity, summary, description) and names only series TMS exports; and those
series are exactly what the processes serve on /metrics."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from tests.deploy.tools import (
    ALERTS,
    ALERTS_TEST,
    EXPORTED_SERIES,
    KNOWN_LABELS,
    REPO,
    import_or_missing,
    label_names,
    metric_names,
    promtool,
)

pytestmark = pytest.mark.integration
SEVERITIES = {"critical", "warning", "info"}
PROMTOOL_TIMEOUT_S = 120


def _rules() -> list[dict]:
    yaml = import_or_missing("yaml", "PyYAML (comes with kubernetes-validate)")
    doc = yaml.safe_load(ALERTS.read_text())
    return [rule for group in doc["groups"] for rule in group["rules"]]


def test_promtool_check_rules() -> None:
    res = subprocess.run([promtool(), "check", "rules", str(ALERTS)], capture_output=True,
                         text=True, timeout=PROMTOOL_TIMEOUT_S)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "SUCCESS" in res.stdout


def test_promtool_unit_tests_of_the_alerts() -> None:
    res = subprocess.run([promtool(), "test", "rules", str(ALERTS_TEST)], capture_output=True,
                         text=True, timeout=PROMTOOL_TIMEOUT_S, cwd=ALERTS_TEST.parent)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "SUCCESS" in res.stdout


def test_every_alert_has_for_severity_and_annotations() -> None:
    rules = _rules()
    names = [r["alert"] for r in rules]
    assert len(names) == len(set(names)), "duplicate alert names"
    for rule in rules:
        assert "alert" in rule, f"recording rule in an alerts file: {rule}"
        name = rule["alert"]
        assert rule.get("for"), f"{name}: no 'for'"
        assert rule.get("labels", {}).get("severity") in SEVERITIES, f"{name}: severity"
        annotations = rule.get("annotations", {})
        for key in ("summary", "description"):
            assert str(annotations.get(key, "")).strip(), f"{name}: no {key}"


def test_the_alerts_cover_what_operators_page_on() -> None:
    """One alert at least per concern the deployment promises, on the series behind it."""
    by_metric: dict[str, set[str]] = {}
    for rule in _rules():
        for metric in metric_names(rule["expr"]):
            by_metric.setdefault(metric, set()).add(rule["alert"])
    for metric in ("tms_operations_finished_total", "tms_queue_oldest_age_seconds",
                   "tms_scheduler_leader", "tms_lease_expiries_total", "tms_tables_overdue",
                   "tms_zookeeper_session_up", "tms_api_requests_total", "tms_actions_held"):
        assert by_metric.get(metric), f"no alert on {metric}"


def test_alert_expressions_name_only_exported_series_and_labels() -> None:
    for rule in _rules():
        expr = rule["expr"]
        used = metric_names(expr)
        assert used, f"{rule['alert']}: names no TMS series"
        assert used <= EXPORTED_SERIES, f"{rule['alert']}: unknown series {used - EXPORTED_SERIES}"
        labels = label_names(expr)
        assert labels <= KNOWN_LABELS, f"{rule['alert']}: unknown labels {labels - KNOWN_LABELS}"


def test_the_name_check_catches_a_misspelt_series() -> None:
    assert metric_names('rate(tms_operation_finished_total{state="FAILED"}[5m])') == {
        "tms_operation_finished_total"}
    assert not metric_names("rate(tms_operation_finished_total[5m])") <= EXPORTED_SERIES
    assert label_names("sum by (action, queue) (x{code=~\"A|B\", state!=\"OK\"})") == {
        "action", "queue", "code", "state"}


_EXPORT = textwrap.dedent("""
    import dataclasses, json, sys, types, urllib.request
    from tms.observability.metrics import configure_metrics, instruments
    from tms.scheduler.gauges import register_scheduler_gauges

    port = configure_metrics("deploy-test", "127.0.0.1:0")
    for field in dataclasses.fields(instruments()):
        instrument = getattr(instruments(), field.name)
        if hasattr(instrument, "add"):
            instrument.add(1, {})
        else:
            instrument.record(1.0, {})
    store = types.SimpleNamespace(
        queue_stats=lambda: [{"queue": "default", "action": "compaction", "queued": 1,
                              "oldest_age_s": 2.0}],
        table_count_overdue=lambda grace_s: 0,
        hold_counts=lambda: {"compaction": 1})
    coordinator = types.SimpleNamespace(member_id="scheduler-0", healthy=True, leads=True,
                                        held_shards={1, 2})
    register_scheduler_gauges(store, coordinator)
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        sys.stdout.write(r.read().decode())
""")


def test_the_series_list_is_what_the_processes_serve() -> None:
    """Every instrument and scheduler gauge, recorded once in a fresh process with the real
    metrics setup (SDK views, Prometheus exporter, /metrics on loopback), gives exactly the
    series the alerts and the dashboard are checked against."""
    from prometheus_client.parser import text_string_to_metric_families

    res = subprocess.run([sys.executable, "-c", _EXPORT], capture_output=True, text=True,
                         timeout=120, cwd=REPO)
    assert res.returncode == 0, res.stderr[-4000:]
    served = {s.name for family in text_string_to_metric_families(res.stdout)
              for s in family.samples if s.name.startswith("tms_")}
    assert served == EXPORTED_SERIES, json.dumps(
        {"served, not listed": sorted(served - EXPORTED_SERIES),
         "listed, not served": sorted(EXPORTED_SERIES - served)}, indent=1)
