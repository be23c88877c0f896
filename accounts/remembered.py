"""Readers stay signed in on the site they signed in on (docs/security.md, "Staying signed in").

A sign-in in the window (an e-mail link, a provider) hands the widget's frame a bearer token that
the frame keeps in memory. So that a reload, another page of the same blog or a new tab keep
the reader, the token is also kept in cookies, none of them a third-party cookie:

- **in the frame, partitioned** (CHIPS) under the embedding page's top-level site:
  ``cw-session-<site>`` (HttpOnly: how the reader signed in, and the token) and
  ``cw-signed-<site>`` (readable by the frame's script, holding nothing secret: the frame asks
  for the session only where one is kept, so the pages of readers who never signed in cost no
  request more). The frame sets them through ``POST /api/v1/auth/session`` after a window's
  sign-in and trades them for the token on load (``POST /api/v1/auth/session/resume``). Under
  another top-level site (another blog) the browser shows the frame none of them: the reader is
  a stranger there, as they were before.
- **in the sign-in window, first party**: ``cw-window-<site>`` (HttpOnly, ``SameSite=Lax``,
  path ``/auth/``). A browser that keeps no cookie at all in a third-party frame keeps this
  one: the reader's next "Sign in" opens the window, which hands the token back at once,
  without another e-mail.

Each carries the token itself (only its hash is stored): signing out revokes the token, which
makes every copy worthless in every process at once, and the frame's sign-out removes the
frame's cookies too. They live as long as the token, ``COMMENTS_TOKEN_TTL`` at most."""

from __future__ import annotations

import hashlib
import re

from django.http import HttpRequest, HttpResponse
from django.utils import timezone, translation
from django.utils.translation import gettext

from comments.authentication import token_with_user
from comments.models import ApiToken, Site
from infra.cookies import set_partitioned_cookie

from .oidc import providers

SESSION_COOKIE = "cw-session-{site}"
SIGNED_COOKIE = "cw-signed-{site}"
WINDOW_COOKIE = "cw-window-{site}"
SESSION_PATH = "/api/v1/auth/session"
WINDOW_PATH = "/auth/"
VIA = re.compile(r"^[a-z0-9_-]{1,40}\Z")
_VALUE = re.compile(r"(?P<via>[a-z0-9_-]{1,40})\.(?P<raw>[A-Za-z0-9_-]{20,100})")


def from_this_origin(request: HttpRequest) -> bool:
    """Whether a request was sent by a page of the service's own origin (the widget's frame, the
    window), as browsers say in ``Sec-Fetch-Site``, or else in ``Origin``. A page of another
    origin (the host page, another site's) gets no session: its fetch carries the frame's
    partitioned cookies when it runs under the same top-level site. A client that sends neither
    header is no browser, and holds the cookie's token already."""
    fetch_site = request.headers.get("Sec-Fetch-Site")
    if fetch_site is not None:
        return fetch_site == "same-origin"
    origin = request.headers.get("Origin")
    return origin is None or origin == f"{request.scheme}://{request.get_host()}"


def remembered_token(value: str, *, site: Site) -> tuple[str, ApiToken, str] | None:
    """The raw token, its row and how its reader signed in, from a cookie's ``value``: None
    unless the token is good (known, unexpired, its user active) and was issued for ``site``."""
    match = _VALUE.fullmatch(value)
    if match is None:
        return None
    raw = match["raw"]
    token = token_with_user(hashlib.sha256(raw.encode()).hexdigest())
    if token is None or token.site_id != site.pk or token.expires_at <= timezone.now() or not token.user.is_active:
        return None
    return raw, token, match["via"]


def via_label(via: str, lang: str) -> str:
    """ "(via email)", "(via GitHub)": how the widget names the way a reader signed in."""
    with translation.override(lang):
        if via == "email":
            return gettext("(via email)")
        return gettext("(via %(provider)s)") % {"provider": providers.name_of(via)}


def _life(token: ApiToken) -> int:
    return max(0, int((token.expires_at - timezone.now()).total_seconds()))


def frame_remember(response: HttpResponse, *, site: Site, via: str, raw: str, token: ApiToken) -> None:
    life = _life(token)
    set_partitioned_cookie(
        response, SESSION_COOKIE.format(site=site.key), f"{via}.{raw}", max_age=life, path=SESSION_PATH, httponly=True
    )
    set_partitioned_cookie(response, SIGNED_COOKIE.format(site=site.key), "1", max_age=life, path="/", httponly=False)


def frame_forget(response: HttpResponse, *, site: Site) -> None:
    set_partitioned_cookie(
        response, SESSION_COOKIE.format(site=site.key), "", max_age=0, path=SESSION_PATH, httponly=True
    )
    set_partitioned_cookie(response, SIGNED_COOKIE.format(site=site.key), "", max_age=0, path="/", httponly=False)


def window_remember(
    response: HttpResponse, request: HttpRequest, *, site: Site, via: str, raw: str, token: ApiToken
) -> None:
    response.set_cookie(
        WINDOW_COOKIE.format(site=site.key),
        f"{via}.{raw}",
        max_age=_life(token),
        path=WINDOW_PATH,
        httponly=True,
        samesite="Lax",
        secure=request.is_secure(),
    )


def window_forget(response: HttpResponse, *, site: Site) -> None:
    response.delete_cookie(WINDOW_COOKIE.format(site=site.key), path=WINDOW_PATH, samesite="Lax")
