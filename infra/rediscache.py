"""The shared cache's connection to Redis: django-redis's, which also reaches a Redis Cluster
named by a ``+cluster`` URL (``infra.redislink``). Named in ``CACHES`` as the
``CONNECTION_FACTORY`` option."""

from __future__ import annotations

import threading

import redis
from django_redis.pool import ConnectionFactory
from redis.cluster import RedisCluster

from .redislink import connect, is_cluster, is_cluster_url


class ClusterAwareConnectionFactory(ConnectionFactory):
    """django-redis keeps a connection pool per URL and wraps it in a new client for each cache
    client; a cluster client keeps pools of its own, per node, so for a cluster URL it is the
    client that is kept, one per URL and process."""

    _clusters: dict[str, redis.Redis | RedisCluster] = {}
    _lock = threading.Lock()

    def connect(self, url: str):
        if not is_cluster_url(url):
            return super().connect(url)
        cluster = self._clusters.get(url)
        if cluster is None:
            with self._lock:
                cluster = self._clusters.get(url)
                if cluster is None:
                    params = self.make_connection_params(url)
                    del params["url"], params["parser_class"]
                    cluster = self._clusters[url] = connect(url, **params)
        return cluster

    def disconnect(self, connection) -> None:
        if is_cluster(connection):
            connection.disconnect_connection_pools()
        else:
            super().disconnect(connection)
