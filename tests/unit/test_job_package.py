"""The job's package (tms.spark.job_package): what the zip holds, the standard-library-only rule
for what runs in the driver before Spark, and a zip that is the same for the same sources and
new when one changes. That the zip alone runs the job is checked in test_iceberg_job_sql.py."""

from __future__ import annotations

import ast
import shutil
import sys
import zipfile
from pathlib import Path

import pytest

import tms
from tms.spark import job_package as jp

LIBS = Path(tms.__file__).resolve().parent.parent
# what a module of the job may import in a function, once Spark runs: pyspark and what it
# brings (py4j, pyarrow for the arrow data path), and grpc to report the result to the API
DRIVER_THIRD_PARTY = {"pyspark", "py4j", "pyarrow", "grpc"}


def _name(arcname: str) -> str:
    return arcname.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


def test_the_zip_holds_the_job_and_the_core_modules_it_imports() -> None:
    names = {_name(a) for a, _ in jp.sources()}
    jobs = {f"tms.jobs.{p.stem}" for p in (LIBS / "tms" / "jobs").glob("*.py")
            if p.name != "__init__.py"}
    assert jobs <= names and {"tms", "tms.jobs"} <= names
    assert {"tms.locations", "tms.secrets", "tms.failures", "tms.spark.jars"} <= names
    # nothing of the service: no gRPC stubs, storage, API, scheduler, formats or engines
    assert not {n for n in names if n.startswith(("tms.v1", "tms.storage", "tms.api",
                                                  "tms.scheduler", "tms.formats",
                                                  "tms.engines", "tms.domain"))}


@pytest.mark.parametrize(("arcname", "path"), jp.sources(), ids=lambda v: str(v))
def test_what_runs_before_spark_is_the_standard_library(arcname: str, path: Path) -> None:
    """A module of the zip imports, at module level, only the standard library and other
    modules of the zip; in a function, also pyspark and its company."""
    inside = {_name(a) for a, _ in jp.sources()}
    name = _name(arcname)
    tree = ast.parse(path.read_text(), str(path))
    for dep, top in jp.imported(tree, name, path.name == "__init__.py",
                                lambda n: jp.module_path(n) is not None):
        root = dep.split(".")[0]
        if root in sys.stdlib_module_names or root == "__future__":
            continue
        if root == "tms":
            assert dep in inside or dep.rpartition(".")[0] in inside, (name, dep)
            continue
        assert not top, f"{name} imports {dep} at module level: the driver has no {root}"
        assert root in DRIVER_THIRD_PARTY, f"{name} imports {dep}"


def test_no_module_of_the_job_puts_itself_on_the_path() -> None:
    for path in (LIBS / "tms" / "jobs").glob("*.py"):
        text = path.read_text()
        assert "sys.path.insert" not in text and "no-redef" not in text, path.name


def test_the_zip_is_the_same_for_the_same_sources_and_new_when_one_changes(
        tmp_path: Path) -> None:
    root = tmp_path / "src"
    shutil.copytree(LIBS / "tms", root / "tms", ignore=shutil.ignore_patterns("__pycache__"))
    first = jp.job_zip(tmp_path / "a", root)
    again = jp.job_zip(tmp_path / "b", root)
    assert first.name == again.name and first.read_bytes() == again.read_bytes()
    assert first.name.startswith(jp.ZIP_PREFIX) and first.suffix == ".zip"
    with zipfile.ZipFile(first) as zf:
        listed = zf.namelist()
        assert listed == sorted(listed) == [a for a, _ in jp.sources(root)]
        assert {i.date_time for i in zf.infolist()} == {jp.ZIP_TIME}
        assert zf.read("tms/jobs/report.py") == (root / "tms/jobs/report.py").read_bytes()
    assert jp.job_zip(tmp_path / "a", root) == first  # cached: nothing changed
    (root / "tms" / "jobs" / "report.py").write_text(
        (root / "tms" / "jobs" / "report.py").read_text() + "\n# changed\n")
    changed = jp.job_zip(tmp_path / "a", root)
    assert changed != first and changed.parent == first.parent
    with zipfile.ZipFile(changed) as zf:
        assert zf.read("tms/jobs/report.py").endswith(b"# changed\n")


def test_a_file_that_is_not_what_the_sources_give_is_replaced(tmp_path: Path) -> None:
    root = tmp_path / "src"
    shutil.copytree(LIBS / "tms", root / "tms", ignore=shutil.ignore_patterns("__pycache__"))
    built = jp.job_zip(tmp_path / "job", root)
    good = built.read_bytes()
    jp._built.clear()  # another process: nothing cached
    built.write_bytes(b"PK planted")
    assert jp.job_zip(tmp_path / "job", root) == built and built.read_bytes() == good


def test_setup_builds_it_into_tms_home(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                       ) -> None:
    jp.main(["--home", str(tmp_path)])
    printed = Path(capsys.readouterr().out.strip())
    assert printed.parent == (tmp_path / jp.JOB_DIR_NAME).resolve() and printed.is_file()
    assert printed == jp.job_zip(tmp_path / jp.JOB_DIR_NAME)
