"""A class-data-sharing (CDS) archive for the cold spark-submit driver's JVM.

A cold job's JVM loads ~18,000 classes (Spark, Hadoop, Iceberg) and parses and verifies each
one, every operation: the profile of a cold compaction had class loading at ~20 % of its Java
samples (docs/figures.md, "Issue 17"). JDK 13+ can dump the classes a run loaded into an
archive (``-XX:ArchiveClassesAtExit``) that later JVMs map instead of loading
(``-XX:SharedArchiveFile``): measured at about a third less CPU per cold job.

The archive is built lazily: the first cold job of a jar set (no archive yet) dumps one at its
JVM's exit into a temporary file; when that job succeeds the file is renamed into place,
``<dir>/<key>.jsa``, and its size and mtime recorded next to it (``<key>.json``). The key is a
hash of what the JVM's classes come from (the java binary, Spark's jars, the job's jars), all
operator configuration: nothing a table owner can set reaches it. The directory is private
(0700, ours) and an archive is used only when it is a regular file we own, not writable by
others, whose size and mtime match the record.

A corrupt archive must never fail a job, and JDK 17 does not ignore every corrupt archive:
a mismatched class path or a damaged region is ignored (a warning), but a truncated file or a
damaged header crashes the JVM at start (SIGBUS, exit 134; measured), and so does a sound
archive in a JVM with Java Flight Recorder on (SIGSEGV in the class-file load hook; measured).
Hence the atomic rename, the record check, no archive when the environment carries JVM options
(``JAVA_TOOL_OPTIONS``, ...: an agent), and the engine's fallback: a JVM that died before Spark
started while using an archive gets the archive removed, its key marked (no archive for that
jar set again: no dump-crash loop), and the job run again without it (nothing ran yet).
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import stat
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import structlog

from tms.engines.workdir import private_dir, write_private

log = structlog.get_logger("tms.engines.cold_cds")

CDS_DIR_NAME = "cds"  # under the executor's state directory
ARCHIVE_SUFFIX = ".jsa"
RECORD_SUFFIX = ".json"
LOCK_SUFFIX = ".lock"
# an archive of this key crashed a JVM: the key gets no archive again (no dump, crash, dump loop)
CRASHED_SUFFIX = ".crashed"
# JVM options from the environment reach every JVM; an agent among them (JFR's class-file hook
# measured here) crashes JDK 17 mapping a dynamic archive: no archive then
ENV_JVM_OPTIONS = ("JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS", "_JAVA_OPTIONS")
TMP_SUFFIX = ".tmp"
# a dump lock older than this is a dead dumper's: another job may dump
DUMP_LOCK_STALE_S = 1800.0
# an archive no job has used for this long belongs to a jar set gone (an upgrade): removed
# when another archive is installed
UNUSED_ARCHIVE_S = 30 * 86400.0
# the JVM died at start: its fatal-error banner (a crash mapping an archive) or its refusal
# to start (dumping needs the JDK's own base archive: "DynamicDumpSharedSpaces is unsupported
# when base CDS archive is not loaded", exit 1; measured with -Xshare:off), and no sign that
# Spark ever started
JVM_FATAL_MARKS = ("A fatal error has been detected by the Java Runtime Environment",
                   "Error occurred during initialization of VM")
# (the job's Python prints "[tms-job]" lines; a JVM that maps a bad archive dies before its
# Python starts: measured at 0.5-2.5 s, PythonRunner comes at ~4.5 s)
STARTED_MARKS = ("SparkContext", "[tms-job]")


def archive_key(java: Path, classpath: Iterable[Path]) -> str:
    """A hash of what the driver JVM's classes come from: the java binary (resolved) and its
    libjvm, then every class path entry (a directory's jars), each by path, size and mtime;
    a changed jar or JDK gives another key (the JVM would refuse the old archive anyway)."""
    h = hashlib.sha256(b"tms-cds-1\0")
    real_java = java.resolve()
    entries = [real_java, *sorted(real_java.parent.parent.glob("lib/server/libjvm.so"))]
    for entry in classpath:
        entries.extend(sorted(entry.glob("*.jar")) if entry.is_dir() else [entry])
    for path in entries:
        try:
            st = path.stat()
            h.update(f"{path}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
        except OSError:
            h.update(f"{path}\0missing\n".encode())
    return h.hexdigest()[:32]


@dataclass
class Lease:
    """One job's use of the cache: the JVM options it adds, and what to do when it ends."""

    cache: ArchiveCache
    key: str
    java_options: tuple[str, ...] = ()
    using: Path | None = None  # the archive this JVM maps
    dumping: Path | None = None  # the temporary file this JVM dumps into
    lock: Path | None = None
    _done: bool = field(default=False, repr=False)

    def finish(self, succeeded: bool) -> None:
        """After the JVM exited: keep a successful dump, drop the rest; release the lock."""
        if self._done:
            return
        self._done = True
        try:
            if self.dumping is not None:
                if succeeded and _nonempty(self.dumping):
                    self.cache.install(self.key, self.dumping)
                self.dumping.unlink(missing_ok=True)
        except OSError as e:
            log.warning("cds_archive_not_kept", key=self.key, error=str(e))
        finally:
            if self.lock is not None:
                self.lock.unlink(missing_ok=True)

    def crashed_at_start(self, exit_code: int | None, log_text: str) -> bool:
        """True when this JVM mapped or was to dump an archive and died before Spark started:
        the archive is removed and the key marked (the caller runs the job again without)."""
        if (self.using is None and self.dumping is None) or exit_code in (0, None):
            return False
        if (not any(m in log_text for m in JVM_FATAL_MARKS)
                or any(m in log_text for m in STARTED_MARKS)):
            return False
        log.warning("cds_archive_crashed_jvm", key=self.key, archive=str(self.using),
                    dumping=self.dumping is not None)
        try:
            self.cache.discard(self.key)
            write_private(self.cache.directory / f"{self.key}{CRASHED_SUFFIX}", b"")
        except OSError as e:
            log.warning("cds_archive_not_removed", key=self.key, error=str(e))
        return True


class ArchiveCache:
    """The cold driver's CDS archives, one per jar set, in a private directory."""

    def __init__(self, directory: Path, clock: Callable[[], float] = time.time) -> None:
        self.directory = directory
        self._now = clock

    def lease(self, key: str) -> Lease:
        """Use the key's archive when it is sound; else dump one if no other job is (the lock);
        else nothing. Never raises: a cache that cannot be used costs only the speed-up."""
        try:
            private_dir(self.directory)
            if os.path.lexists(self._path(key, CRASHED_SUFFIX)):
                return Lease(self, key)
            archive = self._path(key, ARCHIVE_SUFFIX)
            if self._sound(key, archive):
                os.utime(self._path(key, RECORD_SUFFIX))  # last used: see UNUSED_ARCHIVE_S
                return Lease(self, key, (f"-XX:SharedArchiveFile={archive}",), using=archive)
            lock = self._lock(key)
            if lock is None:
                return Lease(self, key)
            tmp = self._path(f"{key}.{secrets.token_hex(6)}", TMP_SUFFIX)
            return Lease(self, key, (f"-XX:ArchiveClassesAtExit={tmp}",), dumping=tmp,
                         lock=lock)
        except OSError as e:
            log.warning("cds_cache_unusable", directory=str(self.directory), error=str(e))
            return Lease(self, key)

    def install(self, key: str, dumped: Path) -> None:
        """Rename a finished dump into place and record its size and mtime."""
        archive = self._path(key, ARCHIVE_SUFFIX)
        os.chmod(dumped, 0o400)
        os.replace(dumped, archive)
        st = os.lstat(archive)
        write_private(self._path(key, RECORD_SUFFIX),
                      json.dumps({"size": st.st_size, "mtime_ns": st.st_mtime_ns}).encode())
        for record in self.directory.glob(f"*{RECORD_SUFFIX}"):
            other = record.name[: -len(RECORD_SUFFIX)]
            if other != key and self._now() - os.lstat(record).st_mtime > UNUSED_ARCHIVE_S:
                self.discard(other)

    def discard(self, key: str) -> None:
        for suffix in (RECORD_SUFFIX, ARCHIVE_SUFFIX):
            self._path(key, suffix).unlink(missing_ok=True)

    def _path(self, name: str, suffix: str) -> Path:
        return self.directory / f"{name}{suffix}"

    def _sound(self, key: str, archive: Path) -> bool:
        try:
            st = os.lstat(archive)
            record = json.loads(self._path(key, RECORD_SUFFIX).read_bytes())
        except (OSError, ValueError):
            return False
        return (stat.S_ISREG(st.st_mode) and st.st_uid == os.getuid()
                and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
                and isinstance(record, dict) and record.get("size") == st.st_size
                and record.get("mtime_ns") == st.st_mtime_ns and st.st_size > 0)

    def _lock(self, key: str) -> Path | None:
        lock = self._path(key, LOCK_SUFFIX)
        try:
            if self._now() - os.lstat(lock).st_mtime > DUMP_LOCK_STALE_S:
                lock.unlink(missing_ok=True)
        except FileNotFoundError:
            pass
        try:
            fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except FileExistsError:
            return None
        os.close(fd)
        for old in self.directory.glob(f"{key}.*{TMP_SUFFIX}"):  # a killed dumper's
            if self._now() - os.lstat(old).st_mtime > DUMP_LOCK_STALE_S:
                old.unlink(missing_ok=True)
        return lock


def _nonempty(path: Path) -> bool:
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_size > 0
