"""Partitioned cookies (CHIPS), which Django cannot write yet: Python's ``http.cookies`` learns
the ``Partitioned`` attribute in 3.14, and Django's ``set_cookie`` after it. A browser keeps
such a cookie apart for each top-level site it was set under, so a frame on one site never
sees what it was given on another: the way a third-party frame may keep state at all once
third-party cookies are gone. ``Partitioned`` needs ``Secure`` and ``SameSite=None``; browsers
take ``Secure`` cookies over plain HTTP from ``localhost`` alone."""

from __future__ import annotations

import time
from http.cookies import Morsel

from django.http import HttpResponse
from django.utils.http import http_date


class _PartitionedMorsel(Morsel):
    def OutputString(self, attrs=None) -> str:
        return f"{super().OutputString(attrs)}; Partitioned"


def set_partitioned_cookie(
    response: HttpResponse, key: str, value: str, *, max_age: int, path: str, httponly: bool
) -> None:
    """``value`` must be a cookie-safe string (letters, digits, ``-_.``): it goes out as is.
    ``max_age`` 0 removes the cookie (its partition, name and path must match)."""
    morsel = _PartitionedMorsel()
    morsel.set(key, value, value)
    morsel["max-age"] = max(0, max_age)
    morsel["expires"] = http_date(time.time() + max(0, max_age))
    morsel["path"] = path
    morsel["secure"] = True
    morsel["samesite"] = "None"
    morsel["httponly"] = httponly
    response.cookies[key] = morsel
