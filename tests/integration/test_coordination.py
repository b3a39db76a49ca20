"""ZooKeeper coordination on a real server: shards, one leader, and what a lost session
does to both."""

from __future__ import annotations

import itertools

import pytest
from kazoo.client import KazooClient

from tests.helpers import wait_for
from tms.coordination import Coordinator

pytestmark = pytest.mark.integration
_ids = itertools.count()


@pytest.fixture
def members(zk_server):
    started: list[Coordinator] = []

    def make() -> Coordinator:
        c = Coordinator(zk_server.hosts, f"member-{next(_ids)}", session_timeout_s=4)
        c.start()
        started.append(c)
        return c

    yield make
    for c in started:
        c.stop()


def expire_session(hosts: str, victim: Coordinator) -> None:
    """A real session expiry: a second client with the same session id and password closes
    the session on the server."""
    session_id, password = victim.client.client_id
    twin = KazooClient(hosts=hosts, client_id=(session_id, password))
    twin.start(timeout=10)
    twin.stop()
    twin.close()


def test_one_leader_and_failover_on_session_expiry(members, zk_server) -> None:
    a, b = members(), members()
    assert a.is_leader()
    assert not b.is_leader()
    assert a.is_leader()  # kept, not re-taken
    expire_session(zk_server.hosts, a)
    wait_for(lambda: not a.healthy, "the expired member to notice")
    assert not a.is_leader()
    assert a.owned_shards() is None  # no session: no shards, no decisions
    assert wait_for(b.is_leader, "the other member to take over")
    wait_for(lambda: a.healthy, "kazoo to open a new session")
    assert not a.is_leader()


def _division(coordinators: list[Coordinator]) -> list[frozenset[int]] | None:
    """Each member's shards once every member holds some and together they hold each shard
    exactly once; None until then. Calling owned_shards is what moves each member along."""
    from tms.coordination import NUM_SHARDS

    owned = [c.owned_shards() for c in coordinators]
    if any(not o for o in owned):
        return None
    sets = [o for o in owned if o]
    if sum(len(o) for o in sets) != NUM_SHARDS or frozenset().union(*sets) != frozenset(
            range(NUM_SHARDS)):
        return None
    return sets


def test_shards_are_divided_without_overlap_and_taken_over(members, zk_server) -> None:
    from tms.coordination import NUM_SHARDS

    group = [members() for _ in range(3)]
    for c in group:
        c.shard_settle_s = 0.5
    sets = wait_for(lambda: _division(group), "three members to divide the shards", 60,
                    step_s=0.1)
    assert all(len(s) >= NUM_SHARDS // 3 - 1 for s in sets)  # an even share each
    expire_session(zk_server.hosts, group[1])
    wait_for(lambda: group[1].owned_shards() is None and group[1] or None,
             "the expired member to hold nothing", 30, step_s=0.1)
    survivors = [group[0], group[2]]
    taken = wait_for(lambda: _division(survivors), "the survivors to take every shard", 60,
                     step_s=0.1)
    assert sum(len(s) for s in taken) == NUM_SHARDS
    # the expired member rejoins on its own and gets its share back
    wait_for(lambda: _division(group), "the member to rejoin", 60, step_s=0.1)
