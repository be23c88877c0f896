"""The test suite's settings: the application's own (``config.settings``, from the same
environment, so the suite runs on PostgreSQL + Redis or on the embedded default as the
environment says) with what tests need to differ."""

import os

# A fixed key, so the suite needs no kept key file and writes nothing under var/. Set before the
# settings read it; processes the tests start inherit it.
os.environ.setdefault("DJANGO_SECRET_KEY", "test-secret-key")

from config.settings import *  # noqa: F403
from config.settings import DATABASES

# Tests post fast; the rate-limit tests turn limits on explicitly.
RATE_LIMITS = {}

# Factories give every user a password; the production hasher's deliberate slowness (hundreds of
# milliseconds each) would dominate the suite's time.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# Every test reads through the shared page cache, in both modes (the embedded default turns it
# off, its local-memory cache being one per process; a test is one process), so every
# read-after-write of the suite checks that the write reached the cached pages.
COMMENTS_PAGE_CACHE_TTL = 300

# A page built ahead is read on the preloading thread's own connection, which cannot see the rows
# of a test's open transaction; the preload's tests turn it on over committed rows.
COMMENTS_PAGE_PRELOAD = False

# Static files come from the finders (WHITENOISE_USE_FINDERS); nothing is collected, so there is
# no folder of collected files to make or to warn about.
STATIC_ROOT = None

# The read-replica router's tests (tests/comments/test_replicas.py) read through "replica1": a
# second connection to the test database (a test mirror) when no real replica is named; a real
# streaming replica of the primary when scripts/test-replica names one (DATABASE_REPLICA_URLS),
# and then the router reads through it for the whole run.
if "replica1" not in DATABASES:
    DATABASES["replica1"] = {
        **DATABASES["default"],
        "TEST": {**DATABASES["default"].get("TEST", {}), "MIRROR": "default"},
    }
