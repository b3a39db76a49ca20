"""ZooKeeper coordination through kazoo: which scheduler decides for which table.

The tables are split into NUM_SHARDS shards by primary key and kazoo's SetPartitioner gives
each live scheduler a share of them; a scheduler decides only for tables of shards it holds,
without any ZooKeeper request per decision. When schedulers come or go the shards are released
and divided again; a shard is only given up between passes, so its next owner never starts
while the last one is still deciding. (A lock per table and decision was measured 33x more
scheduler CPU per decision and was removed.)

No two schedulers decide for one table at once. When the ZooKeeper session is
suspended or lost the scheduler must stop deciding at once (``healthy`` turns false from kazoo's
own listener thread); Postgres' unique indexes are the last guard if two ever decide together.
"""

from __future__ import annotations

import threading

import structlog
from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import KazooException, LockTimeout
from kazoo.recipe.lock import Lock
from kazoo.recipe.partitioner import SetPartitioner

ZK_SESSION_TIMEOUT_S = 10.0
ZK_CONNECT_TIMEOUT_S = 15.0
ZK_ROOT = "/tms"
LEADER_PATH = f"{ZK_ROOT}/leader"
SHARDS_PATH = f"{ZK_ROOT}/shards"
# Fixed for a deployment: every scheduler must split the tables the same way.
NUM_SHARDS = 128
# How long the set of schedulers must stay unchanged before the shards are divided again.
SHARD_SETTLE_S = 2.0


def shard_of(table_pk: int) -> int:
    return table_pk % NUM_SHARDS

log = structlog.get_logger("tms.coordination")


class Coordinator:
    def __init__(self, hosts: str, member_id: str,
                 session_timeout_s: float = ZK_SESSION_TIMEOUT_S,
                 shard_settle_s: float = SHARD_SETTLE_S) -> None:
        self.member_id = member_id
        self.client = KazooClient(hosts=hosts, timeout=session_timeout_s)
        self._connected = threading.Event()
        self._leader: Lock | None = None
        self._partitioner: SetPartitioner | None = None
        self._owned: frozenset[int] = frozenset()
        self.shard_settle_s = shard_settle_s
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
        self.client.ensure_path(ZK_ROOT)
        self._connected.set()

    def stop(self) -> None:
        self._connected.clear()
        if self._partitioner is not None:
            try:
                self._partitioner.finish()  # leave the party: the others take our shards
            except KazooException as e:
                log.warning("leaving the shard party failed", error=str(e))
        try:
            self.client.stop()
        finally:
            self.client.close()

    @property
    def healthy(self) -> bool:
        return self._connected.is_set()

    @property
    def leads(self) -> bool:
        """Whether this member holds the leader lock now (no attempt to take it)."""
        leader = self._leader
        return self.healthy and leader is not None and bool(leader.is_acquired)

    @property
    def held_shards(self) -> frozenset[int]:
        """The shards held as of the last :meth:`owned_shards` call (no ZooKeeper step)."""
        p = self._partitioner
        return self._owned if self.healthy and p is not None and p.acquired else frozenset()

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

    def owned_shards(self) -> frozenset[int] | None:
        """The shards this member holds now; None while they are being divided (decide for
        nothing then). Never blocks: it advances kazoo's partitioner one step per call, and
        releases our shards only here, between passes."""
        if not self.healthy:
            return None
        p = self._partitioner
        try:
            if p is None or p.failed:  # first call, or the session was lost: join again
                if p is not None:
                    log.warning("shard partition failed; rejoining", member=self.member_id)
                self._partitioner = p = self.client.SetPartitioner(
                    SHARDS_PATH, set=tuple(range(NUM_SHARDS)), identifier=self.member_id,
                    time_boundary=self.shard_settle_s)
            if p.release:
                log.info("schedulers changed; releasing shards", member=self.member_id)
                self._owned = frozenset()
                p.release_set()
                return None
        except KazooException as e:
            log.warning("shard partition step failed", error=str(e))
            return None
        if p.acquired and self.healthy:
            owned = frozenset(p)
            if owned != self._owned:
                log.info("shards held", member=self.member_id, count=len(owned))
                self._owned = owned
            return owned
        return None
