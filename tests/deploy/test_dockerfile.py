"""deploy/Dockerfile, checked without Docker (none runs on these machines): it installs the
system packages scripts/setup installs for the runtime, the project without dev extras, runs
the Spark provisioner into TMS_HOME, runs as the non-root user the manifests expect under tini;
and the files its build context sends are enough to build the project's wheel, as the image's
`pip install` does."""

from __future__ import annotations

import fnmatch
import re
import shlex
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.deploy.tools import DOCKERFILE, DOCKERIGNORE, REPO, SETUP

pytestmark = pytest.mark.integration
# scripts/setup's packages that are not the image's: services TMS talks to over the network,
# and tools of the tests. A package added to scripts/setup must be put here or in the image.
NOT_RUNTIME = {"zookeeper", "postgresql", "prometheus", "chromium"}
TMS_HOME = "/opt/tms"
WHEEL_TIMEOUT_S = 600


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    lines = [ln for ln in DOCKERFILE.read_text().splitlines()
             if not ln.lstrip().startswith("#")]
    joined = re.sub(r"\\\n", " ", "\n".join(lines))
    out = []
    for line in joined.splitlines():
        if line.strip():
            word, _, rest = line.strip().partition(" ")
            out.append((word.upper(), " ".join(rest.split())))
    return out


def runs() -> list[str]:
    return [args for word, args in instructions() if word == "RUN"]


def setup_packages() -> list[str]:
    match = re.search(r"^APT_PACKAGES=\(([^)]*)\)", SETUP.read_text(), re.M)
    assert match, "APT_PACKAGES=(...) not found in scripts/setup"
    return match.group(1).split()


def apt_installed() -> set[str]:
    packages: set[str] = set()
    for run in runs():
        for command in re.split(r"&&|;", run):
            words = shlex.split(command)
            if words[:2] == ["apt-get", "install"]:
                packages.update(w for w in words[2:] if not w.startswith("-"))
    return packages


def test_image_installs_the_runtime_packages_of_scripts_setup() -> None:
    wanted = set(setup_packages()) - NOT_RUNTIME
    assert {"openjdk-17-jre-headless", "libjarjar-java", "libpostgresql-jdbc-java"} <= wanted
    installed = apt_installed()
    assert wanted <= installed, f"missing from the image: {sorted(wanted - installed)}"
    assert not installed & NOT_RUNTIME, "a service or test tool is baked into the image"
    assert any("rm -rf /var/lib/apt/lists" in r for r in runs())


def test_image_is_python_311_on_debian_with_tms_home_and_the_provisioned_jars() -> None:
    steps = instructions()
    base = [args for word, args in steps if word == "FROM"]
    assert len(base) == 1 and re.fullmatch(r"python:3\.11[\w.-]*-bookworm", base[0]), base
    envs = " ".join(args for word, args in steps if word == "ENV")
    assert re.search(rf"\bTMS_HOME={re.escape(TMS_HOME)}(\s|$)", envs)
    provision = [r for r in runs() if "python -m tms.spark.provision" in r]
    assert provision, "the Spark/Iceberg jars are not provisioned at build time"
    assert re.search(r'--home "?\$TMS_HOME"?', provision[0])
    install = [r for r in runs() if "pip install" in r]
    assert install and not any("[dev]" in r or ".[" in r for r in install), install
    order = [i for i, r in enumerate(runs()) if "pip install" in r or "tms.spark.provision" in r]
    assert "pip install" in runs()[order[0]], "provisioning needs the project installed first"
    # the job's zip, built where a Kubernetes driver pod of the same image finds it (local://)
    package = [i for i, r in enumerate(runs()) if "python -m tms.spark.job_package" in r]
    assert package and package[0] > order[0], "the job's package is not built at build time"
    assert re.search(r'--home "?\$TMS_HOME"?', runs()[package[0]])


def test_image_runs_as_non_root_under_tini() -> None:
    steps = instructions()
    users = [args for word, args in steps if word == "USER"]
    assert users and re.fullmatch(r"[1-9]\d*(:\d+)?", users[-1]), users
    entry = [args for word, args in steps if word == "ENTRYPOINT"]
    assert entry and "tini" in entry[-1]
    # The user comes after every root step.
    last_user = max(i for i, (w, _) in enumerate(steps) if w == "USER")
    assert all(w != "RUN" for w, _ in steps[last_user:])
    assert "50051" in " ".join(a for w, a in steps if w == "EXPOSE")


def _context_files() -> list[Path]:
    """The files the build context sends: the ignore file lets back in (``!path``) a few
    top-level entries after excluding everything (``*``); its ``**/`` patterns then drop
    caches. This reads the ignore file the way it is written, not every form Docker accepts."""
    lines = [ln.strip() for ln in DOCKERIGNORE.read_text().splitlines()
             if ln.strip() and not ln.startswith("#")]
    assert lines[0] == "*", "the ignore file must start by excluding everything"
    allowed = [ln[1:].rstrip("/") for ln in lines if ln.startswith("!")]
    dropped = [ln.removeprefix("**/") for ln in lines[1:] if not ln.startswith("!")]
    assert all("/" not in a for a in allowed) and all("/" not in d for d in dropped)
    files = []
    for entry in allowed:
        top = REPO / entry
        assert top.exists(), f"{entry} is let into the context but does not exist"
        for path in [top] if top.is_file() else sorted(top.rglob("*")):
            rel = path.relative_to(REPO)
            if path.is_file() and not any(fnmatch.fnmatch(part, d) for part in rel.parts
                                          for d in dropped):
                files.append(rel)
    return files


def test_copy_sources_are_in_the_build_context() -> None:
    sent = {p.parts[0] for p in _context_files()}
    for word, args in instructions():
        if word == "COPY":
            *sources, _dest = args.split()
            for src in sources:
                assert src.rstrip("/") in sent, f"COPY {src}: not in the build context"


def test_the_build_context_builds_the_project(tmp_path: Path) -> None:
    """pip builds the wheel from exactly the files the context sends (build isolation, as in
    the image), and the wheel carries what the processes need at run time."""
    context = tmp_path / "context"
    for rel in _context_files():
        (context / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, context / rel)
    res = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q",
                          "-w", str(tmp_path / "dist"), str(context)],
                         capture_output=True, text=True, timeout=WHEEL_TIMEOUT_S)
    assert res.returncode == 0, res.stderr[-4000:]
    (wheel,) = (tmp_path / "dist").glob("tms-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        entry_points = zf.read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
    assert any(re.fullmatch(r"tms/storage/sql/migrations/.+\.sql", n) for n in names)
    assert "tms/spark/provision.py" in names
    assert "tms/spark/hc5_shim/PoolingHttpClientConnectionManagerBuilder.java" in names
    assert "tms/jobs/spark_catalogs.py" in names and "tms/spark/jars.py" in names
    assert any(n.startswith("tms/jobs/") for n in names)
    for script in ("tms-api", "tms-scheduler", "tms-executor", "tms ="):
        assert script in entry_points
    for plugin in ("tms.formats.iceberg.plugin:IcebergFormat",
                   "tms.formats.hudi.plugin:HudiFormat"):
        assert plugin in entry_points and f"{plugin.split(':')[0].replace('.', '/')}.py" in names
