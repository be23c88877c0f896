"""Reaching Redis, a single server or a Redis Cluster, from one URL; and one round trip of
several Redis commands, for the few calls made on nearly every request.

A URL whose scheme ends in ``+cluster`` (``redis+cluster://host:port``, ``rediss+cluster://``)
names a Redis Cluster by any of its nodes: ``connect`` gives redis-py's cluster client, which
sends each command to the node that holds its keys and follows the cluster as slots move.
Every key this project writes carries the hash tag of the subject it belongs to where commands
or scripts use several keys together (``likes/keys.py``, ``comments/pagecache.py``), so they
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
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import redis
from redis.cluster import RedisCluster

_CLUSTER_SCHEMES = {"redis+cluster": "redis", "rediss+cluster": "rediss"}


class Cluster(RedisCluster):
    """redis-py's cluster client, with ``MGET`` of keys in several slots split per slot (the
    cache's ``get_many`` asks for unrelated keys at times; one MGET per slot is as atomic as
    one MGET ever is for keys of one slot)."""

    def mget(self, keys, *args):
        return self.mget_nonatomic(keys, *args)


def is_cluster_url(url: str) -> bool:
    return url.partition("://")[0] in _CLUSTER_SCHEMES


def connect(url: str, **options: Any) -> redis.Redis | RedisCluster:
    """A client of the Redis ``url`` names: a cluster client for a ``+cluster`` URL (its node
    is the first contact), else a single server's."""
    scheme, _, rest = url.partition("://")
    if scheme in _CLUSTER_SCHEMES:
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
