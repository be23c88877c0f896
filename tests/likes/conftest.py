"""Fixtures of the likes suite: the like state in a real Redis, or no Redis at all.

``redis_url`` is the suite's Redis (``TEST_REDIS_URL``, else the one ``REDIS_URL`` names, else
``redis://127.0.0.1:6379/15``): the likes tests use it on both run modes, since like state
lives in Redis whatever the database is. ``like_store`` runs a test once per store.
"""

from __future__ import annotations

import os

import pytest
import redis

from likes import live


def _test_redis_url() -> str:
    return os.environ.get("TEST_REDIS_URL") or os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/15"


@pytest.fixture
def redis_url(settings):
    """Like state in the suite's Redis, emptied before and after the test."""
    url = _test_redis_url()
    connection = redis.Redis.from_url(url, decode_responses=True)
    connection.flushdb()
    settings.LIKES_REDIS_URL = url
    live.reset()
    yield url
    connection.flushdb()
    live.reset()


@pytest.fixture
def raw_redis(redis_url):
    return redis.Redis.from_url(redis_url, decode_responses=True)


@pytest.fixture
def no_redis(settings):
    """No Redis for likes: the embedded default's road, straight to the database."""
    settings.LIKES_REDIS_URL = None
    live.reset()
    yield
    live.reset()


@pytest.fixture(params=["redis", "database"])
def like_store(request):
    """Run the test with like state in Redis, then with the database alone."""
    if request.param == "redis":
        request.getfixturevalue("redis_url")
    else:
        request.getfixturevalue("no_redis")
    return request.param
