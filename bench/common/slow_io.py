"""A pyiceberg FileIO that adds a fixed delay to every file opened for reading: object-store
latency (about 100 ms a GET) on local files, for the scheduler's latency scenario.

A catalog uses it through its properties: ``py-io-impl`` = ``bench.common.slow_io.SlowFileIO``
and ``bench.read-delay-ms`` (default :data:`READ_DELAY_MS`). Every read pyiceberg makes through
a FileIO (metadata JSON, manifest lists, manifests) opens an input file, so every one waits;
the wait is a sleep, so it releases the GIL like a socket read would. Reads are counted
(:data:`READS`) for the report. Writes are not delayed.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from pyiceberg.io import InputFile, InputStream
from pyiceberg.io.pyarrow import PyArrowFileIO

READ_DELAY_MS = 100.0
DELAY_PROPERTY = "bench.read-delay-ms"


class ReadCounter:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.count = 0

    def add(self) -> None:
        with self._lock:
            self.count += 1


READS = ReadCounter()


class _SlowInput(InputFile):
    def __init__(self, inner: InputFile, delay_s: float) -> None:
        super().__init__(inner.location)
        self._inner = inner
        self._delay_s = delay_s

    def __len__(self) -> int:
        return len(self._inner)

    def exists(self) -> bool:
        return self._inner.exists()

    def open(self, seekable: bool = True) -> InputStream:
        READS.add()
        time.sleep(self._delay_s)
        return self._inner.open(seekable)


class SlowFileIO(PyArrowFileIO):
    def __init__(self, properties: Any = None) -> None:
        super().__init__(dict(properties or {}))
        self.delay_s = float(self.properties.get(DELAY_PROPERTY, READ_DELAY_MS)) / 1000

    def new_input(self, location: str) -> InputFile:  # type: ignore[override]
        return _SlowInput(super().new_input(location), self.delay_s)
