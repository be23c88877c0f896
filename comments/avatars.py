"""Readers' pictures, served from the service's own origin.

A user's picture comes from elsewhere: the host's SSO payload, an OpenID Connect provider, an
import. Shown as such, every reader's browser would ask that host for it, telling it the
reader's address and which discussions they read. So the API and the widget show the
picture's path on the service (``avatar_path``), and the service fetches the picture once,
keeps it in the cache and serves it (``avatar_picture``).

The path names the user and a keyed digest of the picture's address: it cannot be made for an
address no user has (the service is no open proxy), and it changes with the address, so it can
be cached for good. The fetch speaks only to public addresses (``infra.outbound``: the
resolved addresses are the ones connected to, so a name that resolves again differently cannot
lead it inside; ``AVATARS_FETCH_PRIVATE`` allows private ones), follows a few redirects, each
opened and checked the same way, reads at most ``MAX_BYTES`` of a PNG, JPEG, GIF or WebP picture
(never SVG, which may carry script) and gives up after ``TIMEOUT`` seconds. When it fails, a
picture drawn from the user's initial stands in, and the failure is remembered for a while.
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
from dataclasses import dataclass
from html import escape
from urllib.parse import urljoin

from django.conf import settings
from django.core.cache import cache

from infra import outbound, sharedcache

from .exceptions import NotFound
from .models import User

MAX_BYTES = 512 * 1024
TIMEOUT = 3.0
MAX_REDIRECTS = 3
IMAGE_TYPES = {"image/png", "image/jpeg", "image/gif", "image/webp"}
KEPT_SECONDS = 24 * 3600  # a fetched picture, in the shared cache
FAILURE_KEPT_SECONDS = 600  # a failed fetch is not tried again for this long


@dataclass(frozen=True)
class Picture:
    content_type: str
    data: bytes
    fetched: bool  # False: drawn from the initial, standing in for a picture that could not be had


def _digest(avatar_url: str) -> str:
    key = hashlib.sha256(f"comments.avatars:{settings.SECRET_KEY}".encode()).digest()
    return hmac.new(key, avatar_url.encode(), hashlib.sha256).hexdigest()[:24]


def avatar_path(user_id: int, avatar_url: str) -> str | None:
    """Where the service serves the user's picture; None for a user without one."""
    if not avatar_url:
        return None
    return f"/avatars/{user_id}/{_digest(avatar_url)}"


def avatar_picture(user_id: int, digest: str) -> Picture:
    """The picture at ``avatar_path(user_id, its address)``: from the cache, else fetched and
    kept. ``NotFound`` when no such user has a picture at an address of that digest (it was
    never one, or the user's picture changed since)."""
    row = User.objects.filter(pk=user_id).values_list("avatar_url", "display_name", "username").first()
    if row is None or not row[0] or not hmac.compare_digest(_digest(row[0]), digest):
        raise NotFound("No such picture.")
    avatar_url, name = row[0], row[1] or row[2]
    key = f"avatar:{digest}"
    kept = sharedcache.call(lambda: cache.get(key), None)
    if kept is None:
        try:
            kept = _fetch(avatar_url)
        except PictureUnavailable:
            kept = ("", b"")
        sharedcache.call(lambda: cache.set(key, kept, KEPT_SECONDS if kept[1] else FAILURE_KEPT_SECONDS), None)
    content_type, data = kept
    if not data:
        return Picture("image/svg+xml", _initial_picture(name, digest), fetched=False)
    return Picture(content_type, data, fetched=True)


def _initial_picture(name: str, digest: str) -> bytes:
    """A square of a colour of the digest with the name's first letter: the widget's own
    stand-in for a user without a picture, as a picture."""
    hue = int(digest[:4], 16) % 360
    letter = escape((name or "?")[:1].upper())
    return (
        '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32" width="32" height="32">'
        f'<rect width="32" height="32" fill="hsl({hue},40%,50%)"/>'
        '<text x="16" y="21.5" font-family="sans-serif" font-size="16" text-anchor="middle" '
        f'fill="#fff">{letter}</text></svg>'
    ).encode()


# --- the fetch ------------------------------------------------------------------------------


class PictureUnavailable(Exception):
    pass


def _fetch(url: str) -> tuple[str, bytes]:
    """``(content type, bytes)`` of the picture at ``url``, or ``PictureUnavailable``."""
    for _ in range(MAX_REDIRECTS + 1):
        # Every hop is opened here, so each redirect's target is checked as the first address.
        try:
            connection, target = outbound.connection_open(
                url, allow_private=settings.AVATARS_FETCH_PRIVATE, timeout=TIMEOUT
            )
        except (outbound.DestinationRefused, OSError) as exc:
            raise PictureUnavailable(str(exc)[:200]) from exc
        try:
            connection.request(
                "GET",
                target,
                headers={
                    "Accept": ", ".join(sorted(IMAGE_TYPES)),
                    "User-Agent": "comments-avatars/1",
                },
            )
            response = connection.getresponse()
            if response.status in (301, 302, 303, 307, 308) and response.getheader("Location"):
                url = urljoin(url, response.getheader("Location"))
                continue
            content_type = (response.getheader("Content-Type") or "").split(";")[0].strip().lower()
            if response.status != 200 or content_type not in IMAGE_TYPES:
                raise PictureUnavailable(f"{response.status} {content_type}")
            data = response.read(MAX_BYTES + 1)
            if len(data) > MAX_BYTES or not data:
                raise PictureUnavailable(f"{len(data)} bytes")
            return content_type, data
        except (OSError, http.client.HTTPException, ValueError) as exc:
            raise PictureUnavailable(str(exc)[:200]) from exc
        finally:
            connection.close()
    raise PictureUnavailable("too many redirects")
