"""The one-click unsubscribe links of every email (RFC 8058): a token signed with the service's
secret (``django.core.signing``) naming the recipient and what the link turns off, either some
kinds of notification (``{"u": user id, "k": [kinds]}``) or the emails about one subject, its
thread (``{"u": user id, "s": subject id}``). The link needs no sign-in: only the service can
have made the token, and it can turn off nothing but what it names, for nobody but its recipient.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote, urlencode

from django.conf import settings
from django.core import signing
from django.urls import reverse

from comments.exceptions import InvalidInput

from .models import DEFAULT_EMAIL

SALT = "notifications.unsubscribe"


@dataclass(frozen=True)
class Scope:
    """What one link unsubscribes ``user_id`` from: ``kinds`` of email, or one subject's thread."""

    user_id: int
    kinds: tuple[str, ...] = ()
    subject_id: int | None = None


def token_for(scope: Scope) -> str:
    payload = (
        {"u": scope.user_id, "s": scope.subject_id}
        if scope.subject_id is not None
        else {"u": scope.user_id, "k": list(scope.kinds)}
    )
    return signing.dumps(payload, salt=SALT)


def scope_of(token: object) -> Scope:
    """The scope a token names; ``InvalidInput`` for a token the service did not sign (forged,
    tampered with, cut short) or one naming nothing it knows."""
    invalid = InvalidInput("This unsubscribe link is not valid.", fields={"token": ["Not a valid unsubscribe token."]})
    if not isinstance(token, str) or not token or len(token) > 500:
        raise invalid
    try:
        payload = signing.loads(token, salt=SALT)
    except signing.BadSignature:
        raise invalid from None
    if not isinstance(payload, dict) or not _an_id(payload.get("u")):
        raise invalid
    if "s" in payload:
        if not _an_id(payload["s"]):
            raise invalid
        return Scope(user_id=payload["u"], subject_id=payload["s"])
    kinds = payload.get("k")
    if not isinstance(kinds, list) or not kinds or any(k not in DEFAULT_EMAIL for k in kinds):
        raise invalid
    return Scope(user_id=payload["u"], kinds=tuple(kinds))


def _an_id(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def unsubscribe_url(scope: Scope) -> str:
    """The https address (``NOTIFICATIONS_BASE_URL``) a mail client POSTs to, and a person opens."""
    return f"{settings.NOTIFICATIONS_BASE_URL}{reverse('notifications-unsubscribe')}?{urlencode({'token': token_for(scope)})}"


def list_unsubscribe_headers(scope: Scope) -> dict[str, str]:
    """``List-Unsubscribe`` (the URL, and a mailto when ``NOTIFICATIONS_UNSUBSCRIBE_MAILTO`` is
    set) and ``List-Unsubscribe-Post`` (RFC 8058's one-click)."""
    links = [f"<{unsubscribe_url(scope)}>"]
    if settings.NOTIFICATIONS_UNSUBSCRIBE_MAILTO:
        subject = quote(f"unsubscribe {token_for(scope)}")
        links.append(f"<mailto:{settings.NOTIFICATIONS_UNSUBSCRIBE_MAILTO}?subject={subject}>")
    return {"List-Unsubscribe": ", ".join(links), "List-Unsubscribe-Post": "List-Unsubscribe=One-Click"}
