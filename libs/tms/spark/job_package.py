"""The maintenance job as one package: a zip of ``tms.jobs`` and of the core modules it imports
(``tms.locations``, ``tms.secrets``, ``tms.failures``, ...), shipped to Spark with
``--py-files`` so the driver and the executors import ``tms.jobs`` as a package wherever they
run, with no TMS installed there.

What goes in is found, not listed: every module of ``tms.jobs`` and, transitively, every
``tms`` module one of them imports (at module level or in a function), with the packages
around them. The zip is deterministic (sorted entries, stored, fixed times and modes), so the
same sources give the same bytes on every machine; its name carries their digest
(``tms-job-<sha256 prefix>.zip``), so a source that changes gives a new file. It is built into
``$TMS_HOME/job`` at setup (``python -m tms.spark.job_package``; the image does it at build
time) or at first use, and a file found there is used only when its bytes are the ones these
sources give.

What runs in the driver before Spark is imported must be standard library only (a driver on
a cluster has pyspark and nothing else): ``tests/unit/test_job_package.py`` checks every
module of the zip.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import io
import os
import tempfile
import threading
import zipfile
from collections.abc import Callable, Iterable
from pathlib import Path

import tms

ROOT_PACKAGE = "tms"
JOB_PACKAGE = "tms.jobs"
ENV_HOME = "TMS_HOME"
JOB_DIR_NAME = "job"
ZIP_PREFIX = "tms-job-"
DIGEST_CHARS = 16  # of the sha256 hex digest in the file name
ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # the earliest a zip can carry: no build time in the bytes
FILE_MODE = 0o644
_SOURCE_ROOT = Path(tms.__file__).resolve().parent.parent  # the directory holding ``tms/``
Stamp = tuple[tuple[str, int, int], ...]  # (file, mtime ns, size) of every file looked at
_lock = threading.Lock()
_built: dict[tuple[Path, Stamp], Path] = {}
_found: dict[Path, tuple[Stamp, list[tuple[str, Path]]]] = {}


def module_path(name: str, root: Path = _SOURCE_ROOT) -> Path | None:
    """The source file of module or package ``name`` under ``root``, None when there is none."""
    base = root.joinpath(*name.split("."))
    for path in (base / "__init__.py", base.with_suffix(".py")):
        if path.is_file():
            return path
    return None


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imported(tree: ast.AST, module: str, is_package: bool,
             is_module: Callable[[str], bool] = lambda name: False
             ) -> Iterable[tuple[str, bool]]:
    """(module name, at module level) of every import in ``tree`` that runs (not the ones under
    ``if TYPE_CHECKING:``). ``from X import y`` yields ``X.y`` when ``is_module`` says it is a
    module, else ``X``; the package ``X`` is imported first either way."""
    def walk(node: ast.AST, top: bool) -> Iterable[tuple[str, bool]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                for sub in child.orelse:
                    yield from walk_one(sub, top)
                continue
            yield from walk_one(child, top)

    def walk_one(node: ast.AST, top: bool) -> Iterable[tuple[str, bool]]:
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, top
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = module.split(".") if is_package else module.split(".")[:-1]
                parts = parts[:len(parts) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            for alias in node.names:
                name = f"{base}.{alias.name}"
                yield (name if is_module(name) else base), top
        else:
            inner = top and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                  ast.Lambda))
            yield from walk(node, inner)

    yield from walk(tree, True)


def modules(root: Path = _SOURCE_ROOT) -> list[str]:
    """Every module the job's package needs: ``tms.jobs``'s own and the ``tms`` modules they
    import, transitively, with each enclosing package; sorted."""
    jobs_dir = root.joinpath(*JOB_PACKAGE.split("."))
    todo = [JOB_PACKAGE] + sorted(f"{JOB_PACKAGE}.{p.stem}" for p in jobs_dir.glob("*.py")
                                  if p.name != "__init__.py")
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        path = module_path(name, root)
        if path is None:
            continue  # ``from tms.x import name``: a name, not a module
        seen.add(name)
        parts = name.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]
        tree = ast.parse(path.read_text(), str(path))
        for dep, _ in imported(tree, name, path.name == "__init__.py",
                               lambda n: module_path(n, root) is not None):
            if dep == ROOT_PACKAGE or dep.startswith(ROOT_PACKAGE + "."):
                todo.append(dep)
    return sorted(seen)


def sources(root: Path = _SOURCE_ROOT) -> list[tuple[str, Path]]:
    """(name in the zip, source file) of every module of the package, sorted by name."""
    out = []
    for name in modules(root):
        path = module_path(name, root)
        assert path is not None
        out.append((path.relative_to(root).as_posix(), path))
    return sorted(out)


def zip_bytes(files: Iterable[tuple[str, Path]]) -> bytes:
    """The zip of ``files``: the same bytes for the same names and contents."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as zf:
        for arcname, path in files:
            info = zipfile.ZipInfo(arcname, ZIP_TIME)
            info.external_attr = (0o100000 | FILE_MODE) << 16  # a regular file, rw-r--r--
            info.create_system = 3  # Unix, whatever machine builds it
            zf.writestr(info, path.read_bytes())
    return buf.getvalue()


def default_dir() -> Path:
    """``$TMS_HOME/job``; without TMS_HOME, ``~/.cache/tms/job``."""
    home = os.environ.get(ENV_HOME)
    return Path(home) / JOB_DIR_NAME if home else Path.home() / ".cache" / "tms" / JOB_DIR_NAME


def job_zip(directory: Path | None = None, root: Path = _SOURCE_ROOT) -> Path:
    """The path of the job's zip in ``directory`` (default ``default_dir()``), built there
    when missing or when the file there is not what these sources give. Cached per process
    until a source file changes (its size or modification time)."""
    directory = (directory or default_dir()).resolve()
    with _lock:
        files, stamp = _sources_now(root)
        cached = _built.get((directory, stamp))
        if cached is not None and cached.is_file():
            return cached
        data = zip_bytes(files)
        target = directory / f"{ZIP_PREFIX}{hashlib.sha256(data).hexdigest()[:DIGEST_CHARS]}.zip"
        if not _holds(target, data):
            _write(target, data)
        _built[(directory, stamp)] = target
        return target


def _stamp(paths: Iterable[Path]) -> Stamp:
    out = []
    for path in sorted(set(paths)):
        try:
            st = path.stat()
        except OSError:
            out.append((str(path), -1, -1))
        else:
            out.append((str(path), st.st_mtime_ns, st.st_size))
    return tuple(out)


def _sources_now(root: Path) -> tuple[list[tuple[str, Path]], Stamp]:
    """``sources(root)`` and the stamp of every file it depends on, parsed again only when
    one of them (or the list of the job package's files) changed."""
    jobs_dir = root.joinpath(*JOB_PACKAGE.split("."))
    known = _found.get(root)
    if known is not None:
        stamp, files = known
        if _stamp([*jobs_dir.glob("*.py"), *(p for _, p in files)]) == stamp:
            return files, stamp
    files = sources(root)
    stamp = _stamp([*jobs_dir.glob("*.py"), *(p for _, p in files)])
    _found[root] = (stamp, files)
    return files, stamp


def _holds(path: Path, data: bytes) -> bool:
    try:
        return path.is_file() and not path.is_symlink() and path.read_bytes() == data
    except OSError:
        return False


def _write(target: Path, data: bytes) -> None:
    """Atomically: executors building the same zip at once each rename a whole file."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".zip", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, FILE_MODE)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m tms.spark.job_package",
        description="Build the maintenance job's zip (given to spark-submit --py-files) and "
                    "print its path.")
    parser.add_argument("--home", type=Path, default=None,
                        help="TMS home directory; the zip goes to HOME/job "
                             "(default: $TMS_HOME, else ~/.cache/tms)")
    args = parser.parse_args(argv)
    print(job_zip(args.home / JOB_DIR_NAME if args.home else None))


if __name__ == "__main__":
    main()
