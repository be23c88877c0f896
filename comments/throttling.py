"""Per-user rate limits on the shared cache (Redis in production), from ``RATE_LIMITS``.

A view asks for a scope (``post``, ``login``; ``like`` and ``report`` join with their
endpoints); over the limit DRF raises ``Throttled``, which the API answers as
``429 rate_limited`` with ``Retry-After``.
"""

from __future__ import annotations

from django.conf import settings
from rest_framework.throttling import SimpleRateThrottle


class ScopedThrottle(SimpleRateThrottle):
    """Counts requests per scope per user (per client IP for anonymous requests)."""

    def __init__(self, scope: str):
        self.scope = scope
        super().__init__()

    def get_rate(self):
        return settings.RATE_LIMITS.get(self.scope)

    def parse_rate(self, rate):
        return (None, None) if rate is None else rate

    def get_cache_key(self, request, view):
        user = getattr(request, "user", None)
        ident = f"u{user.pk}" if user is not None and user.is_authenticated else f"ip{self.get_ident(request)}"
        return f"throttle:{self.scope}:{ident}"


def throttles(*scopes: str) -> list[ScopedThrottle]:
    return [ScopedThrottle(scope) for scope in scopes]
