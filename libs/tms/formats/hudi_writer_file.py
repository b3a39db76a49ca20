"""The operator's writer properties files: found only inside ``TMS_HUDI_WRITER_DIR``, read
without following a symlink, parsed strictly (see :mod:`tms.formats.hudi_writer`)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from tms.formats.hudi_writer_keys import WRITER_KEYS, refusal

ENV_WRITER_DIR = "TMS_HUDI_WRITER_DIR"
MAX_FILE_BYTES = 64 * 1024
MAX_LINE_CHARS = 4096


class WriterConfigError(ValueError):
    """The writer configuration is there but bad: names the source and the key, never a
    secret's value."""


def check_value(key: str, value: str, where: str) -> None:
    """``key=value`` against the schema; WriterConfigError says why it is refused. The
    value is never echoed for a key the schema does not know (it may be anything)."""
    spec = WRITER_KEYS.get(key)
    if spec is None:
        raise WriterConfigError(f"{where}: {key[:128]!r}: {refusal(key)}")
    try:
        spec.parse(value)
    except ValueError as e:
        raise WriterConfigError(f"{where}: {key} {e}") from None


def relative_path(name: str) -> Path:
    """``name`` as a plain relative path (no absolute path, no ``..``, no empty or hidden
    parts, printable ASCII letters, digits, ``_ . - /`` only)."""
    if not name or len(name) > 255 or name.startswith("/"):
        raise WriterConfigError("the properties file must be a relative path under "
                                f"{ENV_WRITER_DIR}")
    parts = name.split("/")
    for part in parts:
        if part in ("", ".", "..") or part.startswith(".") or not all(
                c.isascii() and (c.isalnum() or c in "_.-") for c in part):
            raise WriterConfigError(f"the properties file {name[:120]!r}: each part of the "
                                    "path must be letters, digits, _ . - (no '..', no "
                                    "hidden or empty parts)")
    return Path(*parts)


def read_file(directory: str, name: str) -> str:
    """The text of ``directory/name``: inside the directory with every part a real directory
    or file (no symlink anywhere below it), regular, at most MAX_FILE_BYTES, and not writable
    by group or others. Opened with O_NOFOLLOW and checked on the open descriptor, so a file
    swapped in between the checks is not read."""
    rel = relative_path(name)
    root = Path(directory)
    if not root.is_absolute():
        raise WriterConfigError(f"{ENV_WRITER_DIR} must be an absolute path")
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:  # walked part by part from the directory: no symlink is followed on the way
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as e:
        raise WriterConfigError(f"{ENV_WRITER_DIR} cannot be opened: {e.strerror}") from None
    try:
        for part in rel.parts[:-1]:
            inner = os.open(part, flags | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = inner
        inner = os.open(rel.parts[-1], flags | os.O_NONBLOCK, dir_fd=fd)
    except FileNotFoundError:
        raise WriterConfigError(f"{name}: no such file in {ENV_WRITER_DIR}") from None
    except OSError as e:  # ELOOP / ENOTDIR: a symlink on the way
        raise WriterConfigError(f"{name}: cannot be opened ({e.strerror}; symlinks are "
                                "refused)") from None
    finally:
        os.close(fd)
    fd = inner
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise WriterConfigError(f"{name}: not a regular file")
    with os.fdopen(fd, "rb") as f:
        if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            raise WriterConfigError(f"{name}: writable by group or others; the writer "
                                    "configuration must be the operator's alone (chmod 644)")
        if st.st_size > MAX_FILE_BYTES:
            raise WriterConfigError(f"{name}: larger than {MAX_FILE_BYTES} bytes")
        data = f.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise WriterConfigError(f"{name}: larger than {MAX_FILE_BYTES} bytes")
    try:
        return data.decode("ascii")
    except UnicodeDecodeError:
        raise WriterConfigError(f"{name}: not ASCII text") from None


def parse_properties(text: str, where: str) -> dict[str, str]:
    """``key=value`` lines (``#`` comments and blank lines skipped) checked against the
    schema. Stricter than Hudi's reader on purpose: no ``include``, no ``:`` or blank
    separator, no key twice, no leading or trailing blanks in a value."""
    out: dict[str, str] = {}
    for number, line in enumerate(text.split("\n"), 1):
        line = line.removesuffix("\r")
        at = f"{where} line {number}"
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if len(line) > MAX_LINE_CHARS or any(ord(c) < 32 or ord(c) == 127 for c in line):
            raise WriterConfigError(f"{at}: control characters or a line over "
                                    f"{MAX_LINE_CHARS} characters")
        key, sep, value = line.partition("=")
        if not sep or key != key.strip() or value != value.strip() or not key:
            raise WriterConfigError(f"{at}: expected key=value without blanks around them")
        if key in out:
            raise WriterConfigError(f"{at}: {key} is set twice")
        check_value(key, value, at)
        out[key] = value
    return out
