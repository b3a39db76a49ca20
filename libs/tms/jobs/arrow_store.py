"""Where an arrow task's files are opened: local paths by their checked, resolved path with
no symlink followed anywhere on it (outputs with ``O_EXCL``), S3 objects through the
catalog's own endpoint and keys (``arrow_s3``) after the check on their literal URI. Split out
of ``arrow_task`` (the rewrite itself); the reasons for each check are there.

Standard library at import; pyarrow is imported inside the functions.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Sequence
from typing import Any

from tms import locations
from tms.jobs import arrow_s3

LocationError = locations.LocationError
check, check_resolved, parse = locations.check, locations.check_resolved, locations.parse
parent_no_follow, resolved_prefixes = locations.parent_no_follow, locations.resolved_prefixes


class TaskRefused(Exception):
    """An input cannot be rewritten here: ``kind`` says whether it is a location refusal
    (the whole rewrite is refused) or an ineligible file (Spark's path takes it)."""

    def __init__(self, kind: str, reason: str) -> None:
        super().__init__(reason)
        self.kind, self.reason = kind, reason


def open_checked(raw: str, allowed: Sequence[str], flags: int,
                 prefixes: Sequence[Any] | None = None) -> int:
    """A descriptor for ``raw`` once its resolved path passed the location check, opened by
    that path without following a symlink anywhere on it (``open_no_follow``). ``prefixes``:
    ``allowed`` already resolved (``locations.resolved_prefixes``)."""
    try:
        real = (check(raw, allowed, literal=True) if prefixes is None else
                check_resolved(raw, prefixes, literal=True))
    except LocationError as e:
        raise TaskRefused("location", f"{raw[:300]}: {e}") from None
    try:
        return open_no_follow(real.path, flags)
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.ENOTDIR):
            raise TaskRefused("location", f"{raw[:300]}: a symlink on its resolved path "
                                          f"(swapped in after the check)") from None
        raise


def open_no_follow(path: str, flags: int, mode: int = 0o644) -> int:
    """Open the absolute ``path`` with no symlink followed anywhere on it
    (``locations.parent_no_follow``; ``O_NOFOLLOW`` on the last component alone would follow
    a directory swapped for a symlink after the check)."""
    try:
        fd, name = parent_no_follow(path)
    except FileNotFoundError as e:  # a directory on the way is missing
        raise FileNotFoundError(e.errno, e.strerror, path) from None
    try:
        return os.open(name, flags | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), mode,
                       dir_fd=fd)
    except FileNotFoundError as e:  # named by its whole path: the error says which file
        raise FileNotFoundError(e.errno, e.strerror, path) from None
    finally:
        os.close(fd)


def unlink_no_follow(path: str) -> None:
    fd, name = parent_no_follow(path)
    try:
        os.unlink(name, dir_fd=fd)
    finally:
        os.close(fd)


def native(fd: int, mode: str) -> Any:
    """A pyarrow file on the descriptor ``fd`` (checked and opened with O_NOFOLLOW): through
    ``/proc/self/fd``, which names the open file itself (no path is looked up again), so reads
    and writes stay in C++; a Python file object where there is no /proc. Closes ``fd``."""
    import pyarrow as pa

    proc = f"/proc/self/fd/{fd}"
    if not os.path.exists(proc):
        return os.fdopen(fd, mode)
    try:
        return pa.OSFile(proc, mode="r" if mode == "rb" else "w")
    finally:
        os.close(fd)


class Store:
    """Where the task's files are: local paths (opened by their checked, resolved path with
    ``O_NOFOLLOW``, outputs with ``O_EXCL``), or S3 through the catalog's own endpoint and
    keys (``arrow_s3``; no symlinks there, the location check is on the literal URI). Every
    path is checked against the allowed locations before it is opened."""

    def __init__(self, s3: Any) -> None:
        import threading

        self._s3 = s3
        self._fs: Any = None
        self._lock = threading.Lock()  # inputs may be opened from reader threads
        self._prefixes: dict[tuple[str, ...], Any] = {}  # allowed -> resolved, once per task

    def _object(self, raw: str) -> str | None:
        """The S3 object path of ``raw``, None for a local path."""
        if not arrow_s3.is_s3(raw):
            return None
        if self._s3 is None:
            raise TaskRefused("ineligible", f"{raw[:300]}: no S3 options for the arrow path")
        with self._lock:
            if self._fs is None:
                self._fs = self._s3.filesystem()
        return arrow_s3.object_path(raw)

    def _resolved(self, allowed: Sequence[str]) -> Any:
        key = tuple(allowed)
        with self._lock:
            if key not in self._prefixes:
                try:
                    self._prefixes[key] = resolved_prefixes(allowed)
                except LocationError as e:
                    raise TaskRefused("location", f"allowed locations: {e}") from None
            return self._prefixes[key]

    def _checked(self, raw: str, allowed: Sequence[str]) -> Any:
        """``raw`` resolved, once it is inside ``allowed`` (resolved once per task)."""
        try:
            return check_resolved(raw, self._resolved(allowed), literal=True)
        except LocationError as e:
            raise TaskRefused("location", f"{raw[:300]}: {e}") from None

    def open_input(self, raw: str, allowed: Sequence[str]) -> Any:
        """An input, opened only inside ``allowed``. A local path that is literally inside a
        resolved allowed location opens with no symlink followed anywhere on it (so the file
        opened is the one at that path); only a path with a symlink on it is resolved and
        checked again, then opened by its resolved path (``open_checked``)."""
        prefixes = self._resolved(allowed)
        try:
            where = parse(raw, literal=True)
        except LocationError as e:
            raise TaskRefused("location", f"{raw[:300]}: {e}") from None
        if not where.local:
            self._checked(raw, allowed)
            key = self._object(raw)
            return self._fs.open_input_file(key)
        if any(where.is_under(p) for p in prefixes):
            try:
                return native(open_no_follow(where.path, os.O_RDONLY), "rb")
            except OSError as e:
                if e.errno not in (errno.ELOOP, errno.ENOTDIR):
                    raise
        return native(open_checked(raw, allowed, os.O_RDONLY, prefixes), "rb")

    def open_output(self, raw: str, allowed: Sequence[str]) -> Any:
        local = self._checked(raw, allowed).path  # checked before a directory is made for it
        key = self._object(raw)
        if key is not None:
            return self._fs.open_output_stream(key)
        os.makedirs(os.path.dirname(local), exist_ok=True)
        return native(open_checked(raw, allowed, os.O_WRONLY | os.O_CREAT | os.O_EXCL,
                                   self._resolved(allowed)), "wb")

    def written(self, raw: str, allowed: Sequence[str]) -> tuple[Any, int]:
        """The footer and size of a file the task wrote, read back from the store."""
        import pyarrow.parquet as pq

        key = self._object(raw)
        if key is not None:
            with self._fs.open_input_file(key) as f:
                return pq.read_metadata(f), int(f.size())
        local = self._checked(raw, allowed).path
        return pq.read_metadata(local), os.path.getsize(local)

    def remove(self, raw: str, allowed: Sequence[str]) -> None:
        """Delete an output this task may have written; what is not there is fine."""
        try:
            key = self._object(raw)
            if key is not None:
                self._fs.delete_file(key)
            else:
                unlink_no_follow(self._checked(raw, allowed).path)
        except (OSError, TaskRefused, arrow_s3.S3Unsupported):  # the driver removes them again
            pass
