"""deploy/grafana/tms-dashboard.json: valid JSON, a Prometheus data source variable that every
query uses, panels laid out without overlap, and every expression valid PromQL (promtool parses
it as a recording rule) that names only series TMS exports."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.deploy.tools import (
    DASHBOARD,
    EXPORTED_SERIES,
    KNOWN_LABELS,
    label_names,
    metric_names,
    promtool,
)

pytestmark = pytest.mark.integration
GRID_WIDTH = 24
# Grafana's interval variables, replaced by a duration so promtool can parse the expression.
GRAFANA_INTERVALS = ("$__rate_interval", "$__interval", "$__range")


def _dashboard() -> dict[str, Any]:
    return json.loads(DASHBOARD.read_text())


def _panels(panels: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for panel in panels:
        yield panel
        yield from _panels(panel.get("panels", []))  # collapsed rows hold their panels


def _targets() -> list[tuple[str, dict[str, Any]]]:
    return [(p["title"], t) for p in _panels(_dashboard()["panels"]) for t in p.get("targets", [])]


def test_dashboard_parses_and_has_a_prometheus_datasource_variable() -> None:
    dash = _dashboard()
    assert dash["title"] and dash["uid"]
    variables = {v["name"]: v for v in dash["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"


def test_every_query_uses_the_datasource_variable() -> None:
    for panel in _panels(_dashboard()["panels"]):
        if panel["type"] == "row":
            continue
        assert panel.get("targets"), f"panel {panel['title']!r} has no query"
        for ds in [panel["datasource"], *(t["datasource"] for t in panel["targets"])]:
            assert ds == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]


def test_panels_have_unique_ids_and_do_not_overlap() -> None:
    panels = list(_panels(_dashboard()["panels"]))
    ids = [p["id"] for p in panels]
    assert len(ids) == len(set(ids))
    taken: set[tuple[int, int]] = set()
    for p in panels:
        g = p["gridPos"]
        assert 0 <= g["x"] and g["x"] + g["w"] <= GRID_WIDTH, p["title"]
        cells = {(x, y) for x in range(g["x"], g["x"] + g["w"])
                 for y in range(g["y"], g["y"] + g["h"])}
        assert not cells & taken, f"panel {p['title']!r} overlaps another"
        taken |= cells


def test_the_dashboard_shows_what_it_promises() -> None:
    used = set().union(*(metric_names(t["expr"]) for _, t in _targets()))
    # Every exported family is on the dashboard (histograms through their buckets or counts).
    families = {m.removesuffix("_bucket").removesuffix("_count").removesuffix("_sum")
                for m in EXPORTED_SERIES}
    shown = {m.removesuffix("_bucket").removesuffix("_count").removesuffix("_sum") for m in used}
    assert families <= shown, f"not on the dashboard: {sorted(families - shown)}"
    exprs = " ".join(t["expr"] for _, t in _targets())
    for quantile in ("histogram_quantile(0.5,", "histogram_quantile(0.99,"):
        assert quantile in exprs


def test_expressions_name_only_exported_series_and_labels() -> None:
    for title, target in _targets():
        used = metric_names(target["expr"])
        assert used, f"{title}: names no TMS series"
        assert used <= EXPORTED_SERIES, f"{title}: unknown series {used - EXPORTED_SERIES}"
        labels = label_names(target["expr"])
        assert labels <= KNOWN_LABELS, f"{title}: unknown labels {labels - KNOWN_LABELS}"


def test_expressions_are_valid_promql(tmp_path: Path) -> None:
    """promtool parses each expression (Grafana's interval variables set to 5m)."""
    rules = []
    for i, (title, target) in enumerate(_targets()):
        expr = target["expr"]
        for var in GRAFANA_INTERVALS:
            expr = expr.replace(var, "5m")
        assert "$" not in expr, f"{title}: unexpanded variable in {expr}"
        rules.append({"record": f"dashboard:panel_query:{i}", "expr": expr})
    path = tmp_path / "dashboard-queries.yml"
    path.write_text(json.dumps({"groups": [{"name": "dashboard", "rules": rules}]}))  # YAML
    res = subprocess.run([promtool(), "check", "rules", str(path)], capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"SUCCESS: {len(rules)} rules found" in res.stdout


def test_links_open_the_console() -> None:
    """The dashboard's links go to tms-console through one variable whose default is the
    console's Service in the example overlay's namespace."""
    import yaml

    from tests.deploy.tools import K8S_BASE, K8S_OVERLAY

    dash = _dashboard()
    variables = {v["name"]: v for v in dash["templating"]["list"]}
    console = variables["console_url"]
    assert console["type"] == "textbox"
    service = yaml.safe_load_all((K8S_BASE / "console.yaml").read_text())
    name = next(d for d in service if d["kind"] == "Service")["metadata"]["name"]
    namespace = yaml.safe_load((K8S_OVERLAY / "kustomization.yaml").read_text())["namespace"]
    assert console["query"] == f"http://{name}.{namespace}.svc"
    urls = [link["url"] for link in dash["links"]]
    assert "${console_url}/" in urls and "${console_url}/operations?state=FAILED" in urls
    assert all(u.startswith("${console_url}/") for u in urls)
