"""Engine child processes: each in its own process group, killed with the executor.

A Spark driver (spark-submit's JVM, a warm driver) is started in a new session so that
stopping it can kill its whole group (Python workers included), and with a parent-death signal
so that an executor killed with ``kill -9`` cannot leave it running on its own.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess

KILL_GRACE_S = 5.0
_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """In the child, before exec: ask Linux to SIGKILL it when the executor dies, so a
    ``kill -9`` of the executor cannot leave a Spark driver running on its own (the child has
    its own process group, which a group kill of the executor does not reach)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: the lease still protects the table
        pass


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(KILL_GRACE_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    except ProcessLookupError:
        pass
