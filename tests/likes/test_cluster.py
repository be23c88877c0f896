"""Likes on a Redis Cluster of their own (three masters, a replica each, on loopback) while the
cluster changes under them: the slot of the subject's keys moved to another master, and a
master replaced by its replica (``CLUSTER FAILOVER``). Users like and unlike throughout; at
the end, after the flush, the database and the like state hold exactly each user's last
action: no like lost, none counted twice. (A like that meets the slot half moved for longer
than the client's retries takes the database road for ``LIKES_REDIS_RETRY`` seconds, as in any
Redis outage; that road loses nothing either.)

(The rest of the suite's Redis tests run on a cluster too: ``scripts/test-cluster``.)"""

from __future__ import annotations

import random
import threading
import time

import pytest
from django.db import connections
from redis.crc import key_slot

from comments.models import Comment
from infra import redislink
from likes import keys, live, state_sync
from likes.models import Like
from likes.services import like_set, likes_flush

from ..factories import CommentFactory, SubjectFactory, UserFactory
from ..redis_cluster import LocalRedisCluster

pytestmark = pytest.mark.django_db(transaction=True)

USERS = 12
COMMENTS = 4


@pytest.fixture
def cluster(tmp_path, settings):
    running = LocalRedisCluster(tmp_path / "cluster").start()
    settings.LIKES_REDIS_URL = running.url
    settings.LIKES_REDIS_RETRY = 0.2
    redislink.reset()
    yield running
    redislink.reset()
    running.stop()


def _node_id(node) -> str:
    return node.cluster("MYID")


def _master_of(cluster: LocalRedisCluster, slot: int) -> int:
    for port in cluster.processes:
        node = cluster.node(port)
        for start, end, master, *_ in node.execute_command("CLUSTER", "SLOTS"):
            if start <= slot <= end:
                return int(master[1])
    raise AssertionError(f"slot {slot} has no master")


def _move_slot(cluster: LocalRedisCluster, slot: int, to_port: int) -> None:
    """What ``redis-cli --cluster reshard`` does for one slot: mark it importing and migrating,
    move its keys a few at a time (so likes meet the slot half moved), then give it away."""
    from_port = _master_of(cluster, slot)
    source, target = cluster.node(from_port), cluster.node(to_port)
    target.cluster("SETSLOT", slot, "IMPORTING", _node_id(source))
    source.cluster("SETSLOT", slot, "MIGRATING", _node_id(target))
    while keys_ := source.cluster("GETKEYSINSLOT", slot, 10):  # redis-cli's batch
        source.migrate("127.0.0.1", to_port, keys_, 0, 5000)
    for port in cluster.processes:
        node = cluster.node(port)
        if node.execute_command("ROLE")[0] == "master":
            node.cluster("SETSLOT", slot, "NODE", _node_id(target))


def _likes_while(change) -> tuple[list, dict]:
    """Users like and unlike the comments of one subject on threads while ``change()`` runs on
    this one; returns the comments and each (comment, user)'s last action that succeeded."""
    subject = SubjectFactory()
    comments = [CommentFactory(subject=subject) for _ in range(COMMENTS)]
    users = [UserFactory() for _ in range(USERS)]
    last: dict[tuple[int, int], bool] = {}
    failures: list[BaseException] = []
    stop = threading.Event()

    def act(user):
        rng = random.Random(user.pk)
        try:
            while not stop.is_set():
                comment = rng.choice(comments)
                liked = rng.random() < 0.6
                like_set(comment_id=comment.pk, user=user, liked=liked)
                last[(comment.pk, user.pk)] = liked  # only once the service answered
        except BaseException as exc:  # noqa: BLE001 - reported below
            failures.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=act, args=(u,)) for u in users]
    for t in threads:
        t.start()
    try:
        time.sleep(0.5)
        change(subject)
        time.sleep(0.5)
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=60)
    assert not failures, failures[:3]
    assert len(last) > COMMENTS  # the users did act
    return comments, last


def _assert_exact(comments, last) -> None:
    deadline = time.monotonic() + 10
    while (r := state_sync.client()) is None:  # after a fallback to the database, Redis again
        assert time.monotonic() < deadline
        time.sleep(0.1)
    likes_flush()
    for comment in comments:
        expected = {u for (c, u), liked in last.items() if c == comment.pk and liked}
        stored = set(Like.objects.filter(comment_id=comment.pk, active=True).values_list("user_id", flat=True))
        assert stored == expected
        assert Comment.objects.get(pk=comment.pk).like_count == len(expected)
        if comment.pk not in live.page_state(r, [(comment.pk, comment.subject_id)], None):
            state_sync.load(r, comment_id=comment.pk, subject_id=comment.subject_id)  # dropped as stale
        found = live.page_state(r, [(comment.pk, comment.subject_id)], None)
        assert found[comment.pk][0] == len(expected)


def test_likes_survive_their_subjects_slot_moving_to_another_master(cluster):
    def reshard(subject):
        slot = key_slot(keys.events(subject.pk).encode())
        elsewhere = next(p for p in cluster.ports[: cluster.masters] if p != _master_of(cluster, slot))
        _move_slot(cluster, slot, elsewhere)
        assert _master_of(cluster, slot) == elsewhere

    _assert_exact(*_likes_while(reshard))


def test_likes_survive_a_master_handing_over_to_its_replica(cluster):
    def fail_over(subject):
        slot = key_slot(keys.events(subject.pk).encode())
        master = _master_of(cluster, slot)
        replica = next(
            p
            for p in cluster.processes
            if cluster.node(p).execute_command("ROLE")[0] == "slave"
            and int(cluster.node(p).execute_command("ROLE")[2]) == master
        )
        cluster.node(replica).cluster("FAILOVER")
        deadline = time.monotonic() + 30
        while _master_of(cluster, slot) != replica:
            assert time.monotonic() < deadline, "the replica did not take over"
            time.sleep(0.1)

    _assert_exact(*_likes_while(fail_over))
