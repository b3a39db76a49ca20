"""The import graph of the product (``libs/tms`` and ``services``), built with ``ast``: no
cycle, and none of the leaks the layers forbid.

Every import that runs counts, at module level or inside a function (a function-level import
is a cycle deferred, not avoided); imports under ``if TYPE_CHECKING:`` never run and are left
out. ``from package import name`` is an arrow to ``package.name`` when that is a module (a
package that re-exports its modules is no cycle with them), else to ``package``."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

import pytest

from tms.spark.job_package import imported

REPO = Path(__file__).resolve().parents[2]
ROOTS = (REPO / "libs", REPO / "services")


def _modules() -> dict[str, Path]:
    out = {}
    for root in ROOTS:
        for path in root.rglob("*.py"):
            rel = path.relative_to(root).with_suffix("")
            if rel.parts[:2] == ("tms", "v1"):
                continue  # generated gRPC code
            parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
            out[".".join(parts)] = path
    return out


MODULES = _modules()


def _resolve(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for name, path in MODULES.items():
        deps = set()
        tree = ast.parse(path.read_text(), str(path))
        for dep, _ in imported(tree, name, path.name == "__init__.py", MODULES.__contains__):
            target = _resolve(dep)
            if target and target != name:
                deps.add(target)
        graph[name] = deps
    return graph


GRAPH = _graph()


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def _arrows(source: str, target: str) -> Iterable[tuple[str, str]]:
    """Arrows from modules under ``source`` to modules under ``target``."""
    for name, deps in sorted(GRAPH.items()):
        if name == source or name.startswith(source + "."):
            for dep in sorted(deps):
                if dep == target or dep.startswith(target + "."):
                    yield name, dep


def test_the_graph_is_the_products() -> None:
    assert {"tms.api.server", "tms.jobs.iceberg_maintenance", "tms_services.cli"} <= set(GRAPH)
    assert "tms.policy.common" in GRAPH["tms.formats.base"]
    assert "tms.formats.hudi.markers" in GRAPH["tms.formats.hudi.plan_guard"]


def test_cycles_are_found() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle() -> None:
    assert cycles(GRAPH) == []


@pytest.mark.parametrize(("source", "target", "why"), [
    ("tms", "tms_services", "the libraries never import the services"),
    ("tms.storage", "tms.local", "storage does not depend on the developer tools"),
    ("tms.api", "tms.formats.hudi", "the API asks the format plugins, through their interface"),
    ("tms.api", "tms.formats.iceberg", "the API asks the format plugins, through their interface"),
    ("tms.api", "tms.formats.storage", "the API asks the format plugins, through their interface"),
    ("tms.engines", "tms.formats", "engines run the JobSpec a format built"),
    ("tms.formats", "tms.engines", "formats build a JobSpec, whatever engine runs it"),
    ("tms.jobs", "tms.formats", "the job imports only its package and the core"),
    ("tms.jobs", "tms.engines", "the job imports only its package and the core"),
    ("tms.locations", "tms.jobs", "the core does not depend on the job"),
    ("tms.secrets", "tms.jobs", "the core does not depend on the job"),
    ("tms.failures", "tms.jobs", "the core does not depend on the job"),
])
def test_no_leak(source: str, target: str, why: str) -> None:
    assert list(_arrows(source, target)) == [], why
