"""ZooKeeper coordination through kazoo: per-table locks for schedulers.

A scheduler decides for a table only while it holds that table's lock, so two schedulers never
decide for one table at once. When the ZooKeeper session is suspended or lost the scheduler
must stop deciding at once (``healthy`` turns false from kazoo's own listener thread); Postgres'
unique indexes are the last guard if two ever decide together anyway.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import structlog
from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import KazooException, LockTimeout
from kazoo.recipe.lock import Lock

ZK_SESSION_TIMEOUT_S = 10.0
ZK_CONNECT_TIMEOUT_S = 15.0
ZK_ROOT = "/tms"
TABLE_LOCKS_PATH = f"{ZK_ROOT}/locks/tables"
LEADER_PATH = f"{ZK_ROOT}/leader"

log = structlog.get_logger("tms.coordination")


class Coordinator:
    def __init__(self, hosts: str, member_id: str,
                 session_timeout_s: float = ZK_SESSION_TIMEOUT_S) -> None:
        self.member_id = member_id
        self.client = KazooClient(hosts=hosts, timeout=session_timeout_s)
        self._connected = threading.Event()
        self._leader: Lock | None = None
        self.client.add_listener(self._on_state)

    def _on_state(self, state: str) -> None:
        if state == KazooState.CONNECTED:
            self._connected.set()
        else:
            self._connected.clear()
            if state == KazooState.LOST:
                self._leader = None  # its ephemeral node died with the session
            log.warning("zookeeper session not usable", state=state, member=self.member_id)

    def start(self, timeout_s: float = ZK_CONNECT_TIMEOUT_S) -> None:
        self.client.start(timeout=timeout_s)
        self.client.ensure_path(TABLE_LOCKS_PATH)
        self._connected.set()

    def stop(self) -> None:
        self._connected.clear()
        try:
            self.client.stop()
        finally:
            self.client.close()

    @property
    def healthy(self) -> bool:
        return self._connected.is_set()

    def is_leader(self) -> bool:
        """Whether this member leads (runs the reaper). The first member to take the leader
        lock keeps it for as long as its session lives; the others try again each call."""
        if not self.healthy:
            return False
        if self._leader is None:
            self._leader = self.client.Lock(LEADER_PATH, self.member_id)
        if self._leader.is_acquired:
            return True
        try:
            got = bool(self._leader.acquire(blocking=False))
        except (KazooException, LockTimeout):
            return False
        if got:
            log.info("leadership taken", member=self.member_id)
        return got

    @contextmanager
    def table_lock(self, table_pk: int) -> Iterator[bool]:
        """Try the table's lock without waiting; yields whether it is held."""
        if not self.healthy:
            yield False
            return
        lock = self.client.Lock(f"{TABLE_LOCKS_PATH}/{table_pk}", self.member_id)
        try:
            got = lock.acquire(blocking=False)
        except (KazooException, LockTimeout) as e:
            log.warning("table lock failed", table_pk=table_pk, error=str(e))
            got = False
        try:
            yield got
        finally:
            if got:
                try:
                    lock.release()
                except KazooException as e:  # the session is gone: ZooKeeper drops it for us
                    log.warning("table lock release failed", table_pk=table_pk, error=str(e))
