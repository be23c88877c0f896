import os

import pytest
import redis
from django.core.cache import cache
from rest_framework.test import APIClient

from comments import services

from .factories import CommentFactory, SiteFactory, SubjectFactory, UserFactory


@pytest.fixture(autouse=True)
def _no_rate_limits(settings):
    """Tests post fast; the rate-limit tests turn limits back on explicitly."""
    settings.RATE_LIMITS = {}


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    """Factories give every user a password; the production hasher's deliberate slowness
    (hundreds of milliseconds each) would dominate the suite's time."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _clear_cache():
    """The shared cache, and what processes keep of it (word lists, sanctions, hot pages),
    start empty."""
    from comments import pagecache
    from moderation import snapshots

    cache.clear()
    snapshots.forget_all()
    pagecache.reset()
    yield
    cache.clear()
    snapshots.forget_all()
    pagecache.reset()


@pytest.fixture(autouse=True)
def _page_cache_on(settings):
    """Every test reads through the shared page cache, in both modes (the embedded default
    turns it off, its local-memory cache being one per process; a test is one process), so
    every read-after-write of the suite checks that the write reached the cached pages."""
    settings.COMMENTS_PAGE_CACHE_TTL = 300


def _test_redis_url() -> str:
    return os.environ.get("TEST_REDIS_URL") or os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/15"


@pytest.fixture
def redis_url(settings):
    """The Redis of live state (like state, event streams, moderation's queue of second
    checks): the suite's Redis (``TEST_REDIS_URL``, else the one ``REDIS_URL`` names, else
    ``redis://127.0.0.1:6379/15``) on both run modes, emptied before and after the test."""
    from likes import live

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
    """No Redis of live state: the embedded default's road (likes straight to the database,
    a task per second check)."""
    from likes import live

    settings.LIKES_REDIS_URL = None
    live.reset()
    yield
    live.reset()


@pytest.fixture(params=["redis", "database"])
def like_store(request):
    """Run the test with like state in Redis (``redis_url``), then with the database alone."""
    if request.param == "redis":
        request.getfixturevalue("redis_url")
    else:
        request.getfixturevalue("no_redis")
    return request.param


@pytest.fixture
def api():
    """An anonymous API client."""
    return APIClient()


@pytest.fixture
def client_for():
    """``client_for(user)``: an API client authenticated with a fresh bearer token."""

    def make(user):
        raw, _ = services.token_issue(user=user)
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
        return client

    return make


@pytest.fixture
def user(db):
    return UserFactory()


@pytest.fixture
def site(db):
    return SiteFactory()


@pytest.fixture
def subject(site):
    return SubjectFactory(site=site)


@pytest.fixture
def moderator(site):
    mod = UserFactory(username="mod")
    site.moderators.add(mod)
    return mod


__all__ = ["CommentFactory"]
