"""A Redis master that stops answering (frozen with SIGSTOP: its sockets stay open and every
read waits, as when a machine hangs or the network drops) costs a request a few times the
configured timeout, not redis-py's default retries and backoff on top of it: a like falls back
to the database and a page is read from the database, each within ``BOUND`` times the
timeout the settings give the client (``LIKES_REDIS_TIMEOUT`` for the like state,
``REDIS_TIMEOUT`` for the cache).

Each test runs a Redis Cluster of its own (three masters and a replica each, on free loopback
ports: ``tests/redis_cluster.py``) and freezes the master of its keys' slot; with the cluster
client's default retries (ten, with backoff, and a pipeline's command resent through them
again) the like waited about ten seconds and the page twenty. A single Redis server of the
test's own is frozen too: its client (which makes no retry) must stay within the same bound.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import redis
from django.core.cache import caches
from redis.crc import key_slot

from config.env import redis_cache
from infra import pagecache, redislink
from likes import keys
from likes.services import likes_flush

from ..api.conftest import API
from ..factories import CommentFactory, SubjectFactory, UserFactory
from ..redis_cluster import LocalRedisCluster
from ..servers import free_port, wait_until

pytestmark = pytest.mark.django_db(transaction=True)

# The timeout the tests give the clients, and the longest a request may wait for a frozen
# master in multiples of it: the attempts the clients make (one per command; a cluster pipeline
# resends a command that failed on its own: redislink.connect) and a topology refresh between
# them, with room for a slow machine. What the bound guards against is twenty and more.
TIMEOUT = 0.5
BOUND = 4


@contextmanager
def frozen(pid: int) -> Iterator[None]:
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


def timed(call):
    started = time.monotonic()
    result = call()
    return result, time.monotonic() - started


@pytest.fixture
def cluster(tmp_path) -> Iterator[LocalRedisCluster]:
    running = LocalRedisCluster(tmp_path / "cluster").start()
    yield running
    running.stop()


@pytest.fixture
def single_server(tmp_path) -> Iterator[tuple[int, int]]:
    """A Redis server of the test's own: its port and process id."""
    port = free_port()
    process = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    def answers() -> bool:
        try:
            return bool(redis.Redis(port=port, socket_timeout=1).ping())
        except redis.exceptions.ConnectionError:
            return False

    try:
        wait_until(answers, "the test's Redis server did not answer")
        yield port, process.pid
    finally:
        os.kill(process.pid, signal.SIGCONT)
        process.kill()
        process.wait(10)


@pytest.fixture
def like_state_on(settings):
    """``like_state_on(url)``: the like state on the Redis ``url`` names, with the test's timeout;
    an outage keeps this process on the database for longer than the test."""

    def use(url: str) -> None:
        settings.LIKES_REDIS_URL = url
        settings.LIKES_REDIS_TIMEOUT = TIMEOUT
        settings.LIKES_REDIS_RETRY = 600.0
        redislink.reset()

    yield use
    redislink.reset()


@pytest.fixture
def cache_on(settings):
    """``cache_on(url)``: the shared cache on the Redis ``url`` names, built as the settings build
    it from ``REDIS_URL`` and ``REDIS_TIMEOUT``; every read goes to it (no hot copies)."""

    def use(url: str) -> None:
        settings.CACHES = {"default": redis_cache(url, timeout=TIMEOUT, prefix="frozen")}
        settings.COMMENTS_PAGE_CACHE_TTL = 300
        settings.COMMENTS_HOT_PAGE_SECONDS = 0
        settings.COMMENTS_CACHE_RETRY = 600.0
        pagecache.reset()

    yield use
    caches["default"].close()
    pagecache.reset()


def like(client_for, comment, user) -> dict:
    answer = client_for(user).put(f"{API}/comments/{comment.pk}/like")
    assert answer.status_code == 200, answer.content[:300]
    return answer.json()


def page_ids(api, subject) -> list[int]:
    answer = api.get(f"{API}/subjects/{subject.pk}/comments", {"mode": "flat"})
    assert answer.status_code == 200, answer.content[:300]
    return [item["id"] for item in answer.json()["items"]]


def test_a_like_waits_a_few_timeouts_for_a_frozen_cluster_master_then_goes_to_the_database(
    cluster, like_state_on, client_for
):
    like_state_on(cluster.url)
    comment = CommentFactory(subject=SubjectFactory())
    assert like(client_for, comment, UserFactory())["like_count"] == 1  # the state is in Redis
    likes_flush()  # and the like in the database, which answers while Redis does not
    master = cluster.master_of(key_slot(keys.likers(comment.subject_id, comment.pk).encode()))

    with frozen(cluster.processes[master].pid):
        answer, waited = timed(lambda: like(client_for, comment, UserFactory()))

    assert (answer["like_count"], answer["liked"]) == (2, True)
    assert waited < BOUND * TIMEOUT, f"the like waited {waited:.1f} s for the frozen master"


def test_a_page_waits_a_few_timeouts_for_a_frozen_cluster_master_then_comes_from_the_database(
    cluster, cache_on, api, subject
):
    cache_on(cluster.url)
    first = CommentFactory(subject=subject)
    assert page_ids(api, subject) == [first.pk]  # now cached
    master = cluster.master_of(key_slot(pagecache.version_key(subject.pk).encode()))

    second = CommentFactory(subject=subject)
    with frozen(cluster.processes[master].pid):
        ids, waited = timed(lambda: page_ids(api, subject))

    assert ids == [first.pk, second.pk]
    assert waited < BOUND * TIMEOUT, f"the page waited {waited:.1f} s for the frozen master"


def test_a_like_and_a_page_wait_a_few_timeouts_for_a_frozen_single_server(
    single_server, like_state_on, cache_on, client_for, api, subject
):
    port, pid = single_server
    like_state_on(f"redis://127.0.0.1:{port}/0")
    cache_on(f"redis://127.0.0.1:{port}/1")
    comment = CommentFactory(subject=subject)
    assert like(client_for, comment, UserFactory())["like_count"] == 1
    likes_flush()
    assert page_ids(api, subject) == [comment.pk]

    with frozen(pid):
        # The page first: the like would find the cache frozen first (its rate limit), and the
        # page then go without it.
        ids, waited_page = timed(lambda: page_ids(api, subject))
        answer, waited_like = timed(lambda: like(client_for, comment, UserFactory()))

    assert (answer["like_count"], answer["liked"], ids) == (2, True, [comment.pk])
    assert waited_like < BOUND * TIMEOUT, f"the like waited {waited_like:.1f} s for the frozen server"
    assert waited_page < BOUND * TIMEOUT, f"the page waited {waited_page:.1f} s for the frozen server"
