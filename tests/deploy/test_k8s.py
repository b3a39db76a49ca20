"""deploy/k8s: the kustomize base and the example overlay render with kustomize (`kubectl
kustomize`), every rendered object validates against the Kubernetes OpenAPI schemas (strict:
unknown fields are errors) of the oldest supported and the newest release, and the manifests
keep the promises of deploy/README.md. The processes' own argument parsers accept every
container's arguments, and the configuration validates with TMS's own code."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import subprocess
import sys
import tomllib
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from tests.deploy.tools import (
    DOCKERFILE,
    K8S_BASE,
    K8S_OVERLAY,
    REPO,
    import_or_missing,
    kubectl,
)

pytestmark = pytest.mark.integration
# 1.27: native gRPC probes are GA. The newest is what the validator ships.
KUBERNETES_VERSIONS = ("1.27.0", "1.37.0")
METRICS_PORT = 9464
API_PORT = 50051
REPORT_PORT = 50052  # the report intake (docs/reads.md)
DEPLOYMENTS = {"tms-api": 2, "tms-scheduler": 3, "tms-executor": 2}
OVERLAY_REPLICAS = {"tms-api": 3, "tms-scheduler": 3, "tms-executor": 4}
OVERLAY_IMAGE = "example.org/tms:0.1.0"
# The console script each container starts, as a module the test can run.
ENTRY_MODULES = {"tms-api": "tms_services.api", "tms-scheduler": "tms_services.scheduler",
                 "tms-executor": "tms_services.executor", "tms": "tms_services.cli",
                 "tms-console": "tms_services.console"}
CONSOLE_PORT = 8080

Obj = dict[str, Any]


@cache
def render(directory: Path) -> tuple[Obj, ...]:
    yaml = import_or_missing("yaml", "PyYAML (comes with kubernetes-validate)")
    res = subprocess.run([kubectl(), "kustomize", str(directory)], capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    return tuple(d for d in yaml.safe_load_all(res.stdout) if d)


def find(objs: tuple[Obj, ...], kind: str, name: str) -> Obj:
    for o in objs:
        if o["kind"] == kind and o["metadata"]["name"] == name:
            return o
    raise AssertionError(f"{kind}/{name} not rendered")


def generated(objs: tuple[Obj, ...], kind: str, prefix: str) -> Obj:
    """A generated object (name with kustomize's content hash suffix)."""
    hits = [o for o in objs if o["kind"] == kind
            and re.fullmatch(rf"{prefix}-[a-z0-9]{{10}}", o["metadata"]["name"])]
    assert len(hits) == 1, f"{kind} {prefix}-<hash>: {len(hits)} rendered"
    return hits[0]


def workloads(objs: tuple[Obj, ...]) -> list[Obj]:
    return [o for o in objs if o["kind"] in ("Deployment", "Job")]


def containers(workload: Obj) -> list[Obj]:
    spec = workload["spec"]["template"]["spec"]
    return [*spec.get("initContainers", []), *spec["containers"]]


@pytest.mark.parametrize("directory", [K8S_BASE, K8S_OVERLAY], ids=["base", "overlay"])
def test_renders_and_validates_against_the_kubernetes_schemas(directory: Path) -> None:
    kv = import_or_missing("kubernetes_validate", "kubernetes-validate")
    objs = render(directory)
    assert len(objs) >= 12
    for obj in objs:
        for version in KUBERNETES_VERSIONS:
            try:
                kv.validate(obj, version, strict=True)
            except Exception as e:  # the validator's own error types; name the object
                pytest.fail(f"{obj['kind']}/{obj['metadata']['name']} against Kubernetes "
                            f"{version}: {e}")


def test_the_validator_rejects_a_broken_manifest() -> None:
    """A misspelt field and a wrong type fail validation, so the test above checks something."""
    kv = import_or_missing("kubernetes_validate", "kubernetes-validate")
    api = find(render(K8S_BASE), "Deployment", "tms-api")
    misspelt = copy.deepcopy(api)
    misspelt["spec"]["replica"] = 2
    wrong_type = copy.deepcopy(api)
    wrong_type["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"] = "grpc"
    for broken in (misspelt, wrong_type):
        with pytest.raises(Exception):  # noqa: B017 - any validation error will do
            kv.validate(broken, KUBERNETES_VERSIONS[-1], strict=True)


def test_base_has_every_part() -> None:
    objs = render(K8S_BASE)
    for name, replicas in DEPLOYMENTS.items():
        assert find(objs, "Deployment", name)["spec"]["replicas"] == replicas
        find(objs, "PodDisruptionBudget", name)
    find(objs, "Service", "tms-api")
    find(objs, "Job", "tms-migrate")
    find(objs, "ServiceAccount", "tms")
    generated(objs, "ConfigMap", "tms-config")
    generated(objs, "ConfigMap", "tms-engine")
    generated(objs, "Secret", "tms-secrets")


def test_overlay_sets_image_replicas_and_namespace() -> None:
    objs = render(K8S_OVERLAY)
    for name, replicas in OVERLAY_REPLICAS.items():
        assert find(objs, "Deployment", name)["spec"]["replicas"] == replicas
    for w in workloads(objs):
        for c in containers(w):
            assert c["image"] == OVERLAY_IMAGE, w["metadata"]["name"]
    for o in objs:
        if o["kind"] != "Namespace":
            assert o["metadata"]["namespace"] == "tms", o["metadata"]["name"]
    for w in workloads(render(K8S_BASE)):
        for c in containers(w):
            assert c["image"] == "tms:latest"


@pytest.mark.parametrize("directory", [K8S_BASE, K8S_OVERLAY], ids=["base", "overlay"])
def test_every_container_is_bounded_and_locked_down(directory: Path) -> None:
    dockerfile_user = re.search(r"^USER\s+(\d+)", DOCKERFILE.read_text(), re.M)
    assert dockerfile_user
    for w in workloads(render(directory)):
        name = w["metadata"]["name"]
        pod = w["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True, name
        assert str(pod["securityContext"]["runAsUser"]) == dockerfile_user.group(1), name
        assert pod["automountServiceAccountToken"] is False, name
        tmp_volumes = {v["name"] for v in pod["volumes"] if "emptyDir" in v}
        for c in containers(w):
            for kind in ("requests", "limits"):
                for resource in ("cpu", "memory"):
                    assert c["resources"][kind][resource], f"{name}: {kind}.{resource}"
            sc = c["securityContext"]
            assert sc["readOnlyRootFilesystem"] is True, name
            assert sc["allowPrivilegeEscalation"] is False, name
            assert sc["capabilities"]["drop"] == ["ALL"], name
            assert "command" not in c, f"{name}: `command` would replace tini; use args"
            writable = {m["mountPath"]: m["name"] for m in c["volumeMounts"]
                        if m["name"] in tmp_volumes}
            assert "/tmp" in writable, f"{name}: no writable /tmp"


def test_executor_has_more_resources_and_a_work_dir() -> None:
    objs = render(K8S_BASE)
    executor = containers(find(objs, "Deployment", "tms-executor"))[0]
    api = containers(find(objs, "Deployment", "tms-api"))[0]

    def gib(quantity: str) -> float:
        number, unit = re.fullmatch(r"(\d+)(Mi|Gi)", quantity).groups()  # type: ignore[union-attr]
        return int(number) / (1024 if unit == "Mi" else 1)

    assert gib(executor["resources"]["limits"]["memory"]) > gib(api["resources"]["limits"]
                                                                ["memory"])
    pod = find(objs, "Deployment", "tms-executor")["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    work = [m for m in executor["volumeMounts"] if m["mountPath"] == "/opt/tms/work"]
    assert work and "emptyDir" in volumes[work[0]["name"]]
    args = executor["args"]
    config = args[args.index("--engine-config") + 1]
    mount = next(m for m in executor["volumeMounts"] if config.startswith(m["mountPath"] + "/"))
    assert "configMap" in volumes[mount["name"]]
    grace = float(args[args.index("--shutdown-grace-s") + 1])
    assert pod["terminationGracePeriodSeconds"] > grace


def test_every_process_serves_metrics_and_is_scraped() -> None:
    objs = render(K8S_BASE)
    for name in DEPLOYMENTS:
        d = find(objs, "Deployment", name)
        args = containers(d)[0]["args"]
        assert args[args.index("--metrics-listen") + 1] == f"0.0.0.0:{METRICS_PORT}", name
        annotations = d["spec"]["template"]["metadata"]["annotations"]
        assert annotations["prometheus.io/scrape"] == "true"
        assert annotations["prometheus.io/port"] == str(METRICS_PORT)
        ports = {p["containerPort"] for p in containers(d)[0]["ports"]}
        assert METRICS_PORT in ports, name


def test_api_probes_are_native_grpc_and_the_service_routes_both_ports() -> None:
    objs = render(K8S_BASE)
    api = containers(find(objs, "Deployment", "tms-api"))[0]
    for probe in ("readinessProbe", "livenessProbe"):
        assert api[probe]["grpc"] == {"port": API_PORT}, probe
    assert api["args"][api["args"].index("--listen") + 1] == f"0.0.0.0:{API_PORT}"
    assert api["args"][api["args"].index("--report-listen") + 1] == f"0.0.0.0:{REPORT_PORT}"
    assert {p["containerPort"] for p in api["ports"]} == {API_PORT, REPORT_PORT, METRICS_PORT}
    service = find(objs, "Service", "tms-api")
    assert {p["port"] for p in service["spec"]["ports"]} == {API_PORT, REPORT_PORT, METRICS_PORT}
    pod_labels = find(objs, "Deployment", "tms-api")["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= pod_labels.items()


def test_disruption_budgets_and_references_resolve() -> None:
    objs = render(K8S_OVERLAY)
    names = {(o["kind"], o["metadata"]["name"]) for o in objs}
    for name in DEPLOYMENTS:
        pdb = find(objs, "PodDisruptionBudget", name)
        labels = find(objs, "Deployment", name)["spec"]["template"]["metadata"]["labels"]
        assert pdb["spec"]["selector"]["matchLabels"].items() <= labels.items()
    for w in workloads(objs):
        pod = w["spec"]["template"]["spec"]
        assert ("ServiceAccount", pod["serviceAccountName"]) in names
        for v in pod.get("volumes", []):
            if "secret" in v:
                assert ("Secret", v["secret"]["secretName"]) in names
            if "configMap" in v:
                assert ("ConfigMap", v["configMap"]["name"]) in names
        for c in containers(w):
            for e in c.get("env", []):
                ref = e.get("valueFrom", {}).get("secretKeyRef")
                if ref:
                    secret = find(objs, "Secret", ref["name"])
                    assert ref["key"] in secret["data"], ref
            for source in c.get("envFrom", []):
                kind, ref = (("ConfigMap", source["configMapRef"]) if "configMapRef" in source
                             else ("Secret", source["secretRef"]))
                assert (kind, ref["name"]) in names


def test_catalog_secrets_reach_every_service_privately() -> None:
    """Catalog secrets (referenced by catalogs as file:<name> or env:TMS_SECRET_*) are
    mounted read-only, group-readable only, where TMS_SECRET_DIR points, in every service
    that resolves them (API at registration, schedulers, executors)."""
    objs = render(K8S_OVERLAY)
    secret = generated(objs, "Secret", "tms-catalog-secrets")["metadata"]["name"]
    for name in DEPLOYMENTS:
        pod = find(objs, "Deployment", name)["spec"]["template"]["spec"]
        volume = next(v for v in pod["volumes"] if v["name"] == "catalog-secrets")
        assert volume["secret"] == {"secretName": secret, "defaultMode": 0o440}
        container = pod["containers"][0]
        mount = next(m for m in container["volumeMounts"] if m["name"] == "catalog-secrets")
        assert mount["readOnly"] is True
        env = {e["name"]: e.get("value") for e in container["env"]}
        assert env["TMS_SECRET_DIR"] == mount["mountPath"]
        assert {"secretRef": {"name": secret, "optional": True}} in container["envFrom"]


def test_migration_job_runs_tms_migrate() -> None:
    job = find(render(K8S_BASE), "Job", "tms-migrate")
    assert containers(job)[0]["args"] == ["tms", "migrate"]
    assert job["spec"]["template"]["spec"]["restartPolicy"] in ("Never", "OnFailure")


def _environment_names(objs: tuple[Obj, ...]) -> set[str]:
    names = set(generated(objs, "ConfigMap", "tms-config")["data"])
    for w in workloads(objs):
        for c in containers(w):
            names.update(e["name"] for e in c.get("env", []))
    return names


def test_every_tms_environment_variable_is_one_the_code_reads() -> None:
    sources = "\n".join(p.read_text() for top in ("libs", "services")
                        for p in (REPO / top).rglob("*.py"))
    for name in sorted(_environment_names(render(K8S_OVERLAY))):
        if name.startswith("TMS_"):
            assert f'"{name}"' in sources, f"{name}: no TMS code reads it (a typo?)"


def test_the_processes_accept_every_container_argument() -> None:
    """Each container's arguments go to the real entry point with the ConfigMap's environment
    and no database URL: it must get past argument parsing (and the scheduler's queue
    priorities) and stop only at the missing database URL."""
    objs = render(K8S_BASE)
    config = generated(objs, "ConfigMap", "tms-config")["data"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("TMS_")}
    env.update(config)
    for w in workloads(objs):
        args = containers(w)[0]["args"]
        if args[0] == "tms-console":
            continue  # no database at all: see test_console_is_a_stateless_web_front
        module = ENTRY_MODULES[args[0]]
        res = subprocess.run([sys.executable, "-m", module, *args[1:]], capture_output=True,
                             text=True, timeout=120, env=env, cwd=REPO)
        where = f"{w['metadata']['name']}: {' '.join(args)}"
        assert res.returncode == 2, f"{where}: rc={res.returncode} {res.stderr[-2000:]}"
        assert "--database-url" in res.stderr and "required" in res.stderr, (
            f"{where}: {res.stderr[-2000:]}")


def test_spark_settings_and_engine_config_are_valid(tmp_path: Path) -> None:
    """The ConfigMap's TMS_SPARK_* and engine.toml through TMS's own validation."""
    from tms.engines.profiles import ENGINE_WARM, parse_profiles
    from tms.spark.settings import SparkSettings

    objs = render(K8S_BASE)
    config = generated(objs, "ConfigMap", "tms-config")["data"]
    settings = SparkSettings.from_env(tmp_path, environ=config)
    assert settings.is_local
    engine = generated(objs, "ConfigMap", "tms-engine")["data"]["engine.toml"]
    assert engine == (K8S_BASE / "engine.toml").read_text()
    default, queues = parse_profiles(tomllib.loads(engine), settings)
    assert any(q.engine == ENGINE_WARM for q in queues.values()), "no warm queue example"
    assert default.engine != ENGINE_WARM


def test_example_tokens_file_is_well_formed_but_admits_nobody(tmp_path: Path) -> None:
    """The placeholder tokens file has the real shape (it loads once each digest is a real
    one), and tms-api refuses it as it is, so the example can never authenticate a caller."""
    from tms.api.auth import Authenticator

    path = K8S_BASE / "secret-example" / "tokens.json"
    with pytest.raises(ValueError, match=r"tokens\[0\]"):
        Authenticator.from_file(path)
    doc = json.loads(path.read_text())
    for i, token in enumerate(doc["tokens"]):
        assert token["sha256"].startswith("REPLACE"), token["name"]
        token["sha256"] = hashlib.sha256(f"token-{i}".encode()).hexdigest()
    filled = tmp_path / "tokens.json"
    filled.write_text(json.dumps(doc))
    assert Authenticator.from_file(filled).enabled


def test_console_is_a_stateless_web_front() -> None:
    """tms-console: its own Deployment, Service and budget; HTTP probes that do not follow the
    API; the API reached through its Service; a session key from the Secret and no database
    URL or token of its own; arguments its parser accepts."""
    objs = render(K8S_BASE)
    deployment = find(objs, "Deployment", "tms-console")
    assert deployment["spec"]["replicas"] >= 2
    container = containers(deployment)[0]
    args = container["args"]
    assert args[0] == "tms-console"
    assert args[args.index("--listen") + 1] == f"0.0.0.0:{CONSOLE_PORT}"
    api_service = find(objs, "Service", "tms-api")
    api_host, api_port = args[args.index("--api") + 1].split(":")
    assert api_host == api_service["metadata"]["name"]
    assert int(api_port) in {p["port"] for p in api_service["spec"]["ports"]}
    for probe in ("readinessProbe", "livenessProbe"):
        assert container[probe]["httpGet"] == {"path": "/healthz", "port": "http"}, probe
    env = {e["name"]: e for e in container.get("env", [])}
    assert "TMS_DATABASE_URL" not in env and "TMS_TOKENS_FILE" not in env
    assert not container.get("envFrom"), "the console needs no shared configuration"
    key_path = env["TMS_CONSOLE_SESSION_KEY_FILE"]["value"]
    pod = deployment["spec"]["template"]["spec"]
    mount = next(m for m in container["volumeMounts"]
                 if key_path.startswith(m["mountPath"] + "/"))
    volume = next(v for v in pod["volumes"] if v["name"] == mount["name"])
    secret = generated(objs, "Secret", "tms-secrets")
    assert volume["secret"]["secretName"] == secret["metadata"]["name"]
    assert [i["key"] for i in volume["secret"]["items"]] == ["console-session-key"]
    assert "console-session-key" in secret["data"]
    service = find(objs, "Service", "tms-console")
    assert service["spec"]["selector"].items() <= (
        deployment["spec"]["template"]["metadata"]["labels"].items())
    assert [p["targetPort"] for p in service["spec"]["ports"]] == ["http"]
    pdb = find(objs, "PodDisruptionBudget", "tms-console")
    assert pdb["spec"]["selector"]["matchLabels"]["app.kubernetes.io/name"] == "tms-console"
    code = ("import sys; from tms_services.console import parse_args; "
            "a = parse_args(sys.argv[1:]); print(a.listen, a.api)")
    res = subprocess.run([sys.executable, "-c", code, *args[1:]], capture_output=True,
                         text=True, timeout=60, cwd=REPO)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == [f"0.0.0.0:{CONSOLE_PORT}", "tms-api:50051"]


def test_the_example_session_key_is_refused(tmp_path: Path) -> None:
    """The placeholder session key is not a key: tms-console will not start on it."""
    import base64

    from tms.console.session import SessionKeyError, load_key

    secret = generated(render(K8S_BASE), "Secret", "tms-secrets")
    placeholder = base64.b64decode(secret["data"]["console-session-key"])
    path = tmp_path / "session-key"
    path.write_bytes(placeholder)
    with pytest.raises(SessionKeyError):
        load_key(path)
