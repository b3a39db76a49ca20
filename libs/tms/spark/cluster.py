"""Where a Spark driver runs, and how TMS follows and stops one it does not own as a child.

In deploy mode ``client`` the driver is spark-submit's own JVM, a child of the executor: its
exit is the job's end and killing its process group stops it. In deploy mode ``cluster`` the
cluster manager starts the driver somewhere else, so spark-submit only submits (TMS turns
waiting for completion off) and TMS follows the driver by its *submission id*:

==========  ===========================  ===========================  ========================
manager     submission id                status                       kill
==========  ===========================  ===========================  ========================
Kubernetes  ``namespace:driver-pod``     ``spark-submit --status``    ``spark-submit --kill``
            (TMS names the pod)          (pod phase)
YARN        ``application_<ts>_<n>``     ``yarn application -status``  ``yarn application -kill``
            (from spark-submit's output)  (State / Final-State)
==========  ===========================  ===========================  ========================

Standalone clusters run Python applications in client mode only (Spark refuses
``--deploy-mode cluster`` for Python there), and TMS's Iceberg jobs are Python: settings
validation refuses that combination (``refusal``). The functions here are pure (argv in,
parsed state out) so every command line is unit-tested exactly.
"""

from __future__ import annotations

import enum
import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass

STANDALONE_PREFIX = "spark://"
K8S_PREFIX = "k8s://"
YARN = "yarn"
ENV_YARN_CLI = "TMS_YARN_CLI"  # the ``yarn`` command (Hadoop client, HADOOP_CONF_DIR set)
DEFAULT_YARN_CLI = "yarn"
POD_NAME_MAX = 63  # a DNS-1123 label
_POD_UNSAFE_RE = re.compile(r"[^a-z0-9-]+")
_YARN_APP_RE = re.compile(r"\b(application_\d{10,}_\d{4,})\b")
_K8S_PHASE_RE = re.compile(r"^\s*phase:\s*(\w+)\s*$", re.MULTILINE)
_YARN_STATE_RE = re.compile(r"^\s*State\s*:\s*(\w+)\s*$", re.MULTILINE)
_YARN_FINAL_RE = re.compile(r"^\s*Final-State\s*:\s*(\w+)\s*$", re.MULTILINE)
_K8S_GONE_RE = re.compile(r"Application not found|No applications found")
_YARN_GONE_RE = re.compile(r"ApplicationNotFoundException|doesn't exist in RM")


class Manager(enum.Enum):
    LOCAL = "local"
    STANDALONE = "standalone"
    YARN = "yarn"
    KUBERNETES = "kubernetes"
    MESOS = "mesos"


class DriverState(enum.Enum):
    RUNNING = "RUNNING"  # submitted, pending or running
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    KILLED = "KILLED"
    GONE = "GONE"  # the manager no longer knows it (pod deleted, application aged out)
    UNKNOWN = "UNKNOWN"  # the status command failed or said nothing we understand

    @property
    def ended(self) -> bool:
        return self in (DriverState.SUCCEEDED, DriverState.FAILED, DriverState.KILLED,
                        DriverState.GONE)


def manager_of(master: str) -> Manager:
    if master.startswith("local"):
        return Manager.LOCAL
    if master.startswith(STANDALONE_PREFIX):
        return Manager.STANDALONE
    if master == YARN:
        return Manager.YARN
    if master.startswith(K8S_PREFIX):
        return Manager.KUBERNETES
    return Manager.MESOS


def refusal(master: str, deploy_mode: str) -> str | None:
    """Why this master cannot take this deploy mode for TMS's jobs; None when it can."""
    if deploy_mode != "cluster":
        return None
    found = manager_of(master)
    if found is Manager.LOCAL:
        return "'cluster' cannot be used with a local master"
    if found is Manager.STANDALONE:
        return ("'cluster' with a standalone master (spark://): Spark runs Python "
                "applications on standalone clusters in client mode only, and TMS's Iceberg "
                "jobs are Python. Use client mode: the driver runs in the executor, the "
                "work on the cluster's workers")
    if found is Manager.MESOS:
        return "'cluster' is supported on YARN and Kubernetes only"
    return None


def driver_pod_name(label: str) -> str:
    """A fresh driver pod name for one submission: ``tms-<label>-<random>-driver``, a valid
    DNS-1123 label (lower case, at most 63 characters) that no earlier attempt used."""
    safe = _POD_UNSAFE_RE.sub("-", label.lower()).strip("-") or "job"
    suffix = f"-{secrets.token_hex(4)}-driver"
    return f"tms-{safe}"[:POD_NAME_MAX - len(suffix)].rstrip("-") + suffix


def submission_id(manager: Manager, namespace: str, pod_name: str | None,
                  submit_output: str) -> str | None:
    """The id to follow a submitted driver by: Kubernetes ``namespace:pod`` (TMS named the
    pod), YARN the application id spark-submit printed; None when it is not known."""
    if manager is Manager.KUBERNETES:
        return f"{namespace}:{pod_name}" if pod_name else None
    if manager is Manager.YARN:
        m = _YARN_APP_RE.search(submit_output)
        return m.group(1) if m else None
    return None


def status_argv(manager: Manager, spark_submit: str, master: str, sid: str,
                yarn_cli: str = DEFAULT_YARN_CLI) -> list[str]:
    if manager is Manager.YARN:
        return [yarn_cli, "application", "-status", sid]
    return [spark_submit, "--master", master, "--status", sid]


def kill_argv(manager: Manager, spark_submit: str, master: str, sid: str,
              yarn_cli: str = DEFAULT_YARN_CLI) -> list[str]:
    if manager is Manager.YARN:
        return [yarn_cli, "application", "-kill", sid]
    return [spark_submit, "--master", master, "--kill", sid]


_K8S_PHASES = {"pending": DriverState.RUNNING, "running": DriverState.RUNNING,
               "succeeded": DriverState.SUCCEEDED, "failed": DriverState.FAILED}
_YARN_FINAL = {"SUCCEEDED": DriverState.SUCCEEDED, "FAILED": DriverState.FAILED,
               "KILLED": DriverState.KILLED}
_YARN_RUNNING = ("NEW", "NEW_SAVING", "SUBMITTED", "ACCEPTED", "RUNNING")


def parse_status(manager: Manager, output: str) -> DriverState:
    """The driver's state from the status command's output (stdout and stderr together)."""
    if manager is Manager.KUBERNETES:
        if _K8S_GONE_RE.search(output):
            return DriverState.GONE
        phases = _K8S_PHASE_RE.findall(output)
        return _K8S_PHASES.get(phases[-1].lower(), DriverState.UNKNOWN) if phases \
            else DriverState.UNKNOWN
    if manager is Manager.YARN:
        if _YARN_GONE_RE.search(output):
            return DriverState.GONE
        state, final = _YARN_STATE_RE.search(output), _YARN_FINAL_RE.search(output)
        if state and state.group(1) in _YARN_RUNNING:
            return DriverState.RUNNING
        if final and final.group(1) in _YARN_FINAL:
            return _YARN_FINAL[final.group(1)]
        if state and state.group(1) in ("FAILED", "KILLED"):
            return DriverState(state.group(1))
        return DriverState.UNKNOWN
    return DriverState.UNKNOWN


@dataclass(frozen=True)
class SubmitPlan:
    """What a cluster-mode submission adds: conf on the command line (never secret), and
    lines of a private properties file (the report token, YARN's secret environment)."""

    conf: dict[str, str]
    properties: dict[str, str]
    pod_name: str | None = None


def driver_env_key(manager: Manager, name: str) -> str:
    """The Spark conf setting environment variable ``name`` of a cluster-mode driver."""
    if manager is Manager.KUBERNETES:
        return f"spark.kubernetes.driverEnv.{name}"
    return f"spark.yarn.appMasterEnv.{name}"


def escape_property(text: str, key: bool = False) -> str:
    """``text`` for a Java properties file (``java.util.Properties.load``): backslashes,
    line breaks, tabs and a leading space escaped; in keys also ``=``, ``:``, ``#``, ``!``
    and spaces."""
    out = []
    for i, ch in enumerate(text):
        if ch == "\\":
            out.append("\\\\")
        elif ch in "\n\r\t\f":
            out.append({"\n": "\\n", "\r": "\\r", "\t": "\\t", "\f": "\\f"}[ch])
        elif (key and ch in "=:#! ") or (ch == " " and i == 0) or (i == 0 and ch in "#!"):
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) > 0x7E:  # as UTF-16 units (surrogate pairs too)
            data = ch.encode("utf-16-be")
            out.append("".join(f"\\u{int.from_bytes(data[j:j + 2], 'big'):04x}"
                               for j in range(0, len(data), 2)))
        else:
            out.append(ch)
    return "".join(out)


def properties_text(defaults: str, properties: Sequence[tuple[str, str]]) -> str:
    """A properties file: ``defaults`` (spark-defaults.conf, which spark-submit skips when
    ``--properties-file`` is given) and then ``properties``, which win."""
    lines = [defaults.rstrip("\n")] if defaults.strip() else []
    lines += [f"{escape_property(k, key=True)}={escape_property(v)}" for k, v in properties]
    return "\n".join(lines) + "\n"
