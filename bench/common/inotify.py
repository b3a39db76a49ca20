"""Files created in a directory, seen by Linux inotify: a commit's manifests that are merged
away (and deleted) before it ends leave no other trace. Used by the rewrite-commit benchmark
and its test."""

from __future__ import annotations

import ctypes
import os
import struct
from pathlib import Path

IN_CREATE = 0x100
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, name length


class FileCreations:
    """The names of files created in ``directory`` from now on (not recursive)."""

    def __init__(self, directory: Path) -> None:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        self.fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0 or libc.inotify_add_watch(self.fd, str(directory).encode(),
                                                  IN_CREATE) < 0:
            raise OSError(ctypes.get_errno(), f"inotify on {directory}")
        self.seen: list[str] = []

    def names(self) -> list[str]:
        while True:
            try:
                buf = os.read(self.fd, 1 << 20)
            except BlockingIOError:
                return self.seen
            i = 0
            while i < len(buf):
                _, _, _, n = _EVENT.unpack_from(buf, i)
                start = i + _EVENT.size
                self.seen.append(buf[start:start + n].rstrip(b"\0").decode())
                i = start + n

    def manifests(self) -> list[str]:
        """Iceberg manifests (not manifest lists, not checksum files) created so far."""
        return [n for n in self.names()
                if n.endswith(".avro") and not n.startswith(("snap-", "."))]

    def reset(self) -> None:
        self.names()
        self.seen = []

    def close(self) -> None:
        os.close(self.fd)

    def __enter__(self) -> FileCreations:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
