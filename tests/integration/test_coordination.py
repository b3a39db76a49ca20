"""ZooKeeper coordination on a real server: table locks, one leader, and what a lost session
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


def test_table_lock_is_exclusive(members) -> None:
    a, b = members(), members()
    with a.table_lock(7) as got_a:
        assert got_a
        with b.table_lock(7) as got_b:
            assert not got_b
        with b.table_lock(8) as got_other:
            assert got_other
    with b.table_lock(7) as got_after:
        assert got_after


def test_one_leader_and_failover_on_session_expiry(members, zk_server) -> None:
    a, b = members(), members()
    assert a.is_leader()
    assert not b.is_leader()
    assert a.is_leader()  # kept, not re-taken
    expire_session(zk_server.hosts, a)
    wait_for(lambda: not a.healthy, "the expired member to notice")
    assert not a.is_leader()
    with a.table_lock(1) as got:
        assert not got  # no session: no decisions
    assert wait_for(b.is_leader, "the other member to take over")
    wait_for(lambda: a.healthy, "kazoo to open a new session")
    assert not a.is_leader()
