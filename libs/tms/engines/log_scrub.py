"""A child's output written to its log with secret values masked on the way, never after.

Hudi's utilities print their properties when they start (HoodieCleaner prints them all), so a
job whose writer settings hold resolved secrets would otherwise put them in ``driver.log`` in
plain text for as long as the job runs, and leave them there if the executor died before
masking the file afterwards. Here the child writes into a pipe; a thread reads it and writes
the log with every secret replaced by ``MASK``.

Masking a stream: an occurrence may straddle two reads, and one secret may contain another (a
shorter one masked first would leave the rest of the longer one readable). After each read,
only a tail of the buffer that could still grow into a secret (a proper prefix of one) is held
back; every occurrence before it is complete, so it is masked and written. At end of stream
the rest is masked and written. A log line is thus written as soon as it is read, unless it
ends with the first bytes of a secret.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterable
from typing import IO

MASK = b"****"
READ_BYTES = 64 * 1024
JOIN_TIMEOUT_S = 10.0


class Masker:
    """Masks ``secrets`` in a byte stream given in pieces (``feed``, then ``end``): the same
    bytes as masking the whole stream at once (``mask``), leftmost and longest first, so a
    secret that contains another is masked whole."""

    def __init__(self, secrets: Iterable[str]) -> None:
        values = sorted({s.encode() for s in secrets if s}, key=len, reverse=True)
        self._values = values
        self._pattern = re.compile(b"|".join(re.escape(v) for v in values)) if values else None
        self._keep = max((len(v) for v in values), default=1) - 1
        self._buf = b""

    def mask(self, data: bytes) -> bytes:
        return self._pattern.sub(MASK, data) if self._pattern is not None else data

    def feed(self, chunk: bytes) -> bytes:
        """What may be written now of everything fed so far: all of it but a tail that could
        still become a secret (a proper prefix of one). An occurrence that starts before that
        tail is complete, whichever secret it is, so it is decided now."""
        buf = self._buf + chunk
        if self._pattern is None:
            self._buf = b""
            return buf
        hold = len(buf)
        for i in range(max(0, len(buf) - self._keep), len(buf)):
            tail = buf[i:]
            if any(len(v) > len(tail) and v.startswith(tail) for v in self._values):
                hold = i
                break
        pos, out = 0, []
        for m in self._pattern.finditer(buf):
            if m.start() >= hold:
                break
            out += [buf[pos:m.start()], MASK]
            pos = m.end()
        cut = max(hold, pos)
        out.append(buf[pos:cut])
        self._buf = buf[cut:]
        return b"".join(out)

    def end(self) -> bytes:
        rest, self._buf = self.mask(self._buf), b""
        return rest


class ScrubbingPump:
    """Copies a pipe into ``out`` through a ``Masker``, in a thread, until end of stream;
    then closes both."""

    def __init__(self, pipe: IO[bytes], out: IO[bytes], secrets: Iterable[str]) -> None:
        self._fd, self._out = pipe.fileno(), out
        self._pipe = pipe
        self._masker = Masker(secrets)
        self._thread = threading.Thread(target=self._run, name="log-scrub", daemon=True)

    def start(self) -> ScrubbingPump:
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            while chunk := os.read(self._fd, READ_BYTES):
                self._write(self._masker.feed(chunk))
            self._write(self._masker.end())
        finally:
            self._pipe.close()
            self._out.close()

    def _write(self, data: bytes) -> None:
        if data:
            self._out.write(data)
            self._out.flush()

    def join(self, timeout_s: float = JOIN_TIMEOUT_S) -> bool:
        """True when the stream ended. A grandchild that outlives the child may hold the pipe
        open: then the log stops here (what it held back is dropped, not written unmasked)."""
        self._thread.join(timeout_s)
        return not self._thread.is_alive()
