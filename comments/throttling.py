"""Per-user rate limits on the shared cache (Redis in production), from ``RATE_LIMITS``.

A view asks for a scope (``post``, ``login``, ``like``, ``report``); over the limit DRF raises
``Throttled``, which the API answers as ``429 rate_limited`` with ``Retry-After``.

The count is a sliding-window estimate over two fixed windows (this one's count plus the last
one's, weighted by how much of it still overlaps the sliding window): two integers per user and
scope, bumped and read in one round trip. DRF's own throttle keeps every request's time in a
pickled list that it reads and writes back whole, two round trips and a list of up to
``limit`` floats per request, which on the like endpoint cost more than the like itself.

While the shared cache is down, each process counts in its own memory instead: a limit then
holds per process (a client may reach it once in each), never not at all (issue 33, F12).
"""

from __future__ import annotations

import time

from django.conf import settings
from django.core.cache import cache
from django.core.cache.backends.base import BaseCache
from django.core.cache.backends.locmem import LocMemCache
from rest_framework.throttling import BaseThrottle

from infra import sharedcache
from infra.redislink import round_trip

# The counts of this process while the shared cache is down (bounded: LocMemCache culls).
_process_counts = LocMemCache("comments-throttle-fallback", {"OPTIONS": {"MAX_ENTRIES": 10_000}})


def _bump(key: str, window: int, duration: int) -> tuple[int, int]:
    """Count one more request in ``window``; ``(this window's count, the last one's)``."""
    redis = sharedcache.redis_client()
    if redis is not None:
        current, previous = cache.make_key(f"{key}:{window}"), cache.make_key(f"{key}:{window - 1}")
        count, _, last = round_trip(redis, [("INCR", current), ("EXPIRE", current, 2 * duration), ("GET", previous)])
        for reply in (count, last):
            if isinstance(reply, Exception):
                raise reply
        return int(count), int(last or 0)
    return _bump_in(cache, key, window, duration)


def _bump_in(counts: BaseCache, key: str, window: int, duration: int) -> tuple[int, int]:
    current, previous = f"{key}:{window}", f"{key}:{window - 1}"
    counts.add(current, 0, 2 * duration)
    try:
        count = counts.incr(current)
    except ValueError:  # expired between add and incr
        counts.add(current, 1, 2 * duration)
        count = 1
    return count, int(counts.get(previous) or 0)


def limit_reached(scope: str, ident: str) -> float | None:
    """Count one more request of ``ident`` (any stable text: a user, an address, a hash of an
    email address) in ``scope``; the seconds to wait when that is over the scope's limit, else
    None. Without the shared cache (an outage) this process counts on its own."""
    rate = settings.RATE_LIMITS.get(scope)
    if rate is None:
        return None
    limit, duration = rate
    window, into = divmod(time.time(), duration)
    key = f"throttle:{scope}:{ident}"
    counted = sharedcache.call(lambda: _bump(key, int(window), duration), None)
    current, previous = counted or _bump_in(_process_counts, key, int(window), duration)
    if previous * (1 - into / duration) + current <= limit:
        return None
    return max(1.0, duration - into)


class ScopedThrottle(BaseThrottle):
    """Counts requests per scope per user (per client IP for anonymous requests)."""

    def __init__(self, scope: str):
        self.scope = scope
        self.retry_after: float | None = None

    def allow_request(self, request, view) -> bool:
        user = getattr(request, "user", None)
        ident = f"u{user.pk}" if user is not None and user.is_authenticated else f"ip{self.get_ident(request)}"
        self.retry_after = limit_reached(self.scope, ident)
        return self.retry_after is None

    def wait(self) -> float | None:
        return self.retry_after


def throttles(*scopes: str) -> list[ScopedThrottle]:
    return [ScopedThrottle(scope) for scope in scopes]
