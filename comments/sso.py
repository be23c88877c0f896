"""Host-site single sign-on payloads (API.md, Identity): ``<base64url JSON>.<hex HMAC-SHA256>``."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import math
import time
from dataclasses import dataclass

from django.conf import settings

from .exceptions import NotAuthenticated, PermissionDenied
from .models import Site


@dataclass(frozen=True)
class SsoClaims:
    external_id: str
    name: str
    email: str
    avatar: str


def sign_payload(secret: str, claims: dict) -> str:
    """What a host site does: used by the demo host page and the tests."""
    body = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    return f"{body}.{hmac.new(secret.encode(), body.encode(), hashlib.sha256).hexdigest()}"


def _storable_text(value) -> bool:
    """A string the database can store: no NUL, no lone surrogate (JSON allows ``"\\ud800"``)."""
    if not isinstance(value, str) or "\x00" in value:
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def verify_payload(site: Site, payload: str, *, now: float | None = None) -> SsoClaims:
    """The claims of a payload signed with ``site``'s secret; ``NotAuthenticated`` otherwise."""
    if not site.signin_sso:
        raise PermissionDenied("This site does not sign readers in through its host's SSO.")
    refuse = NotAuthenticated("Invalid SSO payload.")
    if not site.sso_secret or not isinstance(payload, str) or payload.count(".") != 1:
        raise refuse
    body, signature = payload.split(".")
    try:
        body_bytes, signature_bytes = body.encode("ascii"), signature.encode("ascii")
    except UnicodeEncodeError:
        raise refuse from None
    expected = hmac.new(site.sso_secret.encode(), body_bytes, hashlib.sha256).hexdigest().encode()
    if not hmac.compare_digest(expected, signature_bytes):
        raise refuse
    try:
        claims = json.loads(base64.urlsafe_b64decode(body_bytes + b"=" * (-len(body_bytes) % 4)).decode("utf-8"))
    except (binascii.Error, ValueError, UnicodeError, RecursionError):
        raise refuse from None
    if not isinstance(claims, dict):
        raise refuse
    external_id, name, exp = claims.get("id"), claims.get("name"), claims.get("exp")
    email, avatar = claims.get("email") or "", claims.get("avatar") or ""
    if isinstance(external_id, int) and not isinstance(external_id, bool):
        external_id = str(external_id)
    texts = (external_id, name, email, avatar)
    if not all(_storable_text(t) for t in texts):
        raise refuse
    assert isinstance(external_id, str) and isinstance(name, str)  # as _storable_text checked
    if (
        not 0 < len(external_id) <= 255
        or not isinstance(exp, (int, float))
        or isinstance(exp, bool)
        or not math.isfinite(exp)
    ):
        raise refuse
    now = time.time() if now is None else now
    if exp <= now:
        raise NotAuthenticated("The SSO payload has expired.")
    # A payload is a credential for its whole life, and any copy of it (a cached page, a log)
    # signs the reader in again until then: a life beyond the window is refused, not trusted.
    if exp > now + settings.COMMENTS_SSO_MAX_TTL:
        raise NotAuthenticated(
            f"The SSO payload's exp is too far ahead: at most {settings.COMMENTS_SSO_MAX_TTL} seconds from now."
        )
    if avatar and not avatar.startswith(("https://", "http://")):
        avatar = ""
    return SsoClaims(
        external_id=external_id, name=name.strip()[:100] or external_id[:100], email=email[:254], avatar=avatar[:1000]
    )
