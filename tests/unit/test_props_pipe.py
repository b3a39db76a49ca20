"""The named pipe that serves a Hudi job's properties from memory (``props_pipe``), tried as
a reader that misbehaves and as someone who planted a name where it goes."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from tms.engines.props_pipe import PropsPipe, serving

TEXT = b"hoodie.cleaner.commits.retained=30\nhoodie.write.lock.zookeeper.url=zk-secret:2181\n"


def _read(path: Path) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def test_every_reader_gets_the_whole_text_and_nothing_is_on_disk(tmp_path: Path) -> None:
    path = tmp_path / "hudi.properties"
    with serving({path: TEXT}) as (pipe,):
        st = path.lstat()
        assert stat.S_ISFIFO(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600
        assert st.st_size == 0
        assert [_read(path) for _ in range(3)] == [TEXT] * 3  # read again: served again
        assert pipe.served == 3
    assert not path.exists()


def test_a_text_larger_than_the_pipe_buffer_arrives_whole(tmp_path: Path) -> None:
    big = b"".join(b"hoodie.k%d=%d\n" % (i, i) for i in range(40_000))  # ~0.6 MB
    path = tmp_path / "p"
    with serving({path: big}):
        assert _read(path) == big


def test_a_reader_that_leaves_early_does_not_stop_the_next(tmp_path: Path) -> None:
    big = b"x" * (1 << 20)
    path = tmp_path / "p"
    with serving({path: big}) as (pipe,):
        with open(path, "rb") as f:
            assert f.read(10) == b"x" * 10  # and closes with the rest unread
        assert _read(path) == big
        assert pipe.served >= 1


@pytest.mark.parametrize("planted", ["file", "symlink", "fifo"])
def test_a_planted_name_is_replaced_and_its_target_untouched(tmp_path: Path,
                                                            planted: str) -> None:
    path = tmp_path / "hudi.properties"
    target = tmp_path / "elsewhere"
    target.write_bytes(b"someone else's\n")
    if planted == "file":
        path.write_bytes(b"hoodie.stale=1\n")
    elif planted == "symlink":
        path.symlink_to(target)
    else:
        os.mkfifo(path, 0o666)
    with serving({path: TEXT}):
        st = path.lstat()
        assert stat.S_ISFIFO(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600
        assert _read(path) == TEXT
    assert target.read_bytes() == b"someone else's\n"
    assert not os.path.lexists(path)


def test_close_without_a_reader_returns_and_leaves_no_name(tmp_path: Path) -> None:
    path = tmp_path / "p"
    pipe = PropsPipe(path, TEXT)
    pipe.close()
    assert not os.path.lexists(path) and pipe.served == 0
    with pytest.raises(FileNotFoundError):  # a late reader finds nothing to block on
        open(path, "rb")


def test_close_while_a_reader_is_reading_slowly(tmp_path: Path) -> None:
    """A reader still holding the pipe when the job ends loses nothing it already got and
    the close does not hang on it."""
    big = b"y" * (1 << 20)
    path = tmp_path / "p"
    pipe = PropsPipe(path, big)
    f = open(path, "rb")
    got = f.read(1000)
    closer = threading.Thread(target=pipe.close)
    closer.start()
    rest = f.read()  # the writer finishes its write or the close ends it; never blocks
    f.close()
    closer.join(10)
    assert not closer.is_alive()
    assert (got + rest) == big[:len(got) + len(rest)]
    assert not os.path.lexists(path)
