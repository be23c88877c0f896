"""Reaching Redis, a single server or a Redis Cluster, from one URL; and one round trip of
several Redis commands, for the few calls made on nearly every request.

A URL whose scheme ends in ``+cluster`` (``redis+cluster://host:port``, ``rediss+cluster://``)
names a Redis Cluster by any of its nodes: ``connect`` gives redis-py's cluster client, which
sends each command to the node that holds its keys and follows the cluster as slots move.
Every key this project writes carries the hash tag of the subject it belongs to where commands
or scripts use several keys together (``likes/keys.py``, ``infra/pagecache.py``), so they
are in one slot; a multi-key read of unrelated keys (the cache's ``get_many``) is split per
slot. Any other URL is a single Redis server.

``round_trip(r, commands)`` is what ``r.pipeline(transaction=False)`` does (one write of every
command, then every reply, in order) without the ``Pipeline`` object: its command stack,
response callbacks, retry wrapper and metrics hooks were a measurable part of the like
endpoint's CPU (``docs/benchmarks.md``, likes).
Replies come back as Redis sent them (no response callbacks), and an error reply comes back as
its exception, not raised, like ``execute(raise_on_error=False)``. A failure of the connection
itself (``ConnectionError``, ``TimeoutError``) is raised as redis-py raises it; the connection
is dropped, never returned to the pool with a reply still unread on it.

The state Redis (``LIKES_REDIS_URL``) holds what must survive a process: the like state and the
streams that hand work on to the workers (``infra.streams``). ``client()`` gives it, or None when
there is none or it failed within the last ``LIKES_REDIS_RETRY`` seconds: callers then use the
database alone, and ``take_recovery`` tells one caller once when it came back.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from typing import Any

import redis
from django.conf import settings
from django.core.signals import setting_changed
from redis.backoff import NoBackoff
from redis.cluster import RedisCluster
from redis.retry import Retry

logger = logging.getLogger("infra.redis")

_CLUSTER_SCHEMES = {"redis+cluster": "redis", "rediss+cluster": "rediss"}


class Cluster(RedisCluster):
    """redis-py's cluster client, with ``MGET`` of keys in several slots split per slot (the
    cache's ``get_many`` asks for unrelated keys at times; one MGET per slot is as atomic as
    one MGET ever is for keys of one slot)."""

    def mget(self, keys, *args):
        return self.mget_nonatomic(keys, *args)


def is_cluster_url(url: str) -> bool:
    return url.partition("://")[0] in _CLUSTER_SCHEMES


# How many times the cluster client sends a command again after a connection error or a
# timeout: none. Its default is ten, with a backoff of up to a second between them, and a
# pipeline resends each command that failed on its own through the same retries: a frozen
# master held a request ten to twenty seconds whatever the socket timeout
# (tests/infra/test_frozen_redis.py). Every caller has a road without Redis (the like state's
# database road, the cache's miss), and a retry without a pause would not outlast a failover
# anyway (cluster-node-timeout); the error still asks for a topology refresh, which the next
# command runs, so the caller's next use finds the new master.
CLUSTER_RETRIES = 0


def connect(url: str, **options: Any) -> redis.Redis | RedisCluster:
    """A client of the Redis ``url`` names: a cluster client for a ``+cluster`` URL (its node
    is the first contact), else a single server's.

    A call waits for a server that does not answer about ``socket_timeout`` (or
    ``socket_connect_timeout``, for a new connection) per attempt: one attempt on a single
    server (a client made from a URL has no retry); on a cluster ``1 + CLUSTER_RETRIES`` for a
    command, and for a pipeline one more, since it resends a command that failed on its own."""
    scheme, _, rest = url.partition("://")
    if scheme in _CLUSTER_SCHEMES:
        options.setdefault("retry", Retry(NoBackoff(), CLUSTER_RETRIES))
        return Cluster.from_url(f"{_CLUSTER_SCHEMES[scheme]}://{rest}", **options)
    return redis.Redis.from_url(url, **options)


def is_cluster(r: object) -> bool:
    return isinstance(r, RedisCluster)


def round_trip(r: redis.Redis | RedisCluster, commands: Sequence[tuple]) -> list:
    if isinstance(r, RedisCluster):
        return _one_by_one(r, commands)
    pool = r.connection_pool
    conn = pool.get_connection()
    try:
        conn.send_packed_command(conn.pack_commands(commands))
        replies = []
        for _ in commands:
            try:
                replies.append(conn.read_response())
            except redis.exceptions.ResponseError as error:
                replies.append(error)
        return replies
    except BaseException:
        conn.disconnect()  # redis-py drops it on a socket error; this covers anything else
        raise
    finally:
        pool.release(conn)


def _one_by_one(r: RedisCluster, commands: Sequence[tuple]) -> list:
    """On a cluster the commands of one call may live on several nodes: each goes to its own
    (redis-py follows MOVED and ASK while slots move), replies and error replies as
    ``round_trip`` gives them."""
    replies = []
    for command in commands:
        try:
            replies.append(r.execute_command(*command))
        except redis.exceptions.ResponseError as error:
            replies.append(error)
    return replies


# --- the state Redis ------------------------------------------------------------------------

# What makes a process use the database alone for a while: Redis not answering, (a cluster)
# a slot without a reachable master for longer than the client's retries, or Redis refusing
# writes because it is full (a like-state Redis runs with maxmemory-policy noeviction, since
# evicting a stream or the flush's bookkeeping would lose likes or miscount them;
# docs/production.md).
ERRORS = (
    redis.exceptions.ConnectionError,
    redis.exceptions.TimeoutError,
    redis.exceptions.ClusterError,
    redis.exceptions.OutOfMemoryError,
)

_lock = threading.Lock()
_client: redis.Redis | RedisCluster | None = None
_client_url: str | None = None
_down_until = 0.0
_recovering = False


def client() -> redis.Redis | RedisCluster | None:
    """The state Redis (a cluster client for a ``redis+cluster://`` URL); None when
    there is none, or while it is considered down."""
    global _client, _client_url
    url = settings.LIKES_REDIS_URL
    if not url or time.monotonic() < _down_until:
        return None
    if _client is None or _client_url != url:
        with _lock:
            if _client is None or _client_url != url:
                timeout = settings.LIKES_REDIS_TIMEOUT
                _client = connect(
                    url,
                    decode_responses=True,
                    socket_timeout=timeout,
                    socket_connect_timeout=timeout,
                    health_check_interval=30,
                )
                _client_url = url
    return _client


def mark_down(exc: BaseException) -> None:
    """Stop using Redis in this process for ``LIKES_REDIS_RETRY`` seconds."""
    global _down_until, _recovering
    logger.warning("state Redis unavailable (%s); using the database for %.0f s", exc, settings.LIKES_REDIS_RETRY)
    _down_until = time.monotonic() + settings.LIKES_REDIS_RETRY
    _recovering = True


def take_recovery() -> bool:
    """True once after Redis came back from being down in this process: the caller then drops
    the Redis state of comments written to the database meanwhile."""
    global _recovering
    if _recovering:
        _recovering = False
        return True
    return False


def _reset(**kwargs) -> None:
    global _client, _client_url, _down_until, _recovering
    if kwargs.get("setting") in {"LIKES_REDIS_URL", "LIKES_REDIS_TIMEOUT", None}:
        _client, _client_url, _down_until, _recovering = None, None, 0.0, False


setting_changed.connect(_reset)


def reset() -> None:
    """Forget the client and any outage (tests, after forking)."""
    _reset(setting=None)
