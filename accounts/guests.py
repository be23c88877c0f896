"""Guest comments (issue 14): a reader with no account comments under a name, with an email
address if they like (``Guest.email``: kept for moderators, never shown, never mailed: nobody
verified it). Every write
of guests is here; the comment itself goes through the core's one write path
(``comments.services.comment_create``) and its checks (bans, word filter, spam signals).

What keeps guests in hand, beyond what holds for everyone:

- the site must allow guests (``Site.signin_guests``), and holds their comments for review
  unless its ``guest_moderation`` says ``post`` (``guest_content_check``);
- the form the widget shows carries a signed, timestamped token (``form_token_issue``): a form
  sent sooner than ``ACCOUNTS_GUEST_FORM_MIN_SECONDS`` after it was shown, later than
  ``ACCOUNTS_GUEST_FORM_MAX_AGE``, a second time, or with a token this service did not sign
  for the site is refused; so is a form whose honeypot field (which no person sees) was filled;
- tighter rate limits than signed-in readers: ``guest_post`` per guest (the guest the browser
  holds, else the client's address) and ``guest_post_client`` per client address.

A guest's author row is a user of its own (``User.is_guest``: shown with a "guest" mark), made
for each name the browser posts under. The answer to a post carries a bearer token of that
user (only its hash is kept, as every token's) that lasts until the comment's edit window
ends: the browser that keeps it (the widget: in its frame's storage) may edit or delete the
comment within the window through the usual endpoints, and post again under the same name.
No other browser holds it, and after the window nothing does.
"""

from __future__ import annotations

import secrets
import time
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.core import signing
from django.core.cache import cache
from django.db import transaction

from comments import services as core
from comments import throttling
from comments.exceptions import InvalidInput, PermissionDenied, RateLimited
from comments.hooks import ContentCheck, ContentDecision
from comments.models import ApiToken, Comment, ModerationPolicy, Site, Status, User
from comments.names import clean_display_name
from infra import sharedcache

from .exceptions import FormTokenExpired, FormTokenInvalid, FormTokenUsed, GuestsNotAllowed, TooFast
from .models import Guest

_FORM_SALT = "accounts.guests.form"
HONEYPOT_FIELD = "website"

# Set while a guest's comment goes through the core's write path from here, after the checks
# above: a guest's token used on the core's own endpoint to post is refused (it skipped them).
_guest_checks_passed: ContextVar[bool] = ContextVar("guest_checks_passed", default=False)


@dataclass(frozen=True)
class FormToken:
    token: str
    not_before: datetime
    expires_at: datetime


@dataclass(frozen=True)
class GuestPost:
    comment: Comment
    token: str  # the raw bearer token: the browser's hold on the comment
    token_row: ApiToken


def shown_on(site: Site) -> bool:
    """Whether the widget shows the guest form on ``site``'s pages."""
    return site.signin_guests


def guests_allowed(site: Site) -> None:
    if not site.signin_guests:
        raise GuestsNotAllowed()


def form_token_issue(*, site: Site) -> FormToken:
    """A token for the guest form the widget is about to show on ``site``: signed, naming the
    site, the moment it was made and a nonce (it is good once)."""
    guests_allowed(site)
    now = time.time()
    token = signing.dumps({"site": site.key, "nonce": secrets.token_urlsafe(12), "at": now}, salt=_FORM_SALT)
    issued = datetime.fromtimestamp(now, tz=UTC)
    return FormToken(
        token=token,
        not_before=issued + timedelta(seconds=settings.ACCOUNTS_GUEST_FORM_MIN_SECONDS),
        expires_at=issued + timedelta(seconds=settings.ACCOUNTS_GUEST_FORM_MAX_AGE),
    )


def _form_token_check(site: Site, token: str) -> str:
    """The nonce of a form token that is good for ``site`` now; raises what is wrong with it."""
    try:
        claims = signing.loads(token, salt=_FORM_SALT, max_age=settings.ACCOUNTS_GUEST_FORM_MAX_AGE)
    except signing.SignatureExpired:
        raise FormTokenExpired() from None
    except signing.BadSignature:
        raise FormTokenInvalid() from None
    if not isinstance(claims, dict) or claims.get("site") != site.key or not isinstance(claims.get("at"), float):
        raise FormTokenInvalid()
    waited = time.time() - claims["at"]
    if waited < settings.ACCOUNTS_GUEST_FORM_MIN_SECONDS:
        raise TooFast(retry_after=settings.ACCOUNTS_GUEST_FORM_MIN_SECONDS - waited)
    return str(claims.get("nonce"))


def _form_token_use(nonce: str) -> None:
    """Spend the token's nonce; one spent already is refused. Without the cache (an outage) a
    token cannot be told apart from one used before, and passes."""
    key = f"accounts:guest-form:{nonce}"
    if not sharedcache.call(lambda: cache.add(key, 1, settings.ACCOUNTS_GUEST_FORM_MAX_AGE + 60), True):
        raise FormTokenUsed()


def _returning_guest(site: Site, token: ApiToken | None, name: str, email: str) -> User | None:
    """The guest the browser's token names, when it is this site's and posts under the same
    name and address again; else None (a new guest)."""
    if token is None or token.site_id != site.pk:
        return None
    user = token.user
    if not user.is_guest or user.display_name != name:
        return None
    if not Guest.objects.filter(user=user, site=site, email=email).exists():
        return None
    return user


def _rate_limit(client: str | None, returning: User | None) -> None:
    guest = f"u{returning.pk}" if returning is not None else f"ip{client or 'unknown'}"
    for scope, ident in (("guest_post_client", client or "unknown"), ("guest_post", guest)):
        wait = throttling.limit_reached(scope, ident)
        if wait is not None:
            raise RateLimited("Too many comments from guests here; please wait before posting again.", retry_after=wait)


def guest_comment_post(
    *,
    site: Site,
    key: str,
    body: object,
    name: str,
    email: str = "",
    form_token: str,
    honeypot: str = "",
    title: str = "",
    url: str = "",
    reply_to_id: int | None = None,
    token: ApiToken | None = None,
    client: str | None = None,
    user_agent: str = "",
) -> GuestPost:
    """Post a guest's comment on the subject ``key`` of ``site`` (made when it is the page's
    first comment), after the checks of this module; ``token`` is the bearer token the browser
    holds from an earlier post, if any. Returns the comment and a token good until its edit
    window ends."""
    guests_allowed(site)
    if honeypot:
        raise InvalidInput("This comment looks automated.", fields={HONEYPOT_FIELD: ["Leave this field empty."]})
    name = clean_display_name(name)  # one line of visible text, as every display name
    if not name:
        raise InvalidInput("A guest comments under a name.", fields={"name": ["This field may not be blank."]})
    email = email.strip().lower()
    nonce = _form_token_check(site, form_token)
    returning = _returning_guest(site, token, name, email)
    _rate_limit(client, returning)
    _form_token_use(nonce)
    subject, _ = core.subject_get_or_create(site=site, key=key, title=title, url=url)
    with transaction.atomic():
        author = returning or _guest_create(site=site, name=name, email=email)
        checked = _guest_checks_passed.set(True)
        try:
            comment = core.comment_create(
                subject=subject,
                author=author,
                body=body,
                reply_to_id=reply_to_id,
                author_ip=client,
                user_agent=user_agent,
            )
        finally:
            _guest_checks_passed.reset(checked)
        # The browser's hold ends with the edit window of the comment just posted.
        raw, token_row = core.token_issue(
            user=author, site=site, expires_at=comment.created_at + timedelta(seconds=settings.COMMENTS_EDIT_WINDOW)
        )
    return GuestPost(comment=comment, token=raw, token_row=token_row)


def _guest_create(*, site: Site, name: str, email: str) -> User:
    """A new guest of ``site``: a user of its own, marked, with no address of the user row's
    own (``Guest`` keeps the one given) and no password."""
    user = User(username=f"guest-{secrets.token_hex(12)}", display_name=clean_display_name(name), is_guest=True)
    user.set_unusable_password()
    user.save()
    Guest.objects.create(user=user, site=site, email=email)
    return user


def guests_erase(*, user_id: int) -> int:
    """Forget that the user was a guest, and the address they gave (an erasure); how many
    guest rows went."""
    return Guest.objects.filter(user_id=user_id).delete()[0]


def guest_content_check(check: ContentCheck, decision: ContentDecision) -> ContentDecision:
    """The core's content check for guests (registered in ``AccountsConfig.ready``): a guest
    posts only through ``guest_comment_post``; on a site whose ``guest_moderation`` is ``pre``
    their comments, new or edited, wait for a moderator (an edit too, or a comment approved
    once could be edited into anything)."""
    if not check.author.is_guest:
        return decision
    if check.comment is None and not _guest_checks_passed.get():
        raise PermissionDenied("A guest comments through the guest form (POST /api/v1/guest/comments).")
    if check.site.guest_moderation != ModerationPolicy.PRE or decision.status != Status.PUBLISHED:
        return decision
    return ContentDecision(status=Status.PENDING, body=decision.body, reasons=[*decision.reasons, "policy:guests"])
