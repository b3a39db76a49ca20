"""Stopping on SIGTERM/SIGINT, on real processes: whichever thread the kernel hands the signal
to, and however the main thread waits, the stop event is set; a worker that ignores SIGTERM is
killed after the grace period instead of holding its supervisor for ever."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tms_services.api import EXIT_WORKER_KILLED, stop_workers

HANG_GUARD_S = 60  # only a hung child reaches this; a working one exits in well under a second

_CHILD = textwrap.dedent("""
    import signal, sys, threading, time
    from tms_services.common import stop_event_on_signals
    stop = stop_event_on_signals()
    mode = sys.argv[1]
    if mode == "other-thread":
        # the kernel may deliver a process signal to any thread (gRPC's, for one): force it
        def other():
            time.sleep(0.2)
            signal.pthread_kill(threading.get_ident(), signal.SIGTERM)
            time.sleep(3600)
        threading.Thread(target=other, daemon=True).start()
        print("ready", flush=True)
        stop.wait()
    elif mode == "busy-wait":
        print("ready", flush=True)
        while not stop.wait(0):
            pass
    elif mode == "other-signal":
        signal.signal(signal.SIGUSR1, lambda *_: None)
        print("ready", flush=True)
        signal.raise_signal(signal.SIGUSR1)
        time.sleep(0.2)
        print("set" if stop.is_set() else "not set", flush=True)
        stop.wait()
    print("stopped", flush=True)
""")


def _child(mode: str) -> subprocess.Popen[str]:
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(root / "libs"), str(root / "services"), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.Popen([sys.executable, "-c", _CHILD, mode], stdout=subprocess.PIPE,
                            text=True, env=env)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


def _finish(proc: subprocess.Popen[str]) -> str:
    try:
        out, _ = proc.communicate(timeout=HANG_GUARD_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail("the process did not stop on its signal")
    assert proc.returncode == 0, out
    return out


def test_a_signal_delivered_to_another_thread_wakes_a_main_thread_blocked_in_wait() -> None:
    assert "stopped" in _finish(_child("other-thread"))


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_main_thread_spinning_on_the_event_stops(signum: int) -> None:
    proc = _child("busy-wait")
    for _ in range(50):  # many signals into the loop's critical sections: none deadlocks it
        if proc.poll() is not None:
            break
        proc.send_signal(signum)
    assert "stopped" in _finish(proc)


def test_other_signals_do_not_set_the_stop_event() -> None:
    proc = _child("other-signal")
    assert proc.stdout is not None and proc.stdout.readline().strip() == "not set"
    proc.send_signal(signal.SIGTERM)
    assert "stopped" in _finish(proc)


def test_a_worker_ignoring_sigterm_is_killed_after_the_grace_period() -> None:
    stubborn = subprocess.Popen([sys.executable, "-c", (
        "import signal, sys, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "print('ready', flush=True)\n"
        "time.sleep(3600)\n")], stdout=subprocess.PIPE, text=True)
    polite = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
    assert stubborn.stdout is not None and stubborn.stdout.readline().strip() == "ready"
    try:
        assert stop_workers([stubborn, polite], grace_s=1.0) == EXIT_WORKER_KILLED
        assert stubborn.returncode == -signal.SIGKILL
        assert polite.returncode == -signal.SIGTERM
    finally:
        for p in (stubborn, polite):
            if p.poll() is None:
                p.kill()
        stubborn.stdout.close()


def test_workers_that_stop_give_a_clean_exit() -> None:
    workers = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
               for _ in range(2)]
    assert stop_workers(workers, grace_s=HANG_GUARD_S) == 0
    assert all(w.returncode == -signal.SIGTERM for w in workers)
