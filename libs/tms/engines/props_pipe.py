"""Private files that never reach a disk: a named pipe (FIFO) served from memory while a
job runs.

Hudi's utilities read their writer properties only from a file system (``--props``, read by
``DFSPropertiesConfiguration`` through Hadoop's ``FileSystem.open``), and those properties may
hold resolved secrets. A 0600 file in the attempt's private directory is readable only by
TMS's own user, but it is on disk for the whole run and stays there when the executor dies
before its ``finally``. A FIFO holds no data: each reader that opens it gets the bytes from
this process's memory, and what is left behind after a crash is an empty name.

Each reader gets the whole text once, then end-of-file (a reader that opens the path again is
served again) until ``close``. A pipe gives end-of-file only when no writer is left, and a
writer reopening the same pipe for the next reader would feed the first one the text twice;
so once a reader has opened the pipe, a fresh pipe is renamed over the name (atomically: the
name never disappears) before the text is written to the one that reader holds. The pipe's
mode is 0600 inside the 0700 work directory, so only TMS's user can open it, as with the
file. Two readers opening the name within the same microseconds would share one text; Hudi's
utilities read it once, in one thread.
"""

from __future__ import annotations

import errno
import os
import stat
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from tms.engines.workdir import PRIVATE_FILE_MODE

# Longest a close waits for the serving thread to notice it, in total (the thread only ever
# blocks in open(2) or write(2), both of which the close unblocks).
CLOSE_TIMEOUT_S = 5.0
_CLOSE_POLL_S = 0.02  # between a close's attempts to unblock the thread


class PropsPipe:
    """A FIFO at ``path`` that gives every reader ``data``; ``close`` removes it."""

    def __init__(self, path: Path, data: bytes) -> None:
        self.path = path
        self._data = data
        self._stop = threading.Event()
        self.served = 0  # readers that got the whole text (tests read it)
        self._fresh = 0
        self._renew()  # over a leftover of a crashed attempt (a name, no data) or anything else
        self._thread = threading.Thread(target=self._serve, name=f"props-pipe-{path.name}",
                                        daemon=True)
        self._thread.start()

    def _renew(self) -> None:
        """A new, empty FIFO at ``path``, renamed over whatever is there."""
        self._fresh += 1
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.{self._fresh}")
        tmp.unlink(missing_ok=True)
        os.mkfifo(tmp, PRIVATE_FILE_MODE)
        if stat.S_IMODE(os.lstat(tmp).st_mode) != PRIVATE_FILE_MODE:  # a umask wider than ours
            os.chmod(tmp, PRIVATE_FILE_MODE)
        os.replace(tmp, self.path)

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:  # blocks until a reader opens the pipe (or close opens it to wake us)
                fd = os.open(self.path, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
            except OSError:
                return  # the name is gone: closed
            try:
                if self._stop.is_set():
                    return
                self._renew()  # the next reader opens another pipe: this one gets EOF at close
                view = memoryview(self._data)
                while view:
                    view = view[os.write(fd, view):]
                self.served += 1
            except OSError as e:  # the reader went away before the end: it gets no more
                if e.errno not in (errno.EPIPE, errno.ECONNRESET):
                    return
            finally:
                os.close(fd)

    def close(self) -> None:
        """Stop serving and remove the name. A reader still blocked opening the pipe gets
        end-of-file; the thread is woken by opening the pipe's read side ourselves."""
        self._stop.set()
        waited = 0.0
        while self._thread.is_alive() and waited < CLOSE_TIMEOUT_S:
            try:
                fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
                os.close(fd)
            except OSError:
                pass
            self._thread.join(_CLOSE_POLL_S)
            waited += _CLOSE_POLL_S
        self.path.unlink(missing_ok=True)


@contextmanager
def serving(files: Mapping[Path, bytes]) -> Iterator[list[PropsPipe]]:
    """Serve each of ``files`` (path -> text) through its FIFO for the ``with`` block."""
    pipes: list[PropsPipe] = []
    try:
        for path, data in files.items():
            pipes.append(PropsPipe(path, data))
        yield pipes
    finally:
        for pipe in pipes:
            pipe.close()
