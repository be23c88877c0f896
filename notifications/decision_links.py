"""The approve and reject links of a held comment's email: a token signed with the service's
secret (``django.core.signing``, as the unsubscribe links are, under a salt of its own) naming
the moderator it was sent to, the site, the comment, the review task open when it was sent and
the decision (``{"m": user id, "s": site id, "c": comment id, "t": task id, "d": "approve"}``),
with the time it was signed.

What the token alone decides: that the service made it (a forged or altered one is refused)
and that it is younger than ``NOTIFICATIONS_DECISION_LINK_DAYS``. What is checked when it is
used, from the database: that the moderator is still active and a moderator of that site, that
the comment is still on that site, and that the task is still open (a link is good once: the
first decision on the comment, by anyone and any way, closes the task, and the comment held
again later gets a new task and a new email). ``GET`` of the link only shows a page; the
decision is that page's ``POST`` (docs/security.md, "E-mail decision links").
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlencode

from django.conf import settings
from django.core import signing
from django.urls import reverse

from comments.exceptions import CommentsError, InvalidInput

SALT = "notifications.held-decision"
DECISIONS = ("approve", "reject")
MAX_TOKEN = 500


class LinkExpired(CommentsError):
    code = "link_expired"
    status = 410
    default_message = "This link has expired."


@dataclass(frozen=True)
class DecisionLink:
    moderator_id: int
    site_id: int
    comment_id: int
    task_id: int
    decision: str


def token_for(link: DecisionLink) -> str:
    payload = {"m": link.moderator_id, "s": link.site_id, "c": link.comment_id, "t": link.task_id, "d": link.decision}
    return signing.dumps(payload, salt=SALT)


def link_of(token: object) -> DecisionLink:
    """The link a token names; ``InvalidInput`` for a token the service did not sign (forged,
    altered, cut short) or naming nothing it knows, ``LinkExpired`` for one signed more than
    ``NOTIFICATIONS_DECISION_LINK_DAYS`` ago."""
    invalid = InvalidInput("This link is not valid.", fields={"token": ["Not a valid decision token."]})
    if not isinstance(token, str) or not token or len(token) > MAX_TOKEN:
        raise invalid
    try:
        payload = signing.loads(token, salt=SALT, max_age=settings.NOTIFICATIONS_DECISION_LINK_DAYS * 86400)
    except signing.SignatureExpired:
        raise LinkExpired() from None
    except signing.BadSignature:
        raise invalid from None
    if not isinstance(payload, dict) or payload.get("d") not in DECISIONS:
        raise invalid
    if not all(_an_id(payload.get(k)) for k in ("m", "s", "c", "t")):
        raise invalid
    return DecisionLink(
        moderator_id=payload["m"],
        site_id=payload["s"],
        comment_id=payload["c"],
        task_id=payload["t"],
        decision=payload["d"],
    )


def _an_id(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def decision_url(link: DecisionLink) -> str:
    """The https address (``NOTIFICATIONS_BASE_URL``) of the link's confirmation page."""
    return f"{settings.NOTIFICATIONS_BASE_URL}{reverse('notifications-decide')}?{urlencode({'token': token_for(link)})}"
