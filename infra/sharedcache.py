"""The shared cache (Django's ``default`` cache: Redis in production) as every feature calls
it: a call that fails counts as a miss, and the process leaves the cache alone for
``COMMENTS_CACHE_RETRY`` seconds, so an outage costs one failed connection attempt per
process and period, not one per request. What the cache holds is kept elsewhere too (pages in
the database, word-list versions in each process), so nothing fails with it: pages are read
from the database, rate limits and the repeated-text check let requests through, and word
lists stay as each process last knew them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

from django.conf import settings
from django.core.cache import cache

logger = logging.getLogger("comments.cache")

Result = TypeVar("Result")
Default = TypeVar("Default")

_down_until = 0.0


def available() -> bool:
    return time.monotonic() >= _down_until


def call(operation: Callable[[], Result], default: Default) -> Result | Default:
    """``operation()`` (a call of the cache), or ``default`` when the cache is down. Any
    exception of the backend counts: django-redis raises redis-py's connection and timeout
    errors, other backends their own."""
    global _down_until
    if not available():
        return default
    try:
        return operation()
    except Exception as exc:  # noqa: BLE001 - a cache failure must never fail a request
        logger.warning("shared cache unavailable (%s); going without it for %.0f s", exc, settings.COMMENTS_CACHE_RETRY)
        _down_until = time.monotonic() + settings.COMMENTS_CACHE_RETRY
        return default


def redis_client():
    """The cache's Redis client when the cache is django-redis (for several commands in one
    round trip, ``redislink.round_trip``), else None."""
    client = getattr(cache, "client", None)
    get_client = getattr(client, "get_client", None)
    return get_client(write=True) if get_client is not None else None


def reset() -> None:
    """Forget an outage (tests)."""
    global _down_until
    _down_until = 0.0
