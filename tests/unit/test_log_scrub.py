"""Masking secrets in a child's output as it is written (engines/log_scrub.py)."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tms.engines.log_scrub import MASK, Masker, ScrubbingPump


def _through(masker: Masker, data: bytes, cuts: list[int]) -> bytes:
    out, last = [], 0
    for c in [*cuts, len(data)]:
        out.append(masker.feed(data[last:c]))
        last = c
    out.append(masker.end())
    return b"".join(out)


@pytest.mark.parametrize("seed", range(40))
def test_a_secret_split_anywhere_across_reads_is_masked(seed: int) -> None:
    rng = random.Random(seed)
    secrets = ["zk-secret.example:2181", "s3cr3t", "zk-secret"]  # one inside another
    text = b"".join(rng.choice([b"x", b"\n", b"zk-", b"s3c", b"zk-secret.example:2181",
                                b"s3cr3t", b"zk-secret", b"r3t"]) for _ in range(300))
    cuts = sorted(rng.sample(range(1, len(text)), min(30, len(text) - 1)))
    got = _through(Masker(secrets), text, cuts)
    want = Masker(secrets).mask(text)  # the whole text masked at once
    assert got == want
    assert b"s3cr3t" not in got and b"zk-secret" not in got


def test_one_byte_at_a_time_and_no_secret_at_all() -> None:
    data = b"key=hunter2-long\nother=hunter2-long!"
    assert _through(Masker(["hunter2-long"]), data, list(range(1, len(data)))) == \
        b"key=" + MASK + b"\nother=" + MASK + b"!"
    assert _through(Masker([]), data, [3, 9]) == data  # nothing held back
    assert _through(Masker(["", "x"]), b"axb", [1]) == b"a" + MASK + b"b"


def test_the_pump_writes_a_childs_output_masked_while_it_runs(tmp_path: Path) -> None:
    secret = "pw-" + os.urandom(6).hex()
    log, gate = tmp_path / "driver.log", tmp_path / "gate"
    child = ("import os, sys, time\n"
             f"sys.stdout.write('props: url={secret[:5]}'); sys.stdout.flush(); time.sleep(0.2)\n"
             f"sys.stdout.write('{secret[5:]}\\nstarted\\n'); sys.stdout.flush()\n"
             f"while not os.path.exists({str(gate)!r}): time.sleep(0.01)\n"
             "print('done')\n")
    proc = subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None
        pump = ScrubbingPump(proc.stdout, log.open("ab", buffering=0), [secret]).start()
        deadline = time.monotonic() + 10
        while b"started" not in log.read_bytes() and time.monotonic() < deadline:
            time.sleep(0.01)
        mid_run = log.read_bytes()  # the child is still running, blocked on the gate
        assert mid_run == b"props: url=" + MASK + b"\nstarted\n"  # written as read, masked
        gate.touch()
        proc.wait(10)
        assert pump.join()
        assert log.read_bytes() == b"props: url=" + MASK + b"\nstarted\ndone\n"
    finally:  # never leave the child waiting on its gate
        proc.kill()
        proc.wait()
