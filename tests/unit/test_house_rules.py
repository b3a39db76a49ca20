"""The shape of the code, checked so it stays: services name only the storage roles they use,
plugins depend on the core only, benchmarks never import tests, one JobSpec, and no SQL in
Python source of the product."""

from __future__ import annotations

import ast
import inspect
import re
import typing
from pathlib import Path

import pytest

from tms.api.base import ServicerBase
from tms.executor.loop import Executor
from tms.scheduler.discovery import Discovery
from tms.scheduler.loop import Scheduler
from tms.storage import roles

REPO = Path(__file__).resolve().parents[2]
ROLES = {name for name, obj in vars(roles).items()
         if inspect.isclass(obj) and name.endswith("Store") and obj is not roles.TableGone}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
    return out


@pytest.mark.parametrize(("cls", "role"), [(ServicerBase, "ApiStore"),
                                           (Scheduler, "SchedulerStore"),
                                           (Discovery, "DiscoveryStore"),
                                           (Executor, "ExecutionStore")])
def test_each_service_names_only_the_roles_it_uses(cls: type, role: str) -> None:
    hint = typing.get_type_hints(cls.__init__)["store"]
    assert hint.__name__ == role and hint.__name__ in ROLES
    assert "PostgresStore" not in inspect.getsource(inspect.getmodule(cls))  # type: ignore[arg-type]


def test_execution_role_cannot_reach_the_api_side() -> None:
    """What the executor may write is visible in its role: no table registration, no
    commits, no decisions."""
    methods = {m for m in dir(roles.ExecutionStore) if not m.startswith("_")}
    assert methods and not methods & {"table_register", "table_delete", "commits_notify",
                                      "decision_finish_batch", "queue_set_limit"}


@pytest.mark.parametrize("plugin", ["engines", "formats"])
def test_plugins_depend_on_the_core_only(plugin: str) -> None:
    other = {"engines": "tms.formats", "formats": "tms.engines"}[plugin]
    paths = list((REPO / "libs" / "tms" / plugin).rglob("*.py"))  # subpackages too
    assert paths
    for path in paths:
        bad = {m for m in _imports(path) if m == other or m.startswith(other + ".")
               or m.startswith(("tms.api", "tms.scheduler", "tms.executor", "tms_services"))}
        assert not bad, f"{path.name} imports {sorted(bad)}"


def test_no_benchmark_imports_tests() -> None:
    paths = list((REPO / "bench").rglob("*.py"))
    assert paths
    for path in paths:
        assert not {m for m in _imports(path) if m == "tests" or m.startswith("tests.")}, path


def test_one_job_spec() -> None:
    found = [p for p in (REPO / "libs").rglob("*.py") if "class JobSpec" in p.read_text()]
    assert [p.relative_to(REPO).as_posix() for p in found] == ["libs/tms/domain/jobs.py"]


_SQL = re.compile(r"""["'](?:SELECT|INSERT INTO|UPDATE \w+ SET|DELETE FROM|CREATE |ALTER """
                  r"""|WITH \w+ AS)""")


def test_no_postgres_sql_in_product_python() -> None:
    """SQL lives in .sql files (libs/tms/storage/sql); the Spark jobs build Spark SQL, which
    is not PostgreSQL's and is checked by their own tests."""
    spark_sql = {"iceberg_maintenance.py", "warm_driver.py", "spark_write.py", "warmup.py"}
    offenders = [p.relative_to(REPO).as_posix()
                 for base in ("libs", "services") for p in (REPO / base).rglob("*.py")
                 if p.name not in spark_sql and "/v1/" not in p.as_posix()
                 and _SQL.search(p.read_text())]
    assert not offenders, offenders


def test_no_locks_coordination_mode() -> None:
    import tms.coordination as coordination

    assert not hasattr(coordination.Coordinator, "table_lock")
    assert "--coordination" not in (REPO / "services" / "tms_services" / "scheduler.py"
                                    ).read_text()
