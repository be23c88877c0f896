import os
import shutil
from pathlib import Path

import pytest
from django.core.cache import cache
from rest_framework.test import APIClient

from comments import services
from infra.redislink import connect

from .citus_flush import flush_by_delete_on_citus
from .citus_statements import statements_kept, write_run_log
from .factories import CommentFactory, SiteFactory, SubjectFactory, UserFactory

# tests/replica/ pauses, lags and stops a real streaming replica: scripts/test-replica starts one,
# names it in DATABASE_REPLICA_URLS and runs them (CI does). Without one they are not collected;
# the router's rules are tested on a mirror in every run (tests/comments/test_replicas.py).
collect_ignore = [] if os.environ.get("DATABASE_REPLICA_URLS") else ["replica"]


@pytest.fixture(scope="session", autouse=True)
def _cheap_flush_on_citus():
    """After a transactional test, a Citus coordinator is emptied by deleting the rows the test
    wrote rather than truncating every shard (tests/citus_flush.py)."""
    with flush_by_delete_on_citus():
        yield


@pytest.fixture(autouse=True)
def _statements_of_the_run(request):
    """With ``CITUS_RUN_LOG`` set, the statements the run executes are kept for the Citus
    check (tests/citus_statements.py)."""
    with statements_kept(request.node.nodeid):
        yield


def pytest_sessionfinish(session, exitstatus):
    write_run_log()


@pytest.fixture(autouse=True)
def _clear_cache():
    """The shared cache, and what processes keep of it (word lists, sanctions, hot pages),
    start empty."""
    from infra import pagecache
    from moderation import snapshots

    cache.clear()
    snapshots.forget_all()
    pagecache.reset()
    yield
    cache.clear()
    snapshots.forget_all()
    pagecache.reset()


def _test_redis_url() -> str:
    return os.environ.get("TEST_REDIS_URL") or os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/15"


@pytest.fixture
def redis_url(settings):
    """The Redis of live state (like state, event streams, moderation's queue of second
    checks): the suite's Redis (``TEST_REDIS_URL``, else the one ``REDIS_URL`` names, else
    ``redis://127.0.0.1:6379/15``) on both run modes, emptied before and after the test."""
    from infra import redislink

    url = _test_redis_url()
    connection = connect(url, decode_responses=True)
    connection.flushdb()
    settings.LIKES_REDIS_URL = url
    redislink.reset()
    yield url
    connection.flushdb()
    redislink.reset()


@pytest.fixture
def raw_redis(redis_url):
    return connect(redis_url, decode_responses=True)


@pytest.fixture
def no_redis(settings):
    """No Redis of live state: the embedded default's road (likes straight to the database,
    a task per second check)."""
    from infra import redislink

    settings.LIKES_REDIS_URL = None
    redislink.reset()
    yield
    redislink.reset()


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


@pytest.fixture
def public_url(live_server, settings):
    """The live server as the service's public address (``COMMENTS_PUBLIC_URL``), for a test
    that follows a link from an email: links are made of that setting, never of a request's
    ``Host``, so without it they lead to the default address, where nothing answers."""
    settings.COMMENTS_PUBLIC_URL = settings.NOTIFICATIONS_BASE_URL = live_server.url
    return live_server.url


__all__ = ["CommentFactory"]


@pytest.fixture(params=["stream", "task"])
def road(request):
    """Run the test with events handed on through a Redis stream (drained as the beat tasks
    drain it), then with a task per event (eager in tests): the two roads of notifications' and
    webhooks' events."""
    request.getfixturevalue("redis_url" if request.param == "stream" else "no_redis")
    return request.param


def empty_stream(settings, stream: str) -> None:
    """Start a test with ``stream`` empty: other modules' posts queue events nobody drains."""
    from infra import redislink

    if settings.LIKES_REDIS_URL and redislink.client() is not None:
        redislink.client().delete(stream)


# --- Chromium, for every suite that drives it (tests/browser/, tests/security/) ----------------
# One Playwright and one browser for the whole run: Playwright's sync API cannot start a second
# one in the thread while the first runs. Debian's Chromium, never a downloaded one.

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


# Modules whose tests each take seconds (a browser, a gunicorn or Celery process, a cluster of
# Redis or PostgreSQL servers of their own, a fuzzer, a state machine, a large import): marked
# ``slow``, so that ``-m "not slow"`` is a quick local run. CI runs everything; scripts/test
# prints the slowest tests (--durations), which is how this list is kept true.
SLOW_MODULES = {
    "tests/accounts/test_oidc.py",
    "tests/api/test_fuzzing.py",
    "tests/comments/test_availability.py",
    "tests/comments/test_serving.py",
    "tests/docs/test_embedding.py",
    "tests/likes/test_cluster.py",
    "tests/likes/test_faults.py",
    "tests/likes/test_protocol_machine.py",
    "tests/likes/test_worker_faults.py",
    "tests/moderation/test_background.py",
    "tests/portability/test_import_scale.py",
}
SLOW_FOLDERS = ("tests/browser/", "tests/fastpaths/", "tests/replica/", "tests/security/test_xss_")


def pytest_collection_modifyitems(config, items):
    root = Path(config.rootpath)
    for item in items:
        where = Path(item.fspath).relative_to(root).as_posix()
        if where in SLOW_MODULES or where.startswith(SLOW_FOLDERS):
            item.add_marker(pytest.mark.slow)


@pytest.hookimpl(tryfirst=True, hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    if not shutil.which(CHROMIUM) and not Path(CHROMIUM).exists():
        pytest.fail(f"Chromium not found at {CHROMIUM}: apt-get install -y chromium (or set CHROMIUM_PATH)")
    playwright = sync_playwright().start()
    chromium = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
    yield chromium
    chromium.close()
    playwright.stop()


@pytest.fixture
def routed(settings):
    """Reads routed to ``replica1`` (the suite's mirror of the test database) as
    DATABASE_REPLICA_URLS would have them; the page cache off (a test that wants it turns it
    on), so a list is read from a database."""
    from infra import replicas

    settings.DATABASE_REPLICAS = ["replica1"]
    settings.DATABASE_ROUTERS = ["infra.replicas.ReplicaRouter"]
    middleware = "infra.replicas.ReplicaMiddleware"
    if middleware not in settings.MIDDLEWARE:
        stack = list(settings.MIDDLEWARE)
        stack.insert(stack.index("comments.middleware.ApiErrorMiddleware"), middleware)
        settings.MIDDLEWARE = stack
    settings.COMMENTS_PAGE_CACHE_TTL = 0
    replicas.reset()
    yield
    replicas.reset()
