"""Private work directories: job specs carry catalog credentials, so no other local user may
read them, and none may outlive its attempt.

Directories are 0700 (created so, or tightened if they already exist and are ours); spec files
are created 0600 with ``os.open`` (never written first and restricted afterwards, which would
leave a window) and removed by the engine when the job ends, success or not.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

SPEC_FILE_NAME = "spec.json"  # the executor removes it after every attempt too
# a Hudi job's writer properties (may hold resolved secrets): removed like the spec
HUDI_PROPERTIES_FILE_NAME = "hudi.properties"
PRIVATE_FILE_NAMES = (SPEC_FILE_NAME, HUDI_PROPERTIES_FILE_NAME)
PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600


class WorkdirError(OSError):
    """A work directory that cannot be made private (another user's, not a directory)."""


def private_dir(path: Path) -> Path:
    """``path`` as a directory only its owner can enter; missing parents are created 0700 as
    well. An existing directory must be ours: a directory another user owns (or could have
    prepared) is refused, not reused."""
    missing = []
    p = path
    while not os.path.lexists(p) and p != p.parent:
        missing.append(p)
        p = p.parent
    for d in reversed(missing):
        try:
            os.mkdir(d, PRIVATE_DIR_MODE)
        except FileExistsError:
            pass
    st = os.stat(path)
    if not stat.S_ISDIR(st.st_mode):
        raise WorkdirError(f"work directory {path} is not a directory")
    if st.st_uid != os.getuid():
        raise WorkdirError(f"work directory {path} belongs to uid {st.st_uid}, not to this "
                           f"process (uid {os.getuid()})")
    if stat.S_IMODE(st.st_mode) != PRIVATE_DIR_MODE:
        os.chmod(path, PRIVATE_DIR_MODE)
    return path


def write_private(path: Path, data: bytes) -> Path:
    """Create ``path`` 0600 (replacing a leftover) and write ``data``; never follows a
    symlink at ``path``."""
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 PRIVATE_FILE_MODE)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return path
