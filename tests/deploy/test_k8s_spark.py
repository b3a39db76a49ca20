"""deploy/k8s/overlays/spark-on-k8s: executors that submit Spark drivers as pods (deploy mode
cluster). It renders and validates like the other overlays; the RBAC lets the executors' and
the drivers' service accounts manage Spark's pods and nothing outside the namespace; the
executor's environment is a valid cluster-mode configuration for TMS's own settings; the pod
templates are valid pods, locked down, and start Spark through the image's entry point."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.deploy.test_k8s import KUBERNETES_VERSIONS, containers, find, generated, render
from tests.deploy.tools import DEPLOY, import_or_missing

pytestmark = pytest.mark.integration

OVERLAY = DEPLOY / "k8s" / "overlays" / "spark-on-k8s"
IMAGE = "example.org/tms:0.1.0"
TEMPLATES = ("driver-template.yaml", "executor-template.yaml")


def _config() -> dict[str, str]:
    return generated(render(OVERLAY), "ConfigMap", "tms-config")["data"]  # type: ignore[no-any-return]


def _templates() -> dict[str, Any]:
    yaml = import_or_missing("yaml", "PyYAML (comes with kubernetes-validate)")
    data = generated(render(OVERLAY), "ConfigMap", "tms-spark-templates")["data"]
    return {name: yaml.safe_load(data[name]) for name in TEMPLATES}


def test_renders_and_validates() -> None:
    kv = import_or_missing("kubernetes_validate", "kubernetes-validate")
    objs = render(OVERLAY)
    pods = list(_templates().values())
    for obj in [*objs, *pods]:
        for version in KUBERNETES_VERSIONS:
            try:
                kv.validate(obj, version, strict=True)
            except Exception as e:
                pytest.fail(f"{obj['kind']}/{obj.get('metadata', {}).get('name')} against "
                            f"Kubernetes {version}: {e}")


def test_rbac_lets_executors_and_drivers_manage_sparks_pods_only() -> None:
    objs = render(OVERLAY)
    role = find(objs, "Role", "tms-spark")
    pods = next(r for r in role["rules"] if r["resources"] == ["pods"])
    assert {"create", "get", "list", "watch", "delete"} <= set(pods["verbs"])
    assert all(r["apiGroups"] == [""] for r in role["rules"])
    assert not [o for o in objs if o["kind"] in ("ClusterRole", "ClusterRoleBinding")]
    binding = find(objs, "RoleBinding", "tms-spark")
    assert {s["name"] for s in binding["subjects"]} == {"tms-spark-submit", "tms-spark-driver"}
    for account in ("tms-spark-submit", "tms-spark-driver"):
        assert find(objs, "ServiceAccount", account)["metadata"]["namespace"] == "tms"
    pod = find(objs, "Deployment", "tms-executor")["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "tms-spark-submit"
    assert pod["automountServiceAccountToken"] is True  # spark-submit talks to the API
    for name in ("tms-api", "tms-scheduler"):  # the others still hold no token
        assert find(objs, "Deployment", name)["spec"]["template"]["spec"][
            "automountServiceAccountToken"] is False


def test_executor_environment_is_a_valid_cluster_mode_configuration(tmp_path: Path) -> None:
    from tms.spark.cluster import Manager, manager_of
    from tms.spark.settings import SparkSettings

    config = _config()
    assert config["TMS_SPARK_MASTER"].startswith("k8s://https://")
    assert config["TMS_SPARK_DEPLOY_MODE"] == "cluster"
    assert config["TMS_SPARK_K8S_IMAGE"] == IMAGE
    assert config["TMS_API_TARGET"] == "tms-api:50051"
    assert find(render(OVERLAY), "Service", "tms-api")["spec"]["ports"][0]["port"] == 50051
    env = dict(config)
    for name, path in (("TMS_SPARK_K8S_DRIVER_TEMPLATE", "driver-template.yaml"),
                       ("TMS_SPARK_K8S_EXECUTOR_TEMPLATE", "executor-template.yaml")):
        assert env[name] == f"/etc/tms/spark/{path}"
        (tmp_path / path).write_text("{}")
        env[name] = str(tmp_path / path)  # the mounted file, here
    jar = tmp_path / "x.jar"
    jar.write_bytes(b"")
    settings = SparkSettings.from_env(tmp_path, {**env, "TMS_SPARK_JARS": str(jar)})
    assert manager_of(settings.master) is Manager.KUBERNETES
    assert settings.k8s_secret == "tms-catalog-secrets" and settings.max_executors == 4
    executor = containers(find(render(OVERLAY), "Deployment", "tms-executor"))[0]
    mounts = {m["mountPath"]: m["name"] for m in executor["volumeMounts"]}
    assert mounts["/etc/tms/spark"] == "spark-templates"
    secret_dir = next(e["value"] for e in executor["env"] if e["name"] == "TMS_SECRET_DIR")
    assert settings.k8s_secret_dir == secret_dir  # the drivers see the same paths


def test_pod_templates_are_locked_down_and_use_the_images_entry_point() -> None:
    for name, pod in _templates().items():
        spec = pod["spec"]
        assert spec["securityContext"]["runAsNonRoot"] is True, name
        container = next(c for c in spec["containers"] if c["name"] == "spark")
        assert container["command"] == ["/usr/bin/tini", "--", "python", "-m",
                                        "tms.spark.k8s_entrypoint"]
        sc = container["securityContext"]
        assert sc["readOnlyRootFilesystem"] is True and sc["allowPrivilegeEscalation"] is False
        assert sc["capabilities"]["drop"] == ["ALL"]
        assert any(m["mountPath"] == "/tmp" for m in container["volumeMounts"])
    conf = _config()["TMS_SPARK_CONF"]
    assert "spark.kubernetes.driver.podTemplateContainerName=spark" in conf
    assert "spark.kubernetes.executor.podTemplateContainerName=spark" in conf
