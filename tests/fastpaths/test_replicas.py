"""Reads on read replicas (``DATABASE_REPLICA_URLS``; none: every read on the primary) and the
read-your-writes pins that make them safe (docs/fast-paths.md).

The routing is the fast path (reads taken off the primary); the pins are not a fast path but the
guarantee replicas must keep: a client that wrote reads the primary until a replica has replayed
its write (``DATABASE_REPLICA_MAX_LAG`` seconds at most), so a write is visible to its writer's
next read. A reader who wrote nothing may read a replica up to ``DATABASE_REPLICA_MAX_LAG`` seconds
behind: that difference is allowed, and only the writer's reads are compared while a replica lags.

``replica1`` is the suite's mirror of the test database (tests/settings.py): it holds every write
at once, so the scenario's answers must be the same whoever reads. On PostgreSQL a lagging replica
is made of it (its connection held in one snapshot, its probe saying so): the writer's reads must
still be the primary's. On SQLite, which has no positions to compare, a writer reads the primary
until its pin expires: asserted by where its reads go."""

from __future__ import annotations

import functools
import time
from contextlib import ExitStack, contextmanager

import pytest
from django.db import connections
from django.test.utils import CaptureQueriesContext

from infra import replicas

from ..citus_cluster import skip_on_citus
from .scenario import WRITERS, Differential, World, bearer, make_world, read_everything, writes

pytestmark = pytest.mark.django_db(transaction=True, databases=["default", "replica1"])


@pytest.fixture(autouse=True)
def _not_on_citus():
    skip_on_citus("reads stay on the coordinator whatever replicas are named (tests/citus/test_read_replicas.py)")


def switch_for(settings):
    def switch(on: bool) -> None:
        settings.DATABASE_REPLICAS = ["replica1"] if on else []

    return switch


@contextmanager
def statements():
    with ExitStack() as stack:
        primary = stack.enter_context(CaptureQueriesContext(connections["default"]))
        replica = stack.enter_context(CaptureQueriesContext(connections["replica1"]))
        yield primary, replica


def comment_reads(captured) -> int:
    return sum('"comment_index"' in q["sql"] or " comment_index " in q["sql"] for q in captured.captured_queries)


def test_reads_on_the_replica_answer_as_the_primary_does(settings, routed):
    world = make_world()
    diff = Differential(switch_for(settings), lambda: read_everything(world))
    switch_for(settings)(True)
    with statements() as (primary, replica):
        read_everything(world, widget=False)
    assert comment_reads(replica), "no read went to the replica: the test compares nothing"
    diff.run(world)


def writers_reads(world: World, write: str) -> dict:
    """Every list as the person who made ``write`` reads it next, on a client of their own (their
    user's pin covers every device)."""
    writer = bearer(world.people[WRITERS[write]])
    return read_everything(World(world.site, world.subject, world.people, {"writer": writer}), widget=False)


@contextmanager
def lagging_replica(monkeypatch):
    """``replica1`` stops replaying here: its connection reads one snapshot (a REPEATABLE READ
    transaction held open), and its probe reports the primary's position of that moment."""
    replica = connections["replica1"]
    replica.ensure_connection()
    with replica.cursor() as cursor:
        cursor.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        cursor.execute("SELECT pg_current_wal_insert_lsn()::text")  # the snapshot is taken here
        frozen = replicas.lsn_value(cursor.fetchone()[0])
    original = replicas._probe

    def probe(alias, *, fresh=False):
        if alias == "replica1":
            return replicas._Probe(time.monotonic(), frozen, 0.0)
        return original(alias, fresh=fresh)

    monkeypatch.setattr(replicas, "_probe", probe)
    try:
        yield
    finally:
        monkeypatch.setattr(replicas, "_probe", original)
        with replica.cursor() as cursor:
            cursor.execute("ROLLBACK")


def writes_read_by_their_writer(settings, monkeypatch) -> None:
    """Each write of the scenario, then its writer's reads with the replica lagging behind it,
        routed and not; the same answers. A like answered by Redis writes nothing on the primary
    and pins nobody: its reader's liked flag and count are Redis's, whatever the replica holds. (A
    pin outlives a slow run: MAX_LAG is raised.)"""
    settings.DATABASE_REPLICA_MAX_LAG = 600
    world = make_world()
    settings.DATABASE_REPLICAS = ["replica1"]
    for name, write in writes(world):
        # The replica stops replaying just before the write: it lacks that write alone.
        with lagging_replica(monkeypatch):
            write()
            reads = functools.partial(writers_reads, world, name)
            if name == "like":
                reads = functools.partial(likes_seen, reads)
            Differential(switch_for(settings), reads).step(name)


def likes_seen(reads) -> dict:
    """What a reader sees of the likes: each comment's count and liked flag, in whatever order.
    A like answered by Redis pins nobody: its liker sees its flag and count at once (Redis's), but
    the order of a "hot" list follows the rows, which reach a replica after the like flush and
    its replay, like any other reader's."""
    seen = {}
    for _status, body in reads().values():
        for item in body["items"]:
            for comment in [item, *item.get("replies", ()), *item.get("chain", ())]:
                seen[comment["id"]] = (comment["like_count"], comment["liked"])
    return seen


def test_a_writer_reads_its_writes_while_the_replica_lags(settings, routed, monkeypatch):
    if connections["default"].vendor != "postgresql":
        # No positions on SQLite: a writer's reads go to the primary until its pin expires.
        world = make_world()
        switch_for(settings)(True)
        for name, write in writes(world):
            write()
            with statements() as (primary, replica):
                writers_reads(world, name)
            if name == "like" and not comment_reads(primary):
                continue  # a like answered by Redis writes nothing on the primary: no pin
            assert comment_reads(primary) and not comment_reads(replica), name
        return
    writes_read_by_their_writer(settings, monkeypatch)


def test_the_comparison_catches_a_write_that_pins_nobody(settings, routed, monkeypatch):
    # The deliberate break: a write's WAL position is not kept for its client.
    monkeypatch.setattr(replicas, "record_write", lambda credentials: None)
    if connections["default"].vendor != "postgresql":
        world = make_world()
        switch_for(settings)(True)
        name, write = next(writes(world))
        write()
        with statements() as (primary, replica):
            writers_reads(world, name)
        assert comment_reads(replica), "an unpinned writer reads the replica"
        return
    with pytest.raises(AssertionError, match="after 'post'"):
        writes_read_by_their_writer(settings, monkeypatch)
