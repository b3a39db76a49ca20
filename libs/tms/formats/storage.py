"""Reading a table's files where they live, for inspection and discovery: a local directory
through the OS (never through a symlink), an object store through pyiceberg's own pyarrow
file systems, configured from the catalog's storage options under pyiceberg's FileIO names
(``s3.endpoint``, ``s3.region``, ``s3.path-style-access``, ``s3.access-key-id`` ...).

Only listing and small reads are offered: inspection reads metadata, never data.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from tms.locations import LOCAL_SCHEME, Location, parent_no_follow, parse, resolve

MAX_METADATA_READ_BYTES = 64 << 20  # a metadata file larger than this is refused, not read


class StorageError(OSError):
    """A file could not be listed or read (missing, too large, unreachable)."""


class SymlinkRefused(StorageError):
    """A local directory or file is reached through a symlink: never followed (the table's
    files must lie where it is; a link may lead into another tenant's table)."""


@dataclass(frozen=True)
class Entry:
    name: str
    is_dir: bool
    is_file: bool
    size: int = 0  # bytes, for files (Hudi weighs file slices by it)
    mtime_s: float | None = None  # last modified, seconds since the epoch (Hudi heartbeats)


class Store(Protocol):
    """Files under one location; paths are ``/``-joined strings as the store takes them."""

    def join(self, *parts: str) -> str: ...

    def list_dir(self, path: str) -> list[Entry]:
        """Entries of a directory; empty when it does not exist."""
        ...

    def kind(self, path: str) -> str | None:
        """``"dir"``, ``"file"`` or None (absent; for local paths also a symlink)."""
        ...

    def read(self, path: str, max_bytes: int = MAX_METADATA_READ_BYTES) -> bytes: ...


class LocalStore:
    """Local files, never through a symlink (a table's files must lie where it is): every
    component of a path listed or read is opened without following one, so callers pass
    resolved roots (:func:`open_store` resolves its location; a Hudi base path is checked
    resolved)."""

    def join(self, *parts: str) -> str:
        return os.path.join(*parts)

    def list_dir(self, path: str) -> list[Entry]:
        """Entries of the directory, reached from ``/`` without following any symlink (a
        ``.hoodie/.temp`` or timeline directory linked elsewhere is refused, SymlinkRefused):
        callers pass resolved roots (a checked base path has every symlink resolved)."""
        try:
            fd = _open_no_follow(path, os.O_RDONLY | os.O_DIRECTORY)
        except (FileNotFoundError, NotADirectoryError):
            return []
        except SymlinkRefused:
            raise
        except OSError as e:
            raise StorageError(f"cannot list {path}: {e.strerror}") from None
        try:
            out = []
            with os.scandir(fd) as it:
                for item in it:
                    try:
                        st = item.stat(follow_symlinks=False)
                    except FileNotFoundError:  # deleted while listed (a cleaner ran)
                        continue
                    is_file = stat.S_ISREG(st.st_mode)
                    out.append(Entry(item.name, stat.S_ISDIR(st.st_mode), is_file,
                                     st.st_size if is_file else 0, st.st_mtime))
            return out
        except OSError as e:
            raise StorageError(f"cannot list {path}: {e.strerror}") from None
        finally:
            os.close(fd)

    def kind(self, path: str) -> str | None:
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            return None
        return "dir" if stat.S_ISDIR(mode) else "file" if stat.S_ISREG(mode) else None

    def read(self, path: str, max_bytes: int = MAX_METADATA_READ_BYTES) -> bytes:
        try:
            fd = _open_no_follow(path, os.O_RDONLY)
        except (FileNotFoundError, NotADirectoryError):
            raise StorageError(f"{path} is not a regular file") from None
        except SymlinkRefused:
            raise
        except OSError as e:
            raise StorageError(f"cannot read {path}: {e.strerror}") from None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise StorageError(f"{path} is not a regular file")
            with os.fdopen(fd, "rb", closefd=False) as f:
                data = f.read(max_bytes + 1)
        except StorageError:
            raise
        except OSError as e:
            raise StorageError(f"cannot read {path}: {e.strerror}") from None
        finally:
            os.close(fd)
        if len(data) > max_bytes:
            raise StorageError(f"{path} is larger than {max_bytes} bytes")
        return data


def _open_no_follow(path: str, flags: int) -> int:
    """A descriptor of the local ``path`` opened with ``flags``, every component reached
    without following a symlink (:func:`tms.locations.parent_no_follow`). SymlinkRefused
    names the first component that is a symlink; FileNotFoundError / NotADirectoryError when
    the path does not exist as asked."""
    absolute = os.path.abspath(path)
    try:
        parent, name = parent_no_follow(absolute)
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.ENOTDIR):
            _refuse_link(absolute)
        raise
    try:
        return os.open(name, flags | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
                       | getattr(os, "O_NONBLOCK", 0), dir_fd=parent)
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.ENOTDIR):
            _refuse_link(absolute)
        raise
    finally:
        os.close(parent)


def _refuse_link(path: str) -> None:
    """SymlinkRefused naming the first component of ``path`` that is a symlink, if any."""
    here = ""
    for part in [p for p in path.split("/") if p]:
        here = f"{here}/{part}"
        try:
            if stat.S_ISLNK(os.lstat(here).st_mode):
                raise SymlinkRefused(f"{here} is a symlink: {path} is not read through it")
        except FileNotFoundError:
            return


class ArrowStore:
    """An object store (or HDFS) through a pyarrow file system; paths as pyarrow takes them
    (``bucket/key`` for S3)."""

    def __init__(self, fs: Any, scheme: str, authority: str) -> None:
        self._fs = fs
        self.scheme = scheme
        self.authority = authority

    def join(self, *parts: str) -> str:
        return "/".join(p.strip("/") if i else p.rstrip("/") for i, p in enumerate(parts))

    def list_dir(self, path: str) -> list[Entry]:
        from pyarrow import fs as pafs

        try:
            infos = self._fs.get_file_info(pafs.FileSelector(path, allow_not_found=True))
        except OSError as e:
            raise StorageError(f"cannot list {self.scheme}://{path}: {e}") from None
        return [Entry(i.base_name, i.type == pafs.FileType.Directory,
                      i.type == pafs.FileType.File, int(i.size or 0),
                      i.mtime.timestamp() if i.mtime is not None else None) for i in infos]

    def kind(self, path: str) -> str | None:
        from pyarrow import fs as pafs

        try:
            info = self._fs.get_file_info(path)
        except OSError as e:
            raise StorageError(f"cannot look at {self.scheme}://{path}: {e}") from None
        return {pafs.FileType.Directory: "dir", pafs.FileType.File: "file"}.get(info.type)

    def read(self, path: str, max_bytes: int = MAX_METADATA_READ_BYTES) -> bytes:
        try:
            with self._fs.open_input_file(path) as f:
                if f.size() > max_bytes:
                    raise StorageError(f"{self.scheme}://{path} is larger than {max_bytes} bytes")
                return bytes(f.read())
        except FileNotFoundError:
            raise StorageError(f"{self.scheme}://{path} does not exist") from None
        except StorageError:
            raise
        except OSError as e:
            raise StorageError(f"cannot read {self.scheme}://{path}: {e}") from None


def file_io_properties(storage_options: Mapping[str, str]) -> dict[str, str]:
    """The storage options pyiceberg's FileIO understands (Hadoop's ``fs.*`` are the Spark
    side's). ``py-io-impl`` is never taken from anywhere else."""
    return {k: v for k, v in storage_options.items() if not k.startswith("fs.")}


def open_store(location: str, storage_options: Mapping[str, str]) -> tuple[Store, str]:
    """(the store holding ``location``, the location's path in it). ``location`` is parsed
    with the one normaliser first (LocationError, a ValueError, when it is refused); a local
    one is resolved as every location check resolves it (symlinks followed, so an operator's
    linked mount still reads), and below it the LocalStore follows no symlink."""
    where: Location = parse(location, literal=True)
    if where.scheme == LOCAL_SCHEME:
        return LocalStore(), resolve(where).path
    from pyiceberg.io.pyarrow import PyArrowFileIO

    io = PyArrowFileIO(file_io_properties(storage_options))
    scheme, netloc, path = io.parse_location(location)
    try:
        fs = io.fs_by_scheme(scheme, netloc)
    except (ValueError, OSError) as e:  # a scheme pyarrow cannot reach (no libhdfs ...)
        raise StorageError(f"cannot open {where.scheme}:// storage: {e}") from None
    return ArrowStore(fs, where.scheme, where.authority), path.rstrip("/") or path
